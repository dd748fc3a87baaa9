"""Steps the GUI tests share (import as ``from gui_helpers import …``)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication


def open_file(qtbot, window, path: Path | str, timeout: int = 15_000) -> None:
    """Open ``path`` in ``window`` and wait until the document and its first preview are shown."""
    with qtbot.waitSignal(window.previewSettled, timeout=timeout), \
            qtbot.waitSignal(window.documentOpened, timeout=timeout):
        window.open_path(str(path))


def click(qtbot, button) -> None:
    """A left click on ``button``, as a user gives it."""
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def show_payload(qtbot, preview, payload, timeout: int = 5000) -> None:
    """Hand ``payload`` to a PayloadPreview and wait until its view (or inline error) is on screen."""
    with qtbot.waitSignal(preview.previewReady, timeout=timeout):
        preview.show_payload(payload)


def shown(qtbot, widget):
    """``widget`` shown and owned by the test (closed and deleted afterwards)."""
    qtbot.addWidget(widget)
    widget.show()
    return widget


@contextmanager
def taridx_panel(qtbot, panel_class, index: Path | str, size: tuple[int, int] = (900, 700)) -> Iterator:
    """A TARIDX format panel on its own, shown, over a Dataset of ``index``; shut down and closed after."""
    from itarcore.dataset import Dataset
    from itarcore.document import Document

    dataset = Dataset.open(index)
    panel = panel_class(Document(str(dataset.path), "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    try:
        yield panel
    finally:
        panel.shutdown()
        dataset.close()


def settle() -> None:
    """Run the posted layout requests, round after round (each may post the next)."""
    for _ in range(3):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


def make_window(qtbot):
    """A main window, shown and settled, owned by the test."""
    from app.views.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    settle()
    return w


def laptop_window(qtbot, monkeypatch, width: int = 1366, height: int = 768):
    """A window on a ``width``×``height`` screen (the work area leaves 28 px for a desktop panel)."""
    from app.views import dock_layout

    monkeypatch.setattr(dock_layout, "screen_area", lambda _w: QRect(0, 0, width, height - 28))
    window = make_window(qtbot)
    assert window.frameGeometry().width() <= width and window.frameGeometry().height() <= height - 28
    return window


def axis_tick_specs(axis) -> list[tuple]:
    """(rect, flags, text) of every tick label a pyqtgraph axis draws now, as it lays them out."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return list(specs[2]) if specs else []
