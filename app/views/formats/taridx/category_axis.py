"""An axis of named categories (extensions, shards, labels) whose tick labels never overlap.

Category ``i`` sits at ``i + 0.5``. Each name is cut in the middle to the room its cell has on
screen (``mask.png`` → ``ma…ng``), and when even a cut name cannot fit, only every k-th name is
shown. The full name of the category under the mouse is the axis's tooltip.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFontMetricsF

GAP = 6.0  # px between neighbouring names
ELLIPSIS = "…"
# a vertical axis's names are cut to this, and to this share of the plot: long shard names would squeeze the data
MAX_NAME_WIDTH, NAME_SHARE = 180.0, 0.3


class CategoryAxis(pg.AxisItem):
    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.names: list[str] = []
        self._every = 1
        self._room = 0.0
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
        if self.orientation in ("bottom", "top"):
            self._every = self._thinning(fm, cell)
            self._room = cell * self._every - GAP
        else:  # names side by side with the axis: a line of text per shown name
            self._every = max(1, math.ceil((fm.height() + 2) / cell))
            plot = self.parentItem()
            self._room = min(MAX_NAME_WIDTH, NAME_SHARE * plot.width()) if plot is not None else MAX_NAME_WIDTH
        first = max(0, math.ceil(minVal - 0.5))
        last = min(len(self.names) - 1, math.floor(maxVal - 0.5))
        shown = [i + 0.5 for i in range(first, last + 1) if i % self._every == 0]
        return [(float(self._every), shown)]

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
