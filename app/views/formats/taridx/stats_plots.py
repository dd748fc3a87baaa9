"""The plots of the Statistics view: shard × extension heatmap, label bars, image-size 2-D histogram.

Each takes a :class:`itarcore.content.stats.FoldStats` (a partial snapshot or the final
one) and redraws from it; colours come from the palette so light and dark both read.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF, QPalette
from PySide6.QtWidgets import QWidget

from app.views.formats.taridx.category_axis import CategoryAxis
from app.views.preview_widgets.theme import series_colour, style_plot
from itarcore.content.dims import EDGES, N_BINS, STEPS_PER_OCTAVE

MAX_BARS = 40
MAX_LABELLED_CELLS = 600  # heatmaps up to this many cells print their counts in the cells
HEAT = pg.ColorMap([0.0, 0.35, 0.7, 1.0], [(235, 240, 250), (86, 180, 233), (0, 114, 178), (20, 30, 90)])


def _heat_levels(counts: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """log1p counts (a few huge cells do not wash out the rest) and their display range."""
    image = np.log1p(counts.astype(np.float64))
    return image, (0.0, max(1.0, float(image.max())))


class HeatmapCells(pg.ImageItem):
    """The heatmap's image; its tooltip names the cell under the mouse in full (shard, extension, rows)."""

    def __init__(self, describe) -> None:
        super().__init__(axisOrder="row-major")
        self.describe = describe  # (row, column) -> text, or None outside the matrix

    def hoverEvent(self, event) -> None:
        if event.isExit():
            self.setToolTip("")
            return
        pos = event.pos()  # image coordinates: one unit per cell
        self.setToolTip(self.describe(int(np.floor(pos.y())), int(np.floor(pos.x()))) or "")


