"""Where per-shard tasks run: threads here (the default), a local process pool, or a Dask cluster.

Spec strings, as the CLI's ``--executor`` takes them:

* ``threads``: a thread pool in this process (``--jobs`` threads); tasks may share memory
  with the caller, so they can report progress from inside a shard and stop mid-shard;
* ``processes`` or ``processes:N``: a pool of N local processes (default: one per core),
  for work that holds the GIL;
* ``dask`` or ``dask:ADDRESS``: a Dask distributed ``Client`` of an existing scheduler
  (``dask:tcp://10.0.0.5:8786``) or, with no address, of a ``LocalCluster`` of this
  machine's cores (one thread per worker process, on loopback), closed again afterwards.

Tasks are module-level functions of picklable arguments that return small picklable
results; the caller merges them. :meth:`TaskRunner.run` yields each result as its task
completes, so progress moves with every executor. When the caller's cancel token is set,
or the caller stops iterating (an error, a failed shard), tasks not yet started are
cancelled. A Dask worker that dies mid-task is replaced and its task rerun by Dask.
"""
from __future__ import annotations

import collections
import contextlib
import os
import queue
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ItarError
from .progress import CancelToken

if TYPE_CHECKING:
    from typing_extensions import Self

KINDS = ("threads", "processes", "dask")
POLL_SECONDS = 0.05  # how often a wait for results looks at the cancel token


class ExecutorError(ItarError):
    """An executor cannot be used as asked: a bad spec, Dask not installed, a scheduler out of reach."""


@dataclass(frozen=True)
class ExecutorSpec:
    kind: str = "threads"
    workers: int | None = None  # processes:N
    address: str | None = None  # dask:ADDRESS

    @classmethod
    def parse(cls, text: str) -> ExecutorSpec:
        kind, _, rest = text.strip().partition(":")
        if kind not in KINDS:
            raise ExecutorError(f"executor {text!r}: use threads, processes[:N] or dask[:ADDRESS]")
        if kind == "threads" and rest:
            raise ExecutorError(f"executor {text!r}: set the number of threads with --jobs")
        if kind == "processes" and rest:
            if not rest.isdigit() or int(rest) < 1:
                raise ExecutorError(f"executor {text!r}: N in processes:N must be a whole number >= 1")
            return cls(kind, workers=int(rest))
        if kind == "dask" and rest:
            return cls(kind, address=rest)
        return cls(kind)

    def __str__(self) -> str:
        extra = self.address if self.kind == "dask" else self.workers
        return f"{self.kind}:{extra}" if extra else self.kind

    def open(self, jobs: int = 1) -> TaskRunner:
        if self.kind == "processes":
            return ProcessRunner(self.workers or os.cpu_count() or 1)
        if self.kind == "dask":
            return DaskRunner.connect(self.address)
        return ThreadRunner(jobs)


