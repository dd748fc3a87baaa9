"""The header panel: one row per header field, linked both ways with the hex pane.

Values are what people read, so the Value column takes the room the other columns leave (and never less than
a good share of the view); a value longer than its cell is cut in the middle, keeping both ends, and is whole
in the tooltip and in Copy Value.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.models.header_model import HeaderModel
from app.views.header_copy import HeaderFieldActions
from itarcore.document import HeaderField

# Widest a column starts (the user can widen it; the full text is in the tooltip). Group names repeat:
# keep them narrow; values are what people read, so they get the most.
COLUMN_CAP = {"Group": 130, "Field": 170, "Offset": 110, "Size": 90, "Type": 110}
VALUE_SHARE = 0.45  # the Value column never gets less of the view's width than this (or than it needs)
MIN_NAME_WIDTH = 56


def fit_columns(natural: dict[str, int], available: int) -> dict[str, int]:
    """Column widths for a view ``available`` px wide, from each column's ``natural`` (content) width.

    Value is promised its natural width or VALUE_SHARE of the view, whichever is less; Field and then Group
    share the rest (cut in the middle if they must). Value then grows to its natural width or to the view's
    edge; Offset, Size and Type follow it, scrolled into view if there is no room left.
    """
    widths = {title: min(w, COLUMN_CAP.get(title, w)) for title, w in natural.items()}
    value_min = min(natural["Value"], int(available * VALUE_SHARE))
    names_room = available - value_min
    widths["Field"] = min(widths["Field"], max(MIN_NAME_WIDTH, names_room - (MIN_NAME_WIDTH if "Group" in widths
                                                                             else 0)))
    if "Group" in widths:
        widths["Group"] = min(widths["Group"], max(MIN_NAME_WIDTH, names_room - widths["Field"]))
    names = sum(widths.get(title, 0) for title in ("Group", "Field"))
    widths["Value"] = min(natural["Value"], max(value_min, available - names))
    return widths


class MiddleElideDelegate(QStyledItemDelegate):
    """Cuts text too long for its cell in the middle (``0x7 (compressed, … has checksum)``): both ends of a
    value, where flags, units and the last bytes are, stay readable."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        super().initStyleOption(option, index)
        style = option.widget.style() if option.widget is not None else None
        if style is None or not option.text:
            return
        room = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, option.widget).width()
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, option.widget) + 1
        option.text = option.fontMetrics.elidedText(option.text, Qt.TextElideMode.ElideMiddle, room - 2 * margin)

    def shown_text(self, view: QAbstractItemView, index: QModelIndex) -> str:
        """The text painted in cell ``index`` of ``view`` (the elided form when the value does not fit)."""
        option = QStyleOptionViewItem()
        option.initFrom(view)
        option.widget = view
        option.rect = view.visualRect(index)
        option.font = view.font()
        option.fontMetrics = view.fontMetrics()
        self.initStyleOption(option, index)
        return option.text


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
        self.view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.elide_delegate = MiddleElideDelegate(self.view)
        self.view.setItemDelegate(self.elide_delegate)
        self._natural: dict[str, int] = {}
        self._fitting = False
        self._user_sized = False  # a column the user dragged keeps its width until the next document
        self.view.horizontalHeader().sectionResized.connect(self._section_resized)
        self.view.viewport().installEventFilter(self)
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
        self._natural = {}
        for c, title in enumerate(self.model.titles):
            width = fm.horizontalAdvance(title) + 24
            for r in range(min(self.model.rowCount(), 200)):
                width = max(width, fm.horizontalAdvance(str(self.model.data(self.model.index(r, c)))) + 16)
            self._natural[title] = width
        self._user_sized = False
        self.fit_columns()

    def fit_columns(self) -> None:
        """Widths from :func:`fit_columns` for the view's current width (unless the user has sized a column)."""
        if self._user_sized or set(self._natural) != set(self.model.titles):  # sized by the user, or mid-swap
            return
        widths = fit_columns(self._natural, self.view.viewport().width())
        self._fitting = True
        try:
            for c, title in enumerate(self.model.titles):
                self.view.setColumnWidth(c, widths[title])
        finally:
            self._fitting = False

    def _section_resized(self, section: int, _old: int, _new: int) -> None:
        # the stretched last section follows the view by itself: only a drag elsewhere is the user's choice
        if not self._fitting and section != self.model.columnCount() - 1:
            self._user_sized = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()
        return False

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