class ShardExtHeatmap(pg.PlotWidget):
    """Rows per (shard, extension): a missing extension in a shard shows as an empty cell."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, axisItems={"bottom": CategoryAxis("bottom"), "left": CategoryAxis("left")})
        self.image = HeatmapCells(self.cell_text)
        self.image.setColorMap(HEAT)
        self.addItem(self.image)
        self.setMouseEnabled(False, False)
        self.setMenuEnabled(False)
        self.getPlotItem().hideButtons()
        self.setLabel("left", "shard")
        self.setLabel("bottom", "extension")
        self.setTitle("Rows")  # a longer title is the plot's minimum width: cut in a laptop's dock
        style_plot(self)
        self.matrix = np.zeros((0, 0), np.int64)
        self.shard_names: list[str] = []
        self.extensions: list[str] = []
        self.cell_texts: list[pg.TextItem] = []
        self.getPlotItem().vb.sigResized.connect(self._fit_cell_texts)

    def _fit_cell_texts(self, *_args) -> None:
        """A count is printed only where it fits its cell on screen (else the cells' numbers run together);
        the tooltip has every cell's count."""
        if not self.cell_texts or not self.matrix.size:
            return
        units_x, units_y = self.getPlotItem().vb.viewPixelSize()  # one cell is one unit of the view
        cell_w, cell_h = 1 / max(units_x, 1e-9), 1 / max(units_y, 1e-9)
        fm = QFontMetricsF(self.cell_texts[0].textItem.font())
        fits = cell_h >= fm.height()
        for item in self.cell_texts:
            item.setVisible(fits and fm.horizontalAdvance(item.toPlainText()) + 4 <= cell_w)

    def cell_text(self, row: int, column: int) -> str | None:
        """'shard · extension: N rows' for a cell of the matrix (the tooltip of the cell)."""
        if not (0 <= row < self.matrix.shape[0] and 0 <= column < self.matrix.shape[1]):
            return None
        count = int(self.matrix[row, column])
        return f"{self.shard_names[row]} · {self.extensions[column]}: {count:,} row{'s' * (count != 1)}"

    def _label_cells(self, matrix: np.ndarray, image: np.ndarray, top: float) -> None:
        """Print each cell's count; the items are kept and reset, as partial results redraw every 0.25 s."""
        wanted = matrix.size if matrix.size <= MAX_LABELLED_CELLS else 0
        while len(self.cell_texts) > wanted:
            self.removeItem(self.cell_texts.pop())
        while len(self.cell_texts) < wanted:
            item = pg.TextItem("", anchor=(0.5, 0.5))
            self.addItem(item)
            self.cell_texts.append(item)
        if not wanted:
            return
        for item, ((r, c), count) in zip(self.cell_texts, np.ndenumerate(matrix)):
            dark = image[r, c] > 0.5 * top  # light text on the dark end of the colour map
            colour = (255, 255, 255) if dark else (20, 30, 90)
            text = f"{count:,}"
            if item.toPlainText() != text or item.color.getRgb()[:3] != colour:
                item.setText(text, color=colour)
            item.setPos(c + 0.5, r + 0.5)
        self._fit_cell_texts()

    def show_stats(self, stats) -> None:
        fids = stats.fids
        matrix = stats.shard_ext[fids] if fids else np.zeros((0, len(stats.extensions)), np.int64)
        self.matrix = matrix
        if not matrix.size:
            self.image.clear()
            return
        image, levels = _heat_levels(matrix)
        self.image.setImage(image, levels=levels)
        self.image.setRect(0, 0, matrix.shape[1], matrix.shape[0])
        self._label_cells(matrix, image, levels[1])
        self.shard_names = [stats.shard_names.get(f, str(f)) for f in fids]
        self.extensions = [e or "(none)" for e in stats.extensions]
        self.getAxis("bottom").set_names(self.extensions)
        self.getAxis("left").set_names(self.shard_names)
        self.getPlotItem().invertY(True)
        self.setRange(xRange=(0, matrix.shape[1]), yRange=(0, matrix.shape[0]), padding=0.02)
        self._fit_cell_texts()


class LabelBars(pg.PlotWidget):
    """Members per label, commonest first (the first ``MAX_BARS``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, axisItems={"bottom": CategoryAxis("bottom")})
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8, brush=series_colour(0))
        self.addItem(self.bars)
        self.setMouseEnabled(False, False)
        self.setMenuEnabled(False)
        self.getPlotItem().hideButtons()
        self.setLabel("left", "members")
        self.setTitle("Label distribution")
        style_plot(self)

    def show_totals(self, totals: dict[str, int], source: str | None) -> None:
        items = list(totals.items())[:MAX_BARS]
        self.bars.setOpts(x=np.arange(len(items)) + 0.5, height=[c for _, c in items], width=0.8)
        self.getAxis("bottom").set_names([str(k) for k, _ in items])
        more = f" (first {MAX_BARS} of {len(totals):,})" if len(totals) > MAX_BARS else ""
        self.setTitle(f"Members per label from {source}{more}" if source else "No label source in this fold")
        if items:
            self.setRange(xRange=(0, len(items)), yRange=(0, max(c for _, c in items) * 1.05), padding=0.02)


class DimsHistogram2D(pg.PlotWidget):
    """Images by width × height on log₂ axes (bins a quarter octave wide)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = pg.ImageItem(axisOrder="col-major")  # counts[width bin, height bin]
        self.image.setColorMap(HEAT)
        self.addItem(self.image)
        self.setMenuEnabled(False)
        self.setLabel("bottom", "width (pixels)")
        self.setLabel("left", "height (pixels)")
        self.setTitle("Image sizes (from headers)")
        ticks = [[(b, f"{round(EDGES[b]):,}") for b in range(0, N_BINS + 1, STEPS_PER_OCTAVE)]]
        self.getAxis("bottom").setTicks(ticks)
        self.getAxis("left").setTicks(ticks)
        style_plot(self)
        self.setBackground(self.palette().color(QPalette.ColorRole.Base))

    def show_dims(self, dims) -> None:
        counts = dims.counts
        if not counts.any():
            self.image.clear()
            return
        image, levels = _heat_levels(counts)
        self.image.setImage(image, levels=levels)
        self.image.setRect(0, 0, N_BINS, N_BINS)
        w, h = np.nonzero(counts)
        self.setRange(xRange=(max(0, w.min() - 4), min(N_BINS, w.max() + 5)),
                      yRange=(max(0, h.min() - 4), min(N_BINS, h.max() + 5)), padding=0)
