"""The header panel: one row per header field, linked both ways with the hex pane."""
from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QVBoxLayout, QWidget

from app.models.header_model import HeaderModel
from app.views.header_copy import HeaderFieldActions
from itarcore.document import HeaderField

# Widest a column starts (the user can widen it; the full text is in the tooltip). Group names repeat:
# keep them narrow; values are what people read, so they get the most.
COLUMN_CAP = {"Group": 130, "Field": 170, "Value": 380, "Offset": 110, "Size": 90, "Type": 110}


class HeaderPanel(QWidget):
    fieldSelected = Signal(int, int)  # (offset, size) of the chosen field
    showInHex = Signal(int, int)  # the context menu's "Show in Hex"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = HeaderModel([], self)
        self.view = QTableView(self)
        self.view.setObjectName("headerFields")
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)  # Ctrl+C copies several
        self.view.setWordWrap(False)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().hide()
        vh = self.view.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.field_actions = HeaderFieldActions(self.view)
        self.field_actions.showInHex.connect(self.showInHex)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.view)
        self.set_fields([])

    def set_fields(self, fields: list[HeaderField]) -> None:
        self.model = HeaderModel(fields, self)
        self.view.setModel(self.model)
        self.view.selectionModel().currentRowChanged.connect(self._on_current)
        fm = self.view.fontMetrics()
        for c, title in enumerate(self.model.titles):
            width = fm.horizontalAdvance(title) + 24
            for r in range(min(self.model.rowCount(), 200)):
                width = max(width, fm.horizontalAdvance(str(self.model.data(self.model.index(r, c)))) + 16)
            self.view.setColumnWidth(c, min(width, COLUMN_CAP.get(title, 220)))

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            f = self.model.fields[current.row()]
            self.fieldSelected.emit(f.offset, f.size)

    def select_offset(self, offset: int) -> bool:
        """Select the field covering file byte ``offset`` (the hex pane's click)."""
        row = self.model.field_at(offset)
        if row is None:
            self.view.clearSelection()
            return False
        self.view.selectionModel().setCurrentIndex(
            self.model.index(row, 0),
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.view.scrollTo(self.model.index(row, 0))
        return True

    def current_field(self) -> HeaderField | None:
        idx = self.view.currentIndex()
        return self.model.fields[idx.row()] if idx.isValid() else None
