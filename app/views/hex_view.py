"""A hex pane over a window of the file's bytes, with one highlighted byte range.

Clicking a byte reports its absolute file offset (the header panel then selects the
field that covers it); ``show_range`` loads and highlights any part of the file.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFontDatabase, QPalette
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

_ROOT = QModelIndex()
Index = QModelIndex | QPersistentModelIndex
BYTES_PER_LINE = 16
MAX_WINDOW = 64 * 1024  # bytes held at once; larger ranges are highlighted from their start


class HexModel(QAbstractTableModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.base = 0
        self.data_bytes = b""
        self.highlight = (0, 0)  # absolute [start, end)
        self.highlight_brush = None

    def set_bytes(self, base: int, data: bytes) -> None:
        self.beginResetModel()
        self.base, self.data_bytes = base, bytes(data)
        self.endResetModel()

    def set_highlight(self, start: int, size: int) -> None:
        self.highlight = (start, start + max(0, size))
        if self.rowCount():
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, BYTES_PER_LINE))

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else (len(self.data_bytes) + BYTES_PER_LINE - 1) // BYTES_PER_LINE

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else BYTES_PER_LINE + 1

    def offset_of(self, index: Index) -> int | None:
        if not index.isValid() or index.column() >= BYTES_PER_LINE:
            return None
        pos = index.row() * BYTES_PER_LINE + index.column()
        return self.base + pos if pos < len(self.data_bytes) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        row, col = index.row(), index.column()
        line = self.data_bytes[row * BYTES_PER_LINE:(row + 1) * BYTES_PER_LINE]
        if role == Qt.ItemDataRole.DisplayRole:
            if col == BYTES_PER_LINE:
                return "".join(chr(b) if 32 <= b < 127 else "·" for b in line)
            return f"{line[col]:02x}" if col < len(line) else None
        if role == Qt.ItemDataRole.BackgroundRole and col < BYTES_PER_LINE and self.highlight_brush is not None:
            pos = self.base + row * BYTES_PER_LINE + col
            if self.highlight[0] <= pos < self.highlight[1] and col < len(line):
                return self.highlight_brush
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter if col < BYTES_PER_LINE else Qt.AlignmentFlag.AlignLeft
                       | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            return f"{self.base + section * BYTES_PER_LINE:08x}"
        return f"{section:x}" if section < BYTES_PER_LINE else "ASCII"


class HexPane(QWidget):
    byteClicked = Signal(int)  # absolute file offset

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.read: Callable[[int, int], bytes] | None = None
        self.file_size = 0
        self.model = HexModel(self)
        self.caption = QLabel(self)
        self.caption.setObjectName("hexCaption")
        self.view = QTableView(self)
        self.view.setObjectName("hexView")
        self.view.setModel(self.model)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.view.setFont(mono)
        self.view.setShowGrid(False)
        self.view.setWordWrap(False)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        fm = self.view.fontMetrics()
        vh = self.view.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(fm.height() + 2)
        vh.setFont(mono)
        hh = self.view.horizontalHeader()
        hh.setFont(mono)
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        hh.setMinimumSectionSize(8)
        hh.setDefaultSectionSize(fm.horizontalAdvance("00") + 7)
        self.view.setColumnWidth(BYTES_PER_LINE, fm.horizontalAdvance("x" * BYTES_PER_LINE) + 12)
        hh.setStretchLastSection(False)
        self.view.clicked.connect(self._on_clicked)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.caption)
        lay.addWidget(self.view, 1)
        self._update_brush()

    def _update_brush(self) -> None:
        color = self.palette().color(QPalette.ColorRole.Highlight)
        color.setAlpha(110)
        self.model.highlight_brush = color

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        self._update_brush()

    def minimum_width_hint(self) -> int:
        vh = self.view.fontMetrics().horizontalAdvance("00000000") + 14
        return vh + sum(self.view.columnWidth(c) for c in range(BYTES_PER_LINE + 1)) + 24

    def set_source(self, read: Callable[[int, int], bytes] | None, file_size: int, first: int = 4096) -> None:
        self.read, self.file_size = read, file_size
        self.model.set_highlight(0, 0)
        self._load(0, min(first, file_size))

    def _load(self, start: int, size: int) -> None:
        data = self.read(start, size) if self.read is not None and size > 0 else b""
        self.model.set_bytes(start, data)
        end = start + len(data)
        self.caption.setText(f"Bytes {start:,}–{max(start, end - 1):,} of {self.file_size:,}" if data else "No bytes")

    def show_range(self, offset: int, size: int) -> None:
        """Highlight file bytes [offset, offset+size), loading them if needed, and scroll to them."""
        loaded_end = self.model.base + len(self.model.data_bytes)
        shown = min(size, MAX_WINDOW // 2)
        if not (self.model.base <= offset and offset + shown <= loaded_end):
            start = max(0, (offset // BYTES_PER_LINE) * BYTES_PER_LINE - 256)
            self._load(start, min(MAX_WINDOW, max(4096, shown + 512), max(0, self.file_size - start)))
        self.model.set_highlight(offset, size)
        rel = offset - self.model.base
        if 0 <= rel < len(self.model.data_bytes):
            idx = self.model.index(rel // BYTES_PER_LINE, rel % BYTES_PER_LINE)
            self.view.scrollTo(idx, QAbstractItemView.ScrollHint.PositionAtCenter if rel > 256
                               else QAbstractItemView.ScrollHint.EnsureVisible)

    def _on_clicked(self, index: QModelIndex) -> None:
        offset = self.model.offset_of(index)
        if offset is not None:
            self.byteClicked.emit(offset)
