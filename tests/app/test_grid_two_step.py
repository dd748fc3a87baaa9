"""The grid's sort and filter answer in two steps; header clicks sort; widths follow the rows shown."""
from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QPoint, Qt

from app.models import row_selection
from app.models.row_selection import SortKey
from app.views.table_tab import TableTab
from itarcore.document import Column, Table

N = 5000


class Gate:
    """Holds a function in its worker thread until the test opens the gate (or the job is cancelled)."""

    def __init__(self, fn):
        self.fn, self.open = fn, threading.Event()

    def __call__(self, *args, **kwargs):
        cancel = kwargs.get("cancel")
        while not self.open.wait(0.005):
            if cancel is not None:
                cancel.raise_if_cancelled()
        return self.fn(*args, **kwargs)


def make_table(name: str = "rows", sizes: np.ndarray | None = None, stems=None) -> Table:
    rng = np.random.default_rng(11)
    sizes = rng.integers(0, 300, N).astype(np.uint64) if sizes is None else sizes
    n = len(sizes)
    stems = stems or (lambda rows: [f"sample{r // 3:05d}" for r in np.asarray(rows).tolist()])
    return Table(name, n, [Column("Size", sizes, "size"), Column("Ext", (np.arange(n) % 3).astype(np.uint16), "enum",
                                                                   ["jpg", "cls", "json"]),
                           Column("Stem", stems, "text")])


def make_tab(qtbot, table: Table) -> TableTab:
    tab = TableTab(table, window=1000)
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    qtbot.waitExposed(tab)
    return tab


def shown_rows(tab: TableTab) -> list[int]:
    return [tab.model.source_row(i) for i in range(tab.model.n_view)]


