"""Format-specific extra views, kept apart from the format-neutral main window.

The main window shows every Document the same way (header, hex, tables, preview).
A format may add panels: ``PANEL_MODULES`` maps a format name to modules under
``app.views`` whose ``PANELS`` lists hold :class:`FormatPanel` subclasses. The main
window docks each as a tab and connects its signals.
"""
from __future__ import annotations

import importlib

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QWidget

from itarcore.document import Document

PANEL_MODULES: dict[str, list[str]] = {
    "taridx": ["app.views.formats.taridx.samples_panel", "app.views.formats.taridx.plots_panel",
               "app.views.formats.taridx.audit_panel", "app.views.formats.taridx.gallery_panel",
               "app.views.formats.taridx.stats_panel", "app.views.formats.taridx.dedup_panel"],
    "kastore": ["app.views.formats.kastore.panel"],
    "taco": ["app.views.formats.taco.panel"],
    "tbl": ["app.views.formats.tbl.panel"],
}


class FormatPanel(QWidget):
    """Base for a format's extra view. Subclasses set ``title`` and build their UI in __init__."""

    title = "Panel"
    highlightBytes = Signal(int, int)  # (offset, size): show these file bytes in the hex pane (the user asked)
    followBytes = Signal(int, int)  # the same as a selection follows: a hex dock the user hid stays hidden
    selectRows = Signal(str, object)  # (table name, np.ndarray of rows): select/filter in that table's grid
    filterRows = Signal(str, object, str)  # (table name, rows, label): show only these rows in that grid
    statusMessage = Signal(str)
    statusNote = Signal(str)  # a lasting note in the status bar while it holds ('' removes it)
    reloadRequested = Signal()  # the file changed on disk (e.g. an in-place edit): reopen it
    previewRequested = Signal()  # bring the preview to the front (e.g. Enter on a gallery thumbnail)
    auditReport = Signal(object)  # an itarcore AuditReport: every panel's on_audit_report hears it

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document

    def on_row_selected(self, table_name: str, row: int) -> None:
        """The main window reports the current row of a table grid (source row index)."""

    def on_view_changed(self, table_name: str, view_rows: object) -> None:
        """A table grid's filter or sort changed: ``view_rows`` (source rows in view order, None for all)."""

    def on_audit_report(self, report: object) -> None:
        """A panel published an audit report (e.g. the findings of the full audit)."""

    def shutdown(self) -> None:
        """Stop any worker before the document closes."""

    def suggestion(self) -> tuple[str, str] | None:
        """(warning, button text) for the window's banner when this panel has something to suggest at open.

        The button raises the panel and calls :meth:`act_on_suggestion`. Must be cheap (no pass over rows).
        """
        return None

    def act_on_suggestion(self) -> None:
        """The user pressed the banner's button."""


class FixedHintPanel(FormatPanel):
    """A panel whose size hints are constants: the main window asks for the hints of every docked panel, hidden
    tabs included, whenever its layout changes (e.g. a table tab is switched), and a panel full of tables, plots
    and combo boxes answers from all its children each time."""

    def sizeHint(self) -> QSize:
        return QSize(560, 480)

    def minimumSizeHint(self) -> QSize:
        return QSize(320, 240)


def panels_for(document: Document) -> list[type[FormatPanel]]:
    panels: list[type[FormatPanel]] = []
    for name in PANEL_MODULES.get(document.format, []):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that panel is not built (yet); the rest still show
                continue
            raise
        panels.extend(getattr(module, "PANELS", []))
    return panels
