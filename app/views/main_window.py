"""The browser's main window: any Document as header + hex + one grid per table + preview.

Nothing here knows a file format. Formats add views through ``panels_for`` and
their Document's hooks (payload, byte_range, lookup, drill).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QVBoxLayout, QWidget

from app.style import app_icon
from app.views.about import show_about
from app.views.dock_layout import DockLayout
from app.views.errors import describe_error, show_error
from app.views.header_view import HeaderPanel
from app.views.hex import HexPane
from app.views.main_actions import MainActions
from app.views.panels import FormatPanel, panels_for
from app.views.preview import PayloadPreview
from app.views.record_follower import RecordFollower
from app.views.remote_session import RemoteSession, dropped_target, open_for_browsing
from app.views.settings import add_recent_file, app_settings
from app.views.start_page import StartPage
from app.views.status import StatusArea, WarningBanner
from app.views.table_tab import TableTab
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.storage import absolute, basename, display_name


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
        self._open_worker: JobWorker | None = None
        self._jobs: set[JobWorker] = set()
        self._populating = False

        self.banner = WarningBanner(self)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("tableTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.document_view = QWidget(self)
        lay = QVBoxLayout(self.document_view)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.banner)
        lay.addWidget(self.tabs, 1)
        self.setCentralWidget(self.document_view)

        self.header_panel = HeaderPanel(self)
        self.hex_pane = HexPane(self)
        self.preview = PayloadPreview(self)
        self.layout_ = DockLayout(self, self.settings)
        self.header_dock = self.layout_.add("Header", "headerDock", self.header_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.hex_dock = self.layout_.add("Hex", "hexDock", self.hex_pane, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.preview_dock = self.layout_.add("Preview", "previewDock", self.preview, Qt.DockWidgetArea.RightDockWidgetArea)
        self.layout_.arrange(self.header_dock, self.hex_dock, self.preview_dock)
        self.header_panel.fieldSelected.connect(self.hex_pane.show_range)
        self.hex_pane.byteClicked.connect(self.header_panel.select_offset)
        self.preview.previewReady.connect(self.previewSettled)
        self.remote = RemoteSession(self)

        self.status = StatusArea(self.statusBar(), self)
        self.status.cancelRequested.connect(self._cancel_jobs)
        self.actions_ = MainActions(self)
        self.follower = RecordFollower(self)
        self.header_panel.showInHex.connect(self.follower.highlight_bytes)
        self.resize(self.layout_.default_size())
        self.layout_.size_docks()
        self.layout_.restore_geometry()
        self.layout_.restore()
        # over the docks and grids until a file is open: the dock layout itself is left as the user set it
        self.start_page = StartPage(self)
        self._show_start_page()
        self._update_title()

    def _show_start_page(self) -> None:
        self.start_page.refresh()
        self._place_start_page()
        self.start_page.show()
        self.start_page.raise_()

    def _place_start_page(self) -> None:
        top = self.menuBar().geometry().bottom() + 1 if self.menuBar().isVisible() else 0
        bottom = self.statusBar().geometry().top() if self.statusBar().isVisible() else self.height()
        self.start_page.setGeometry(0, top, self.width(), max(0, bottom - top))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._place_start_page()

    @property
    def _panel_docks(self) -> list[QDockWidget]:
        return self.layout_.panel_docks

    def save_layout(self) -> None:
        self.layout_.save()

    def reset_layout(self) -> None:
        self.layout_.reset()
        self.start_page.raise_()

    # ---- opening ------------------------------------------------------------------------
    def open_path(self, path: str, storage_options: dict | None = None) -> None:
        """Open a file or URL in a worker (format by magic); documentOpened or openFailed follows.

        ``storage_options`` (fsspec) for a URL are kept for this session only; without them a URL
        opened before in this session reuses its options.
        """
        path = absolute(path)
        if self._open_worker is not None:
            return  # one open at a time; the menu is disabled meanwhile
        self.remote.remember(path, storage_options)
        self.status.show_message(f"Opening {display_name(path)}…")
        worker = JobWorker(open_for_browsing, path, self.remote.options_for(path), pass_progress=False)
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
        self.status.show_message(f"Could not open {basename(display_name(path))}: {problem}")
        show_error(self, "Open file", display_name(path), exc)
        self.openFailed.emit(path, problem)

    def _show_document(self, path: str, doc: Document) -> None:
        self.close_document()
        self.document, self.path = doc, path
        self.header_panel.set_fields(doc.header)
        # pages not in RAM (a remote file; a local one not in the page cache) are read by the hex pane's
        # worker, never on the GUI thread
        remote = self.remote.attach(doc)
        self.hex_pane.set_source(doc.read_bytes, doc.file_size, background=True,
                                 read_cached=None if remote else doc.read_bytes_if_cached)
        self.banner.set_warnings(doc.warnings)
        self._populating = True  # tabs appear one by one: no tab change to follow until all are in
        for table in doc.tables:
            self._add_table_tab(table)
        self._populating = False
        self._add_panels(doc)
        self.start_page.hide()
        if not self.layout_.restore():
            self.layout_.size_docks()
        self.preview_dock.raise_()
        self.status.set_document(display_name(path), doc)
        self.actions_.set_recent(add_recent_file(self.settings, path))
        self.actions_.set_document_open(True)
        self._update_title()
        self.status.show_message(f"Opened {display_name(path)}", 4000)
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
        self.follower.watch(tab)
        tab.busy.connect(self.status.job_started)
        tab.progressed.connect(self.status.job_progress)
        tab.idle.connect(self.status.job_done)
        tab.failed.connect(lambda msg, t=tab: self._tab_failed(t, msg))
        tab.exported.connect(lambda p, n: self.status.show_message(f"Wrote {n:,} rows to {p}"))
        tab.copied.connect(self.actions_.put_on_clipboard)
        tab.viewApplied.connect(lambda t=tab: self.status.set_rows(t.model.n_view, t.table.n_rows))
        tab.viewApplied.connect(lambda t=tab: [p.on_view_changed(t.table.name, t.model.view_rows) for p in self.panels])
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
        dock = self.layout_.add_panel(panel, panel.title, f"panel:{cls.__module__}.{cls.__name__}")
        panel.highlightBytes.connect(self.follower.highlight_bytes)
        panel.followBytes.connect(self.follower.follow_bytes)
        # a panel behind another tab is not what the user is looking at: it must not move the grid
        panel.selectRows.connect(
            lambda name, rows, p=panel: None if p.visibleRegion().isEmpty() else self.select_rows(name, rows))
        panel.statusMessage.connect(self.status.show_message)
        panel.statusNote.connect(self.status.set_note)
        panel.filterRows.connect(self.filter_rows)
        panel.reloadRequested.connect(self.reload)
        panel.previewRequested.connect(lambda: (self.preview_dock.show(), self.preview_dock.raise_()))
        panel.auditReport.connect(lambda report: [p.on_audit_report(report) for p in self.panels])
        self.panels.append(panel)
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
        self.follower.stop()
        self.remote.detach()
        for panel in self.panels:
            panel.shutdown()
        for tab in self.tabs_by_name.values():
            tab.shutdown()
        self.preview.clear()
        for dock in self.layout_.remove_panels():
            self.actions_.remove_dock_toggle(dock)
        self.panels.clear()
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
        self.statusBar().clearMessage()  # "Opened …" no longer holds
        self.actions_.set_document_open(False)
        self._show_start_page()
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
        if not self._populating:
            self.follower.on_tab_changed()

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
            self.setWindowTitle(f"{basename(display_name(self.path))} — {self.document.title} — iTar Browser")

    def about(self) -> None:
        show_about(self)

    # ---- drag and drop, closing ---------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_target(event.mimeData()):  # a local file, or a URL dropped as a link or as text
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        target = dropped_target(event.mimeData())
        if target:
            event.acceptProposedAction()
            self.open_path(target)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.layout_.fit_to_screen()  # the real frame size is known now
        self.layout_.follow_screen()
        self._place_start_page()

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
