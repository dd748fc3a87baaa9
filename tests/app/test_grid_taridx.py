"""The grid on real TARIDX folds: stem search over every name, and no GUI stall on a 10M-row index."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QPoint, Qt
from synthetic import ROW_DT, Heartbeat, write_index

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


# ---- a 10M-row index: nothing on the GUI thread for more than 50 ms ------------------------------
N_BIG = 10_000_000


def test_no_gui_stall_over_50ms_on_10m_rows(qtbot, window, tmp_path):
    path = tmp_path / "big.taridx"
    write_index(path, N_BIG, exts=EXTS, max_size=10**9)
    window.resize(1100, 700)
    rows_tab = open_rows(qtbot, window, path)
    qtbot.waitUntil(lambda: not rows_tab.model.fetching, timeout=30_000)
    stalls = {}
    for name in ("extensions", "crash stems", "rows"):
        tab = window.tabs_by_name[name]
        with Heartbeat() as beat:
            window.tabs.setCurrentWidget(tab)
            tab.grid.view.viewport().repaint()  # the first paint of a tab asks for its lazy columns
            qtbot.waitUntil(lambda t=tab: not t.model.fetching, timeout=60_000)
        stalls[f"show {name}"] = beat
    # per-extension counts arrived from the worker and are right
    exts = window.tabs_by_name["extensions"]
    extid = np.memmap(path, ROW_DT, "r", offset=64 + len("\n".join(EXTS)))["extid"]
    counts = np.bincount(extid, minlength=len(EXTS))
    assert [exts.model.text(i, 2) for i in range(len(EXTS))] == [str(int(c)) for c in counts]
    header = rows_tab.grid.view.horizontalHeader()
    col = [c.title for c in rows_tab.table.columns].index("Size")
    sizes = rows_tab.table.column("Size").values
    candidates = np.flatnonzero(sizes <= np.partition(sizes, 49)[49])
    truth = candidates[np.argsort(sizes[candidates], kind="stable")][:50]
    # The header click is repeated: a stall the code causes (a whole-column selection, a sort on the GUI
    # thread) comes back every time, while a paint delayed by the other jobs of a shared machine does not;
    # each step keeps its best round.
    rounds: dict[str, list[Heartbeat]] = {"click Size: first sorted screen": [], "full order swapped in": []}
    for _ in range(3):
        with Heartbeat() as beat:
            qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                             pos=QPoint(header.sectionViewportPosition(col) + 10, header.height() // 2))
            qtbot.waitUntil(lambda: rows_tab.counting, timeout=60_000)  # the first sorted screen
        rounds["click Size: first sorted screen"].append(beat)
        assert len(rows_tab.grid.selected_view_rows()) <= 1  # the click selected no column (10M rows)
        with Heartbeat() as beat, qtbot.waitSignal(rows_tab.viewApplied, timeout=120_000):
            pass  # the full order, sorted in the background and swapped in
        rounds["full order swapped in"].append(beat)
        assert [rows_tab.model.source_row(i) for i in range(50)] == truth.tolist()
        with qtbot.waitSignal(rows_tab.viewApplied, timeout=10_000):
            rows_tab.clear_sort()  # back to the file's order (and no arrow) for the next round
        assert header.sortIndicatorSection() == -1
    for what, beats in rounds.items():
        stalls[what] = min(beats, key=lambda b: b.max_busy_ms)
        assert max(b.max_gap_ms for b in beats) < 1000, what  # no freeze in any round
    report = {what: f"{b.max_busy_ms:.0f} ms busy, {b.max_gap_ms:.0f} ms gap" for what, b in stalls.items()}
    print(report)
    assert all(b.max_busy_ms < 50 for b in stalls.values()), report
    assert all(b.max_gap_ms < 1000 for b in stalls.values()), report  # no freeze, even on a loaded machine
