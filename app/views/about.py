"""The About box."""
from __future__ import annotations

import platform

import numpy as np
import PySide6
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

import itarcore


def about_text() -> str:
    try:
        import pyqtgraph

        pg = pyqtgraph.__version__
    except ImportError:  # pragma: no cover - pyqtgraph is a gui dependency
        pg = "not installed"
    return (
        f"<h3>iTar Browser {itarcore.__version__}</h3>"
        "<p>Look inside the index files of machine-learning dataset shards: "
        "TARIDX indexes of tar shards, TACO zips, kastore files and TBL (TurboLoader) files.</p>"
        "<p>Indexes of hundreds of millions of rows are mapped, not read: the grids show "
        "only what is on screen.</p>"
        f"<p><small>Python {platform.python_version()} · PySide6 {PySide6.__version__} (Qt {qVersion()}) · "
        f"numpy {np.__version__} · pyqtgraph {pg}<br>MIT licence</small></p>"
    )


def show_about(parent: QWidget | None) -> QMessageBox:
    box = QMessageBox(parent)
    box.setObjectName("aboutBox")
    box.setWindowTitle("About iTar Browser")
    box.setText(about_text())
    if parent is not None and not parent.windowIcon().isNull():
        box.setIconPixmap(parent.windowIcon().pixmap(64, 64))
    box.open()
    return box
