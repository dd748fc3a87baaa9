"""Virtual Qt table models over kastore arrays: values by index, and tskit ragged rows.

Both models format only the cells Qt asks for, straight from the numpy view, so a
10^8-element column costs no more than a short one.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from itarcore.document.kastore import ragged_row

_Index = QModelIndex | QPersistentModelIndex
CELL_CHARS = 240  # longer ragged values are cut in the grid; the tooltip and detail pane show more
TOOLTIP_CHARS = 4000
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def format_scalar(value: Any) -> str:
    """numpy's shortest round-trip text for one element ('0.1' for float32 0.1, not 0.10000000149...)."""
    return str(value)


def format_row(values: np.ndarray, as_text: bool) -> str:
    """One ragged row: UTF-8 text (bad bytes escaped) for byte columns, else a bracketed list."""
    if as_text:
        return values.tobytes().decode("utf-8", "backslashreplace")
    return "[" + ", ".join(format_scalar(v) for v in values[:1000]) + (", …]" if len(values) > 1000 else "]")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class ArrayValuesModel(QAbstractTableModel):
    """index | value (| char for one-byte integers) for any 1-D array."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._array = np.empty(0, np.uint8)
        self._chars = False

    def set_array(self, array: np.ndarray) -> None:
        self.beginResetModel()
        self._array = array
        self._chars = array.dtype.itemsize == 1 and array.dtype.kind in "iu"
        self.endResetModel()

    @property
    def array(self) -> np.ndarray:
        return self._array

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._array)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else (3 if self._chars else 2)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return ("index", "value", "char")[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col < 2 else None
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if col == 0:
            return str(row)
        value = self._array[row]
        if col == 1:
            return format_scalar(value)
        code = int(value) & 0xFF
        return chr(code) if 32 <= code < 127 else f"\\x{code:02x}"


class RaggedRowsModel(QAbstractTableModel):
    """row | length | value, one row per tskit ragged row ``data[offsets[i]:offsets[i+1]]``."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._data = np.empty(0, np.uint8)
        self._offsets = np.zeros(1, np.uint32)
        self._as_text = True

    def set_pair(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """``offsets`` must already be checked (``ragged_problem`` returned '')."""
        self.beginResetModel()
        self._data, self._offsets = data, offsets
        self._as_text = data.dtype.itemsize == 1 and data.dtype.kind in "iu"
        self.endResetModel()

    def clear(self) -> None:
        self.set_pair(np.empty(0, np.uint8), np.zeros(1, np.uint32))

    def row_values(self, row: int) -> np.ndarray:
        return ragged_row(self._data, self._offsets, row)

    def row_text(self, row: int) -> str:
        return format_row(self.row_values(row), self._as_text)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else max(0, len(self._offsets) - 1)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 3

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return ("row", "length", "text" if self._as_text else "values")[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col < 2 else None
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return str(row)
            if col == 1:
                return str(int(self._offsets[row + 1]) - int(self._offsets[row]))
            # one line per cell: newlines inside metadata would break the fixed row height
            return _clip(self.row_text(row), CELL_CHARS).replace("\n", "⏎")
        if role == Qt.ItemDataRole.ToolTipRole and col == 2:
            return _clip(self.row_text(row), TOOLTIP_CHARS)
        return None
