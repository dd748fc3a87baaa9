"""One tab per Table: the filter bar, the grid, and the workers that filter, sort and export.

A filter or sort answers in two steps (see :func:`app.models.row_selection.compute_view`):
an early answer (the first matches, or the first window of the new order) is shown as
soon as the worker has it, and the complete answer replaces it without moving the
user's scroll position or selection, since the early answer is its prefix. Cancel
(from the status bar) puts the previous, complete view back.
"""
from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import QObject, QThreadPool, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.models.csv_export import export_csv
from app.models.row_selection import FIRST, TWO_STEP_ROWS, SortKey, compute_view
from app.models.selection_copy import CellSelection, selection_text
from app.models.windowed_table_model import WINDOW, WindowedTableModel
from app.views.filter_bar import FilterBar
from app.views.table_view import TableGrid
from app.workers import JobWorker
from itarcore.document import Table


class _Partials(QObject):
    """Carries early answers from the worker thread to the GUI thread (a queued signal)."""

    arrived = Signal(int, str, object, object)  # generation, kind, rows, n_total


class TableTab(QWidget):
    viewApplied = Signal()  # a filter/sort result is on screen
    viewPartial = Signal(str)  # an early answer is on screen; the text says how many rows so far
    busy = Signal(str)  # what a worker is doing
    copied = Signal(str)  # the text of cells copied by a worker, for the clipboard
    progressed = Signal(object)  # itarcore Progress of the running job
    idle = Signal()
    failed = Signal(str)  # a readable message
    exported = Signal(str, int)  # path, rows

    def __init__(self, table: Table, window: int = WINDOW, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = table
        self.model = WindowedTableModel(table, window, self)
        self.filter_bar = FilterBar(table, self)
        self.grid = TableGrid(self.model, self)
        self.sort_key: SortKey | None = None
        self.first_rows = FIRST  # rows of an early answer
        self.two_step_rows = TWO_STEP_ROWS  # sorts from this many rows show their first window first
        self._committed: tuple[np.ndarray | None, SortKey | None] = (None, None)  # the last complete view
        self._early_shown = False  # an early answer of the running generation is on screen
        self._partials = _Partials(self)
        self._partials.arrived.connect(self._on_partial)
        self._generation = 0
        self._workers: list[JobWorker] = []
        self._after_apply: list = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.filter_bar)
        lay.addWidget(self.grid, 1)
        self.filter_bar.filterChanged.connect(self.refresh)
        self.grid.sortRequested.connect(self.sort_by)
        self.grid.sortCleared.connect(self.clear_sort)
        self.filter_bar.set_count(table.n_rows, table.n_rows)

    @property
    def is_busy(self) -> bool:
        return any(w.is_running for w in self._workers)

    @property
    def counting(self) -> bool:
        """An early answer is on screen and the complete one is still being computed."""
        return self._early_shown

    def sort_by(self, title: str, descending: bool = False) -> None:
        self.sort_key = SortKey(title, descending)
        self.grid.show_sort_indicator(title, descending)
        self.refresh()

    def clear_sort(self) -> None:
        """Back to the file's row order."""
        self.sort_key = None
        self.refresh()

    def when_applied(self, fn) -> None:
        """Call ``fn`` once the next filter/sort result is on screen."""
        self._after_apply.append(fn)

    def set_filter_rows(self, rows: np.ndarray, label: str) -> None:
        """Show only ``rows`` (a drill-down from another table)."""
        self.filter_bar.set_drill(np.asarray(rows, dtype=np.int64), label)

    def refresh(self) -> None:
        """Recompute the view rows from the filter bar and the sort key, in a worker."""
        try:
            flt = self.filter_bar.row_filter()
        except ValueError as exc:
            self.failed.emit(str(exc))
            return
        if not flt.active and self.sort_key is None:
            self._start_generation()
            self._apply(self._generation, None)
            return
        gen = self._start_generation()
        what = "sorting" if self.sort_key is not None and not flt.active else "filtering"
        self.filter_bar.set_count(self.model.n_view, self.table.n_rows, busy=what.capitalize())

        def partial(kind: str, rows: np.ndarray, n_total: int | None, g: int = gen) -> None:
            self._partials.arrived.emit(g, kind, rows, n_total)  # worker thread -> GUI thread

        worker = self._run(compute_view, self.table, flt, self.sort_key, partial, self.first_rows,
                           self.two_step_rows, on_result=lambda rows, g=gen: self._apply(g, rows), what=what,
                           makes_view=True)
        worker.cancelled.connect(lambda g=gen: self._on_cancelled(g))

    def _start_generation(self) -> int:
        for w in self._workers:
            if getattr(w, "makes_view", False):
                w.quit()  # a newer request wins; the old result is dropped by its generation (a copy goes on)
        self._generation += 1
        self._early_shown = False
        return self._generation

    def _on_partial(self, generation: int, kind: str, rows: np.ndarray, n_total: int | None) -> None:
        if generation != self._generation:
            return
        if self._early_shown:
            self.model.continue_view_rows(rows, n_total)
        else:
            self.model.set_view_rows(rows, n_total)
        self._early_shown = True
        if kind == "head":
            self.filter_bar.set_count(int(n_total or 0), self.table.n_rows, busy="", note="sorting…")
        else:
            self.filter_bar.set_count(len(rows), self.table.n_rows, at_least=True)
        self.viewPartial.emit(self.filter_bar.count_label.text())

    def _on_cancelled(self, generation: int) -> None:
        """A cancelled job (not one replaced by a newer request) leaves the previous view in place."""
        if generation != self._generation:
            return
        rows, key = self._committed
        self.sort_key = key
        if self._early_shown:
            self._early_shown = False
            self.model.set_view_rows(rows)
        self.grid.show_sort_indicator(key.column if key else None, bool(key and key.descending))
        self.filter_bar.set_count(self.model.n_view, self.table.n_rows)

    def _run(self, fn, *args, on_result, what: str, makes_view: bool = False) -> JobWorker:
        """Run ``fn`` in a worker; ``makes_view``: a filter or sort, replaced by a newer one and undone on error."""
        done = threading.Event()

        def job(*a, progress, cancel):
            try:
                return fn(*a, progress=progress, cancel=cancel)
            finally:
                done.set()

        worker = JobWorker(job, *args)
        worker.done_event = done  # type: ignore[attr-defined]
        worker.makes_view = makes_view  # type: ignore[attr-defined]
        worker.returned.connect(on_result)
        worker.errored.connect(self._on_error if makes_view else self._on_side_job_error)
        worker.progressed.connect(self.progressed)
        worker.finished.connect(lambda w=worker: self._on_finished(w))
        self._workers.append(worker)
        self.busy.emit(what)
        worker.start()
        return worker

    def _on_finished(self, worker: JobWorker) -> None:
        if worker in self._workers:
            self._workers.remove(worker)
        if not self._workers:
            self.idle.emit()

    def _on_error(self, exc: BaseException) -> None:
        self._on_cancelled(self._generation)
        self.failed.emit(str(exc))

    def _on_side_job_error(self, exc: BaseException) -> None:
        self.failed.emit(str(exc))  # a copy or export failed: the view stays as it is

    def _apply(self, generation: int, rows: np.ndarray | None) -> None:
        if generation != self._generation:
            return
        if self.sort_key is None:
            self.grid.clear_sort_indicator()
        if self._early_shown:
            self.model.continue_view_rows(rows)  # the early answer is its prefix: nothing on screen moves
        else:
            self.model.set_view_rows(rows)
        self._early_shown = False
        self._committed = (rows, self.sort_key)
        self.filter_bar.set_count(self.model.n_view, self.table.n_rows)
        callbacks, self._after_apply = self._after_apply, []
        for fn in callbacks:
            fn()
        self.viewApplied.emit()

    def copy_cells(self, cells: CellSelection) -> JobWorker:
        """Make the cells' text in a worker (progress, Cancel); ``copied`` gets it."""
        return self._run(selection_text, self.model, cells, on_result=self.copied.emit, what="copying")

    def export(self, path: str) -> JobWorker:
        rows = self._committed[0] if self._early_shown else self.model.view_rows  # only complete views
        worker = self._run(export_csv, self.table, rows, path,
                           on_result=lambda n, p=path: self.exported.emit(p, int(n)), what="exporting")
        return worker

    def shutdown(self) -> None:
        """Cancel and wait for this tab's workers (a sort in numpy finishes its current call)."""
        self._generation += 1  # results still queued for this tab are dropped, not applied to a closing view
        pool = QThreadPool.globalInstance()
        for w in list(self._workers):
            w.quit()
            if pool.tryTake(w):  # still queued: it will never run
                self._workers.remove(w)
        for w in self._workers:
            w.done_event.wait(30)  # type: ignore[attr-defined]
        self.model.stop_fetching()
