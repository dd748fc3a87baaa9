"""The browser's main window: any Document as header + hex + one grid per table + preview.

Nothing here knows a file format. Formats add views through ``panels_for`` and
their Document's hooks (payload, byte_range, lookup, drill).
"""
from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QVBoxLayout, QWidget

from app.style import app_icon
from app.views.about import show_about
from app.views.errors import describe_error, show_error
from app.views.header_view import HeaderPanel
from app.views.hex_view import HexPane
from app.views.main_actions import MainActions
from app.views.panels import FormatPanel, panels_for
from app.views.preview import PayloadPreview
from app.views.settings import add_recent_file, app_settings
from app.views.status import StatusArea, WarningBanner
from app.views.table_tab import TableTab
from app.workers import JobWorker
from itarcore.document import Document, open_document
from itarcore.errors import ItarError

PREVIEW_DEBOUNCE_MS = 30


# Bump when the default dock arrangement changes, so layouts saved by older versions are not restored.
LAYOUT_VERSION = 2


class MainWindow(QMainWindow):
    documentOpened = Signal(str)
    openFailed = Signal(str, str)  # path, problem
    previewSettled = Signal()  # the current row's preview is on screen (or says why there is none)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle("iTar Browser")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.settings = app_settings()
        self.document: Document | None = None
        self.path = ""
        self.tabs_by_name: dict[str, TableTab] = {}
        self.panels: list[FormatPanel] = []
        self._panel_docks: list[QDockWidget] = []
        self._open_worker: JobWorker | None = None
        self._jobs: set[JobWorker] = set()
        self._populating = False

        self.banner = WarningBanner(self)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("tableTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        central = QWidget(self)
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.banner)
        lay.addWidget(self.tabs, 1)
        self.setCentralWidget(central)

        self.header_panel = HeaderPanel(self)
        self.hex_pane = HexPane(self)
        self.preview = PayloadPreview(self)
        # header and hex side by side under the grids; the preview spans the full height on the right
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.header_dock = self._dock("Header", "headerDock", self.header_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.hex_dock = self._dock("Hex", "hexDock", self.hex_pane, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.splitDockWidget(self.header_dock, self.hex_dock, Qt.Orientation.Horizontal)
        self.preview_dock = self._dock("Preview", "previewDock", self.preview, Qt.DockWidgetArea.RightDockWidgetArea)
        self.header_panel.fieldSelected.connect(self.hex_pane.show_range)
        self.hex_pane.byteClicked.connect(self.header_panel.select_offset)
        self.preview.previewReady.connect(self.previewSettled)

        self.status = StatusArea(self.statusBar(), self)
        self.status.cancelRequested.connect(self._cancel_jobs)
        self.actions_ = MainActions(self)
        self._preview_timer = QTimer(self, singleShot=True, interval=PREVIEW_DEBOUNCE_MS)
        self._preview_timer.timeout.connect(self._feed_preview)
        self._preview_row: tuple[TableTab, int] | None = None
        self.resize(1440, 900)
        self._size_docks()
        self._default_state = self.saveState()
        geometry = self.settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        self._restore_layout()
        self._update_title()

    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _size_docks(self) -> None:
        preview_w = max(380, self.width() * 27 // 100)  # the grid and header fields get the rest
        hex_w = self.hex_pane.minimum_width_hint()
        self.resizeDocks([self.preview_dock], [preview_w], Qt.Orientation.Horizontal)
        self.resizeDocks([self.header_dock], [max(260, self.height() // 3)], Qt.Orientation.Vertical)
        rest = max(300, self.width() - preview_w - hex_w)
        self.resizeDocks([self.header_dock, self.hex_dock], [rest, hex_w], Qt.Orientation.Horizontal)

    def _restore_layout(self) -> bool:
        state = self.settings.value("window/state")
        return state is not None and bool(self.restoreState(state, LAYOUT_VERSION))

    def save_layout(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState(LAYOUT_VERSION))
        self.settings.sync()

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        self._size_docks()
        for dock in self._panel_docks:
            dock.show()

    # ---- opening ------------------------------------------------------------------------
    def open_path(self, path: str) -> None:
        """Open ``path`` in a worker (format by magic); documentOpened or openFailed follows."""
        path = os.path.abspath(os.fspath(path))
        if self._open_worker is not None:
            return  # one open at a time; the menu is disabled meanwhile
        self.status.show_message(f"Opening {path}…")
        worker = JobWorker(open_document, path, pass_progress=False)
        # the open is over when its answer arrives: `finished` is a separate event that may come later
        worker.returned.connect(lambda doc, p=path, w=worker: (self._open_finished(w), self._show_document(p, doc)))
        worker.errored.connect(lambda exc, p=path, w=worker: (self._open_finished(w), self._open_failed(p, exc)))
        worker.finished.connect(lambda w=worker: self._open_finished(w))
        self._open_worker = worker
        self.actions_.set_opening(True)
        worker.start()

    def _open_finished(self, worker: JobWorker) -> None:
        if self._open_worker is worker:
            self._open_worker = None
            self.actions_.set_opening(False)

    def _open_failed(self, path: str, exc: BaseException) -> None:
        problem = describe_error(path, exc)
        self.status.show_message(f"Could not open {os.path.basename(path)}: {problem}")
        show_error(self, "Open file", path, exc)
        self.openFailed.emit(path, problem)

    def _show_document(self, path: str, doc: Document) -> None:
        self.close_document()
        self.document, self.path = doc, path
        self.header_panel.set_fields(doc.header)
        ends = [f.offset + f.size for f in doc.header if f.offset + f.size <= 4096]
        self.hex_pane.set_source(doc.read_bytes, doc.file_size, first=max(512, max(ends, default=0)))
        self.banner.set_warnings(doc.warnings)
        self._populating = True  # tabs appear one by one: no tab change to follow until all are in
        for table in doc.tables:
            self._add_table_tab(table)
        self._populating = False
        self._add_panels(doc)
        if not self._restore_layout():
            self._size_docks()
        self.preview_dock.raise_()
        self.status.set_document(path, doc)
        self.actions_.set_recent(add_recent_file(self.settings, path))
        self.actions_.set_document_open(True)
        self._update_title()
        self.status.show_message(f"Opened {path}", 4000)
        first = self.current_tab()
        if first is not None and first.table.n_rows:
            first.grid.go_to_view_row(0)  # something to look at straight away
        else:
            self.previewSettled.emit()
        self.documentOpened.emit(path)

    def _add_table_tab(self, table) -> None:
        tab = TableTab(table, parent=self.tabs)
        self.tabs_by_name[table.name] = tab
        self.tabs.addTab(tab, f"{table.name} ({table.n_rows:,})")
        if table.description:
            self.tabs.setTabToolTip(self.tabs.count() - 1, table.description)
        tab.grid.currentRowChanged.connect(lambda row, t=tab: self._on_row(t, row))
        tab.grid.selectionCountChanged.connect(lambda n, t=tab: self._on_selection_count(t, n))
        tab.busy.connect(self.status.job_started)
        tab.progressed.connect(self.status.job_progress)
        tab.idle.connect(self.status.job_done)
        tab.failed.connect(lambda msg, t=tab: self._tab_failed(t, msg))
        tab.exported.connect(lambda p, n: self.status.show_message(f"Wrote {n:,} rows to {p}"))
        tab.viewApplied.connect(lambda t=tab: self.status.set_rows(t.model.n_view, t.table.n_rows))
        tab.viewPartial.connect(self.status.rows_label.setText)  # "≥ N rows (counting…)"
        if table.drill is not None:  # double-click or Enter drills down; a single click only selects
            tab.grid.rowActivated.connect(lambda view_row, t=tab: self._drill(t, view_row))

    def _add_panels(self, doc: Document) -> None:
        for cls in panels_for(doc):
            try:
                panel = cls(doc, self)
            except Exception as exc:  # noqa: BLE001 - one broken extra view must not block the file
                self.status.show_message(f"The {cls.title} view could not start: {describe_error(doc.path, exc)}")
                continue
            self.add_panel(panel)

    def add_panel(self, panel: FormatPanel) -> QDockWidget:
        """Dock ``panel`` as a tab beside the others; it closes with the document."""
        cls = type(panel)
        dock = QDockWidget(panel.title, self)
        dock.setObjectName(f"panel:{cls.__module__}.{cls.__name__}")
        dock.setWidget(panel)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.tabifyDockWidget(self._panel_docks[-1] if self._panel_docks else self.preview_dock, dock)
        panel.highlightBytes.connect(self._highlight_bytes)
        # a panel behind another tab is not what the user is looking at: it must not move the grid
        panel.selectRows.connect(
            lambda name, rows, p=panel: None if p.visibleRegion().isEmpty() else self.select_rows(name, rows))
        panel.statusMessage.connect(self.status.show_message)
        panel.statusNote.connect(self.status.set_note)
        panel.filterRows.connect(self.filter_rows)
        panel.reloadRequested.connect(self.reload)
        self.panels.append(panel)
        self._panel_docks.append(dock)
        self.actions_.add_dock_toggle(dock)
        suggestion = panel.suggestion()
        if suggestion is not None:
            self.banner.add_warning(suggestion[0], suggestion[1],
                                    lambda p=panel, d=dock: (d.show(), d.raise_(), p.act_on_suggestion()))
        return dock

    def close_document(self) -> None:
        if self.document is None:
            return
        self.save_layout()
        self._preview_timer.stop()
        self._preview_row = None
        for panel in self.panels:
            panel.shutdown()
        for tab in self.tabs_by_name.values():
            tab.shutdown()
        self.preview.clear()
        for dock in self._panel_docks:
            self.actions_.remove_dock_toggle(dock)
            self.removeDockWidget(dock)
            dock.deleteLater()
        self.panels.clear()
        self._panel_docks.clear()
        self._populating = True
        while self.tabs.count():
            w = self.tabs.widget(0)
            self.tabs.removeTab(0)
            w.deleteLater()
        self._populating = False
        self.tabs_by_name.clear()
        self.header_panel.set_fields([])
        self.hex_pane.set_source(None, 0)
        self.banner.set_warnings([])
        self.document.close()
        self.document, self.path = None, ""
        self.status.set_document("", None)
        self.actions_.set_document_open(False)
        self._update_title()

    def reload(self) -> None:
        if self.path:
            path = self.path
            self.close_document()
            self.open_path(path)

    def open_demo(self) -> None:
        try:
            from itarcore.demo import build_demo, demo_dir
        except ImportError as exc:
            show_error(self, "Demo dataset", "", f"The demo builder is not available: {exc}")
            return
        worker = JobWorker(build_demo, demo_dir())
        worker.returned.connect(lambda path: self.open_path(str(path)))
        worker.errored.connect(lambda exc: show_error(self, "Demo dataset", str(demo_dir()), exc))
        self._run_job(worker, "Building the demo dataset")

    def _run_job(self, worker: JobWorker, what: str) -> None:
        self._jobs.add(worker)
        worker.progressed.connect(self.status.job_progress)
        worker.finished.connect(lambda w=worker: (self._jobs.discard(w), self.status.job_done()))
        self.status.job_started(what)
        worker.start()

    def _cancel_jobs(self) -> None:
        for w in list(self._jobs):
            w.quit()
        for tab in self.tabs_by_name.values():
            for w in list(tab._workers):
                w.quit()

    # ---- rows, preview, panels -----------------------------------------------------------
    def current_tab(self) -> TableTab | None:
        w = self.tabs.currentWidget()
        return w if isinstance(w, TableTab) else None

    def _on_tab_changed(self, _index: int) -> None:
        tab = self.current_tab()
        if tab is None or self._populating:
            return
        self.status.set_rows(tab.model.n_view, tab.table.n_rows)
        row = tab.grid.current_source_row()
        if row < 0 and tab.model.n_view:
            tab.grid.go_to_view_row(0)  # the hex pane and preview follow this tab, not the previous one
        else:
            self._on_row(tab, row)

    def _on_row(self, tab: TableTab, row: int) -> None:
        if tab is not self.current_tab():
            return
        self.status.set_selection(tab.table, row, len(tab.grid.selected_view_rows()))
        if row < 0:  # nothing selected here: show nothing rather than another tab's record
            self._preview_timer.stop()
            self._preview_row = None
            self.hex_pane.show_range(0, 0)
            self.preview.clear()
            return
        table = tab.table
        if table.byte_range is not None:
            try:
                self.hex_pane.show_range(*table.byte_range(row))
            except (ItarError, OSError) as exc:
                self.status.show_message(describe_error(self.path, exc))
        for panel in self.panels:
            panel.on_row_selected(table.name, row)
        self._preview_row = (tab, row)
        self._preview_timer.start()

    def _on_selection_count(self, tab: TableTab, count: int) -> None:
        if tab is self.current_tab():
            self.status.set_selection(tab.table, tab.grid.current_source_row(), count)

    def _feed_preview(self) -> None:
        if self._preview_row is None:
            return
        tab, row = self._preview_row
        table = tab.table
        name = f"{table.name} row {row:,}"
        if table.payload is None:
            self.preview.show_unavailable(name, f"Rows of “{table.name}” have no payload to preview.")
        elif table.payload_available is not None and not table.payload_available(row):
            self.preview.show_unavailable(
                name, "Preview disabled: the file holding this row's payload is missing (see the warning above).")
        else:
            try:
                payload = table.payload(row)
            except (ItarError, OSError) as exc:
                self.preview.show_unavailable(name, f"Could not read the payload: {describe_error(self.path, exc)}")
            else:
                self.preview.show_payload(payload)
                return  # previewReady follows when the decode is on screen
        self.previewSettled.emit()

    def _highlight_bytes(self, offset: int, size: int) -> None:
        self.hex_dock.show()
        self.hex_dock.raise_()
        self.hex_pane.show_range(offset, size)

    def _drill(self, tab: TableTab, view_row: int) -> None:
        table = tab.table
        if table.drill is None or view_row >= tab.model.n_view:
            return
        source = tab.model.source_row(view_row)
        if source < 0:
            return
        label_col = next((c for c in range(len(table.columns)) if table.columns[c].kind in ("text", "enum")), 0)
        label = f"{table.name}: {tab.model.text(view_row, label_col)}"
        # finding a drill's rows is a pass over every row (an extension, a stem): in a worker
        worker = JobWorker(table.drill, source, pass_progress=False)
        worker.returned.connect(
            lambda result, lb=label: self.filter_rows(result[0], np.asarray(result[1], dtype=np.int64), lb))
        worker.errored.connect(lambda exc: self.status.show_message(describe_error(self.path, exc)))
        self._run_job(worker, f"Finding the rows of {label}")

    def select_rows(self, table_name: str, rows: object) -> None:
        """A panel's request: select ``rows`` in that table's grid (clearing a filter that hides them)."""
        tab = self.tabs_by_name.get(table_name)
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        if tab is None or not len(rows):
            return
        self.tabs.setCurrentWidget(tab)
        if not tab.grid.select_source_rows(rows):
            tab.when_applied(lambda: tab.grid.select_source_rows(rows))
            tab.filter_bar.clear()

    def filter_rows(self, table_name: str, rows: np.ndarray, label: str) -> None:
        """A drill-down: show only ``rows`` in that table's grid."""
        tab = self.tabs_by_name.get(table_name)
        if tab is not None:
            self.tabs.setCurrentWidget(tab)
            tab.when_applied(lambda: tab.grid.go_to_view_row(0))
            tab.set_filter_rows(rows, label)

    def go_to_row(self, row: int) -> bool:
        """Select source row ``row`` of the current grid; False if it does not exist or is filtered out."""
        tab = self.current_tab()
        if tab is None:
            return False
        if tab.grid.go_to_source_row(row):
            return True
        n = tab.table.n_rows
        why = "is hidden by the filter" if 0 <= row < n else f"does not exist (rows 0–{n - 1:,})"
        self.status.show_message(f"Row {row:,} {why}")
        return False

    def _tab_failed(self, tab: TableTab, message: str) -> None:
        self.status.show_message(message)
        show_error(self, f"Table {tab.table.name}", self.path, message)

    def _update_title(self) -> None:
        if self.document is None:
            self.setWindowTitle("iTar Browser")
        else:
            self.setWindowTitle(f"{os.path.basename(self.path)} — {self.document.title} — iTar Browser")

    def about(self) -> None:
        show_about(self)

    # ---- drag and drop, closing ---------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.open_path(files[0])

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop every worker and close the document (tests call this too)."""
        self.save_layout()
        self._cancel_jobs()
        self.close_document()
        self.preview.shutdown()
        for w in list(self._jobs) + ([self._open_worker] if self._open_worker else []):
            w.quit()
