"""Menus, shortcuts and the dialogs behind them, for the main window."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QFileDialog, QInputDialog, QMenu

from app.models.selection_copy import COPY_AT_ONCE, selection_text
from app.style import THEMES, apply_theme
from app.views.errors import show_error
from app.views.open_url_dialog import OpenUrlDialog
from app.views.settings import recent_files
from itarcore.storage import basename, display_name, is_url

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

FILE_FILTER = "Index files (*.taridx *.tacozip *.taco *.zip *.kas *.trees *.tbl);;All files (*)"


class MainActions(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        mb = window.menuBar()
        S = QKeySequence.StandardKey

        file_menu = mb.addMenu("&File")
        self.open = self._action(file_menu, "&Open…", window_fn=self.open_dialog, key=S.Open)
        self.open_url = self._action(file_menu, "Open &URL…", window_fn=self.open_url_dialog, key="Ctrl+Shift+O")
        self.recent_menu = QMenu("Open &Recent", file_menu)
        self.recent_menu.setObjectName("recentMenu")
        file_menu.addMenu(self.recent_menu)
        self.demo = self._action(file_menu, "Open &Demo Dataset", window_fn=window.open_demo, key="Ctrl+Shift+D")
        file_menu.addSeparator()
        self.build = self._action(file_menu, "&Build Index…", window_fn=self.build_index, key="Ctrl+B")
        self.convert = self._action(file_menu, "Con&vert…", window_fn=self.convert_dialog, key="Ctrl+Shift+C")
        self.compare = self._action(file_menu, "Co&mpare with…", window_fn=self.compare_dialog)
        self.export = self._action(file_menu, "&Export Rows to CSV…", window_fn=self.export_csv, key="Ctrl+E")
        self.export_subset = self._action(file_menu, "Export &Subset…", window_fn=self.export_subset_dialog,
                                          key="Ctrl+Shift+E")
        file_menu.addSeparator()
        self.reload = self._action(file_menu, "Re&load", window_fn=window.reload, key=S.Refresh)
        self.close = self._action(file_menu, "&Close File", window_fn=window.close_document, key=S.Close)
        self._action(file_menu, "&Quit", window_fn=window.close, key=S.Quit)

        edit = mb.addMenu("&Edit")
        self.copy = self._action(edit, "&Copy", window_fn=self.copy_selection, key=S.Copy)
        self.goto = self._action(edit, "&Go to Row…", window_fn=self.go_to_row_dialog, key="Ctrl+G")
        self.find = self._action(edit, "&Find Key…", window_fn=self.focus_find, key=S.Find)
        self.clear = self._action(edit, "C&lear Filters", window_fn=self.clear_filters, key="Ctrl+Shift+L")

        view = mb.addMenu("&View")
        self.view_menu = view
        for dock in (window.header_dock, window.hex_dock, window.preview_dock):
            self.add_dock_toggle(dock)
        view.addSeparator()
        self._action(view, "Next Table", window_fn=lambda: self._step_tab(1), key="Ctrl+PgDown")
        self._action(view, "Previous Table", window_fn=lambda: self._step_tab(-1), key="Ctrl+PgUp")
        self._action(view, "&Reset Layout", window_fn=window.reset_layout)
        theme_menu = view.addMenu("&Theme")
        group = QActionGroup(theme_menu)
        current = str(window.settings.value("theme", "system"))
        for theme in THEMES:
            act = theme_menu.addAction(theme.capitalize())
            act.setCheckable(True)
            act.setChecked(theme == current)
            act.triggered.connect(lambda _=False, t=theme: self.set_theme(t))
            group.addAction(act)
        self._dock_sep = view.addSeparator()

        help_menu = mb.addMenu("&Help")
        self._action(help_menu, "&About iTar Browser", window_fn=window.about)
        self._action(help_menu, "About &Qt", window_fn=QApplication.aboutQt)
        self.set_recent(recent_files(window.settings))
        self.set_document_open(False)

    def _action(self, menu: QMenu, text: str, window_fn, key=None) -> QAction:
        act = QAction(text, self.w)
        if key is not None:
            act.setShortcut(QKeySequence(key))
        act.triggered.connect(lambda _=False: window_fn())
        menu.addAction(act)
        return act

    def add_dock_toggle(self, dock: QDockWidget) -> None:
        self.view_menu.addAction(dock.toggleViewAction())

    def remove_dock_toggle(self, dock: QDockWidget) -> None:
        self.view_menu.removeAction(dock.toggleViewAction())

    def set_document_open(self, is_open: bool) -> None:
        for act in (self.export, self.reload, self.close, self.copy, self.goto, self.find, self.clear):
            act.setEnabled(is_open)
        taridx = is_open and self.w.document is not None and self.w.document.format == "taridx"
        self.compare.setEnabled(taridx)
        self.export_subset.setEnabled(taridx)

    def set_opening(self, busy: bool) -> None:
        self.open.setEnabled(not busy)
        self.open_url.setEnabled(not busy)
        self.demo.setEnabled(not busy)
        self.recent_menu.setEnabled(not busy)

    def set_recent(self, files: list[str]) -> None:
        self.recent_menu.clear()
        for i, path in enumerate(files):
            act = self.recent_menu.addAction(f"&{i + 1 if i < 9 else 0}  {basename(path)}")
            act.setToolTip(path)
            act.setStatusTip(path)
            act.triggered.connect(lambda _=False, p=path: self.w.open_path(p))
        self.recent_menu.setEnabled(bool(files))

    # ---- dialogs ---------------------------------------------------------------------------
    def open_dialog(self) -> None:
        start = os.path.dirname(self.w.path) if self.w.path and not is_url(self.w.path) else ""
        path, _ = QFileDialog.getOpenFileName(self.w, "Open index file", start, FILE_FILTER)
        if path:
            self.w.open_path(path)

    def open_url_dialog(self) -> OpenUrlDialog:
        """File → Open URL…: the dialog opens its URL with its storage options (kept for this session only)."""
        dialog = OpenUrlDialog(self.w.settings, self.w, url=display_name(self.w.path) if is_url(self.w.path) else "")
        dialog.accepted.connect(lambda: self.w.open_path(dialog.url, dialog.storage_options()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def build_index(self) -> None:
        try:
            from app.views.formats.taridx.wizard import BuildIndexWizard
        except ImportError as exc:
            show_error(self.w, "Build index", "", f"The index wizard is not available: {exc}")
            return
        wizard = BuildIndexWizard(self.w)
        wizard.indexBuilt.connect(self.w.open_path)
        wizard.auditRequested.connect(self.open_and_audit)
        wizard.open()

    def open_and_audit(self, path: str) -> None:
        """Open ``path`` and, once it is loaded, bring the Audit panel forward and run the full audit."""
        def start_audit(opened: str) -> None:
            if os.path.abspath(opened) != os.path.abspath(path):
                return
            self.w.documentOpened.disconnect(start_audit)
            for panel, dock in zip(self.w.panels, self.w._panel_docks):
                if hasattr(panel, "start") and panel.title == "Audit":
                    dock.show()
                    dock.raise_()
                    panel.start(full=True)

        self.w.documentOpened.connect(start_audit)
        self.w.open_path(path)

    def convert_dialog(self) -> None:
        try:
            from app.views.formats.tbl.convert_dialog import ConvertDialog
        except ImportError as exc:
            show_error(self.w, "Convert", "", f"The convert dialog is not available: {exc}")
            return
        dialog = ConvertDialog(self.w)
        dialog.openResult.connect(self.w.open_path)
        dialog.open()

    def compare_dialog(self) -> None:
        from app.views.formats.taridx.diff_view import compare_with

        compare_with(self.w)

    def export_subset_dialog(self) -> None:
        from app.views.formats.taridx.export_dialog import open_export_dialog

        open_export_dialog(self.w)

    def export_csv(self) -> None:
        tab = self.w.current_tab()
        if tab is None:
            return
        base = os.path.splitext(basename(display_name(self.w.path)))[0]
        folder = "" if is_url(self.w.path) else os.path.dirname(self.w.path)  # a remote file's CSV goes local
        start = os.path.join(folder, f"{base}-{tab.table.name}.csv")
        path, _ = QFileDialog.getSaveFileName(self.w, "Export rows to CSV", start, "CSV (*.csv)")
        if path:
            tab.export(path)

    def copy_selection(self) -> None:
        tab = self.w.current_tab()
        focus = QApplication.focusWidget()
        if tab is None or (focus is not None and focus is not tab.grid.view and not tab.grid.isAncestorOf(focus)):
            if focus is not None and hasattr(focus, "copy"):
                focus.copy()  # a line edit or text view copies its own selection
            return
        cells = tab.grid.selected_cells()
        if cells is None:
            return
        if len(cells.rows) <= COPY_AT_ONCE and tab.model.cells_in_ram(cells.rows, cells.cols):
            self.put_on_clipboard(selection_text(tab.model, cells))
        else:  # values on disk (or many): a worker makes the text, with progress and Cancel
            self.w.status.show_message(f"Copying {len(cells.rows):,} row(s)…")
            tab.copy_cells(cells)

    def put_on_clipboard(self, text: str) -> None:
        if text:
            QGuiApplication.clipboard().setText(text)
            self.w.status.show_message(f"Copied {text.count(chr(10)) + 1} line(s)")

    def go_to_row_dialog(self) -> None:
        tab = self.w.current_tab()
        if tab is None or tab.table.n_rows == 0:
            return
        n = tab.table.n_rows
        current = max(0, tab.grid.current_source_row())
        row, ok = QInputDialog.getInt(self.w, "Go to row", f"Row (0 – {n - 1:,}):", current, 0, min(n - 1, 2**31 - 1))
        if ok:
            self.w.go_to_row(row)

    def focus_find(self) -> None:
        tab = self.w.current_tab()
        if tab is None:
            return
        target = tab.filter_bar.key or tab.filter_bar.substring
        if target is not None:
            target.setFocus()
            target.selectAll()

    def clear_filters(self) -> None:
        tab = self.w.current_tab()
        if tab is not None:
            tab.filter_bar.clear()

    def _step_tab(self, step: int) -> None:
        n = self.w.tabs.count()
        if n:
            self.w.tabs.setCurrentIndex((self.w.tabs.currentIndex() + step) % n)

    def set_theme(self, theme: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme)
        self.w.settings.setValue("theme", theme)
