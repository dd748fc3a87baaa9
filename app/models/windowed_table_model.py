"""A thin Qt adapter over one Table, windowed so Qt never sees more than WINDOW rows.

A QTableView stops working past about 2**31 pixels of rows (~70M rows). As in
ViTables, the model exposes a sliding window of at most ``WINDOW`` rows of the
*view* (the filtered and sorted rows); ``TableGrid`` maps a custom scrollbar over
the full range onto it. View rows map to source rows through ``view_rows``
(None = identity, so an unfiltered 200M-row table costs no index array).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from itarcore.document import Column, Table

WINDOW = 100_000
LAZY_CACHE_LIMIT = 500_000  # resolved lazy values kept (and searchable by the substring filter)

_NUMERIC = {"int", "hex", "size", "float"}
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_ROOT = QModelIndex()
Index = QModelIndex | QPersistentModelIndex


class WindowedTableModel(QAbstractTableModel):
    windowMoved = Signal(int)  # new window start (view row)
    viewChanged = Signal()  # filter or sort changed the view rows

    def __init__(self, table: Table, window: int = WINDOW, parent: Any = None) -> None:
        super().__init__(parent)
        self.table = table
        self.window = window
        self.view_rows: np.ndarray | None = None
        self.window_start = 0
        self.lazy_chunk = 64  # lazy values fetched per miss; the grid sets it to a viewport of rows
        # formatter, alignment and source chosen once per column, never per cell
        self._columns: list[Column] = list(table.columns)
        self._formatters: list[Callable[[Any], str]] = [self._formatter(c) for c in self._columns]
        self._align = [_RIGHT if c.kind in _NUMERIC else _LEFT for c in self._columns]
        self._lazy: dict[int, OrderedDict[int, Any]] = {
            i: OrderedDict() for i, c in enumerate(self._columns) if c.lazy
        }

    @staticmethod
    def _formatter(col: Column) -> Callable[[Any], str]:
        if col.kind == "enum" and col.labels is not None:
            labels = list(col.labels)
            n = len(labels)
            return lambda v: labels[int(v)] if 0 <= int(v) < n else str(int(v))
        if col.kind == "hex":
            return lambda v: f"{int(v):016x}"
        if col.kind == "size":
            return lambda v: f"{int(v):,}"
        if col.kind == "int":
            return lambda v: str(int(v))
        return col.format

    # ---- view rows and the window -------------------------------------------------
    @property
    def n_view(self) -> int:
        return self.table.n_rows if self.view_rows is None else len(self.view_rows)

    @property
    def window_rows(self) -> int:
        return max(0, min(self.window, self.n_view - self.window_start))

    def source_row(self, view_row: int) -> int:
        return int(view_row if self.view_rows is None else self.view_rows[view_row])

    def source_rows(self, view_rows: np.ndarray) -> np.ndarray:
        view_rows = np.asarray(view_rows, dtype=np.int64)
        return view_rows if self.view_rows is None else self.view_rows[view_rows]

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

    def set_view_rows(self, rows: np.ndarray | None) -> None:
        """Apply a filter/sort result (computed in a worker)."""
        new_n = self.table.n_rows if rows is None else len(rows)
        if min(self.window, new_n) == self.window_rows:
            # same row count: a layout change keeps the view's scroll and header state
            self.layoutAboutToBeChanged.emit()
            self.view_rows, self.window_start = rows, 0
            self.layoutChanged.emit()
        else:
            self.beginResetModel()
            self.view_rows, self.window_start = rows, 0
            self.endResetModel()
        self.viewChanged.emit()

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
        if src in cache:
            return cache[src]
        # fetch the rows around this one in one call (what the viewport is about to paint)
        stop = min(self.n_view, view_row + self.lazy_chunk)
        rows = self.source_rows(np.arange(view_row, stop, dtype=np.int64))
        try:
            values = self._columns[col].values(rows)  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - a bad row must not break painting
            values = [f"⚠ {exc}"] * len(rows)
        for r, v in zip(rows.tolist(), values):
            cache[r] = v
        while len(cache) > LAZY_CACHE_LIMIT:
            cache.popitem(last=False)
        return cache.get(src)

    def value(self, view_row: int, col: int) -> Any:
        """Raw value at a view row (not limited to the window)."""
        if col in self._lazy:
            return self._lazy_value(col, view_row)
        return self._columns[col].values[self.source_row(view_row)]  # type: ignore[index]

    def text(self, view_row: int, col: int) -> str:
        value = self.value(view_row, col)
        return "" if value is None else self._formatters[col](value)

    # ---- Qt model API ---------------------------------------------------------------
    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else self.window_rows

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(self.window_start + index.row(), index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return self._align[index.column()]
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return self._columns[section].title
            if role == Qt.ItemDataRole.ToolTipRole:
                col = self._columns[section]
                sortable = "" if col.lazy else "\nClick to sort."
                return (col.tooltip or col.title) + sortable
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return str(self.source_row(self.window_start + section))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
