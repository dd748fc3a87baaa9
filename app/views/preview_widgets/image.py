"""Zoomable, pannable image view that reads out the pixel under the cursor.

Scroll to zoom, drag to pan, double-click to fit. Works for PIL images and for 2D
(or H×W×3/4) numpy arrays; the readout shows the original values (e.g. 16-bit or
float), not the 8-bit display.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PIL import Image
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QImage, QPainter, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

_GREY_MODES = {"L", "I;16", "I;16B", "I;16L", "I", "F"}


def image_arrays(image: Image.Image) -> tuple[np.ndarray, np.ndarray, tuple[float, float] | None]:
    """(values for the readout, array to display, display levels) for a PIL image."""
    mode = image.mode
    if mode in _GREY_MODES:
        values = np.asarray(image)
        if values.dtype.byteorder == ">":
            values = values.astype(values.dtype.newbyteorder("="))
        if mode == "L":
            return values, values, (0, 255)
        lo, hi = (float(np.nanmin(values)), float(np.nanmax(values))) if values.size else (0.0, 1.0)
        return values, values, (lo, hi if hi > lo else lo + 1)
    if mode == "1":
        values = np.asarray(image.convert("L"))
        return values, values, (0, 255)
    if mode == "P":  # readout shows the palette index; display the colours
        index = np.asarray(image)
        has_alpha = "transparency" in image.info
        return index, np.asarray(image.convert("RGBA" if has_alpha else "RGB")), None
    if mode in ("RGB", "RGBA"):
        values = np.asarray(image)
        return values, values, None
    values = np.asarray(image)  # LA, CMYK, YCbCr, …: read the stored channels, show RGB(A)
    display = np.asarray(image.convert("RGBA" if "A" in mode else "RGB"))
    return values, display, None


_QIMAGE_FORMATS = {1: QImage.Format.Format_Grayscale8, 3: QImage.Format.Format_RGB888,
                   4: QImage.Format.Format_RGBA8888}


def qimage_of(display: np.ndarray) -> QImage | None:
    """A QImage over 8-bit grey/RGB/RGBA pixels (no copy, no level scaling); None for other data."""
    if display.dtype != np.uint8 or display.ndim not in (2, 3):
        return None
    channels = 1 if display.ndim == 2 else display.shape[2]
    fmt = _QIMAGE_FORMATS.get(channels)
    if fmt is None:
        return None
    display = np.ascontiguousarray(display)
    h, w = display.shape[:2]
    image = QImage(display.data, w, h, display.strides[0], fmt)
    image._buffer = display  # QImage does not own the pixels: keep them alive with it
    return image


class QImageItem(pg.GraphicsObject):
    """Draws a QImage pixel-for-pixel in view coordinates: 8-bit images need no levels or lookup table."""

    def __init__(self) -> None:
        super().__init__()
        self.qimage: QImage | None = None

    def set_qimage(self, image: QImage | None) -> None:
        self.prepareGeometryChange()
        self.qimage = image
        self.update()

    def boundingRect(self) -> QRectF:
        if self.qimage is None:
            return QRectF()
        return QRectF(0, 0, self.qimage.width(), self.qimage.height())

    def paint(self, painter: QPainter, *args) -> None:
        if self.qimage is not None:
            painter.drawImage(QPointF(0, 0), self.qimage)


def _format_value(value: np.ndarray | np.generic) -> str:
    if np.ndim(value) == 0:
        v = value.item() if hasattr(value, "item") else value
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    return "(" + ", ".join(_format_value(v) for v in value) + ")"


class ImagePane(QWidget):
    """pyqtgraph ViewBox with one row-major ImageItem, aspect locked, y pointing down."""

    hovered = Signal(str)  # the readout text

    def __init__(self, parent: QWidget | None = None, readout: bool = True) -> None:
        super().__init__(parent)
        self.view = pg.GraphicsView()
        self.view.setBackground(self.palette().color(QPalette.ColorRole.Base))
        self.viewbox = pg.ViewBox(lockAspect=True, invertY=True, enableMenu=False)
        self.view.setCentralItem(self.viewbox)
        self.item = pg.ImageItem(axisOrder="row-major")  # levels for 16-bit, float and array data
        self.viewbox.addItem(self.item)
        self.qitem = QImageItem()  # 8-bit grey/RGB(A): handed to Qt as is
        self.viewbox.addItem(self.qitem)
        self.values: np.ndarray | None = None
        self.readout = QLabel(" ")
        self.readout.setWordWrap(True)  # a long text wraps; it never widens the window
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setVisible(readout)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.readout)
        self.viewbox.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.viewbox.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def set_image(self, image: Image.Image) -> None:
        values, display, levels = image_arrays(image)
        self._show(values, display, levels)

    def set_array(self, arr: np.ndarray) -> None:
        """A 2D array (or H×W×3/4 colour) shown with min..max levels."""
        display = arr
        if arr.dtype == bool:
            display = arr.astype(np.uint8)
        elif np.iscomplexobj(arr):
            display = np.abs(arr)
        finite = display[np.isfinite(display)] if display.dtype.kind == "f" else display
        if finite.size:
            lo, hi = float(finite.min()), float(finite.max())
        else:
            lo, hi = 0.0, 1.0
        levels = (lo, hi if hi > lo else lo + 1)
        if arr.ndim == 3 and arr.dtype == np.uint8:
            levels = None
        self._show(arr, display, levels)

    def set_labels(self, labels: np.ndarray, rgb: np.ndarray) -> None:
        """A label mask drawn as ``rgb`` (one colour per label); the readout shows the label ids."""
        self._show(labels, rgb, None)

    def _show(self, values: np.ndarray, display: np.ndarray, levels: tuple[float, float] | None) -> None:
        self.values = values
        qimage = qimage_of(display) if levels in (None, (0, 255)) else None
        self.qitem.set_qimage(qimage)
        if qimage is not None:
            self.item.clear()
        elif levels is None:
            self.item.setImage(display, autoLevels=False, levels=(0, 255))
        else:
            self.item.setImage(display, autoLevels=False, levels=levels)
        self.fit()
        self.readout.setText(self.hint())

    def fit(self) -> None:
        """Show the whole image, and keep fitting it as the pane resizes until the user zooms or pans."""
        self.viewbox.autoRange(padding=0.02)
        self.viewbox.enableAutoRange(enable=True)

    def image_size(self) -> tuple[int, int]:
        """(width, height) in pixels of what is shown."""
        if self.values is None:
            return (0, 0)
        return int(self.values.shape[1]), int(self.values.shape[0])

    def hint(self) -> str:
        w, h = self.image_size()
        return f"{w}×{h} px · scroll to zoom, drag to pan, double-click to fit"

    def value_at(self, x: int, y: int) -> str | None:
        """Readout text for pixel column x, row y, or None outside the image."""
        if self.values is None:
            return None
        h, w = self.values.shape[:2]
        if not (0 <= x < w and 0 <= y < h):
            return None
        return f"x {x}, y {y}: {_format_value(self.values[y, x])}"

    def clear(self) -> None:
        self.values = None
        self.item.clear()
        self.qitem.set_qimage(None)
        self.readout.setText(" ")

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        if self.values is None or not self.viewbox.sceneBoundingRect().contains(scene_pos):
            return
        p = self.viewbox.mapSceneToView(scene_pos)
        text = self.value_at(int(np.floor(p.x())), int(np.floor(p.y())))
        self.readout.setText(text or self.hint())
        if text:
            self.hovered.emit(text)

    def _on_mouse_clicked(self, event) -> None:
        if event.double():
            self.fit()
