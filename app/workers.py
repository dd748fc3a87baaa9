"""Run itarcore long tasks off the GUI thread.

A :class:`JobWorker` wraps any callable that accepts ``progress`` and ``cancel``
keywords (the convention of ``itarcore.jobs``) and runs it on Qt's global thread
pool, in the spirit of superqt's ``thread_worker``: ``started``, ``progressed``,
``returned``, ``errored`` and ``finished`` signals, and ``quit()`` to cancel.
Signals are delivered to the GUI thread by Qt's queued connections.
"""
from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from itarcore.errors import Cancelled
from itarcore.progress import CancelToken, Progress


class _Signals(QObject):
    started = Signal()
    progressed = Signal(object)  # itarcore.progress.Progress
    returned = Signal(object)
    errored = Signal(object)  # the exception
    cancelled = Signal()
    finished = Signal()


class JobWorker(QRunnable):
    """One run of ``fn(*args, progress=..., cancel=..., **kwargs)`` on the thread pool.

    A started worker keeps itself alive until ``run`` returns, so an owner may drop it
    (a closed panel) without the thread emitting on deleted signals.
    """

    _alive: ClassVar[set[JobWorker]] = set()

    def __init__(self, fn: Callable[..., Any], *args: Any, pass_progress: bool = True, **kwargs: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)  # the owner keeps it until `finished`
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.pass_progress = pass_progress
        self.cancel_token = CancelToken()
        self.signals = _Signals()
        self.started, self.progressed = self.signals.started, self.signals.progressed
        self.returned, self.errored = self.signals.returned, self.signals.errored
        self.cancelled, self.finished = self.signals.cancelled, self.signals.finished
        self.is_running = False
        self.done_event = threading.Event()  # set once run() has returned or the pool dropped it

    def run(self) -> None:  # worker thread
        self.is_running = True
        self.signals.started.emit()
        try:
            if self.pass_progress:
                result = self.fn(*self.args, progress=self._emit_progress, cancel=self.cancel_token, **self.kwargs)
            else:
                result = self.fn(*self.args, **self.kwargs)
        except Cancelled:
            self.signals.cancelled.emit()
        except Exception as exc:  # noqa: BLE001 - reported to the GUI, which shows a dialog
            exc.__traceback_text__ = traceback.format_exc()  # type: ignore[attr-defined]
            self.signals.errored.emit(exc)
        else:
            if self.cancel_token.cancelled:
                self.signals.cancelled.emit()
            else:
                self.signals.returned.emit(result)
        finally:
            self.is_running = False
            self.signals.finished.emit()
            self.done_event.set()
            JobWorker._alive.discard(self)

    def _emit_progress(self, p: Progress) -> None:
        self.signals.progressed.emit(p)

    def start(self, pool: QThreadPool | None = None) -> JobWorker:
        JobWorker._alive.add(self)
        self._pool = pool or QThreadPool.globalInstance()
        self._pool.start(self)
        return self

    def stop(self) -> bool:
        """Cancel without waiting: a queued run is dropped, a running one stops at its next check.

        Returns True when the worker is no longer running.
        """
        self.cancel_token.cancel()
        pool = getattr(self, "_pool", None)
        if pool is not None and not self.is_running and not self.done_event.is_set() and pool.tryTake(self):
            JobWorker._alive.discard(self)
            self.done_event.set()
        return self.done_event.is_set()

    def quit(self) -> None:
        """Ask the task to stop at its next progress point; `cancelled` then `finished` follow."""
        self.cancel_token.cancel()


def run_job(fn: Callable[..., Any], *args: Any, on_result: Callable[[Any], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None,
            on_progress: Callable[[Progress], None] | None = None,
            pass_progress: bool = True, **kwargs: Any) -> JobWorker:
    """Start ``fn`` on the pool and wire optional callbacks; returns the worker (keep a reference)."""
    worker = JobWorker(fn, *args, pass_progress=pass_progress, **kwargs)
    if on_result:
        worker.returned.connect(on_result)
    if on_error:
        worker.errored.connect(on_error)
    if on_progress:
        worker.progressed.connect(on_progress)
    return worker.start()