def click_header(qtbot, tab: TableTab, title: str) -> None:
    header = tab.grid.view.horizontalHeader()
    col = [c.title for c in tab.table.columns].index(title)
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(header.sectionViewportPosition(col) + 10, header.height() // 2))


def test_sort_shows_first_window_then_full_order_keeping_the_selection(qtbot, monkeypatch):
    gate = Gate(row_selection.full_order)
    monkeypatch.setattr(row_selection, "full_order", gate)
    tab = make_tab(qtbot, make_table())
    tab.two_step_rows, tab.first_rows = 100, 200
    sizes = tab.table.column("Size").values
    truth = np.argsort(sizes, kind="stable")
    tab.sort_by("Size")
    qtbot.waitUntil(lambda: tab.counting, timeout=10_000)
    # the first window is on screen while the full order is still being computed
    assert tab.model.n_view == N and tab.model.n_known == 200
    assert [tab.model.source_row(i) for i in range(200)] == truth[:200].tolist()
    assert tab.model.source_row(200) == -1 and tab.model.text(200, 0) == ""
    assert "sorting…" in tab.filter_bar.count_label.text()
    tab.grid.go_to_view_row(120)
    assert tab.grid.current_source_row() == int(truth[120])
    top = tab.grid.scrollbar.value()
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        gate.open.set()
    assert shown_rows(tab) == truth.tolist()
    # swapped in without moving anything: same row selected, same scroll position
    assert tab.grid.current_view_row() == 120 and tab.grid.current_source_row() == int(truth[120])
    assert tab.grid.scrollbar.value() == top <= 120 < top + tab.grid.page_rows
    assert tab.grid.selected_view_rows().tolist() == [120]
    assert tab.filter_bar.count_label.text() == f"{N:,} rows"


def test_cancel_leaves_the_previous_order_in_place(qtbot, monkeypatch):
    tab = make_tab(qtbot, make_table())
    tab.two_step_rows, tab.first_rows = 100, 200
    sizes = tab.table.column("Size").values
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        tab.sort_by("Size")
    ascending = shown_rows(tab)
    assert ascending == np.argsort(sizes, kind="stable").tolist()
    gate = Gate(row_selection.full_order)
    monkeypatch.setattr(row_selection, "full_order", gate)
    tab.sort_by("Size", descending=True)
    qtbot.waitUntil(lambda: tab.counting, timeout=10_000)
    assert tab.model.source_row(0) == int(np.flatnonzero(sizes == sizes.max())[0])  # the new first window
    for worker in list(tab._workers):
        worker.quit()  # what the status bar's Cancel button does
    qtbot.waitUntil(lambda: not tab.is_busy and not tab.counting, timeout=10_000)
    assert shown_rows(tab) == ascending
    assert tab.sort_key == SortKey("Size", False)
    header = tab.grid.view.horizontalHeader()
    assert header.sortIndicatorSection() == 0 and header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder


def test_filter_shows_first_matches_and_says_it_is_still_counting(qtbot, monkeypatch):
    monkeypatch.setattr(row_selection, "NAME_CHUNK", 100)
    late = threading.Event()

    def stems(rows):
        rows = np.asarray(rows)
        if len(rows) and rows.min() >= 2000:
            late.wait(10)  # names past row 2000 are slow to read (a cold disk)
        return [f"sample{r // 3:05d}" for r in rows.tolist()]

    tab = make_tab(qtbot, make_table(stems=stems))
    tab.first_rows = 50
    truth = [r for r in range(N) if "1" in f"sample{r // 3:05d}"]
    with qtbot.waitSignal(tab.filter_bar.filterChanged, timeout=5000):
        qtbot.keyClicks(tab.filter_bar.substring, "1")
    qtbot.waitUntil(lambda: tab.counting, timeout=10_000)
    assert shown_rows(tab) == truth[:50]
    assert tab.filter_bar.count_label.text() == "≥ 50 rows (counting…)"
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        late.set()
    assert shown_rows(tab) == truth
    assert tab.filter_bar.count_label.text() == f"{len(truth):,} of {N:,} rows"


def test_header_click_sorts_without_selecting_and_unsortable_column_keeps_the_arrow(qtbot):
    tab = make_tab(qtbot, make_table())
    view, header = tab.grid.view, tab.grid.view.horizontalHeader()
    sizes = tab.table.column("Size").values
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        click_header(qtbot, tab, "Size")
    assert shown_rows(tab) == np.argsort(sizes, kind="stable").tolist()
    assert not view.selectionModel().selectedIndexes()  # no whole-column selection
    assert header.sortIndicatorSection() == 0 and header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
    click_header(qtbot, tab, "Stem")  # read on demand: not sortable
    assert header.sortIndicatorSection() == 0 and header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
    assert not tab.is_busy and tab.sort_key == SortKey("Size")
    assert not view.selectionModel().selectedIndexes()
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        click_header(qtbot, tab, "Size")
    assert tab.sort_key == SortKey("Size", True)
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        click_header(qtbot, tab, "Size")  # third click: back to the file's order
    assert tab.sort_key is None and shown_rows(tab) == list(range(N)) and header.sortIndicatorSection() == -1


def test_widths_follow_the_rows_on_screen_and_user_widths_are_kept(qtbot):
    # the first 40 rows hold small numbers; sorting brings 13-digit sizes to the top
    sizes = np.arange(N, dtype=np.uint64)
    sizes[-100:] = 9_876_543_210_000 + np.arange(100, dtype=np.uint64)
    table = make_table(sizes=sizes)
    tab = make_tab(qtbot, table)
    grid, model = tab.grid, tab.model
    fm = grid.view.fontMetrics()
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        tab.sort_by("Size", descending=True)
    text = model.text(0, 0)
    assert text == "9,876,543,210,099"
    qtbot.waitUntil(lambda: grid.view.columnWidth(0) >= fm.horizontalAdvance(text) + 8, timeout=5000)
    assert model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole) == text  # the whole value
    # a width the user drags is kept through sorts and remembered for the next tab of that table
    grid.view.horizontalHeader().resizeSection(0, 55)
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        tab.sort_by("Size")
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        tab.sort_by("Size", descending=True)
    grid.fit_visible_columns()  # the re-measure after a view change leaves the user's width alone
    assert grid.view.columnWidth(0) == 55
    again = make_tab(qtbot, make_table(sizes=sizes))
    assert again.grid.view.columnWidth(0) == 55

