"""Format-specific extra views, kept apart from the format-neutral main window.

The main window shows every Document the same way (header, hex, tables, preview).
A format may add panels: ``PANEL_MODULES`` maps a format name to a module under
``app.views`` whose ``PANELS`` list holds :class:`FormatPanel` subclasses. The main
window docks each as a tab and connects its signals.
"""
from __future__ import annotations

import importlib

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from itarcore.document import Document

PANEL_MODULES: dict[str, str] = {
    "taridx": "app.views.samples_panel",
    "kastore": "app.views.kastore_panel",
    "taco": "app.views.taco_panel",
    "tbl": "app.views.tbl_panel",
}


class FormatPanel(QWidget):
    """Base for a format's extra view. Subclasses set ``title`` and build their UI in __init__."""

    title = "Panel"
    highlightBytes = Signal(int, int)  # (offset, size): show these file bytes in the hex pane
    selectRows = Signal(str, object)  # (table name, np.ndarray of rows): select/filter in that table's grid
    statusMessage = Signal(str)
    reloadRequested = Signal()  # the file changed on disk (e.g. an in-place edit): reopen it

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document

    def on_row_selected(self, table_name: str, row: int) -> None:
        """The main window reports the current row of a table grid (source row index)."""

    def shutdown(self) -> None:
        """Stop any worker before the document closes."""


def panels_for(document: Document) -> list[type[FormatPanel]]:
    name = PANEL_MODULES.get(document.format)
    if name is None:
        return []
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return []
        raise
    return list(getattr(module, "PANELS", []))
