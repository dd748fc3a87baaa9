"""The grid on real TARIDX folds: stem search over every name, and no GUI stall on a 10M-row index."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from off_gui_thread import OffGuiThread, event_loop_answers
from PySide6.QtCore import QPoint, Qt
from synthetic import ROW_DT, write_index

from app.models.windowed_table_model import PENDING
from itarcore.indexing import indexer
from itarcore.jobs.index import index_fold

CRASH_STEM = "late sample 7"  # a stem with spaces, made to collide with an earlier stem below
EARLIER = "sample_0003"
EXTS = ("jpg", "cls", "json", "txt")


def build_fold(folder: Path, monkeypatch) -> tuple[Path, list[str]]:
    """566 members (as the issue's fold); the crash stem's four members sit at rows 470–473."""
    names = [f"sample_{i:04d}.{e}" for i in range(117) for e in EXTS]  # rows 0-467
    names += ["extra_a.jpg", "extra_b.jpg"] + [f"{CRASH_STEM}.{e}" for e in EXTS]  # the crash stem: rows 470-473
    names += [f"sample_{i:04d}.{e}" for i in range(117, 140) for e in EXTS]  # to row 565
    shard = folder / "fold_0000.tar"
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tf:
        for name in names:
            data = name.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    # a genuine crash needs two stems with one xxh64; give the crash stem the earlier stem's hash
    real = indexer.xxh64_padded

    def colliding(mat, lengths, seed=0):
        hashes = real(mat, lengths, seed)
        stems_bytes = [bytes(row[:n]) for row, n in zip(mat, lengths)]
        earlier = [h for s, h in zip(stems_bytes, hashes) if s == EARLIER.encode()]
        for i, s in enumerate(stems_bytes):
            if s == CRASH_STEM.encode():
                hashes[i] = earlier[0]
        return hashes

    monkeypatch.setattr(indexer, "xxh64_padded", colliding)
    index = folder / "fold.taridx"
    result = index_fold([shard], index)
    monkeypatch.setattr(indexer, "xxh64_padded", real)
    assert result.crash_stems == [CRASH_STEM]
    with tarfile.open(shard) as tf:
        truth = [m.name.split(".", 1)[0] for m in tf.getmembers()]
    return index, truth


def open_rows(qtbot, window, path: Path):
    with qtbot.waitSignal(window.documentOpened, timeout=30_000):
        window.open_path(str(path))
    return window.tabs_by_name["rows"]


def search(qtbot, tab, text: str) -> list[int]:
    box = tab.filter_bar.substring
    box.clear()
    with qtbot.waitSignal(tab.viewApplied, timeout=30_000):
        qtbot.keyClicks(box, text)
        qtbot.keyClick(box, Qt.Key.Key_Return)
    return [tab.model.source_row(i) for i in range(tab.model.n_view)]


def test_stem_contains_finds_every_row_far_below_the_first_screen(qtbot, window, tmp_path, monkeypatch):
    index, stems = build_fold(tmp_path, monkeypatch)
    tab = open_rows(qtbot, window, index)
    assert tab.table.n_rows == 566
    crash_rows = [i for i, s in enumerate(stems) if s == CRASH_STEM]
    assert crash_rows == [470, 471, 472, 473]
    # " 7" (leading space kept) matches only the crash stem; trimmed, "7" would match sample_0007 and others
    assert search(qtbot, tab, " 7") == crash_rows
    assert tab.filter_bar.count_label.text() == "4 of 566 rows"
    assert search(qtbot, tab, "E SAMPLE") == crash_rows
    far = [i for i, s in enumerate(stems) if "0135" in s]  # sample_0135, near the end
    assert min(far) > 500 and search(qtbot, tab, "0135") == far
    assert search(qtbot, tab, "sample") == [i for i, s in enumerate(stems) if "sample" in s]


# ---- a 10M-row index: every pass over the rows runs off the GUI thread, which never waits for it ----
# (how long the GUI thread is busy is measured in bench/bench_gui_stalls.py, not here: no test reads a clock)
N_BIG = 10_000_000


def test_a_10m_row_index_counts_and_sorts_off_the_gui_thread(qtbot, window, tmp_path, monkeypatch):
    from app.models import row_selection
    from itarcore import rowpass

    path = tmp_path / "big.taridx"
    write_index(path, N_BIG, exts=EXTS, max_size=10**9)
    window.resize(1100, 700)
    spy = OffGuiThread(monkeypatch)
    spy.watch(rowpass, "iter_row_chunks", hold=True)  # every chunked pass over all rows goes through it
    spy.watch(row_selection, "first_window")
    spy.watch(row_selection, "full_order", hold=True)
    rows_tab = open_rows(qtbot, window, path)
    qtbot.waitUntil(lambda: not rows_tab.model.fetching, timeout=30_000)
    assert not spy.ran("iter_row_chunks")  # opening reads no pass over the rows
    # the extension counts: a pass over 10M rows, held in its worker while the user goes on
    exts = window.tabs_by_name["extensions"]
    window.tabs.setCurrentWidget(exts)
    exts.grid.view.viewport().repaint()  # the first paint of a tab asks for its lazy columns
    spy.wait_held(qtbot)
    model = exts.model
    assert model.data(model.index(0, 2)) == PENDING  # painted at once, the count still to come
    for name in ("crash stems", "rows", "extensions"):  # the tabs switch while the pass is held
        window.tabs.setCurrentWidget(window.tabs_by_name[name])
        window.tabs_by_name[name].grid.view.viewport().repaint()
    assert event_loop_answers(qtbot)
    spy.release()
    for name in ("extensions", "crash stems"):
        tab = window.tabs_by_name[name]
        qtbot.waitUntil(lambda t=tab: not t.model.fetching, timeout=60_000)
    extid = np.memmap(path, ROW_DT, "r", offset=64 + len("\n".join(EXTS)))["extid"]
    counts = np.bincount(extid, minlength=len(EXTS))
    assert [exts.model.text(i, 2) for i in range(len(EXTS))] == [str(int(c)) for c in counts]
    # a click on Size: the first sorted screen at once, the full order held in its worker meanwhile
    spy.hold_again()
    window.tabs.setCurrentWidget(rows_tab)
    header = rows_tab.grid.view.horizontalHeader()
    col = [c.title for c in rows_tab.table.columns].index("Size")
    sizes = rows_tab.table.column("Size").values
    candidates = np.flatnonzero(sizes <= np.partition(sizes, 49)[49])
    truth = candidates[np.argsort(sizes[candidates], kind="stable")][:50]
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(header.sectionViewportPosition(col) + 10, header.height() // 2))
    assert len(rows_tab.grid.selected_view_rows()) <= 1  # the click selected no column (10M rows)
    qtbot.waitUntil(lambda: rows_tab.counting, timeout=60_000)  # the first sorted screen is shown
    spy.wait_held(qtbot)  # while the full order is held back
    assert [rows_tab.model.source_row(i) for i in range(50)] == truth.tolist()
    assert rows_tab.counting and event_loop_answers(qtbot)
    with qtbot.waitSignal(rows_tab.viewApplied, timeout=120_000):
        spy.release()  # the full order, sorted in the background and swapped in
    assert not rows_tab.counting
    assert [rows_tab.model.source_row(i) for i in range(50)] == truth.tolist()
    assert spy.ran("first_window") and spy.ran("full_order")
    spy.assert_none_on_gui_thread()
    with qtbot.waitSignal(rows_tab.viewApplied, timeout=10_000):
        rows_tab.clear_sort()  # back to the file's order, and no arrow
    assert header.sortIndicatorSection() == -1
    assert rows_tab.model.source_row(0) == 0
