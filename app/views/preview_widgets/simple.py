"""Small views: plain text, a class label, and a table of parquet rows."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QHeaderView, QLabel, QPlainTextEdit, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

TEXT_LIMIT = 2_000_000  # characters; more would make QPlainTextEdit sluggish for no gain
TABLE_ROW_LIMIT = 1000


class TextView(QPlainTextEdit):
    def __init__(self, text: str, parent: QWidget | None = None, monospace: bool = False) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        if monospace:
            self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        cut = len(text) > TEXT_LIMIT
        shown = text[:TEXT_LIMIT] + (f"\n… ({len(text) - TEXT_LIMIT:,} more characters)" if cut else "")
        self.setPlainText(shown if text else "(empty text)")


class LabelView(QWidget):
    """A class label as one big number."""

    def __init__(self, value: Any, parent: QWidget | None = None, compact: bool = False) -> None:
        super().__init__(parent)
        self.value_label = QLabel(str(value))
        self.value_label.setWordWrap(True)  # a long text wraps; it never widens the window
        font = QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * (2.6 if compact else 5))
        font.setBold(True)
        self.value_label.setFont(font)
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        caption = QLabel("class label")
        caption.setAlignment(Qt.AlignmentFlag.AlignCenter)
        caption.setEnabled(False)  # the palette's disabled text colour: a quiet caption in any theme
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.value_label)
        layout.addWidget(caption)
        layout.addStretch(1)

    def text(self) -> str:
        return self.value_label.text()


class TableView(QWidget):
    """Rows of a parquet file (first TABLE_ROW_LIMIT), with the schema in a tooltip and a line above."""

    def __init__(self, table: dict, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        rows: list[dict] = list(table.get("rows") or [])
        schema = str(table.get("schema") or "")
        columns: list[str] = list(table.get("columns") or [])
        total = int(table.get("num_rows", len(rows)))
        for row in rows[:TABLE_ROW_LIMIT]:
            for key in row:
                if key not in columns:
                    columns.append(key)
        shown = rows[:TABLE_ROW_LIMIT]
        self.table = QTableWidget(len(shown), len(columns))
        self.table.setHorizontalHeaderLabels(columns)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for r, row in enumerate(shown):
            for c, key in enumerate(columns):
                self.table.setItem(r, c, QTableWidgetItem(_cell(row.get(key))))
        self.table.resizeColumnsToContents()
        info = f"{total:,} rows × {len(columns)} columns"
        if total > len(shown):
            info += f" (showing the first {len(shown):,})"
        self.info = QLabel(info)
        self.info.setWordWrap(True)  # a long text wraps; it never widens the window
        self.info.setToolTip(schema)
        self.schema = QPlainTextEdit(schema, readOnly=True)
        self.schema.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.schema.setMaximumHeight(self.schema.fontMetrics().lineSpacing() * 6)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(self.schema)
        layout.addWidget(self.table, 1)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "…"
