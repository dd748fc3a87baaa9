"""The Build index wizard's Run page: the index job on a worker, progress, shard-table counts, log, Cancel."""
from __future__ import annotations

import bisect
import time

from PySide6.QtCore import QThreadPool, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QVBoxLayout,
    QWizard,
    QWizardPage,
)

from app.views.errors import describe_error
from app.views.formats.taridx.wizard_pages import OptionsPage, SourcePage
from app.views.formats.taridx.wizard_source import human_bytes, human_seconds, index_plan, shard_name
from app.workers import JobWorker
from itarcore.indexing.cache import ShardCache
from itarcore.jobs import IndexResult
from itarcore.progress import Progress
from itarcore.storage import basename


class RunPage(QWizardPage):
    def __init__(self, source: SourcePage, options: OptionsPage) -> None:
        super().__init__()
        self.source, self.options = source, options
        self.setTitle("Run")
        self.worker: JobWorker | None = None
        self.pool = QThreadPool(self)  # our own, so waiting for a cancelled run waits for nothing else
        self.pool.setMaxThreadCount(1)
        self.results: list[IndexResult] = []
        self.state = "idle"  # idle | running | done | cancelled | failed
        self.overall = QProgressBar()
        self.overall.setFormat("%p%")
        self.shard_bar = QProgressBar()
        self.shard_label = QLabel()
        self.shard_label.setWordWrap(True)  # a long text wraps; it never widens the window
        self.tables_label = QLabel()  # shard tables reused from the cache / scanned, as the run goes
        self.tables_label.setWordWrap(True)
        self.rate = QLabel()
        self.rate.setWordWrap(True)  # a long text wraps; it never widens the window
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        form = QFormLayout()
        form.addRow("Overall:", self.overall)
        form.addRow("Shards:", self.shard_bar)
        form.addRow("", self.shard_label)
        form.addRow("Shard tables:", self.tables_label)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.rate)
        layout.addWidget(self.log, 1)

    @property
    def cancel_button(self) -> QAbstractButton:
        """The wizard's own Cancel: while a run goes it stops the run (one Cancel, not two)."""
        return self.wizard().button(QWizard.WizardButton.CancelButton)

    def initializePage(self) -> None:
        plan = self.source.plan
        self.jobs_list = [(f, plan.folds[f], self.options.output_for(f)) for f in self.options.chosen_folds()]
        self.shard_ends: list[tuple[int, str]] = []
        self.fold_ends: list[int] = []
        pos = 0
        for _, shards, _ in self.jobs_list:
            for p in shards:
                pos += plan.sizes[p]
                self.shard_ends.append((pos, shard_name(p)))
            self.fold_ends.append(pos)
        self.total = pos
        self.results = []
        self.log.clear()
        self.overall.setRange(0, 1000)
        self.overall.setValue(0)
        self.shard_bar.setRange(0, len(self.shard_ends))
        self.shard_bar.setValue(0)
        self.shard_bar.setFormat("%v / %m")
        # words at once: on a cold fold the first figures can take seconds (cache look-ups, first chunk)
        first = self.shard_ends[0][1] if self.shard_ends else ""
        more = f" and {len(self.shard_ends) - 1:,} more" if len(self.shard_ends) > 1 else ""
        self.shard_label.setText(f"{first}{more}")
        self.tables_label.setText("checking the shard cache…" if self.options.use_cache.isChecked() else "")
        self.rate.setText(f"Reading the tar headers of {len(self.shard_ends):,} shard(s), {human_bytes(self.total)}…")
        folds = ", ".join(f for f, _, _ in self.jobs_list)
        executor = self.options.executor_spec()
        where = f"{self.options.jobs.value()} shard(s) at a time" if executor == "threads" else f"executor {executor}"
        cache = ShardCache() if self.options.use_cache.isChecked() else None
        self._log(f"Indexing {folds}: {len(self.shard_ends)} shard(s), {human_bytes(self.total)}, {where}, "
                  f"{'cache ' + str(cache.folder) if cache else 'no cache'}, "
                  f"if an index exists: {self.options.if_exists.currentData()}")
        self.worker = JobWorker(index_plan, self.jobs_list, jobs=self.options.jobs.value(),
                                contiguous=self.options.contiguous.isChecked(),
                                if_exists=self.options.if_exists.currentData(), executor=executor, cache=cache,
                                remote=plan.remote)
        # Signals of an earlier run can still be queued (Back, then Next at once): only this run's count.
        worker = self.worker
        worker.progressed.connect(lambda p: self._on_progress(p) if self.worker is worker else None)
        worker.returned.connect(lambda r: self._on_done(r) if self.worker is worker else None)
        worker.errored.connect(lambda e: self._on_error(e) if self.worker is worker else None)
        worker.cancelled.connect(lambda: self._on_cancelled() if self.worker is worker else None)
        worker.finished.connect(lambda: self._on_finished() if self.worker is worker else None)
        self._set_state("running")
        self.started = time.perf_counter()
        self.worker_started = False
        # Start once the page has shown itself (and callers have had a chance to connect).
        QTimer.singleShot(0, self._start)

    def _start(self) -> None:
        if self.worker is not None and not self.worker_started and self.state == "running":
            self.worker_started = True
            self.worker.start(self.pool)

    def cleanupPage(self) -> None:  # Back: stop a run first
        self.stop_and_wait()

    def stop_and_wait(self) -> None:
        """Cancel a run and wait for its worker (Back, closing the wizard)."""
        if self.worker is not None and not self.worker_started:  # never started: nothing to wait for
            self.worker = None
            self._set_state("cancelled")
        elif self.worker is not None:
            self.worker.quit()
        self.pool.waitForDone()

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.quit()
            self.rate.setText("Cancelling…")

    def _set_state(self, state: str) -> None:
        self.state = state
        self.completeChanged.emit()

    def _log(self, text: str) -> None:
        self.log.appendPlainText(f"[{time.strftime('%H:%M:%S')}] {text}")

    def _on_progress(self, p: Progress) -> None:
        if self.state != "running":
            return
        self.overall.setValue(int(1000 * p.done / p.total) if p.total else 0)
        finished = sum(1 for end, _ in self.shard_ends if end <= p.done)
        self.shard_bar.setValue(finished)
        fold = self.jobs_list[min(bisect.bisect_left(self.fold_ends, p.done), len(self.jobs_list) - 1)][0]
        if p.current:
            self.shard_label.setText(f"{fold}: {p.current}")
        if p.message:
            self.tables_label.setText(f"{fold}: {p.message}")
        elapsed = time.perf_counter() - self.started
        rate = p.done / elapsed if elapsed > 0 else 0.0
        per_member = self.source.plan.bytes_per_member.get(fold, 0.0)
        members = f"≈{rate / per_member:,.0f} members/s, " if per_member and rate else ""
        eta = f", ETA {human_seconds((p.total - p.done) / rate)}" if rate > 0 and p.done else ""
        self.rate.setText(f"{members}{human_bytes(rate)}/s{eta}")

    def _on_done(self, results: list[IndexResult]) -> None:
        self.results = results
        for r in results:
            backup = f"; backup {basename(r.backup)}" if r.backup else ""
            self._log(f"{r.fold}: {r.n_rows:,} rows, {r.n_stems:,} stems in {r.seconds:.2f} s "
                      f"({r.members_per_second:,.0f} members/s; shards {r.counts.text()}) → {r.path}{backup}")
            if r.fetched is not None:
                self._log(f"{r.fold}: {r.fetch_text()}")
            for w in r.warnings:
                self._log(f"{r.fold}: warning: {w}")
        self.overall.setValue(self.overall.maximum())
        self.shard_bar.setValue(self.shard_bar.maximum())
        self.shard_label.setText(f"All {len(self.shard_ends)} shard(s) indexed")
        reused, scanned = sum(r.counts.reused for r in results), sum(r.counts.scanned for r in results)
        self.tables_label.setText(f"{reused} reused from the cache, {scanned} scanned")
        elapsed = time.perf_counter() - self.started
        rows = sum(r.n_rows for r in results)
        self.rate.setText(f"Done in {human_seconds(elapsed)}: {rows:,} rows"
                          + (f", {rows / elapsed:,.0f} members/s" if elapsed > 0 else ""))
        self._set_state("done")

    def _on_error(self, exc: BaseException) -> None:
        self._log(f"Failed: {describe_error('', exc)}")
        self.rate.setText("Failed: see the log. Go Back to change the options.")
        self._set_state("failed")

    def _on_cancelled(self) -> None:
        self._log("Cancelled: the fold in progress was not written (folds finished before keep their new index).")
        self.rate.setText("Cancelled. Go Back, then Next to run again.")
        self._set_state("cancelled")

    def _on_finished(self) -> None:
        self.worker = None

    def isComplete(self) -> bool:
        return self.state == "done"
