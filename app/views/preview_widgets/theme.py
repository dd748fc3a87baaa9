"""Colours for pyqtgraph views taken from the Qt palette, so plots follow light and dark themes."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QWidget

# One colour per series (extensions, channels): Okabe-Ito, readable on light and dark backgrounds.
SERIES_COLOURS = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999",
    "#882255", "#44AA99", "#117733", "#AA4499",
)


def series_colour(i: int) -> QColor:
    return QColor(SERIES_COLOURS[i % len(SERIES_COLOURS)])


def style_plot(widget: pg.PlotWidget | pg.GraphicsLayoutWidget, palette_source: QWidget | None = None) -> None:
    """Palette background and text-coloured axes for a plot widget (pyqtgraph defaults to black)."""
    pal = (palette_source or widget).palette()
    widget.setBackground(pal.color(QPalette.ColorRole.Base))
    fg = pal.color(QPalette.ColorRole.Text)
    items = [widget.getPlotItem()] if isinstance(widget, pg.PlotWidget) else [
        item for item in widget.ci.items if isinstance(item, pg.PlotItem)]
    for plot in items:
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
        plot.titleLabel.setAttr("color", fg.name())
        plot.titleLabel.setText(plot.titleLabel.text)
