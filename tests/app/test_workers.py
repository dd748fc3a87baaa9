"""JobWorker.stop: a queued run is dropped without waiting, a running one is cancelled at its next check."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QThreadPool

from app.workers import JobWorker


def test_stop_drops_a_queued_worker_and_cancels_a_running_one(qtbot):
    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    release = threading.Event()
    ran: list[str] = []

    def blocking(progress, cancel):
        release.wait(10)
        ran.append("first")
        cancel.raise_if_cancelled()
        ran.append("first finished")

    def second(progress, cancel):
        ran.append("second")

    first = JobWorker(blocking).start(pool)
    queued = JobWorker(second).start(pool)
    assert queued.stop() is True  # never started: taken off the queue, nothing to wait for
    assert first.stop() is False  # running: only asked to stop
    with qtbot.waitSignal(first.cancelled, timeout=5000):
        release.set()
    assert pool.waitForDone(5000)
    assert ran == ["first"]
    assert first.done_event.is_set() and queued.done_event.is_set()
