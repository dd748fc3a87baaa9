"""An axis of named categories (extensions, shards, labels) whose tick labels never overlap.

Category ``i`` sits at ``i + 0.5``. Along a horizontal axis each name is cut in the middle to the
room its cell has on screen (``caption.en.txt`` → ``capt…txt``); when even a cut name cannot fit,
the names turn upright (a line of text per cell, as heatmaps do), cut to ROTATED_LENGTH, and when
the cells are thinner than a line, only every k-th name is shown. The full name of the category
under the mouse is the axis's tooltip.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF

GAP = 6.0  # px between neighbouring names
ELLIPSIS = "…"
# a vertical axis's names are cut to this, and to this share of the plot: long shard names would squeeze the data
MAX_NAME_WIDTH, NAME_SHARE = 180.0, 0.3
ROTATED_LENGTH = 96.0  # upright names are cut to this: the axis grows by as much, the plot shrinks


class CategoryAxis(pg.AxisItem):
    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.names: list[str] = []
        self._every = 1
        self._room = 0.0
        self.rotated = False  # names drawn upright (reading upwards), one per cell
        self._shown: list[float] = []  # the tick values of the last layout
        self._sizing_upright = False
        self.setAcceptHoverEvents(True)

    def set_names(self, names: list[str]) -> None:
        self.names = list(names)
        self.picture = None  # drawn again with the new names
        self.update()

    def _metrics(self) -> QFontMetricsF:
        return QFontMetricsF(self.style["tickFont"] or self.font())

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:
        """One tick per shown category, every k-th when the cells are too small for even a cut name."""
        minVal, maxVal = sorted((minVal, maxVal))  # an inverted axis (shards top down) gives them reversed
        if not self.names or maxVal <= minVal or size <= 0:
            return []
        cell = size / (maxVal - minVal)  # px per category
        fm = self._metrics()
        self.rotated = False
        if self.orientation in ("bottom", "top"):
            self._every = self._thinning(fm, cell)
            self._room = cell * self._every - GAP
            if self._every > 1 and self.orientation == "bottom":
                self.rotated = True
                self._every = max(1, math.ceil((fm.height() + 2) / cell))
                self._room = ROTATED_LENGTH
        else:  # names side by side with the axis: a line of text per shown name
            self._every = max(1, math.ceil((fm.height() + 2) / cell))
            plot = self.parentItem()
            self._room = min(MAX_NAME_WIDTH, NAME_SHARE * plot.width()) if plot is not None else MAX_NAME_WIDTH
        first = max(0, math.ceil(minVal - 0.5))
        last = min(len(self.names) - 1, math.floor(maxVal - 0.5))
        self._shown = [i + 0.5 for i in range(first, last + 1) if i % self._every == 0]
        return [(float(self._every), self._shown)]

    def _thinning(self, fm: QFontMetricsF, cell: float) -> int:
        """Show every k-th name, for the least k at which each shown name keeps two characters or more."""
        for every in range(1, len(self.names) + 1):
            room = cell * every - GAP
            if all(len(fm.elidedText(name, Qt.TextElideMode.ElideMiddle, room).replace(ELLIPSIS, "")) >= min(2, len(name))
                   for name in self.names[::every]):
                return every
        return len(self.names)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        fm = self._metrics()
        return [fm.elidedText(self.names[int(v)], Qt.TextElideMode.ElideMiddle, self._room)
                if 0 <= int(v) < len(self.names) else "" for v in values]

    def generateDrawSpecs(self, p):
        """Upright names: pyqtgraph lays out level text only, so place them here, end at the axis, centred
        on their cell; the axis grows to the longest."""
        specs = super().generateDrawSpecs(p)  # calls tickValues: decides ``rotated`` for this layout
        view = self.linkedView()
        if specs is None or not self.rotated or view is None:
            return specs
        axis_spec, tick_specs, _flat = specs
        fm = self._metrics()
        top = max(0, self.style["tickLength"]) + self.style["tickTextOffset"][1]
        texts, longest = [], 0.0
        for value, text in zip(self._shown, self.tickStrings(self._shown, 1.0, 1.0)):
            x = self.mapFromScene(view.mapViewToScene(QPointF(value, 0))).x()
            length = fm.horizontalAdvance(text)
            texts.append((QRectF(x - fm.height() / 2, top, fm.height(), length), Qt.AlignmentFlag.AlignRight, text))
            longest = max(longest, length)
        self._sizing_upright = True
        try:
            self._updateMaxTextSize(math.ceil(longest))
        finally:
            self._sizing_upright = False
        return axis_spec, tick_specs, texts

    def _updateMaxTextSize(self, x: int) -> None:
        # pyqtgraph sizes the axis from the flat names it measured; upright, the names' length sizes it
        if self.rotated and not self._sizing_upright:
            return
        super()._updateMaxTextSize(x)

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs) -> None:
        if not self.rotated:
            super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
            return
        super().drawPicture(p, axisSpec, tickSpecs, [])  # the line and the ticks
        p.setPen(self.textPen())
        for rect, _flags, text in textSpecs:  # rect: the name's upright footprint
            p.save()
            p.translate(rect.center().x(), rect.top())
            p.rotate(-90)  # reads upwards; its end at the axis
            p.drawText(QRectF(-rect.height(), -rect.width() / 2, rect.height(), rect.width()),
                       int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), text)
            p.restore()

    def name_at(self, scene_pos: QPointF) -> str | None:
        """The full name of the category at ``scene_pos`` (along the axis), or None."""
        view = self.linkedView()
        if view is None or not self.names:
            return None
        point = view.mapSceneToView(scene_pos)
        value = point.x() if self.orientation in ("bottom", "top") else point.y()
        i = math.floor(value)
        return self.names[i] if 0 <= i < len(self.names) else None

    def hoverEvent(self, event) -> None:
        self.setToolTip("" if event.isExit() else (self.name_at(event.scenePos()) or ""))
