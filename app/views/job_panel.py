"""A format panel that runs one core job at a time: progress bar, Cancel, summary line, errors in a dialog."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLayout, QProgressBar, QPushButton, QVBoxLayout, QWidget

from app.views.errors import show_error
from app.views.panels import FormatPanel
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.progress import Progress


class JobPanel(FormatPanel):
    """Subclasses set ``job_title`` (the error dialog's title) and ``failed_text``, and extend ``_set_running``."""

    job_title = "Job"
    failed_text = "The job could not run: see the message."

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.worker: JobWorker | None = None
        self.pool = QThreadPool(self)  # our own, so shutdown waits only for this panel's job
        self.pool.setMaxThreadCount(1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.summary = QLabel()
        self.summary.setWordWrap(True)

    def job_bar(self, *leading: QWidget) -> QHBoxLayout:
        """A row of ``leading`` widgets (the run buttons), then the progress bar and Cancel."""
        bar = QHBoxLayout()
        for widget in leading:
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.cancel_button)
        return bar

    def _lay_out(self, *rows: QLayout, body: QWidget) -> None:
        """The panel's layout: ``rows`` of controls, the summary, then ``body`` taking the rest; idle."""
        layout = QVBoxLayout(self)
        for row in rows:
            layout.addLayout(row)
        layout.addWidget(self.summary)
        layout.addWidget(body, 1)
        self._set_running(False)

    def error_path(self) -> str:
        """The file an error dialog names."""
        return self.document.path

    def _begin(self, text: str) -> bool:
        """Before starting a job: False while one runs; else an indeterminate bar and ``text`` as the summary."""
        if self.worker is not None:
            return False
        self.progress.setRange(0, 0)
        self.summary.setText(text)
        return True

    def _run(self, worker: JobWorker, on_result: Callable[[Any], None]) -> None:
        worker.progressed.connect(self._on_progress)
        worker.returned.connect(on_result)
        worker.errored.connect(self._on_error)
        worker.cancelled.connect(lambda: self.summary.setText("Cancelled."))
        worker.finished.connect(self._on_finished)
        self.worker = worker
        self._set_running(True)
        worker.start(self.pool)

    def _set_running(self, running: bool) -> None:
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running)

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.quit()

    def _on_progress(self, p: Progress) -> None:
        self.progress.setFormat(f"%v / %m {p.unit}" + (f"  ({p.rate:,.0f} {p.unit}/s)" if p.rate else ""))
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(min(p.done, p.total))

    def _on_error(self, exc: BaseException) -> None:
        self.summary.setText(self.failed_text)
        show_error(self, self.job_title, self.error_path(), exc)

    def _on_finished(self) -> None:
        self.worker = None
        self._set_running(False)

    def shutdown(self) -> None:
        if self.worker is not None:
            self.worker.quit()
        self.pool.waitForDone()
