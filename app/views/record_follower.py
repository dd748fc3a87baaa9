"""What the hex pane, the preview and the status bar show for the current tab's current row.

They always follow the tab in front: switching to the extensions or crash-stems tab shows
that tab's record (or nothing), never the rows tab's. Previews are debounced, so holding
the Down key only decodes the row the selection rests on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from app.views.errors import describe_error
from app.views.table_tab import TableTab
from itarcore.errors import ItarError

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

PREVIEW_DEBOUNCE_MS = 30


class RecordFollower(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._timer = QTimer(self, singleShot=True, interval=PREVIEW_DEBOUNCE_MS)
        self._timer.timeout.connect(self._feed_preview)
        self._row: tuple[TableTab, int] | None = None

    def watch(self, tab: TableTab) -> None:
        tab.grid.currentRowChanged.connect(lambda row, t=tab: self.on_row(t, row))
        tab.grid.selectionCountChanged.connect(lambda n, t=tab: self._on_selection_count(t, n))

    def stop(self) -> None:
        self._timer.stop()
        self._row = None

    def on_tab_changed(self) -> None:
        tab = self.w.current_tab()
        if tab is None:
            return
        self.w.status.set_rows(tab.model.n_view, tab.table.n_rows)
        row = tab.grid.current_source_row()
        if row < 0 and tab.model.n_view:
            tab.grid.go_to_view_row(0)  # the hex pane and preview follow this tab, not the previous one
        else:
            self.on_row(tab, row)

    def on_row(self, tab: TableTab, row: int) -> None:
        w = self.w
        if tab is not w.current_tab():
            return
        w.status.set_selection(tab.table, row, len(tab.grid.selected_view_rows()))
        if row < 0:  # nothing selected here: show nothing rather than another tab's record
            self.stop()
            w.hex_pane.show_range(0, 0)
            w.preview.clear()
            return
        table = tab.table
        if table.byte_range is not None:
            try:
                w.hex_pane.show_range(*table.byte_range(row))
            except (ItarError, OSError) as exc:
                w.status.show_message(describe_error(w.path, exc))
        for panel in w.panels:
            panel.on_row_selected(table.name, row)
        self._row = (tab, row)
        self._timer.start()

    def _on_selection_count(self, tab: TableTab, count: int) -> None:
        if tab is self.w.current_tab():
            self.w.status.set_selection(tab.table, tab.grid.current_source_row(), count)

    def _feed_preview(self) -> None:
        if self._row is None:
            return
        w = self.w
        tab, row = self._row
        table = tab.table
        name = f"{table.name} row {row:,}"
        if table.payload is None:
            w.preview.show_unavailable(name, f"Rows of “{table.name}” have no payload to preview.")
        elif w.remote.active or (table.payload_in_ram is not None and not table.payload_in_ram(row)):
            # remote, or local pages not in RAM: read by a worker; previewSettled follows
            w.remote.feed_preview(table, row, name)
            return
        elif table.payload_available is not None and not table.payload_available(row):
            w.preview.show_unavailable(
                name, "Preview disabled: the file holding this row's payload is missing (see the warning above).")
        else:
            try:
                payload = table.payload(row)
            except (ItarError, OSError) as exc:
                w.preview.show_unavailable(name, f"Could not read the payload: {describe_error(w.path, exc)}")
            else:
                w.preview.show_payload(payload)
                return  # previewReady follows when the decode is on screen
        w.previewSettled.emit()

    def highlight_bytes(self, offset: int, size: int) -> None:
        """A panel's request: show file bytes [offset, offset+size) in the hex pane."""
        self.w.hex_dock.show()
        self.w.hex_dock.raise_()
        self.w.hex_pane.show_range(offset, size)

    def follow_bytes(self, offset: int, size: int) -> None:
        """A selection's bytes: the hex pane follows them, shown or not (the user's hidden dock stays hidden)."""
        self.w.hex_pane.show_range(offset, size)
