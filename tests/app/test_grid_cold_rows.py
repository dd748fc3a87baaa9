"""The rows grid of an index not in RAM: the GUI thread never reads the file, it paints a copy a worker made.

A sorted view's rows on screen lie all over the file; read through the mapping on the GUI thread,
each page not in the page cache is a disk read in the middle of a paint (issue 15). Here the
residency answer is forced to "not in RAM" (``block_resident``; the answer itself is checked
against the kernel in test_residency.py), the worker's read is held, and the test looks at what
the grid paints: a placeholder while the read is held, the index's own values once it is released.
Every read of the rows' arrays records its thread, so a read on the GUI thread fails the test.
"""
from __future__ import annotations

import dataclasses
import struct
import threading
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

pytest.importorskip("PySide6")

from off_gui_thread import OffGuiThread
from synthetic import ROW_DT, write_index

from app.models import row_block, windowed_table_model
from app.models.windowed_table_model import PENDING

N_ROWS = 300_000


class ThreadRecordingArray(np.ndarray):
    """A view of a column that notes every read made on the GUI thread."""

    gui_reads: ClassVar[list[object]] = []

    def __getitem__(self, key):
        if threading.current_thread() is threading.main_thread():
            ThreadRecordingArray.gui_reads.append(key)
        return np.asarray(self)[key]


def truth(path: Path) -> np.ndarray:
    """The rows, read from the file with numpy alone (not through itarcore)."""
    raw = path.read_bytes()
    off_arr = struct.unpack_from("<Q", raw, 48)[0]
    return np.frombuffer(raw, ROW_DT, offset=off_arr)


@pytest.fixture
def cold_tab(qtbot, tmp_path, monkeypatch):
    yield from _cold_tab(qtbot, tmp_path, monkeypatch, with_lazy_columns=True)


@pytest.fixture
def cold_tab_mapped_only(qtbot, tmp_path, monkeypatch):
    """As ``cold_tab`` without the Stem column: nothing but the block reads repaints the grid."""
    yield from _cold_tab(qtbot, tmp_path, monkeypatch, with_lazy_columns=False)


def _cold_tab(qtbot, tmp_path, monkeypatch, with_lazy_columns: bool):
    from app.views.table_tab import TableTab
    from itarcore.document import open_document

    path = tmp_path / "cold.taridx"
    write_index(path, N_ROWS, max_size=10**9)
    doc = open_document(str(path))
    table = doc.table("rows")
    table.columns = [dataclasses.replace(c, values=c.values.view(ThreadRecordingArray))
                     if isinstance(c.values, np.ndarray) else c for c in table.columns
                     if with_lazy_columns or not c.lazy]
    ThreadRecordingArray.gui_reads = []
    monkeypatch.setattr(windowed_table_model, "block_resident", lambda *a: False)  # the file is "cold"
    spy = OffGuiThread(monkeypatch)
    spy.watch(row_block, "read_block", hold=True)
    tab = TableTab(table)
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    yield tab, spy, truth(path)
    spy.release()
    tab.shutdown()
    doc.close()


def painted(tab, view_rows, title: str) -> list[str]:
    m = tab.model
    col = [c.title for c in m.table.columns].index(title)
    tab.grid.view.viewport().repaint()
    return [m.data(m.index(r - m.window_start, col)) for r in view_rows]


def screen(tab) -> range:
    top = tab.grid.scrollbar.value()
    return range(top, top + tab.grid.page_rows)


def test_a_cold_index_paints_placeholders_then_its_own_rows_and_the_gui_thread_never_reads_them(qtbot, cold_tab,
                                                                                                tmp_path):
    tab, spy, rows = cold_tab
    spy.wait_held(qtbot)  # the first screen's read, in the worker
    assert set(painted(tab, screen(tab), "Size")) == {PENDING}
    tab.grab().save(str(tmp_path / "grid_reading.png"))
    with qtbot.waitSignal(tab.model.rowsFetched, timeout=30_000):
        spy.release()
    assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]
    assert painted(tab, screen(tab), "Offset") == [str(v) for v in rows["offset"][screen(tab)].tolist()]

    # sorted by size: the rows on screen are scattered over the file; one held read, then the sorted rows
    order = np.argsort(rows["size"], kind="stable")
    spy.hold_again()
    with qtbot.waitSignal(tab.viewApplied, timeout=60_000):
        tab.sort_by("Size")
    spy.wait_held(qtbot)
    assert set(painted(tab, screen(tab), "Keyhash")) == {PENDING}
    with qtbot.waitSignal(tab.model.rowsFetched, timeout=30_000):
        spy.release()
    top = screen(tab)
    assert painted(tab, top, "Keyhash") == [f"{v:016x}" for v in rows["keyhash"][order[top]].tolist()]

    # within the margin nothing waits: two screens down, the rows show at once while the read ahead is held
    spy.hold_again()
    page = tab.grid.page_rows
    tab.grid.scrollbar.setValue(2 * page)
    spy.wait_held(qtbot)  # the next block, read ahead
    assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][order[screen(tab)]].tolist()]

    spy.release()  # a read ahead repaints nothing: no placeholder was shown
    qtbot.waitUntil(lambda: not tab.model.fetching, timeout=30_000)
    assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][order[screen(tab)]].tolist()]

    # a jump far away: placeholders for one read, then the rows
    spy.hold_again()
    tab.grid.go_to_view_row(N_ROWS - 10)
    spy.wait_held(qtbot)
    assert set(painted(tab, screen(tab), "Size")) == {PENDING}
    with qtbot.waitSignal(tab.model.rowsFetched, timeout=30_000):
        spy.release()
    bottom = screen(tab)
    assert bottom.stop >= N_ROWS - 10
    assert painted(tab, bottom, "Size") == [f"{v:,}" for v in rows["size"][order[bottom]].tolist()]
    spy.assert_none_on_gui_thread()
    assert ThreadRecordingArray.gui_reads == []


