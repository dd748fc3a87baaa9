"""Executor specs and the task runner contract: results as they complete, task errors as values, cancel."""
from __future__ import annotations

import threading

import pytest

from itarcore.errors import Cancelled
from itarcore.executors import ExecutorError, ExecutorSpec, ThreadRunner, task_runner
from itarcore.progress import CancelToken


@pytest.mark.parametrize("text, spec", [
    ("threads", ExecutorSpec("threads")),
    ("processes", ExecutorSpec("processes")),
    ("processes:3", ExecutorSpec("processes", workers=3)),
    ("dask", ExecutorSpec("dask")),
    ("dask:tcp://127.0.0.1:8786", ExecutorSpec("dask", address="tcp://127.0.0.1:8786")),
])
def test_specs_parse_and_print_back(text: str, spec: ExecutorSpec) -> None:
    assert ExecutorSpec.parse(text) == spec
    assert str(spec) == text


@pytest.mark.parametrize("text", ["cluster", "processes:0", "processes:two", "threads:4", ""])
def test_bad_specs_are_refused(text: str) -> None:
    with pytest.raises(ExecutorError):
        ExecutorSpec.parse(text)


def fail_on_odd(n: int) -> int:
    if n % 2:
        raise ValueError(f"odd {n}")
    return n * 10


def test_results_and_task_errors_come_back_numbered() -> None:
    with ThreadRunner(2) as runner:
        results = runner.run(fail_on_odd, [(n,) for n in range(6)])
        got = {i: (value, str(exc) if exc else None) for i, value, exc in results}
    assert got == {0: (0, None), 1: (None, "odd 1"), 2: (20, None), 3: (None, "odd 3"), 4: (40, None),
                   5: (None, "odd 5")}


def test_cancel_raises_and_cancels_the_tasks_not_started() -> None:
    gate, first_started = threading.Event(), threading.Event()
    ran: list[int] = []

    def task(n: int) -> int:
        ran.append(n)
        first_started.set()
        gate.wait(30)
        return n

    token = CancelToken()
    with task_runner("threads", jobs=1) as runner:
        results = runner.run(task, [(n,) for n in range(5)], token)
        try:
            assert first_started.wait(30)
            token.cancel()
            with pytest.raises(Cancelled):
                next(results)
        finally:
            gate.set()
            results.close()
    assert ran == [0]  # one thread: task 0 was running, tasks 1-4 never started


def test_an_open_runner_is_lent_not_closed() -> None:
    runner = ThreadRunner(1)
    with task_runner(runner) as lent:
        assert lent is runner
    assert [value for _, value, _ in runner.run(fail_on_odd, [(2,)])] == [20]  # still usable
    runner.close()
