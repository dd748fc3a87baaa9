"""Closing the browser while workers run: no traceback on stderr, no task left in the pool, no waiting on a task.

The app runs in a subprocess (its real entry point), so what Python and Qt print while
tearing down is captured exactly as a user's terminal would show it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QThreadPool

from app.views.settings import SETTINGS_ENV
from app.workers import JobWorker

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "tests" / "data" / "taridx" / "webds" / "train.taridx"

# Opens INDEX with app.main.main(), brings the Samples tab to the front so its grouping
# worker starts, and closes the window while that worker is inside its task.
DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    import app.main
    from app.views.main_window import MainWindow
    from itarcore.dataset import Dataset

    marker = Path(sys.argv[2])
    cooperative = sys.argv[3] == "cooperative"

    def grouping(self, progress=None, cancel=None):
        marker.write_text("started")
        if cooperative:  # checks its token often, as every chunked pass does
            for _ in range(30_000):
                if cancel is not None and cancel.cancelled:
                    marker.write_text("saw cancel")
                    return None
                time.sleep(0.001)
        else:  # one long call that never looks at the token (a third-party kernel)
            time.sleep(3)
        marker.write_text("ran to the end")
        return None

    Dataset.compute_samples = grouping

    def on_open(path):
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
        samples = next(p for p in window.panels if p.title == "Samples")
        def close_when_running():
            if marker.exists():
                window.close()
            else:
                samples.parent().raise_()  # the user clicks the Samples tab (again, until the layout settles)
                QTimer.singleShot(5, close_when_running)
        close_when_running()

    original_init = MainWindow.__init__
    def init(self, *a, **k):
        original_init(self, *a, **k)
        self.documentOpened.connect(on_open)
    MainWindow.__init__ = init
    sys.exit(app.main.main([sys.argv[1]]))
""")


def run_app(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess, str]:
    marker = tmp_path / "marker.txt"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **{SETTINGS_ENV: str(tmp_path / "s.ini")})
    done = subprocess.run([sys.executable, "-c", DRIVER, str(INDEX), str(marker), mode], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return done, marker.read_text() if marker.exists() else ""


def test_closing_mid_job_cancels_the_task_and_exits_silently(tmp_path):
    done, marker = run_app(tmp_path, "cooperative")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert marker == "saw cancel"  # the task was told to stop and was waited for, briefly


def test_a_task_that_ignores_cancel_does_not_hold_the_exit_or_print(tmp_path):
    done, marker = run_app(tmp_path, "stubborn")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Signal source has been deleted" from the abandoned worker
    assert marker == "started"  # the process left without waiting for the 3 s call to end


def test_await_workers_quits_running_and_queued_workers(qtbot, capfd):
    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    entered = threading.Event()
    seen: list[str] = []

    def chunked(progress, cancel):
        entered.set()
        while not cancel.cancelled:
            time.sleep(0.001)
        seen.append("cancelled between chunks")

    running = JobWorker(chunked).start(pool)
    queued = JobWorker(lambda progress, cancel: seen.append("queued ran")).start(pool)
    assert entered.wait(10)
    assert JobWorker.await_workers(5000)
    assert pool.waitForDone(5000)
    assert pool.activeThreadCount() == 0
    assert seen == ["cancelled between chunks"]
    assert running.done_event.is_set() and queued.done_event.is_set()
    assert capfd.readouterr().err == ""


def test_a_detached_worker_never_emits(qtbot):
    release = threading.Event()
    got: list[str] = []
    worker = JobWorker(lambda progress, cancel: release.wait(10), pass_progress=True)
    for name in ("returned", "cancelled", "finished"):
        getattr(worker, name).connect(lambda *_, n=name: got.append(n))
    with qtbot.waitSignal(worker.started, timeout=5000):
        worker.start()
    assert worker.detach() is False  # still inside its task
    release.set()
    assert worker.done_event.wait(10)
    for _ in range(5):
        qtbot.wait(1)  # queued signals, had any been emitted, would arrive here
    assert got == []


def test_generator_functions_stream_yielded_items_and_stop_between_them(qtbot):
    def counting(progress, cancel):
        n = 0
        while True:
            yield n
            n += 1
            time.sleep(0.001)

    worker = JobWorker(counting)
    items: list[int] = []

    def on_item(n: int) -> None:
        items.append(n)
        if n == 3:
            worker.quit()

    worker.yielded.connect(on_item)
    with qtbot.waitSignal(worker.cancelled, timeout=5000):
        worker.start()
    assert worker.done_event.wait(5)
    assert items[:4] == [0, 1, 2, 3]


def test_closing_the_window_mid_grouping_leaves_no_pool_task(qtbot, tmp_path, monkeypatch, capfd):
    from PySide6.QtWidgets import QApplication

    from app.views.main_window import MainWindow
    from itarcore.dataset import Dataset

    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "s.ini"))
    inside = threading.Event()
    stopped: list[str] = []

    def grouping(self, progress=None, cancel=None):
        inside.set()
        for _ in range(60_000):  # a minute of chunks unless cancelled
            if cancel.cancelled:
                stopped.append("cancelled")
                cancel.raise_if_cancelled()
            time.sleep(0.001)

    monkeypatch.setattr(Dataset, "compute_samples", grouping)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.previewSettled, timeout=15_000), qtbot.waitSignal(w.documentOpened, timeout=15_000):
        w.open_path(str(INDEX))
    samples = next(p for p in w.panels if p.title == "Samples")
    samples.parent().raise_()
    qtbot.waitUntil(inside.is_set, timeout=10_000)
    w.close()
    assert JobWorker.await_workers(300)
    pool = QThreadPool.globalInstance()
    assert pool.waitForDone(1000) and pool.activeThreadCount() == 0
    assert stopped == ["cancelled"]
    for _ in range(10):
        QApplication.processEvents()
    assert capfd.readouterr().err == ""
