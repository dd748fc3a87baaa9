"""numpy arrays: a line plot for 1D, pyqtgraph ImageView for 2D/3D, text for the rest."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from .image import ImagePane
from .theme import series_colour, style_plot


def array_summary(arr: np.ndarray) -> str:
    """'float32 (48, 64) · min -1.98 · max 2 · mean 0.0123' (stats only for numbers)."""
    text = f"{arr.dtype} {tuple(arr.shape)}"
    if arr.size and arr.dtype.kind in "biuf":
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        if finite.size:
            text += f" · min {finite.min():.4g} · max {finite.max():.4g} · mean {finite.mean(dtype=np.float64):.4g}"
    return text


def _numeric(arr: np.ndarray) -> np.ndarray | None:
    if arr.dtype.kind in "iuf":
        return arr
    if arr.dtype.kind == "b":
        return arr.astype(np.uint8)
    if arr.dtype.kind == "c":
        return np.abs(arr)
    return None


def _is_colour(arr: np.ndarray) -> bool:
    return arr.ndim == 3 and arr.shape[2] in (3, 4) and arr.dtype == np.uint8


class ArrayView(QWidget):
    """Shape and dtype on top; below, the plot/image that fits the array's rank.

    ``compact`` (for sample cards) uses a plain image pane instead of ImageView's
    histogram and time slider.
    """

    def __init__(self, arr: np.ndarray, parent: QWidget | None = None, compact: bool = False) -> None:
        super().__init__(parent)
        self.array = arr
        self.kind = ""  # "plot", "image", "stack", "text": what is shown
        self.summary = QLabel(array_summary(arr))
        self.summary.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.summary)
        numeric = _numeric(arr)
        if numeric is not None and arr.ndim == 1 and arr.size:
            self.kind = "plot"
            self.plot = pg.PlotWidget()
            style_plot(self.plot, self)
            self.plot.setDownsampling(auto=True, mode="peak")
            self.plot.setClipToView(True)
            self.plot.showGrid(x=True, y=True, alpha=0.2)
            self.plot.plot(np.arange(arr.size), numeric, pen=pg.mkPen(series_colour(0), width=1.5))
            self.plot.setLabel("bottom", "index")
            layout.addWidget(self.plot, 1)
        elif numeric is not None and arr.size and (arr.ndim == 2 or _is_colour(arr) or (compact and arr.ndim == 3)):
            self.kind = "image"
            self.image = ImagePane(readout=not compact)
            self.image.set_array(numeric if arr.ndim == 2 or _is_colour(arr) else numeric[0])
            layout.addWidget(self.image, 1)
        elif numeric is not None and arr.size and arr.ndim == 3:
            self.kind = "stack"  # first axis is the frame: ImageView's slider walks through it
            self.image_view = pg.ImageView(imageItem=pg.ImageItem(axisOrder="row-major"))
            self.image_view.ui.roiBtn.hide()
            self.image_view.ui.menuBtn.hide()
            self.image_view.setImage(numeric, axes={"t": 0, "y": 1, "x": 2, "c": None})
            layout.addWidget(self.image_view, 1)
        else:
            self.kind = "text"
            text = QPlainTextEdit(readOnly=True)
            text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            with np.printoptions(threshold=2000, edgeitems=8, linewidth=120):
                text.setPlainText(repr(arr))
            layout.addWidget(text, 1)
