"""The filter row above a grid: enum choices, a size range, a substring and an exact key.

It only collects what the user asked for into a :class:`RowFilter`; the grid's tab
computes the numpy mask in a worker.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from app.models.row_selection import RowFilter
from itarcore.content.selection import parse_size
from itarcore.document import Table

MAX_ENUM_CHOICES = 2000  # a combo box with more labels is no use; such columns get no combo


class FilterBar(QWidget):
    filterChanged = Signal()

    def __init__(self, table: Table, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = table
        self._drill: tuple[np.ndarray, str] | None = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.setSpacing(6)
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(self.filterChanged)

        self.enum_boxes: dict[str, QComboBox] = {}
        for col in table.columns:
            choices = len(col.labels) if col.labels is not None else 0
            if col.kind == "enum" and not col.lazy and 1 < choices <= MAX_ENUM_CHOICES:
                box = QComboBox(self)
                box.setObjectName(f"enum:{col.title}")
                box.setToolTip(f"Show only rows with this {col.title}")
                box.addItem(f"Any {col.title}", None)
                for code, label in enumerate(col.labels):
                    box.addItem(str(label) if str(label) else "(none)", code)
                box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
                box.setMaximumWidth(220)
                box.currentIndexChanged.connect(lambda *_: self.filterChanged.emit())
                self.enum_boxes[col.title] = box
                lay.addWidget(box)

        self.range_column = next((c.title for c in table.columns if c.kind == "size" and not c.lazy), None)
        self.range_min = self.range_max = None
        if self.range_column:
            lay.addWidget(QLabel(f"{self.range_column}:", self))
            self.range_min = self._line_edit(f"min {self.range_column}", "min", 70)
            self.range_max = self._line_edit(f"max {self.range_column}", "max", 70)
            for w in (self.range_min, self.range_max):
                w.setToolTip("Bytes; k, M, G suffixes are powers of 1024. Inclusive.")
                lay.addWidget(w)

        self.text_column = next((c.title for c in table.columns if c.kind == "text"), None)
        self.substring = None
        if self.text_column:
            lazy = table.column(self.text_column).lazy
            self.substring = self._line_edit(f"{self.text_column} contains…", "substring", 150)
            self.substring.setToolTip(
                f"Case-insensitive substring of {self.text_column}, spaces included"
                + (" (every row's name is read in the background; the count says when it is complete)"
                   if lazy else ""))
            lay.addWidget(self.substring)

        self.key = None
        if table.lookup is not None:
            label = table.lookup_label or "key"
            self.key = QLineEdit(self)
            self.key.setObjectName("key")
            self.key.setPlaceholderText(f"exact {label}, Enter")
            self.key.setToolTip(f"Find the rows of one {label} exactly (hash lookup over all rows)")
            self.key.setClearButtonEnabled(True)
            self.key.setMinimumWidth(150)
            self.key.returnPressed.connect(self.filterChanged)
            self.key.textChanged.connect(lambda t: None if t else self.filterChanged.emit())
            lay.addWidget(self.key)

        self.drill_label = QLabel(self)
        self.drill_label.setObjectName("drillLabel")
        self.drill_clear = QToolButton(self)
        self.drill_clear.setText("✕")
        self.drill_clear.setToolTip("Show all rows again")
        self.drill_clear.clicked.connect(self.clear_drill)
        self.drill_label.hide()
        self.drill_clear.hide()
        lay.addWidget(self.drill_label)
        lay.addWidget(self.drill_clear)
        lay.addStretch(1)
        self.count_label = QLabel(self)
        self.count_label.setObjectName("rowCount")
        lay.addWidget(self.count_label)

    def _line_edit(self, placeholder: str, name: str, width: int) -> QLineEdit:
        w = QLineEdit(self)
        w.setObjectName(name)
        w.setPlaceholderText(placeholder)
        w.setClearButtonEnabled(True)
        w.setMinimumWidth(width)
        w.textChanged.connect(lambda *_: self._debounce.start())
        w.returnPressed.connect(self._apply_now)
        return w

    def _apply_now(self) -> None:
        self._debounce.stop()
        self.filterChanged.emit()

    def set_drill(self, rows: np.ndarray, label: str) -> None:
        self._drill = (rows, label)
        self.drill_label.setText(f"Only {label}")
        self.drill_label.show()
        self.drill_clear.show()
        self.filterChanged.emit()

    def clear_drill(self) -> None:
        self._drill = None
        self.drill_label.hide()
        self.drill_clear.hide()
        self.filterChanged.emit()

    def clear(self) -> None:
        for box in self.enum_boxes.values():
            box.blockSignals(True)
            box.setCurrentIndex(0)
            box.blockSignals(False)
        for w in (self.range_min, self.range_max, self.substring, self.key):
            if w is not None:
                w.blockSignals(True)
                w.clear()
                w.blockSignals(False)
        self.clear_drill()

    def row_filter(self) -> RowFilter:
        """The filter as typed; raises ValueError on an unreadable size."""
        flt = RowFilter()
        for title, box in self.enum_boxes.items():
            code = box.currentData()
            if code is not None:
                flt.enums[title] = {int(code)}
        if self.range_column and self.range_min is not None and self.range_max is not None:
            lo, hi = parse_size(self.range_min.text()), parse_size(self.range_max.text())
            if lo is not None or hi is not None:
                flt.ranges[self.range_column] = (lo, hi)
        if self.substring is not None and self.substring.text():
            # as typed: a stem may hold spaces, so none are trimmed
            flt.substring = (self.text_column or "", self.substring.text())
        if self.key is not None and self.key.text().strip():
            flt.key = self.key.text().strip()
        if self._drill is not None:
            flt.rows, flt.rows_label = self._drill
        return flt

    def set_count(self, shown: int, total: int, busy: str = "", at_least: bool = False, note: str = "") -> None:
        """``at_least``: ``shown`` are the matches found so far, the rest are still being counted."""
        if at_least:
            text = f"≥ {shown:,} rows (counting…)"
        else:
            text = f"{shown:,} of {total:,} rows" if shown != total else f"{total:,} rows"
        if note:
            text = f"{text} ({note})"
        self.count_label.setText(f"{busy}… {text}" if busy else text)
        self.count_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
