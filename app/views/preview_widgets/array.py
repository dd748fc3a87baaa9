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


# One colour per label (a segmentation mask): label 0 (background) is black, 1.. cycle through these.
LABEL_PALETTE = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
    (227, 119, 194), (188, 189, 34), (23, 190, 207), (174, 199, 232), (255, 187, 120), (152, 223, 138),
    (255, 152, 150), (197, 176, 213), (196, 156, 148), (247, 182, 210), (219, 219, 141), (158, 218, 229),
    (127, 127, 127), (255, 255, 255)], dtype=np.uint8)


def label_colours(mask: np.ndarray) -> np.ndarray:
    """An RGB image of ``mask``: black where 0, label k in LABEL_PALETTE[(k - 1) % len]."""
    ids = mask.astype(np.int64, copy=False)
    rgb = LABEL_PALETTE[(ids - 1) % len(LABEL_PALETTE)]
    rgb[ids == 0] = 0
    return rgb


def label_summary(mask: np.ndarray) -> str:
    labels = np.unique(mask)
    shown = ", ".join(str(v) for v in labels[:12]) + (" …" if len(labels) > 12 else "")
    return f"{mask.dtype} {tuple(mask.shape)} · {len(labels)} label{'s' if len(labels) != 1 else ''}: {shown}"


def _is_colour(arr: np.ndarray) -> bool:
    return arr.ndim == 3 and arr.shape[2] in (3, 4) and arr.dtype == np.uint8


class ArrayView(QWidget):
    """Shape and dtype on top; below, the plot/image that fits the array's rank.

    ``compact`` (for sample cards) uses a plain image pane instead of ImageView's
    histogram and time slider.
    """

    def __init__(self, arr: np.ndarray, parent: QWidget | None = None, compact: bool = False,
                 labels: bool = False) -> None:
        super().__init__(parent)
        self.array = arr
        self.kind = ""  # "plot", "image", "labels", "stack", "text": what is shown
        labels = labels and arr.ndim == 2 and arr.size > 0 and arr.dtype.kind in "iu"
        self.summary = QLabel(label_summary(arr) if labels else array_summary(arr))
        self.summary.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.summary)
        numeric = _numeric(arr)
        if labels:
            self.kind = "labels"
            self.image = ImagePane(readout=not compact)
            self.image.set_labels(arr, label_colours(arr))
            layout.addWidget(self.image, 1)
        elif numeric is not None and arr.ndim == 1 and arr.size:
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
