"""The kastore "Array" panel: the selected item's values, plot, text, and tskit ragged rows."""
from __future__ import annotations

import json

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.models.kastore_arrays import ArrayValuesModel, RaggedRowsModel
from app.views.panels import FormatPanel
from itarcore.document import Document
from itarcore.document.kastore import as_text, ragged_pair, ragged_problem
from itarcore.formats.kastore import Item, KastoreStore

TEXT_LIMIT = 8 << 20  # bytes shown in the text tab; longer byte arrays stay in the values grid


def pretty(text: str) -> str:
    """JSON indented for reading (tskit schemas, metadata, provenance); other text unchanged."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


def _virtual_table(model: object) -> QTableView:
    """A grid that never measures its contents: fixed row height, so 10^7 rows cost nothing."""
    view = QTableView()
    view.setModel(model)
    view.setWordWrap(False)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
    vh = view.verticalHeader()
    vh.setVisible(False)
    vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    vh.setDefaultSectionSize(view.fontMetrics().height() + 6)
    hh = view.horizontalHeader()
    hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    hh.setStretchLastSection(True)
    hh.setDefaultSectionSize(110)
    return view


class KastoreArrayPanel(FormatPanel):
    """Follows the "items" grid: shows the selected array as values, a plot, text or ragged rows."""

    title = "Array"

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.store: KastoreStore = document.source
        self.item: Item | None = None
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        self.caption = QLabel("Select an item in the items table.")
        self.caption.setWordWrap(True)
        self.key_button = QPushButton("Key bytes")
        self.key_button.setToolTip("Show this item's key in the hex pane")
        self.array_button = QPushButton("Array bytes")
        self.array_button.setToolTip("Show this item's array in the hex pane")
        for b in (self.key_button, self.array_button):
            b.setEnabled(False)
        self.key_button.clicked.connect(self._emit_key_bytes)
        self.array_button.clicked.connect(self._emit_array_bytes)
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(self.key_button)
        top.addWidget(self.array_button)

        self.values_model = ArrayValuesModel(self)
        self.values_view = _virtual_table(self.values_model)
        values_header = self.values_view.horizontalHeader()
        values_header.setStretchLastSection(False)  # keep numbers near their index, not at the far edge
        values_header.resizeSection(0, 90)
        values_header.resizeSection(1, 220)
        values_header.resizeSection(2, 60)

        self.plot_widget = pg.PlotWidget(background="w")
        plot_item = self.plot_widget.getPlotItem()
        plot_item.setDownsampling(auto=True, mode="peak")
        plot_item.setClipToView(True)
        plot_item.showGrid(x=True, y=True, alpha=0.25)
        plot_item.setLabel("bottom", "index")
        self.curve = plot_item.plot(pen=pg.mkPen("#1f77b4", width=1), connect="finite")

        self.text_view = QPlainTextEdit(readOnly=True)
        self.text_view.setFont(mono)
        self.text_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)

        self.rows_model = RaggedRowsModel(self)
        self.rows_view = _virtual_table(self.rows_model)
        self.rows_view.horizontalHeader().resizeSection(0, 70)
        self.rows_view.horizontalHeader().resizeSection(1, 70)
        self.rows_caption = QLabel()
        self.rows_caption.setWordWrap(True)
        self.row_detail = QPlainTextEdit(readOnly=True)
        self.row_detail.setFont(mono)
        self.row_detail.setPlaceholderText("Select a row to see it whole.")
        self.rows_view.selectionModel().currentRowChanged.connect(self._show_row_detail)
        rows_split = QSplitter()
        rows_split.setOrientation(Qt.Orientation.Vertical)
        rows_split.addWidget(self.rows_view)
        rows_split.addWidget(self.row_detail)
        rows_split.setSizes([300, 120])
        rows_page = QWidget()
        rows_layout = QVBoxLayout(rows_page)
        rows_layout.setContentsMargins(0, 0, 0, 0)
        rows_layout.addWidget(self.rows_caption)
        rows_layout.addWidget(rows_split, 1)

        self.tabs = QTabWidget()
        self.values_tab = self.tabs.addTab(self.values_view, "Values")
        self.plot_tab = self.tabs.addTab(self.plot_widget, "Plot")
        self.text_tab = self.tabs.addTab(self.text_view, "Text")
        self.rows_tab = self.tabs.addTab(rows_page, "Ragged rows")
        self._preferred_tab = self.values_tab  # Values or Plot, as the user last chose
        self.tabs.tabBarClicked.connect(self._remember_tab)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        self._clear()

    # -- main window hooks --------------------------------------------------------
    def on_row_selected(self, table_name: str, row: int) -> None:
        if table_name == "items" and 0 <= row < len(self.store.items_list):
            self.show_item(row)

    def shutdown(self) -> None:
        self._clear()  # drop the views into the map so the document can close it

    # -- showing an item ------------------------------------------------------------
    def show_item(self, row: int) -> None:
        item = self.store.items_list[row]
        self.item = item
        array = self.store.array(item)
        self.caption.setText(
            f"<b>{item.key}</b> — {item.type_name}, {item.length:,} elements, {item.nbytes:,} bytes; "
            f"key at {self.store.base + item.key_start:,}, array at {self.store.base + item.array_start:,}"
            + (f" (after {item.padding} padding bytes)" if item.padding else "")
        )
        self.key_button.setEnabled(True)
        self.array_button.setEnabled(True)
        self.values_model.set_array(array)

        text = as_text(array) if item.nbytes <= TEXT_LIMIT else None
        self.text_view.setPlainText(pretty(text) if text is not None else "")
        self.tabs.setTabEnabled(self.text_tab, text is not None)

        numeric = len(array) > 0 and text is None
        self._plot(array if numeric else None)
        self.tabs.setTabEnabled(self.plot_tab, numeric)

        has_rows = self._show_ragged(item.key)
        if has_rows:
            self.tabs.setCurrentIndex(self.rows_tab)
        elif text is not None:
            self.tabs.setCurrentIndex(self.text_tab)
        elif self.tabs.isTabEnabled(self._preferred_tab):
            self.tabs.setCurrentIndex(self._preferred_tab)
        else:
            self.tabs.setCurrentIndex(self.values_tab)
        self.followBytes.emit(self.store.base + item.key_start, item.key_len)
        self.followBytes.emit(self.store.base + item.array_start, item.nbytes)
        self.statusMessage.emit(f"{item.key}: {item.type_name}[{item.length:,}]")

    def _plot(self, array: np.ndarray | None) -> None:
        if array is None:
            self.curve.setData([], [])
            self.plot_widget.getPlotItem().setLabel("left", "")
            return
        # pyqtgraph draws floats; 64-bit integers beyond 2^53 lose precision only in the picture
        y = array if array.dtype.kind == "f" else array.astype(np.float64)
        self.curve.setData(np.arange(len(y), dtype=np.float64), y)
        self.plot_widget.getPlotItem().setLabel("left", self.item.key if self.item else "")
        self.plot_widget.getPlotItem().enableAutoRange()

    def _show_ragged(self, key: str) -> bool:
        pair = ragged_pair(self.store, key)
        self.row_detail.clear()
        if pair is None:
            self.rows_model.clear()
            self.tabs.setTabEnabled(self.rows_tab, False)
            return False
        data_key, offsets_key = pair
        data, offsets = self.store[data_key], self.store[offsets_key]
        problem = ragged_problem(data, offsets)
        self.tabs.setTabEnabled(self.rows_tab, True)
        if problem:
            self.rows_model.clear()
            self.rows_caption.setText(f"<b>{data_key}</b> cannot be split by <b>{offsets_key}</b>: {problem}")
            self.statusMessage.emit(f"{offsets_key}: {problem}")
            return True
        self.rows_model.set_pair(data, offsets)
        self.rows_caption.setText(
            f"{len(offsets) - 1:,} rows of <b>{data_key}</b>, split by <b>{offsets_key}</b> (tskit ragged column)"
        )
        return True

    def _remember_tab(self, index: int) -> None:
        if index in (self.values_tab, self.plot_tab) and self.tabs.isTabEnabled(index):
            self._preferred_tab = index

    def _show_row_detail(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.row_detail.setPlainText(pretty(self.rows_model.row_text(current.row())))

    def _clear(self) -> None:
        self.item = None
        self.values_model.set_array(np.empty(0, np.uint8))
        self.rows_model.clear()
        self.curve.setData([], [])
        self.text_view.clear()
        for tab in (self.plot_tab, self.text_tab, self.rows_tab):
            self.tabs.setTabEnabled(tab, False)

    # -- hex pane links -------------------------------------------------------------
    def _emit_key_bytes(self) -> None:
        if self.item is not None:
            self.highlightBytes.emit(self.store.base + self.item.key_start, self.item.key_len)

    def _emit_array_bytes(self) -> None:
        if self.item is not None:
            self.highlightBytes.emit(self.store.base + self.item.array_start, self.item.nbytes)


PANELS = [KastoreArrayPanel]
