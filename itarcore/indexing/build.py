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
from ..storage import FetchStats
from . import jit
from .cache import ROUTE_REASON, ShardCache, ShardCounts, ShardIdentity
from .indexer import MAX_SHARDS, FoldIndex, ShardMembers, merge_shards, shard_members
from .remote import RemoteOptions, RemoteShard, remote_members, total_fetched

Shard = str | os.PathLike[str] | RemoteShard  # a local path, or a listed URL


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
    fetched: FetchStats | None = None  # remote shards: what their scans downloaded


def scan_shard(shard: str | RemoteShard, compiled: bool, threads: int | None,
               remote: RemoteOptions | None = None) -> ShardMembers:
    """One shard's member table: the task every executor runs."""
    if isinstance(shard, RemoteShard):
        return remote_members(shard, remote or RemoteOptions())
    return shard_members(shard, compiled=compiled, threads=threads)


def build_fold(shards: Sequence[Shard], *, force_contiguous: bool = False, jobs: int = 1,
               executor: str | ExecutorSpec | TaskRunner | None = None, cache: ShardCache | None = None,
               progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
               remote: RemoteOptions | None = None) -> FoldBuild:
    """Index a fold's shards (fid = position in ``shards``), reusing ``cache`` entries of unchanged shards.

    ``jobs`` is the number of threads of the default executor. Progress is in bytes: a
    reused shard counts at once, a scanned one as it is read (threads) or when its task
    completes (processes, Dask); ``Progress.message`` carries the reused/scanned counts.
    Without a cache the first failing shard stops the run; with one, the other shards are
    still scanned and cached, then :class:`ShardsFailed` names the failures. Remote shards
    (:class:`RemoteShard`) are read as ``remote`` says; a remote shard is cached under
    its URL, size and version.
    """
    if len(shards) > MAX_SHARDS:  # before any scan: the merge could not hold them
        raise DatasetError(f"{len(shards)} shards: a fold can have at most {MAX_SHARDS} (fid is u16)")
    run = _FoldRun(shards, cache, progress, cancel, remote or RemoteOptions())
    if run.todo:
        with task_runner(executor, jobs) as runner:
            run.scan(runner)
    if run.failures:
        failed = sorted(run.failures, key=lambda f: f[0])
        raise ShardsFailed([(run.paths[fid], exc) for fid, exc in failed], run.counts, len(run.paths))
    index = merge_shards(run.tables, force_contiguous)
    index.route, index.route_reason = run.route, run.route_reason
    run.reporter.update(run.reporter.total, message=run.counts.text(), force=True)
    remote_fold = any(isinstance(s, RemoteShard) for s in run.shards)
    return FoldBuild(index, run.counts, run.notes, total_fetched(run.tables) if remote_fold else None)