class TaskRunner(ABC):
    """Runs tasks somewhere and hands their results back as they complete."""

    in_process = False  # tasks run in this process: they may take callbacks and cancel tokens
    local_workers: int | None = 1  # tasks sharing this machine's cores at once (None: they run elsewhere)

    @abstractmethod
    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], cancel: CancelToken | None = None) -> TaskResults:
        """Submit ``fn(*args)`` for every tuple of ``tasks`` now; iterate the results as they complete.

        Close the returned iterator when done with it (``try/finally``): that cancels the
        tasks not yet started, after an error or a cancel.
        """

    def close(self) -> None:
        """Release workers; waits for running tasks (a thread or process cannot be stopped mid-task)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FutureRunner(TaskRunner):
    """A runner whose tasks are futures: submitted together, fetched and cancelled by :class:`TaskResults`."""

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], cancel: CancelToken | None = None) -> TaskResults:
        return TaskResults(self, self._submit(fn, tasks), cancel)

    @abstractmethod
    def _submit(self, fn: Callable[..., Any], tasks: Sequence[tuple]) -> list:
        """One future per task, in the order of ``tasks``."""

    def cancel_futures(self, futures: list) -> None:
        for f in futures:
            f.cancel()

    def fetch(self, futures: list) -> list[tuple[Any, Any, BaseException | None]]:
        """``(future, result, None)`` or ``(future, None, exception)`` for completed futures."""
        out = []
        for f in futures:
            try:
                out.append((f, f.result(), None))
            except Exception as exc:  # noqa: BLE001 - a task's own error, handed to the caller
                out.append((f, None, exc))
        return out


class TaskResults:
    """``(task number, result, None)`` or ``(task number, None, exception)`` in completion order.

    Raises ``Cancelled`` (after cancelling what has not started) when the cancel token is set.
    Each result is fetched on its own: a Dask ``gather`` of several, one of them on a worker that
    has just died, was seen to wait forever.
    """

    def __init__(self, runner: FutureRunner, futures: list, cancel: CancelToken | None) -> None:
        self.runner, self.futures, self.cancel = runner, futures, cancel
        self.number = {id(f): i for i, f in enumerate(futures)}
        self.done: queue.Queue = queue.Queue()
        self.ready: collections.deque = collections.deque()
        for f in futures:
            f.add_done_callback(self.done.put)

    def __iter__(self) -> TaskResults:
        return self

    def __next__(self) -> tuple[int, Any, BaseException | None]:
        while True:
            if self.cancel is not None and self.cancel.cancelled:
                self.close()
                self.cancel.raise_if_cancelled()
            if self.ready:
                return self.ready.popleft()
            if not self.number:
                raise StopIteration
            try:
                batch = [self.done.get(timeout=POLL_SECONDS)]
            except queue.Empty:
                continue
            while True:
                try:
                    batch.append(self.done.get_nowait())
                except queue.Empty:
                    break
            for future, result, exc in self.runner.fetch(batch):
                i = self.number.pop(id(future))
                self.futures[i] = None  # the result is the caller's now: let the executor forget it
                self.ready.append((i, result, exc))

    def close(self) -> None:
        pending = [f for f in self.futures if f is not None and not f.done()]
        if pending:
            self.runner.cancel_futures(pending)


class _PoolRunner(FutureRunner):
    pool: Executor

    def _submit(self, fn: Callable[..., Any], tasks: Sequence[tuple]) -> list:
        return [self.pool.submit(fn, *args) for args in tasks]

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class ThreadRunner(_PoolRunner):
    in_process = True

    def __init__(self, workers: int = 1) -> None:
        self.local_workers = max(1, workers)
        self.pool = ThreadPoolExecutor(max_workers=self.local_workers, thread_name_prefix="itar-task")


class ProcessRunner(_PoolRunner):
    def __init__(self, workers: int) -> None:
        self.local_workers = max(1, workers)
        # Not fork: the GUI and Dask run threads, and a forked copy of a threaded process can deadlock.
        import multiprocessing  # here, not at the top: `itarcore index` with threads starts ~20 ms sooner
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        self.pool = ProcessPoolExecutor(max_workers=self.local_workers,
                                        mp_context=multiprocessing.get_context(method))


class DaskRunner(FutureRunner):
    """Tasks on a Dask distributed cluster; owns (and closes) the client and any LocalCluster it started."""

    local_workers = None  # each task gets a worker thread of its own, wherever that is

    def __init__(self, client: Any, cluster: Any = None, own_client: bool = False) -> None:
        self.client, self.cluster, self.own_client = client, cluster, own_client

    @classmethod
    def connect(cls, address: str | None = None) -> DaskRunner:
        """A client of the scheduler at ``address``, or of a new LocalCluster of this machine's cores."""
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise ExecutorError("the dask executor needs Dask distributed: pip install 'itar-browser[dask]'") from exc
        if address:
            try:
                client = Client(address, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise ExecutorError(f"dask scheduler {address}: cannot connect ({exc})") from exc
            return cls(client, own_client=True)
        import logging  # here, not at the top: only a local cluster needs it

        # Loopback only; its HTTP endpoint (health, a dashboard if bokeh is installed) on any free port.
        try:
            cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
        except Exception as exc:  # Dask reports a failed start in many ways; say which step failed
            raise ExecutorError(f"could not start a local Dask cluster: {exc}") from exc
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
        return cls(client, cluster, own_client=True)

    def _submit(self, fn: Callable[..., Any], tasks: Sequence[tuple]) -> list:
        if not tasks:
            return []
        # pure=False: a file can change under the same arguments, so results are never shared between runs
        return self.client.map(fn, *zip(*tasks), pure=False)

    def cancel_futures(self, futures: list) -> None:
        with contextlib.suppress(Exception):  # a closing client may refuse; the tasks die with it
            self.client.cancel(futures)


    def close(self) -> None:
        if self.own_client:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class LazyRunner(TaskRunner):
    """The runner of ``spec``, opened on first use (a warm cache may need no workers at all)."""

    def __init__(self, spec: ExecutorSpec, jobs: int = 1) -> None:
        self.spec, self.jobs = spec, jobs
        self.opened: TaskRunner | None = None
        self.in_process = spec.kind == "threads"
        self.local_workers = {"threads": max(1, jobs), "processes": spec.workers or os.cpu_count() or 1,
                              "dask": None}[spec.kind]

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], cancel: CancelToken | None = None) -> TaskResults:
        if self.opened is None:
            self.opened = self.spec.open(self.jobs)
        return self.opened.run(fn, tasks, cancel)

    def close(self) -> None:
        if self.opened is not None:
            self.opened.close()
            self.opened = None


@contextlib.contextmanager
def task_runner(executor: str | ExecutorSpec | TaskRunner | None = None, jobs: int = 1) -> Iterator[TaskRunner]:
    """The runner for ``executor`` (a spec string, a spec, or an open runner, which is left open)."""
    if isinstance(executor, TaskRunner):
        yield executor
        return
    spec = ExecutorSpec.parse(executor) if isinstance(executor, str) else (executor or ExecutorSpec())
    runner = LazyRunner(spec, jobs)
    try:
        yield runner
    finally:
        runner.close()
