"""A fold's shards to its index: each shard's member table from the cache or a scan task, then the fold merge.

The per-shard step (:func:`scan_shard`) is a plain function of picklable arguments, so
any executor can run it (threads, processes, a Dask cluster); the caller loads cached
tables, stores new ones as they arrive (a killed run keeps every shard it finished), and
merges in fid order. The merge sees the same tables whichever way they were obtained,
so the bytes of the index never depend on the executor, the cache or the order of
completion.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import Cancelled, DatasetError
from ..executors import ExecutorSpec, TaskRunner, task_runner
from ..formats.tar import scan_threads
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from . import jit
from .cache import ShardCache, ShardIdentity
from .indexer import MAX_SHARDS, FoldIndex, ShardMembers, merge_shards, shard_members


@dataclass
class ShardCounts:
    """How each shard's member table was obtained in one run."""

    reused: int = 0  # loaded from the cache
    scanned: int = 0
    failed: int = 0

    def text(self) -> str:
        return f"{self.reused} reused, {self.scanned} scanned" + (f", {self.failed} failed" if self.failed else "")


class ShardsFailed(DatasetError):
    """Some shards could not be scanned; the others were, and their tables are cached."""

    def __init__(self, failures: list[tuple[str, BaseException]], counts: ShardCounts, total: int) -> None:
        self.failures, self.counts = failures, counts
        first = failures[0][1]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} of {total} shard(s) could not be indexed ({counts.text()}; the tables of "
                         f"the others are cached, so a rerun scans only what failed): {first}{more}")

    def __reduce__(self) -> tuple:
        return type(self), (self.failures, self.counts, self.counts.reused + self.counts.scanned + self.counts.failed)


@dataclass
class FoldBuild:
    """A fold's merged index and how its shards were obtained."""

    index: FoldIndex
    counts: ShardCounts
    notes: list[str] = field(default_factory=list)


def scan_shard(path: str, compiled: bool, threads: int | None) -> ShardMembers:
    """One shard's member table: the task every executor runs."""
    return shard_members(path, compiled=compiled, threads=threads)


def build_fold(shards: Sequence[str | os.PathLike[str]], *, force_contiguous: bool = False, jobs: int = 1,
               executor: str | ExecutorSpec | TaskRunner | None = None, cache: ShardCache | None = None,
               progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> FoldBuild:
    """Index a fold's shards (fid = position in ``shards``), reusing ``cache`` entries of unchanged shards.

    ``jobs`` is the number of threads of the default executor. Progress is in bytes: a
    reused shard counts at once, a scanned one as it is read (threads) or when its task
    completes (processes, Dask); ``Progress.message`` carries the reused/scanned counts.
    Without a cache the first failing shard stops the run; with one, the other shards are
    still scanned and cached, then :class:`ShardsFailed` names the failures.
    """
    if len(shards) > MAX_SHARDS:  # before any scan: the merge could not hold them
        raise DatasetError(f"{len(shards)} shards: a fold can have at most {MAX_SHARDS} (fid is u16)")
    run = _FoldRun([os.fspath(p) for p in shards], cache, progress, cancel)
    if run.todo:
        with task_runner(executor, jobs) as runner:
            run.scan(runner)
    if run.failures:
        failed = sorted(run.failures, key=lambda f: f[0])
        raise ShardsFailed([(run.paths[fid], exc) for fid, exc in failed], run.counts, len(run.paths))
    index = merge_shards(run.tables, force_contiguous)
    index.route, index.route_reason = run.route, run.route_reason
    run.reporter.update(run.reporter.total, message=run.counts.text(), force=True)
    return FoldBuild(index, run.counts, run.notes)


class _FoldRun:
    """One build's state: which tables are known, what is left to scan, progress in bytes."""

    def __init__(self, paths: list[str], cache: ShardCache | None, progress: ProgressCallback | None,
                 cancel: CancelToken | None) -> None:
        self.paths, self.cache, self.cancel = paths, cache, cancel
        self.identities = [ShardIdentity.of(p) for p in paths] if cache is not None else []
        self.sizes = [i.size for i in self.identities] if cache is not None else [os.path.getsize(p) for p in paths]
        self.counts = ShardCounts()
        self.tables: list[ShardMembers | None] = [None] * len(paths)
        for fid, identity in enumerate(self.identities):
            self.tables[fid] = cache.load(identity)
            self.counts.reused += self.tables[fid] is not None
        self.todo = [fid for fid, t in enumerate(self.tables) if t is None]
        self.done = [0 if t is None else size for t, size in zip(self.tables, self.sizes)]  # bytes per shard
        self.failures: list[tuple[int, BaseException]] = []
        self.route, self.route_reason = "cache", "every shard's table came from the cache"  # until a scan runs
        self.notes: list[str] = []
        self.reporter = ProgressReporter(progress, sum(self.sizes), "bytes", cancel)
        self.lock = threading.Lock()

    def report(self, fid: int, n: int) -> None:  # from scanning threads too
        with self.lock:
            self.done[fid] = n
            self.reporter.update(sum(self.done), current=os.path.basename(self.paths[fid]),
                                 message=self.counts.text())

    def scan(self, runner: TaskRunner) -> None:
        compiled, self.route_reason = jit.choose(sum(self.sizes[fid] for fid in self.todo))  # one choice a run
        self.route = "compiled" if compiled and jit.available() else "numpy"
        workers = min(runner.local_workers, len(self.todo)) if runner.local_workers else 0
        threads = max(1, scan_threads() // workers) if workers else 1  # threads one shard's scan may use besides
        stop = self.cancel.child() if self.cancel is not None else CancelToken()  # also stops scans on an error
        if runner.in_process:  # threads: progress from inside each shard, and a cancel that stops a scan midway
            def task(fid: int) -> ShardMembers:
                return shard_members(self.paths[fid], stop, lambda p: self.report(fid, p.done), compiled, threads)

            results = runner.run(task, [(fid,) for fid in self.todo], stop)
        else:
            results = runner.run(scan_shard, [(self.paths[fid], compiled, threads) for fid in self.todo], stop)
        try:
            for i, table, exc in results:
                self._take(self.todo[i], table, exc)
        finally:
            stop.cancel()  # running in-process scans stop at their next chunk
            results.close()

    def _take(self, fid: int, table: ShardMembers | None, exc: BaseException | None) -> None:
        if exc is not None:
            if isinstance(exc, Cancelled) or self.cache is None:
                raise exc
            self.counts.failed += 1
            self.failures.append((fid, exc))
        else:
            self.tables[fid] = table
            self.counts.scanned += 1
            if self.cache is not None:
                self._store(fid, table)
        self.report(fid, self.sizes[fid])

    def _store(self, fid: int, table: ShardMembers) -> None:
        try:
            self.cache.store(self.identities[fid], table)
        except OSError as exc:  # the index is still right; only the next run loses the head start
            if not self.notes:
                self.notes.append(f"could not write the shard cache in {self.cache.folder}: {exc}")


def index_shards(shards: Sequence[str | os.PathLike[str]], *, force_contiguous: bool = False, jobs: int = 1,
                 executor: str | ExecutorSpec | TaskRunner | None = None, cache: ShardCache | None = None,
                 progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> FoldIndex:
    """:func:`build_fold`, returning the merged index alone."""
    return build_fold(shards, force_contiguous=force_contiguous, jobs=jobs, executor=executor, cache=cache,
                      progress=progress, cancel=cancel).index


__all__ = ["FoldBuild", "ShardCounts", "ShardsFailed", "build_fold", "index_shards", "scan_shard"]
