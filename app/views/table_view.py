"""A grid for any number of rows: a QTableView over a windowed model plus a full-range scrollbar.

The inner view only ever holds ``WINDOW`` rows (so it stays far below Qt's 2**31
pixel limit). Its own vertical scrollbar is hidden; the visible one spans all view
rows. Moving it, the wheel or the keyboard near the window's edges slides the model's
window, the way ViTables does.

A header click sorts (as in DB Browser for SQLite: ascending, descending, then the
file's order); it never selects a column, and a column that cannot be sorted keeps
the arrow where it was. Column widths follow the rows on screen (they only grow, and
never override a width the user dragged, which is remembered in the settings); a cell
too narrow for its value shows it whole in a tooltip. Double-click or Enter on a row
emits ``rowActivated`` (a drill-down), a single click only selects.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QItemSelection, QItemSelectionModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QHeaderView, QScrollBar, QTableView, QWidget

from app.models.selection_copy import CellSelection, selection_text
from app.models.windowed_table_model import WindowedTableModel
from app.style import item_view_style
from app.views.settings import app_settings

MAX_AUTO_WIDTH = 420  # px: a longer value shows whole in its tooltip


class _InnerView(QTableView):
    jumpRequested = Signal(int)  # view row; -1 means the last one
    enterPressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.enterPressed.emit()
            return
        ctrl = event.modifiers() & Qt.KeyboardModifier.ControlModifier
        if ctrl and event.key() == Qt.Key.Key_Home:
            self.jumpRequested.emit(0)
            return
        if ctrl and event.key() == Qt.Key.Key_End:
            self.jumpRequested.emit(-1)
            return
        if event.matches(QKeySequence.StandardKey.Copy):
            event.ignore()  # the grid's Copy action handles it (TSV of the selection)
            return
        super().keyPressEvent(event)


class TableGrid(QWidget):
    currentRowChanged = Signal(int)  # source row, -1 for none
    selectionCountChanged = Signal(int)
    sortRequested = Signal(str, bool)  # column title, descending
    sortCleared = Signal()  # back to the file's row order
    rowActivated = Signal(int)  # view row double-clicked or Entered

    def __init__(self, model: WindowedTableModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.view = _InnerView(self)
        self.view.setStyle(item_view_style())  # cells paint without a call into Python each (app.style)
        self.view.setModel(model)
        self.view.setObjectName(f"grid:{model.table.name}")
        self.scrollbar = QScrollBar(Qt.Orientation.Vertical, self)
        self.scrollbar.setObjectName("fullRangeScrollBar")
        self._syncing = False
        self._current: int | None = None  # current view row (global), survives window moves
        self._sort: tuple[int, bool] | None = None
        self._sizing = False  # widths set by the grid itself, not dragged by the user
        self._settings = app_settings()
        self._user_widths: set[int] = set()
        self._measure_timer = QTimer(self, singleShot=True, interval=30)
        self._measure_timer.timeout.connect(self.fit_visible_columns)
        model.fetch_in_background = True
        model.cell_tooltips = True
        self._setup_view()
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.scrollbar)
        self.scrollbar.valueChanged.connect(self._on_scrollbar)
        self.view.verticalScrollBar().valueChanged.connect(self._on_inner_scrolled)
        self.view.verticalScrollBar().rangeChanged.connect(lambda *_: self._update_scrollbar())
        self.view.jumpRequested.connect(lambda r: self.go_to_view_row(self.model.n_view - 1 if r < 0 else r))
        self.view.selectionModel().currentChanged.connect(self._on_current_changed)
        self.view.selectionModel().selectionChanged.connect(
            lambda *_: self.selectionCountChanged.emit(len(self.selected_view_rows())))
        model.modelReset.connect(self._on_view_changed)
        model.layoutChanged.connect(self._on_view_changed)
        model.viewChanged.connect(self._update_scrollbar)
        for signal in (model.viewChanged, model.windowMoved, model.lazyFetched, model.rowsFetched,
                       self.scrollbar.valueChanged):
            signal.connect(lambda *_: self._measure_timer.start())
        hh = self.view.horizontalHeader()
        hh.sortIndicatorChanged.connect(self._on_sort_indicator)
        hh.sectionResized.connect(self._on_section_resized)
        self.view.doubleClicked.connect(lambda idx: self.rowActivated.emit(self.model.window_start + idx.row()))
        self.view.enterPressed.connect(
            lambda: self.rowActivated.emit(self.model.window_start + self.view.currentIndex().row()))

    def _setup_view(self) -> None:
        v = self.view
        v.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        v.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        v.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        v.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        v.setWordWrap(False)
        v.setAlternatingRowColors(True)
        v.setCornerButtonEnabled(False)
        fm = v.fontMetrics()
        row_h = fm.height() + 6
        vh = v.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # never ResizeToContents
        vh.setMinimumSectionSize(row_h)
        vh.setDefaultSectionSize(row_h)
        digits = len(f"{max(1, self.model.table.n_rows - 1)}")
        vh.setFixedWidth(fm.horizontalAdvance("9" * digits) + 16)
        hh = v.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        hh.setHighlightSections(False)
        # Qt's own sorting mode stops header presses from selecting a whole column (100,000 rows on a
        # big index); the model's sort() is Qt's no-op, the tab sorts in a worker instead
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        hh.setSortIndicatorClearable(True)
        v.setSortingEnabled(True)
        self._size_columns()

    def _size_columns(self) -> None:
        """Widths from the titles and the first rows, measured once (not ResizeToContents)."""
        fm = self.view.fontMetrics()
        sample = min(self.model.window_rows, 40)
        for c in range(self.model.columnCount()):
            title = str(self.model.headerData(c, Qt.Orientation.Horizontal))
            width = fm.horizontalAdvance(title) + 36
            col = self.model.table.columns[c]
            if col.lazy:  # never resolve lazy values here: a tab not yet shown may need a full scan
                wide = "9" * len(f"{self.model.table.n_rows:,}") if col.kind in ("int", "size") else "x" * 20
                width = max(width, fm.horizontalAdvance(wide) + 16)
                continue
            for r in range(sample):  # as painted: a column in a file not in RAM says PENDING until it is read
                width = max(width, fm.horizontalAdvance(str(self.model.data(self.model.index(r, c)))) + 16)
            self._set_width(c, min(width, MAX_AUTO_WIDTH))
        for c, col in enumerate(self.model.table.columns):
            saved = self._settings.value(self._width_key(col.title))
            if saved is not None and int(saved) > 0:
                self._set_width(c, int(saved))
                self._user_widths.add(c)

    def _width_key(self, title: str) -> str:
        return f"grid/{self.model.table.name}/{title}/width"

    def _set_width(self, column: int, width: int) -> None:
        self._sizing = True
        try:
            self.view.setColumnWidth(column, width)
        finally:
            self._sizing = False

    def _on_section_resized(self, column: int, _old: int, new: int) -> None:
        if self._sizing or not self.view.horizontalHeader().isVisible():
            return
        if column == self.model.columnCount() - 1 and self.view.horizontalHeader().stretchLastSection():
            return  # the last column stretches with the window: not the user's choice
        self._user_widths.add(column)
        self._settings.setValue(self._width_key(self.model.table.columns[column].title), int(new))

    def fit_visible_columns(self) -> None:
        """Widen columns whose values on screen are cut (after a sort, a jump, a scroll); cheap: one page."""
        m = self.model
        if not m.window_rows:
            return
        fm = self.view.fontMetrics()
        top = max(0, self.view.verticalScrollBar().value())
        stop = min(m.window_rows, top + self.page_rows + 1)
        for c in range(m.columnCount()):
            if c in self._user_widths:
                continue
            widest = max((fm.horizontalAdvance(str(m.data(m.index(r, c)) or "")) for r in range(top, stop)),
                         default=0)
            want = min(widest + 16, MAX_AUTO_WIDTH)
            if want > self.view.columnWidth(c):
                self._set_width(c, want)

    # ---- scrolling --------------------------------------------------------------------
    @property
    def page_rows(self) -> int:
        h = self.view.verticalHeader().defaultSectionSize()
        return max(1, self.view.viewport().height() // h)

    def _update_scrollbar(self) -> None:
        page = self.page_rows
        self.model.lazy_chunk = page + 1
        top = self.model.window_start + self.view.verticalScrollBar().value()
        self._syncing = True
        self.scrollbar.setRange(0, max(0, self.model.n_view - page))
        self.scrollbar.setPageStep(page)
        self.scrollbar.setValue(top)
        self._syncing = False
        self.model.show_screen(top, page)

    def _on_scrollbar(self, top: int) -> None:
        if self._syncing:
            return
        self._scroll_to_top(top)

    def _scroll_to_top(self, top: int) -> None:
        m = self.model
        page = self.page_rows
        if not (m.window_start <= top and top + page <= m.window_start + m.window_rows):
            self._move_window(top - m.window // 2)
        self._syncing = True
        self.view.verticalScrollBar().setValue(top - m.window_start)
        self._syncing = False
        self._update_scrollbar()

    def _on_inner_scrolled(self, value: int) -> None:
        if self._syncing:
            return
        m = self.model
        margin = m.window // 4
        top = m.window_start + value
        near_start = value < margin and m.window_start > 0
        near_end = value + self.page_rows > m.window_rows - margin and m.window_start + m.window_rows < m.n_view
        if near_start or near_end:
            self._move_window(top - m.window // 2)
            self._syncing = True
            self.view.verticalScrollBar().setValue(top - m.window_start)
            self._syncing = False
        self._update_scrollbar()

    def _move_window(self, start: int) -> None:
        if not self.model.set_window_start(start):
            return
        self._restore_current()

    def _restore_current(self) -> None:
        """Put Qt's current index back on the same view row after the window slid."""
        sel = self.view.selectionModel()
        self._syncing = True
        try:
            sel.blockSignals(True)
            sel.clearSelection()
            cur = self._current
            m = self.model
            if cur is not None and m.window_start <= cur < m.window_start + m.window_rows:
                col = max(0, self.view.currentIndex().column())
                idx = m.index(cur - m.window_start, col)
                sel.setCurrentIndex(idx, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                    | QItemSelectionModel.SelectionFlag.Rows)
            else:
                sel.setCurrentIndex(QModelIndex(), QItemSelectionModel.SelectionFlag.NoUpdate)
        finally:
            sel.blockSignals(False)
            self._syncing = False
        self.view.viewport().update()

    # ---- current row and navigation -----------------------------------------------------
    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing:
            return
        self._current = self.model.window_start + current.row() if current.isValid() else None
        self.currentRowChanged.emit(self.current_source_row())

    def current_view_row(self) -> int | None:
        return self._current

    def current_source_row(self) -> int:
        if self._current is None or self._current >= self.model.n_view:
            return -1
        return self.model.source_row(self._current)

    def go_to_view_row(self, row: int) -> None:
        """Scroll ``row`` (a view row) into the middle of the viewport and make it current."""
        m = self.model
        if m.n_view == 0:
            return
        row = max(0, min(int(row), m.n_view - 1))
        page = self.page_rows
        top = self.scrollbar.value()
        if not (top <= row < top + page):
            self._scroll_to_top(max(0, min(row - page // 2, m.n_view - page)))
        col = max(0, self.view.currentIndex().column())
        idx = m.index(row - m.window_start, col)
        self.view.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.view.setFocus()

    def go_to_source_row(self, source_row: int) -> bool:
        """Select a source row; False when it does not exist or the filter hides it."""
        view_row = self.model.view_row_of(int(source_row))
        if view_row is None:
            return False
        self.go_to_view_row(view_row)
        return True

    def select_source_rows(self, rows: np.ndarray) -> bool:
        """Make the first of ``rows`` current and select those in the window; False if it is hidden."""
        if not self.go_to_source_row(int(rows[0])):
            return False
        if len(rows) > 1:
            m = self.model
            selection = QItemSelection()
            last = m.columnCount() - 1
            for src in rows[1:1000].tolist():  # a sample's rows; more would be a filter, not a selection
                v = m.view_row_of(int(src))
                if v is not None and m.window_start <= v < m.window_start + m.window_rows:
                    r = v - m.window_start
                    selection.select(m.index(r, 0), m.index(r, last))
            self.view.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.Select)
        return True

    def selected_view_rows(self) -> np.ndarray:
        rows = {i.row() for i in self.view.selectionModel().selectedIndexes()}
        return np.asarray(sorted(rows), dtype=np.int64) + self.model.window_start

    def _on_view_changed(self) -> None:
        self._current = None
        self._measure_timer.start()
        self._syncing = True
        self.view.verticalScrollBar().setValue(0)
        self._syncing = False
        self._update_scrollbar()
        self.currentRowChanged.emit(-1)

    # ---- sorting and copying -------------------------------------------------------------
    def _on_sort_indicator(self, section: int, order: Qt.SortOrder) -> None:
        """A header click moved Qt's sort arrow: sort, clear the sort, or put an unsortable column's arrow back."""
        if section < 0:
            self._sort = None
            self.sortCleared.emit()
            return
        col = self.model.table.columns[section]
        if col.lazy:  # read on demand: it cannot be sorted, and the arrow stays with the real order
            self._show_indicator(self._sort)
            return
        descending = order == Qt.SortOrder.DescendingOrder
        self._sort = (section, descending)
        self.sortRequested.emit(col.title, descending)

    def _show_indicator(self, sort: tuple[int, bool] | None) -> None:
        hh = self.view.horizontalHeader()
        hh.blockSignals(True)
        try:
            if sort is None:
                hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
            else:
                hh.setSortIndicator(sort[0], Qt.SortOrder.DescendingOrder if sort[1] else Qt.SortOrder.AscendingOrder)
        finally:
            hh.blockSignals(False)
        hh.viewport().update()

    def show_sort_indicator(self, title: str | None, descending: bool = False) -> None:
        """Put the arrow on column ``title`` (None: no arrow) without sorting anything."""
        titles = [c.title for c in self.model.table.columns]
        self._sort = (titles.index(title), descending) if title in titles else None
        self._show_indicator(self._sort)

    def clear_sort_indicator(self) -> None:
        self.show_sort_indicator(None)

    def selected_cells(self) -> CellSelection | None:
        """The selected cells (else the current one), from the selection's ranges: no index per cell."""
        ranges = [(r.top(), r.bottom(), r.left(), r.right()) for r in self.view.selectionModel().selection()]
        if not ranges:
            cur = self.view.currentIndex()
            if not cur.isValid():
                return None
            ranges = [(cur.row(), cur.row(), cur.column(), cur.column())]
        lines = np.unique(np.concatenate([np.arange(top, bottom + 1) for top, bottom, _, _ in ranges]))
        cols = sorted({c for _, _, left, right in ranges for c in range(left, right + 1)})
        at = {c: k for k, c in enumerate(cols)}
        mask = np.zeros((len(lines), len(cols)), dtype=bool)
        for top, bottom, left, right in ranges:
            i0, i1 = np.searchsorted(lines, [top, bottom + 1])
            mask[i0:i1, at[left] : at[right] + 1] = True
        rows = self.model.sources_of(self.model.window_start + lines)  # -1: not placed by a sort yet, copied empty
        whole = len(cols) == self.model.columnCount() and bool(mask.all())
        titles = [self.model.table.columns[c].title for c in cols] if whole else None
        return CellSelection(rows, cols, mask, titles)

    def selection_tsv(self) -> str:
        """The selected cells as tab-separated text; whole selected rows get a header line."""
        cells = self.selected_cells()
        return "" if cells is None else selection_text(self.model, cells)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._update_scrollbar()
