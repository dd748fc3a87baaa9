"""A thin Qt adapter over one Table, windowed so Qt never sees more than WINDOW rows.

A QTableView stops working past about 2**31 pixels of rows (~70M rows). As in
ViTables, the model exposes a sliding window of at most ``WINDOW`` rows of the
*view* (the filtered and sorted rows); ``TableGrid`` maps a custom scrollbar over
the full range onto it. View rows map to source rows through ``view_rows``
(None = identity, so an unfiltered 200M-row table costs no index array).

While a sort is still ordering the rows, only the first rows of the new order are
known (``view_rows`` is shorter than ``n_view``): the rest show empty until the full
order arrives. With ``fetch_in_background`` set (the grid sets it), lazy values that
are not cached yet are read by a worker and painted when they arrive, so a costly
resolver (per-extension counts over 100M rows, names on a cold disk) never runs on the
GUI thread while painting; ``value``/``text`` stay synchronous for copy and export. The
columns of a remote index are resolvers of the rows asked for, so they are lazy in the same
way: placeholders until a worker has their block.

Columns that live in a file mapping (a local index's rows) are painted from a
:class:`~app.models.row_block.RowBlock`: a copy of the screen's rows and a margin of
``MARGIN_SCREENS`` screens each side, read by the same private worker thread as the lazy
values, or on the GUI thread when every page it needs is in RAM (then nothing flickers).
The grid names the screen (``show_screen``); a block is read again once the screen comes
within half a margin of its edge, so scrolling within the margin never waits, and a jump
(a sort, a scrollbar drag, Go to row) shows placeholders until one read lands.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QThreadPool, Signal

from app.models.cell_reads import cell_formatter, read_block_job, resolve, resolve_job
from app.models.lazy_values import LazyValues
from app.models.row_block import RowBlock, block_resident, mapped_columns, read_block
from app.workers import JobWorker
from itarcore.document import Column, Table

WINDOW = 20_000  # rows Qt sees: its headers do O(window) work on every layout change
MARGIN_SCREENS = 3  # screens of rows read ahead above and below the screen

_NUMERIC = {"int", "hex", "size", "float"}
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_ROOT = QModelIndex()
Index = QModelIndex | QPersistentModelIndex
PENDING = "…"  # a lazy value being read in the background
# Qt enums looked up once: an enum operation in Python costs microseconds, and paint calls these per cell
_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_HORIZONTAL = Qt.Orientation.Horizontal
_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


def _rows_of(view_rows: np.ndarray | None, part: slice) -> np.ndarray:
    """The source rows of view rows ``part`` (None: the file's own order)."""
    return np.arange(part.start, part.stop) if view_rows is None else view_rows[part]


class WindowedTableModel(QAbstractTableModel):
    windowMoved = Signal(int)  # new window start (view row)
    viewChanged = Signal()  # filter or sort changed the view rows
    lazyFetched = Signal()  # background lazy values arrived and were painted
    rowsFetched = Signal()  # a block of rows read in the background arrived and was painted

    def __init__(self, table: Table, window: int = WINDOW, parent: Any = None) -> None:
        super().__init__(parent)
        self.table = table
        self.window = window
        self.view_rows: np.ndarray | None = None
        self._n_pending: int | None = None  # n_view while view_rows holds only the first rows of an order
        self.window_start = 0
        self.lazy_chunk = 64  # lazy values fetched per miss; the grid sets it to a viewport of rows
        # formatter, alignment and source chosen once per column, never per cell
        self._columns: list[Column] = list(table.columns)
        self._formatters: list[Callable[[Any], str]] = [cell_formatter(c) for c in self._columns]
        self._align = [_RIGHT if c.kind in _NUMERIC else _LEFT for c in self._columns]
        self._lazy = LazyValues(self._columns)
        self.fetch_in_background = False
        self.cell_tooltips = False  # the grid turns on tooltips with the full value of each cell
        self._fetch_pool: QThreadPool | None = None  # one private thread: never queued behind a long sort
        self._fetch_workers: dict[int, JobWorker] = {}  # running reads by serial number
        self._fetch_serial = 0
        self._mapped = mapped_columns(self._columns)  # read from the block, never straight from the file
        self._mapped_set = set(self._mapped)
        self._block: RowBlock | None = None
        self._block_reading: tuple[int, int] | None = None  # view rows a worker is reading
        self._block_error: tuple[int, int, str] | None = None  # view rows whose read failed, and why
        self._screen = (0, self.lazy_chunk)  # (top view row, rows) as the grid last named them
        self._placeholders = False  # a mapped cell was painted as PENDING since the last block
        self.margin_screens = MARGIN_SCREENS

    # ---- view rows and the window -------------------------------------------------
    @property
    def n_view(self) -> int:
        if self._n_pending is not None:
            return self._n_pending
        return self.table.n_rows if self.view_rows is None else len(self.view_rows)

    @property
    def n_known(self) -> int:
        """View rows whose source row is known (fewer than n_view while a sort finishes)."""
        return self.table.n_rows if self.view_rows is None else len(self.view_rows)

    @property
    def window_rows(self) -> int:
        return max(0, min(self.window, self.n_view - self.window_start))

    def source_row(self, view_row: int) -> int:
        """The source row at ``view_row``; -1 while a sort has not placed it yet."""
        if self.view_rows is None:
            return int(view_row)
        return int(self.view_rows[view_row]) if view_row < len(self.view_rows) else -1

    def source_rows(self, view_rows: np.ndarray) -> np.ndarray:
        view_rows = np.asarray(view_rows, dtype=np.int64)
        if self.view_rows is None:
            return view_rows
        return self.view_rows[view_rows[view_rows < len(self.view_rows)]]

    def view_row_of(self, source_row: int) -> int | None:
        """Where a source row sits in the view, or None if the filter hides it."""
        if self.view_rows is None:
            return source_row if 0 <= source_row < self.table.n_rows else None
        hits = np.flatnonzero(self.view_rows == source_row)
        return int(hits[0]) if len(hits) else None

    def set_window_start(self, start: int) -> bool:
        """Slide the window; rows keep their count, so views just repaint. True if it moved."""
        start = max(0, min(int(start), max(0, self.n_view - self.window)))
        if start == self.window_start:
            return False
        self.window_start = start
        if self.window_rows:
            self.dataChanged.emit(self.index(0, 0), self.index(self.window_rows - 1, self.columnCount() - 1))
            self.headerDataChanged.emit(Qt.Orientation.Vertical, 0, self.window_rows - 1)
        self.windowMoved.emit(start)
        return True

    def set_view_rows(self, rows: np.ndarray | None, n_view: int | None = None) -> None:
        """Show a new filter/sort result (computed in a worker) from its top.

        ``n_view`` > len(rows) means ``rows`` are the first rows of an order still being computed.
        """
        pending = n_view if rows is not None and n_view is not None and n_view > len(rows) else None
        new_n = pending if pending is not None else (self.table.n_rows if rows is None else len(rows))
        if min(self.window, new_n) == self.window_rows:
            # same row count: a layout change keeps the view's scroll and header state
            self.layoutAboutToBeChanged.emit()
            self.view_rows, self._n_pending, self.window_start = rows, pending, 0
            self._check_block()
            self.layoutChanged.emit()
        else:
            self.beginResetModel()
            self.view_rows, self._n_pending, self.window_start = rows, pending, 0
            self._check_block()
            self.endResetModel()
        self.viewChanged.emit()

    def continue_view_rows(self, rows: np.ndarray | None, n_view: int | None = None) -> None:
        """Replace the view rows by an answer that *continues* the shown one, keeping scroll and selection.

        The shown rows are a prefix of ``rows`` (a filter's first matches, a sort's first window),
        so every view row already on screen keeps its source row.
        """
        before, known, start, old = self.window_rows, self.n_known, self.window_start, self.view_rows
        self.view_rows = rows
        self._n_pending = n_view if rows is not None and n_view is not None and n_view > len(rows) else None
        self.window_start = max(0, min(self.window_start, self.n_view - self.window))
        self._check_block()
        after = self.window_rows
        if after > before:
            self.beginInsertRows(_ROOT, before, after - 1)
            self.endInsertRows()
        elif after < before:
            self.beginRemoveRows(_ROOT, after, before - 1)
            self.endRemoveRows()
        # only rows that were still pending change (a full repaint of a big grid is tens of ms on the GUI thread)
        first = 0 if self.window_start != start else min(after, max(0, known - start))
        if first:  # rows already shown: the early answer must be the prefix it promised; repaint any that is not
            shown = slice(start, start + first)
            differ = np.flatnonzero(_rows_of(old, shown) != _rows_of(rows, shown))
            first = int(differ[0]) if len(differ) else first
        if after > first:
            self.dataChanged.emit(self.index(first, 0), self.index(after - 1, self.columnCount() - 1))
            self.headerDataChanged.emit(Qt.Orientation.Vertical, first, after - 1)
        self.viewChanged.emit()

    # ---- the block of mapped rows around the screen ------------------------------------
    def show_screen(self, top: int, rows: int) -> None:
        """The grid shows view rows ``top .. top + rows``: have them (and a margin) read."""
        self._screen = (max(0, int(top)), max(1, int(rows)))
        failed = self._block_error
        if failed is not None and not (failed[0] < top + rows and top < failed[1]):
            self._block_error = None  # the user moved away from rows that failed: coming back reads them again
        self._plan_block()

    def sources_of(self, v: np.ndarray) -> np.ndarray:
        """Source rows of view rows ``v``: -1 where a sort has not placed one, -2 past the end."""
        v = np.asarray(v, dtype=np.int64)
        if self.view_rows is None:
            return np.where(v < self.table.n_rows, v, -2)
        src = np.where(v < self.n_view, -1, -2)
        known = v < len(self.view_rows)
        src[known] = self.view_rows[v[known]]
        return src

    def _block_valid(self, block: RowBlock) -> bool:
        return np.array_equal(block.src, self.sources_of(np.arange(block.first, block.stop)))

    def _check_block(self) -> None:
        """After the view rows changed: keep the block only if its rows are still where they were."""
        if self._block is not None and not self._block_valid(self._block):
            self._block = None
        self._block_error = None  # other rows now: worth another read

    def _plan_block(self, view_row: int | None = None) -> None:
        """Read a new block if the screen (and half a margin each side) is not in hand or on its way."""
        if not self._mapped or not self.fetch_in_background:
            return
        top, rows = self._screen
        if view_row is not None and not top <= view_row < top + rows:
            top = view_row  # a cell off the screen the grid named (a tooltip, a measure)
        n = self.n_view
        stop = min(n, top + rows)
        margin = rows * self.margin_screens
        need = (max(0, top - margin // 2), min(n, stop + margin // 2))
        if need[1] <= need[0] or (self._block is not None and self._block.covers(*need)):
            return
        failed = self._block_error
        if failed is not None and failed[0] <= need[0] and need[1] <= failed[1]:
            return  # these rows failed to read: their cells say why; no read again on every paint
        if self._block_reading is not None:
            return  # one read at a time: when it lands, the screen is planned again
        first, last = max(0, top - margin), min(n, stop + margin)
        self._block_error = None  # other rows than those that failed: they may read now
        src = self.sources_of(np.arange(first, last))
        if block_resident(self._columns, self._mapped, src):
            self._set_block(read_block(self._columns, self._mapped, first, src, in_ram=True))
            return
        self._block_reading = (first, last)
        self._start_fetch(read_block_job, self._block_fetched, self._columns, self._mapped, first, src)

    def _set_block(self, block: RowBlock) -> None:
        self._block = block
        if not self._placeholders:
            return
        top, rows = self._screen
        if block.covers(top, max(top, min(self.n_view, top + rows))):
            self._placeholders = False  # else a block read before a jump landed: the screen still waits
        if self._repaint_mapped(block.first, block.stop):
            self.rowsFetched.emit()

    def _repaint_mapped(self, first: int, stop: int) -> bool:
        """Have the mapped cells of view rows ``first .. stop`` painted again; whether any is in Qt's window."""
        lo, hi = max(first, self.window_start), min(stop, self.window_start + self.window_rows)
        if hi > lo:
            self.dataChanged.emit(self.index(lo - self.window_start, self._mapped[0]),
                                  self.index(hi - 1 - self.window_start, self._mapped[-1]))
        return hi > lo

    def _block_fetched(self, result: tuple[int, RowBlock | str]) -> None:
        serial, block = result
        self._fetch_workers.pop(serial, None)
        (first, last), self._block_reading = self._block_reading or (0, 0), None
        if isinstance(block, str):  # the read failed: its rows say so until the screen needs other rows
            self._block_error = (first, last, block)
            self._repaint_mapped(first, last)
            return
        if self._block_valid(block):  # the view may have changed while it was read
            self._set_block(block)
        self._plan_block()  # the screen may have moved on meanwhile

    def _display_mapped(self, col: int, view_row: int) -> str:
        """The painted text of a mapped cell: from the block, or PENDING until a worker has read it."""
        block = self._block
        if block is None or not block.first <= view_row < block.stop:
            self._plan_block(view_row)  # the rows may be in RAM: then they are read here and now
            block = self._block
            if block is None or not block.first <= view_row < block.stop:
                failed = self._block_error
                if failed is not None and failed[0] <= view_row < failed[1]:
                    return f"⚠ {failed[2]}"
                self._placeholders = True
                return PENDING if self.source_row(view_row) >= 0 else ""
        value = block.values[col][view_row - block.first]
        return "" if value is None else self._formatters[col](value)

    # ---- lazy values --------------------------------------------------------------
    def resolved(self, title: str) -> dict[int, Any]:
        """Values of lazy column ``title`` fetched so far, {source row: value}."""
        for i, col in enumerate(self._columns):
            if col.title == title and i in self._lazy:
                return dict(self._lazy[i])
        return {}

    def _lazy_value(self, col: int, view_row: int) -> Any:
        cache = self._lazy[col]
        src = self.source_row(view_row)
        if src < 0:
            return None
        if src in cache:
            return cache[src]
        rows = self._rows_around(view_row)
        self._lazy.store(col, rows, resolve(self._columns[col], rows))
        return cache.get(src)

    def _rows_around(self, view_row: int) -> np.ndarray:
        """The source rows from ``view_row`` on that the viewport is about to paint: one call for all."""
        stop = min(self.n_view, view_row + self.lazy_chunk)
        return self.source_rows(np.arange(view_row, stop, dtype=np.int64))

    def _display_lazy(self, col: int, view_row: int) -> str:
        """The painted text of a lazy cell: cached, or read by a worker (PENDING meanwhile)."""
        src = self.source_row(view_row)
        if src < 0:
            return ""
        cache = self._lazy[col]
        if src in cache:
            value = cache[src]
            return "" if value is None else self._formatters[col](value)
        if src not in self._lazy.reading[col]:
            self._fetch(col, self._lazy.unasked(col, self._rows_around(view_row)))
        return PENDING

    def _fetch(self, col: int, rows: np.ndarray) -> None:
        self._lazy.reading[col].update(rows.tolist())
        self._start_fetch(resolve_job, self._fetched, col, self._columns[col], rows)

    def _start_fetch(self, job: Callable[..., Any], on_result: Callable[[Any], None], *args: Any) -> None:
        """Run ``job(serial, *args)`` on the model's one reading thread; ``on_result`` gets what it returns."""
        if self._fetch_pool is None:
            self._fetch_pool = QThreadPool(self)
            self._fetch_pool.setMaxThreadCount(1)
        self._fetch_serial += 1
        worker = JobWorker(job, self._fetch_serial, *args, pass_progress=False)
        # a bound slot of this QObject: Qt drops the delivery if the model is deleted first (a closed file)
        worker.returned.connect(on_result)
        self._fetch_workers[self._fetch_serial] = worker
        worker.start(self._fetch_pool)
        return worker

    def _fetched(self, result: tuple[int, int, np.ndarray, list[Any]]) -> None:
        serial, col, rows, values = result
        self._fetch_workers.pop(serial, None)
        self._lazy.reading[col].difference_update(rows.tolist())
        self._lazy.store(col, rows, values)
        if self.window_rows:
            self.dataChanged.emit(self.index(0, col), self.index(self.window_rows - 1, col))
        self.lazyFetched.emit()

    @property
    def fetching(self) -> bool:
        return bool(self._fetch_workers)

    def stop_fetching(self) -> None:
        """Wait for the background reads (each is one screen of values) before the document closes."""
        for worker in list(self._fetch_workers.values()):
            worker.quit()
            worker.done_event.wait(30)
        self._fetch_workers.clear()

    def value(self, view_row: int, col: int) -> Any:
        """Raw value at a view row (not limited to the window)."""
        if col in self._lazy:
            return self._lazy_value(col, view_row)
        return self._columns[col].values[self.source_row(view_row)]  # type: ignore[index]

    def texts(self, rows: np.ndarray, col: int) -> list[str]:
        """Text of column ``col`` at source ``rows`` ('' for -1), as painted; safe off the GUI thread
        (lazy values come from the cache where they are, else from the column, and are not stored)."""
        fmt, out = self._formatters[col], [""] * len(rows)
        known = np.flatnonzero(rows >= 0)
        src = rows[known]
        if col in self._lazy:
            cache, missing = self._lazy[col], object()
            values = [cache.get(r, missing) for r in src.tolist()]
            todo = [i for i, v in enumerate(values) if v is missing]
            for i, v in zip(todo, resolve(self._columns[col], src[todo]) if todo else []):
                values[i] = v
        else:
            values = self._columns[col].values[src]  # type: ignore[index]
        for i, v in zip(known.tolist(), values):
            out[i] = "" if v is None else fmt(v)
        return out

    def cells_in_ram(self, rows: np.ndarray, cols: list[int]) -> bool:
        """Whether the values of ``rows`` (source rows) in ``cols`` are at hand without the disk: mapped
        columns' pages in RAM, lazy values cached (a resolver may read the disk, or a server)."""
        known = rows[rows >= 0]
        mapped = [c for c in cols if c in self._mapped_set]
        if mapped and len(known) and not block_resident(self._columns, mapped, known):
            return False
        return all(r in self._lazy[c] for c in cols if c in self._lazy for r in known.tolist())

    def text(self, view_row: int, col: int) -> str:
        if self.source_row(view_row) < 0:
            return ""
        value = self.value(view_row, col)
        return "" if value is None else self._formatters[col](value)

    # ---- Qt model API ---------------------------------------------------------------
    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else self.window_rows

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if role == _DISPLAY:
            view_row, col = self.window_start + index.row(), index.column()
            if self.fetch_in_background:
                if col in self._mapped_set:
                    return self._display_mapped(col, view_row)
                if col in self._lazy:
                    return self._display_lazy(col, view_row)
            return self.text(view_row, col)
        if role == _ALIGN:
            return self._align[index.column()]
        if role == _TOOLTIP and self.cell_tooltips:
            # the whole value, for a cell too narrow to show it
            return self.data(index) or None
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:
        if orientation == _HORIZONTAL:
            if role == _DISPLAY:
                return self._columns[section].title
            if role == _TOOLTIP:
                col = self._columns[section]
                sortable = "\n(read on demand: cannot be sorted)" if col.lazy else "\nClick to sort."
                return (col.tooltip or col.title) + sortable
            return None
        if role == _DISPLAY:
            src = self.source_row(self.window_start + section)
            return str(src) if src >= 0 else PENDING
        if role == _TOOLTIP and self.source_row(self.window_start + section) < 0:
            return "Still sorting: this part of the order is not known yet."
        if role == _ALIGN:
            return _RIGHT
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        return _FLAGS
