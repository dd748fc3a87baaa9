"""The grid paints its cells without calling into Python for each, and looks exactly as under the app's style."""
from __future__ import annotations

import collections

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QCheckBox, QStyle

from app.style import IndicatorContrastStyle, item_view_style
from app.views.table_tab import TableTab
from itarcore.document import Column, Table


class CountingStyle(IndicatorContrastStyle):
    """The app's style, counting the primitives that reach its Python ``drawPrimitive``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter = collections.Counter()

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        self.calls[element] += 1
        super().drawPrimitive(element, option, painter, widget)


@pytest.fixture
def counting_style(qapp):
    """The app's style, counting; the style and palette as they were afterwards."""
    palette, style_name = QPalette(qapp.palette()), qapp.style().name() or "fusion"
    style = CountingStyle()
    qapp.setStyle(style)  # the app owns it from here, and deletes it when replaced
    yield style
    qapp.setStyle(style_name)
    qapp.setPalette(palette)


def test_grid_cells_paint_without_the_python_style_and_look_the_same(qtbot, counting_style) -> None:
    sizes = np.arange(200, dtype=np.uint64) * 977
    table = Table("rows", len(sizes), [Column("Size", sizes, "size"), Column("Code", sizes % 7, "int")])
    tab = TableTab(table)
    qtbot.addWidget(tab)
    tab.resize(600, 400)
    tab.show()
    qtbot.waitExposed(tab)
    view = tab.grid.view
    assert view.style() is item_view_style()

    counting_style.calls.clear()
    fast = view.viewport().grab().toImage()  # grab() paints the cells now, through the view's style
    assert counting_style.calls[QStyle.PrimitiveElement.PE_PanelItemViewItem] == 0
    assert sum(counting_style.calls.values()) == 0

    view.setStyle(None)  # the same cells through the app's own style, as before
    QApplication.processEvents()  # the style change is applied by events
    counting_style.calls.clear()
    slow = view.viewport().grab().toImage()
    assert counting_style.calls[QStyle.PrimitiveElement.PE_PanelItemViewItem] >= 20  # it did paint the cells
    assert slow == fast

    box = QCheckBox("indicator")  # everything else still draws its indicators through the app's style
    qtbot.addWidget(box)
    counting_style.calls.clear()
    box.grab()
    assert counting_style.calls[QStyle.PrimitiveElement.PE_IndicatorCheckBox] >= 1
    assert QApplication.style() is counting_style
