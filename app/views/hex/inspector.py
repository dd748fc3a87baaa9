"""The value inspector: the bytes at the selection's start read as every integer and float type."""
from __future__ import annotations

from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from app.views.hex.values import TYPES, Reading, read_values, reading_tooltip

SIDE_WIDTH_CHARS = 31  # "f64" and a 24-character float such as -2.2250738585072014e-308


class ValueInspector(QTableWidget):
    """Type/value pairs, ``pairs`` to a row: one pair a row beside the hex, two a row beneath it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hexInspector")
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().hide()
        vh = self.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.fontMetrics().height() + 4)
        self.horizontalHeader().hide()
        self.readings: list[Reading] = []
        self.pending = False
        self.offset = 0
        self.little_endian = True
        self.pairs = 0
        self.set_pairs(2)

    def set_pairs(self, pairs: int) -> None:
        if pairs == self.pairs:
            return
        self.pairs = pairs
        self.setColumnCount(2 * pairs)
        self.setRowCount((len(TYPES) + pairs - 1) // pairs)
        name_w = self.fontMetrics().horizontalAdvance("i64") + 14
        hh = self.horizontalHeader()
        for c in range(2 * pairs):
            if c % 2 == 0:
                hh.setSectionResizeMode(c, QHeaderView.ResizeMode.Fixed)
                self.setColumnWidth(c, name_w)
            else:
                hh.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
        rows_h = self.rowCount() * self.verticalHeader().defaultSectionSize() + 2 * self.frameWidth()
        if pairs == 1:
            self.setMinimumHeight(0)
            self.setMaximumHeight(rows_h)
            self.setFixedWidth(self.side_width())
        else:
            self.setMinimumWidth(0)
            self.setMaximumWidth(16_777_215)
            self.setFixedHeight(rows_h)
        self._fill()

    def side_width(self) -> int:
        return round(self.fontMetrics().horizontalAdvance("0") * SIDE_WIDTH_CHARS)

    def show_values(self, data: bytes | None, offset: int, little_endian: bool) -> None:
        """Readings of ``data`` at ``offset``; None means the bytes are on their way."""
        self.pending = data is None
        self.readings = read_values(data or b"", little_endian)
        self.offset, self.little_endian = offset, little_endian
        self._fill()

    def _fill(self) -> None:
        self.clearContents()
        for k, reading in enumerate(self.readings):
            row, pair = divmod(k, self.pairs)
            if self.pending:
                tip, value = f"Reading the bytes at 0x{self.offset:x}…", "…"
            else:
                tip, value = reading_tooltip(reading, self.offset, self.little_endian), reading.text or "—"
            for col, text in ((2 * pair, reading.name), (2 * pair + 1, value)):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                self.setItem(row, col, item)

    def value_text(self, name: str) -> str:
        """What the inspector shows for type ``name`` (tests read it as a user does)."""
        k = [n for n, _, _ in TYPES].index(name)
        row, pair = divmod(k, self.pairs)
        item = self.item(row, 2 * pair + 1)
        return item.text() if item is not None else ""

    def copy(self) -> None:
        """Edit → Copy: the chosen value as shown, without its type name."""
        item = self.currentItem()
        if item is not None and item.column() % 2 == 0:
            item = self.item(item.row(), item.column() + 1)
        if item is not None and item.text() not in ("—", "…"):
            QGuiApplication.clipboard().setText(item.text())