def test_a_warm_index_paints_its_rows_at_once(qtbot, tmp_path):
    """Every page in RAM: the block is copied on the GUI thread, so no placeholder ever shows."""
    from app.views.table_tab import TableTab
    from itarcore.document import open_document

    path = tmp_path / "warm.taridx"
    write_index(path, 50_000)
    rows = truth(path)  # reads the whole file: every page is in the page cache
    doc = open_document(str(path))
    tab = TableTab(doc.table("rows"))
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    try:
        assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]
        tab.grid.go_to_view_row(40_000)
        assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]
        assert not tab.model.fetching or tab.model._block_reading is None
    finally:
        tab.shutdown()
        doc.close()


def test_a_block_read_before_a_jump_does_not_leave_the_new_screen_waiting(qtbot, cold_tab_mapped_only):
    """The first screen's read lands after the user jumped far away (out of Qt's window): the new screen's
    placeholders are repainted when its own block lands, not forgotten."""
    tab, spy, rows = cold_tab_mapped_only
    spy.wait_held(qtbot)  # the first screen's read, held
    tab.grid.scrollbar.setValue(N_ROWS // 2)
    assert set(painted(tab, screen(tab), "Size")) == {PENDING}
    m = tab.model
    size_col = [c.title for c in m.table.columns].index("Size")
    changed: list[tuple[int, int, int, int]] = []
    m.dataChanged.connect(lambda a, b, *_: changed.append((a.row(), b.row(), a.column(), b.column())))
    spy.release()  # the old block lands, then the new screen's block is read and lands (no paint between)
    qtbot.waitUntil(lambda: not m.fetching and m._block is not None and m._block.covers(
        screen(tab).start, screen(tab).stop), timeout=30_000)
    first, last = screen(tab).start - m.window_start, screen(tab).stop - 1 - m.window_start
    assert any(r0 <= first and last <= r1 and c0 <= size_col <= c1 for r0, r1, c0, c1 in changed), changed
    shown = [m.data(m.index(r - m.window_start, size_col)) for r in screen(tab)]
    assert shown == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]


def test_a_failed_block_read_says_why_in_its_cells_and_is_not_retried_on_every_paint(qtbot, cold_tab_mapped_only,
                                                                                     monkeypatch, tmp_path):
    from app.models import cell_reads

    tab, spy, rows = cold_tab_mapped_only
    spy.wait_held(qtbot)  # the first screen's read: it succeeds once released
    with qtbot.waitSignal(tab.model.rowsFetched, timeout=30_000):
        spy.release()
    attempts: list[int] = []

    def failing_read(columns, cols, first, src, in_ram=False):
        attempts.append(first)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(cell_reads, "read_block", failing_read)
    tab.grid.scrollbar.setValue(N_ROWS // 2)  # far away: a new block, whose read fails
    painted(tab, screen(tab), "Size")
    qtbot.waitUntil(lambda: not tab.model.fetching and bool(attempts), timeout=30_000)
    for _ in range(3):
        shown = painted(tab, screen(tab), "Size")
    assert set(shown) == {"⚠ could not read these rows: [Errno 5] Input/output error"}
    tab.grab().save(str(tmp_path / "grid_read_failed.png"))
    assert len(attempts) == 1  # painting again asks nothing more of the disk
    monkeypatch.setattr(cell_reads, "read_block", row_block.read_block)
    tab.grid.scrollbar.setValue(0)  # back to rows read before: their values, not the error
    assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]
    with qtbot.waitSignal(tab.model.rowsFetched, timeout=30_000):  # and the failed rows, visited again, read again
        tab.grid.scrollbar.setValue(N_ROWS // 2)
        painted(tab, screen(tab), "Size")
    assert painted(tab, screen(tab), "Size") == [f"{v:,}" for v in rows["size"][screen(tab)].tolist()]
