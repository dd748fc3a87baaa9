"""Run itarcore long tasks off the GUI thread.

A :class:`JobWorker` wraps any callable that accepts ``progress`` and ``cancel``
keywords (the convention of ``itarcore.jobs``) and runs it on a Qt thread pool, as
superqt's ``thread_worker`` does: ``started``, ``progressed``, ``yielded`` (for a
generator function, one per item), ``returned``, ``errored``, ``cancelled`` and
``finished`` signals, and ``quit()`` to cancel. Signals reach the GUI thread through
Qt's queued connections.

Two rules keep exit quiet and prompt:

- a worker never emits once it is *detached* (its owner is gone or the app is
  quitting): the check and the emit happen under one lock, so ``detach()`` cannot
  slip between them, and a signals object that Qt already deleted is never touched;
- :meth:`JobWorker.await_workers` (connected to ``QApplication.aboutToQuit`` by the
  app) cancels every worker, waits a bounded time for them to leave their task, and
  detaches whatever is still running.
"""
from __future__ import annotations

import inspect
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from shiboken6 import isValid

from itarcore.errors import Cancelled
from itarcore.progress import CancelToken, Progress


class _Signals(QObject):
    started = Signal()
    progressed = Signal(object)  # itarcore.progress.Progress
    yielded = Signal(object)  # each item of a generator function
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
    _alive_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, fn: Callable[..., Any], *args: Any, pass_progress: bool = True, **kwargs: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)  # the owner keeps it until `finished`
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.pass_progress = pass_progress
        self.cancel_token = CancelToken()
        self.signals = _Signals()
        self.started, self.progressed = self.signals.started, self.signals.progressed
        self.yielded = self.signals.yielded
        self.returned, self.errored = self.signals.returned, self.signals.errored
        self.cancelled, self.finished = self.signals.cancelled, self.signals.finished
        self.is_running = False
        self.done_event = threading.Event()  # set once run() has returned or the pool dropped it
        self._emit_lock = threading.RLock()  # re-entrant: a direct-connected slot may detach
        self._detached = False

    # -- the worker thread ---------------------------------------------------------------
    def run(self) -> None:  # worker thread
        self.is_running = True
        self._emit("started")
        try:
            if self.pass_progress:
                result = self.fn(*self.args, progress=self._emit_progress, cancel=self.cancel_token, **self.kwargs)
            else:
                result = self.fn(*self.args, **self.kwargs)
            if inspect.isgenerator(result):
                result = self._drain(result)
        except Cancelled:
            self._emit("cancelled")
        except Exception as exc:  # noqa: BLE001 - reported to the GUI, which shows a dialog
            exc.__traceback_text__ = traceback.format_exc()  # type: ignore[attr-defined]
            self._emit("errored", exc)
        else:
            if self.cancel_token.cancelled:
                self._emit("cancelled")
            else:
                self._emit("returned", result)
        finally:
            self.is_running = False
            self._emit("finished")
            self.done_event.set()
            self._forget()

    def _drain(self, gen: Any) -> Any:
        """Run a generator function: one ``yielded`` per item, cancel checked between items."""
        try:
            while True:
                self.cancel_token.raise_if_cancelled()
                self._emit("yielded", next(gen))
        except StopIteration as stop:
            return stop.value
        finally:
            gen.close()

    def _emit(self, name: str, *args: Any) -> None:
        # one lock for the check and the emit: detach() on the GUI thread waits for an emit in flight
        with self._emit_lock:
            if self._detached or not isValid(self.signals):
                return
            getattr(self.signals, name).emit(*args)

    def report(self, item: Any) -> None:
        """Emit ``yielded`` from inside the task (e.g. a job's partial results); never after detach."""
        self._emit("yielded", item)

    def _emit_progress(self, p: Progress) -> None:
        self._emit("progressed", p)

    # -- the owner's side ------------------------------------------------------------------
    def start(self, pool: QThreadPool | None = None) -> JobWorker:
        with JobWorker._alive_lock:
            JobWorker._alive.add(self)
        self._pool = pool or QThreadPool.globalInstance()
        self._pool.start(self)
        return self

    def _forget(self) -> None:
        with JobWorker._alive_lock:
            JobWorker._alive.discard(self)

    def stop(self) -> bool:
        """Cancel without waiting: a queued run is dropped, a running one stops at its next check.

        Returns True when the worker is no longer running.
        """
        self.cancel_token.cancel()
        pool = getattr(self, "_pool", None)
        if pool is not None and not self.is_running and not self.done_event.is_set() and pool.tryTake(self):
            self._forget()
            self.done_event.set()
        return self.done_event.is_set()

    def detach(self) -> bool:
        """Cancel, and never emit again (the owner is going away). Returns True when no longer running."""
        with self._emit_lock:
            self._detached = True
        return self.stop()

    def quit(self) -> None:
        """Ask the task to stop at its next progress point; `cancelled` then `finished` follow."""
        self.cancel_token.cancel()

    @classmethod
    def running(cls) -> list[JobWorker]:
        """Workers started and not yet finished (queued ones included)."""
        with cls._alive_lock:
            return [w for w in cls._alive if not w.done_event.is_set()]

    @classmethod
    def await_workers(cls, msecs: int) -> bool:
        """Quit every worker and wait up to ``msecs`` for them to leave their task.

        Called when the application quits. Queued runs are dropped at once; a task
        that does not reach a cancel check in time is detached, so it can never emit
        into objects Qt is about to delete. Returns True when none is left running.
        """
        deadline = time.monotonic() + msecs / 1000
        for worker in cls.running():
            worker.stop()
        for worker in cls.running():
            worker.done_event.wait(max(0.0, deadline - time.monotonic()))
        left = cls.running()
        for worker in left:
            worker.detach()
        return not left


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