class _FoldRun:
    """One build's state: which tables are known, what is left to scan, progress in bytes."""

    def __init__(self, shards: Sequence[Shard], cache: ShardCache | None, progress: ProgressCallback | None,
                 cancel: CancelToken | None, remote: RemoteOptions) -> None:
        self.shards = [s if isinstance(s, RemoteShard) else os.fspath(s) for s in shards]
        self.paths = [s.name if isinstance(s, RemoteShard) else s for s in self.shards]  # for messages
        self.cache, self.cancel, self.remote = cache, cancel, remote
        self.identities = [_identity(s) for s in self.shards] if cache is not None else []
        self.sizes = [s.size if isinstance(s, RemoteShard) else i.size if i else os.path.getsize(s)
                      for s, i in zip(self.shards, self.identities or [None] * len(self.shards))]
        self.counts = ShardCounts()
        self.tables: list[ShardMembers | None] = [None] * len(self.shards)
        self.reporter = ProgressReporter(progress, sum(self.sizes), "bytes", cancel)
        # on a cold fold of thousands of shards the cache look-ups take seconds: say so as they go
        reused = 0
        for fid, identity in enumerate(self.identities):
            self.reporter.done = reused
            self.reporter.announce(os.path.basename(self.paths[fid]),
                                   f"checking the shard cache ({fid:,} of {len(self.paths):,})")
            self.tables[fid] = cache.load(identity) if identity is not None else None
            self.counts.reused += self.tables[fid] is not None
            reused += self.sizes[fid] if self.tables[fid] is not None else 0
        self.todo = [fid for fid, t in enumerate(self.tables) if t is None]
        self.done = [0 if t is None else size for t, size in zip(self.tables, self.sizes)]  # bytes per shard
        self.failures: list[tuple[int, BaseException]] = []
        self.route, self.route_reason = "cache", ROUTE_REASON  # until a scan runs
        self.notes: list[str] = []
        self.lock = threading.Lock()
        if self.todo:  # the first scan's own reports come after its first chunk: name it at once
            self.reporter.done = sum(self.done)
            self.reporter.announce(os.path.basename(self.paths[self.todo[0]]),
                                   f"reading tar headers ({len(self.todo):,} shard(s) to scan)", force=True)

    def report(self, fid: int, n: int) -> None:  # from scanning threads too
        with self.lock:
            self.done[fid] = n
            self.reporter.update(sum(self.done), current=os.path.basename(self.paths[fid]),
                                 message=self.counts.text())

    def scan(self, runner: TaskRunner) -> None:
        compiled, self.route_reason = jit.choose(sum(self.sizes[fid] for fid in self.todo))  # one choice a run
        self.route = "compiled" if compiled and jit.available() else "numpy"
        if any(isinstance(self.shards[fid], RemoteShard) for fid in self.todo):
            plan = self.remote.plan
            self.route = "remote"
            self.route_reason = (f"ranged reads of up to {plan.block_size:,} bytes; payloads over "
                                 f"{plan.skip_threshold:,} bytes jumped over with a short probe read")
        workers = min(runner.local_workers, len(self.todo)) if runner.local_workers else 0
        threads = max(1, scan_threads() // workers) if workers else 1  # threads one shard's scan may use besides
        stop = self.cancel.child() if self.cancel is not None else CancelToken()  # also stops scans on an error
        if runner.in_process:  # threads: progress from inside each shard, and a cancel that stops a scan midway
            def task(fid: int) -> ShardMembers:
                stop.raise_if_cancelled()  # queued behind others when cancel came: start no reads
                shard = self.shards[fid]
                if isinstance(shard, RemoteShard):
                    return remote_members(shard, self.remote, stop, lambda p: self.report(fid, p.done))
                return shard_members(shard, stop, lambda p: self.report(fid, p.done), compiled, threads)

            results = runner.run(task, [(fid,) for fid in self.todo], stop)
        else:
            results = runner.run(scan_shard, [self._task_args(fid, compiled, threads) for fid in self.todo], stop)
        try:
            for i, table, exc in results:
                self._take(self.todo[i], table, exc)
        finally:
            stop.cancel()  # running in-process scans stop at their next chunk
            results.close()

    def _task_args(self, fid: int, compiled: bool, threads: int) -> tuple:
        """``scan_shard``'s arguments: the read options travel only with remote shards."""
        shard = self.shards[fid]
        return (shard, compiled, threads, self.remote) if isinstance(shard, RemoteShard) else (shard, compiled, threads)

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
        if self.identities[fid] is None:  # a remote shard without a version: its table could go stale unseen
            return
        try:
            self.cache.store(self.identities[fid], table)
        except (OSError, ValueError) as exc:  # the index is still right; only the next run loses the head start
            if not self.notes:
                self.notes.append(f"could not write the shard cache in {self.cache.folder}: {exc}")


def _identity(shard: str | RemoteShard) -> ShardIdentity | None:
    if not isinstance(shard, RemoteShard):
        return ShardIdentity.of(shard)
    return ShardIdentity(shard.name, shard.size, 0, shard.version) if shard.version else None


def index_shards(shards: Sequence[Shard], *, force_contiguous: bool = False, jobs: int = 1,
                 executor: str | ExecutorSpec | TaskRunner | None = None, cache: ShardCache | None = None,
                 progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> FoldIndex:
    """:func:`build_fold`, returning the merged index alone."""
    return build_fold(shards, force_contiguous=force_contiguous, jobs=jobs, executor=executor, cache=cache,
                      progress=progress, cancel=cancel).index


__all__ = ["FoldBuild", "ShardCounts", "ShardsFailed", "build_fold", "index_shards", "scan_shard"]
