"""The status bar (file, format, rows, selection, job progress) and the warning banner."""
from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QStatusBar, QToolButton, QWidget
from superqt import QElidingLabel

from app.style import banner_colors
from itarcore.document import Document, Table
from itarcore.progress import Progress

FILE_LABEL_MAX_WIDTH = 320
FILE_LABEL_MIN_CHARS = 24  # a long name keeps this much room, so it is never squeezed to a bare "…"


class StatusArea(QObject):
    cancelRequested = Signal()

    def __init__(self, bar: QStatusBar, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bar = bar
        # a file name can be any length: elided in the middle (whole in the tooltip), never widening the window
        self.file_label = QElidingLabel(bar)
        self.file_label.setObjectName("statusFile")
        self.file_label.setElideMode(Qt.TextElideMode.ElideMiddle)
        self.file_label.setContentsMargins(6, 0, 6, 0)
        self.file_label.setMaximumWidth(FILE_LABEL_MAX_WIDTH)
        self.format_label = self._label("statusFormat")
        self.rows_label = self._label("statusRows")
        self.selection_label = self._label("statusSelection")
        # a lasting note (e.g. while the key index builds); elided, never widening the window
        self.note_label = QElidingLabel(bar)
        self.note_label.setObjectName("statusNote")
        self.note_label.setElideMode(Qt.TextElideMode.ElideRight)
        self.note_label.setMinimumWidth(40)
        self.note_label.setMaximumWidth(420)
        self.note_label.setContentsMargins(6, 0, 6, 0)
        self.note_label.hide()
        bar.addPermanentWidget(self.note_label)  # permanent: a passing message never draws over it
        self.progress = QProgressBar(bar)
        self.progress.setObjectName("jobProgress")
        self.progress.setMaximumWidth(180)
        self.progress.setTextVisible(True)
        self.cancel = QToolButton(bar)
        self.cancel.setText("Cancel")
        self.cancel.clicked.connect(self.cancelRequested)
        for w in (self.selection_label, self.rows_label, self.format_label, self.file_label):
            bar.addPermanentWidget(w)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel)
        self._jobs = 0
        self.job_done(force=True)
        self.set_document("", None)

    def _label(self, name: str) -> QLabel:
        label = QLabel(self.bar)
        label.setObjectName(name)
        label.setContentsMargins(6, 0, 6, 0)
        return label

    def set_note(self, text: str) -> None:
        self.note_label.setText(text)
        self.note_label.setToolTip(text)
        self.note_label.setVisible(bool(text))

    def show_message(self, text: str, ms: int = 8000) -> None:
        self.bar.showMessage(text, ms)

    def set_document(self, path: str, doc: Document | None) -> None:
        name = os.path.basename(path) if path else "No file"
        self.file_label.setText(name)
        self.file_label.setToolTip(path)
        # the bar lays permanent widgets out by their minimum: without one, the name shows as "…"
        metrics = self.file_label.fontMetrics()
        room = metrics.horizontalAdvance(name) if len(name) <= FILE_LABEL_MIN_CHARS \
            else metrics.averageCharWidth() * FILE_LABEL_MIN_CHARS
        margins = self.file_label.contentsMargins()
        self.file_label.setMinimumWidth(min(room + margins.left() + margins.right() + 2, FILE_LABEL_MAX_WIDTH))
        self.format_label.setText(doc.title if doc is not None else "")
        self.format_label.setVisible(doc is not None)
        if doc is not None and doc.tables:
            self.set_rows(doc.tables[0].n_rows, doc.tables[0].n_rows)
        else:
            self.rows_label.clear()
        self.selection_label.clear()
        self.set_note("")

    def set_rows(self, shown: int, total: int) -> None:
        self.rows_label.setText(f"{shown:,} of {total:,} rows" if shown != total else f"{total:,} rows")

    def set_selection(self, table: Table, row: int, count: int) -> None:
        if row < 0:
            self.selection_label.setText("")
            return
        text = f"{table.name} row {row:,}"
        if count > 1:
            text += f" · {count:,} rows selected"
        self.selection_label.setText(text)

    def job_started(self, what: str) -> None:
        self._jobs += 1
        self.progress.setRange(0, 0)  # busy until the first progress report
        self.progress.setFormat(what)
        self.progress.setToolTip(what)
        self.progress.show()
        self.cancel.show()

    def job_progress(self, p: Progress) -> None:
        if p.total > 1:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * p.fraction))
            self.progress.setFormat(f"{p.message or p.unit} %p%")

    def job_done(self, force: bool = False) -> None:
        self._jobs = 0 if force else max(0, self._jobs - 1)
        if self._jobs == 0:
            self.progress.hide()
            self.cancel.hide()


class WarningBanner(QFrame):
    """Shown above the grids while a document has warnings (e.g. missing shards)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("warningBanner")
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action = QPushButton(self)  # e.g. "Run the audit": what to do about the warning
        self.action.setObjectName("bannerAction")
        self.action.clicked.connect(self._run_action)
        self.action.hide()
        self._action: Callable[[], None] | None = None
        close = QToolButton(self)
        close.setText("✕")
        close.setToolTip("Hide this warning")
        close.setAutoRaise(True)
        close.clicked.connect(self.hide)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 6, 6)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.action, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.warnings: list[str] = []
        self.hide()

    def set_warnings(self, warnings: list[str]) -> None:
        self.warnings = list(warnings)
        self.label.setText("⚠  " + "\n⚠  ".join(self.warnings) if self.warnings else "")
        self._recolor()
        self.setVisible(bool(self.warnings))
        if not self.warnings:
            self.set_action("", None)

    def add_warning(self, warning: str, action_text: str = "", action: Callable[[], None] | None = None) -> None:
        """One more warning, optionally with a button that acts on it."""
        self.set_warnings([*self.warnings, warning])
        if action is not None:
            self.set_action(action_text, action)

    def set_action(self, text: str, action: Callable[[], None] | None) -> None:
        self._action = action
        self.action.setText(text)
        self.action.setVisible(action is not None)

    def _run_action(self) -> None:
        if self._action is not None:
            self._action()

    def _recolor(self) -> None:
        colors = banner_colors(self.palette())
        if colors == getattr(self, "_colors", None):
            return  # setting a style sheet changes the palette again: avoid the loop
        self._colors = colors
        bg, fg, border = colors
        self.setStyleSheet(f"#warningBanner {{ background: {bg}; border-bottom: 1px solid {border}; }}"
                           f"#warningBanner QLabel {{ color: {fg}; font-weight: 600; }}")

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._recolor()
