"""Qt adapter over a Document's header fields: name, value, offset, size, type."""
from __future__ import annotations

import textwrap
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from itarcore.document import HeaderField

_ROOT = QModelIndex()
Index = QModelIndex | QPersistentModelIndex
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
TOOLTIP_COLUMNS = 96  # a plain-text tooltip never wraps by itself: a long value would run off the screen


def _wrapped(text: str) -> str:
    return "\n".join(textwrap.wrap(text, TOOLTIP_COLUMNS, break_long_words=True, replace_whitespace=False)) or text


class HeaderModel(QAbstractTableModel):
    def __init__(self, fields: list[HeaderField], parent: Any = None) -> None:
        super().__init__(parent)
        self.fields = list(fields)
        self.grouped = len({f.group for f in self.fields}) > 1
        # the value is what people look for: right after the field's name, not behind offset, size and type
        self.titles = (["Group"] if self.grouped else []) + ["Field", "Value", "Offset", "Size", "Type"]

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.fields)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.titles)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        f = self.fields[index.row()]
        title = self.titles[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            if title == "Group":  # named once, on the first field of each group
                first = index.row() == 0 or self.fields[index.row() - 1].group != f.group
                return f.group if first else ""
            if title == "Field":
                return f.name
            if title == "Offset":
                return f"{f.offset:,}"
            if title == "Size":
                return f"{f.size:,}"
            if title == "Value":
                return f.text
            return f.type
        if role == Qt.ItemDataRole.ToolTipRole:
            raw = repr(f.value) if not isinstance(f.value, (bytes, bytearray)) else f.value.hex(" ")
            return (f"{f.name} at byte {f.offset} (0x{f.offset:x}), {f.size} bytes, {f.type}\n{_wrapped(f.text)}\n"
                    f"{_wrapped('raw: ' + raw)}")
        if role == Qt.ItemDataRole.TextAlignmentRole and title in ("Offset", "Size"):
            return _RIGHT
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.titles[section]
        return None

    def field_at(self, offset: int) -> int | None:
        """Row of the narrowest field covering file byte ``offset``."""
        best: tuple[int, int] | None = None
        for row, f in enumerate(self.fields):
            if f.offset <= offset < f.offset + max(1, f.size) and (best is None or f.size < best[1]):
                best = (row, f.size)
        return None if best is None else best[0]
