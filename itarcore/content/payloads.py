"""Batched, bounds-checked payload access for passes over many rows.

Rows are taken a chunk at a time, ordered by (shard, offset) within the chunk, and read
from the shard's mmap in runs of at most ``BATCH_BYTES``, their pages dropped from this
process behind each run (``MADV_DONTNEED``; the page cache keeps them), so a pass reads
each shard sequentially with a resident size of about one run (``1 + POPULATE_AHEAD``
runs on a cold page cache; ``WARM_RUNS`` runs, taken together, for a shard in the page cache),
whatever the size of the fold. The mapping is marked sequential while a pass reads it (``MADV_SEQUENTIAL``: far
read-ahead, as ``cat``'s reads get); asking for each run ahead (``MADV_WILLNEED``) cost
several times more CPU on a cold page cache. Hashing straight from the page cache costs
a quarter of the CPU of ``pread`` into a buffer when the shards are cached.

For a shard not in the page cache (a few of its pages asked with ``mincore``), where
Linux offers ``MADV_POPULATE_READ`` (5.14+), a second thread faults the next
``POPULATE_AHEAD`` runs in while the caller works on this one (``madvise`` through
ctypes, which lets go of the GIL; Python's ``mmap.madvise`` holds it): the caller then
neither waits for the disk nor takes page faults, and reading overlaps its work.
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..formats.tar_fields import BLOCK
from ..progress import CancelToken
from ..storage.residency import MADV_POPULATE_READ, libc_calls  # an older kernel refuses it: pages fault in

BATCH_BYTES = 32 << 20  # one sequential read-ahead run
CHUNK_ROWS = 1 << 18  # rows ordered and checked at a time
POPULATE_AHEAD = 2  # runs faulted in ahead of the one the caller works on
# runs of a shard in the page cache taken together: fewer, larger batches of numpy work and of page drops
WARM_RUNS = 4
RESIDENCY_PROBES = 16  # runs of a shard whose first, middle and last pages tell whether it is in the page cache


@dataclass
class PayloadRun:
    """Rows of one shard whose payloads lie in ``view`` (a zero-copy window of the shard's mmap)."""

    fid: int
    rows: np.ndarray  # row ids, ascending by offset
    starts: np.ndarray  # payload start of each row, relative to ``view``
    ends: np.ndarray
    view: memoryview

    def payloads(self) -> Iterator[tuple[int, memoryview]]:
        view = self.view
        for row, a, b in zip(self.rows.tolist(), self.starts.tolist(), self.ends.tolist()):
            yield row, view[a:b]


def _check_bounds(ds: Dataset, fid: int, rows: np.ndarray, begin: np.ndarray, end: np.ndarray, length: int) -> None:
    bad = np.flatnonzero(end > length)
    if len(bad):
        i = int(bad[0])
        raise DatasetError(f"{ds.shard_paths[fid]}: row {int(rows[i])} payload [{int(begin[i])}, {int(end[i])}) "
                           f"lies past the end of the shard ({length} bytes)")


def iter_payload_runs(ds: Dataset, rows: np.ndarray, cancel: CancelToken | None = None,
                      batch_bytes: int = BATCH_BYTES) -> Iterator[PayloadRun]:
    """Yield :class:`PayloadRun` covering ``rows`` (any order; each row once), shard by shard within each chunk.

    The view of a run is valid only until the next run is taken (its pages are released).
    Raises ``MissingShardError`` for a row of a missing shard and ``DatasetError`` for a
    payload past its shard's end.
    """
    rows = np.asarray(rows, dtype=np.int64)
    records = ds.rows
    for lo in range(0, len(rows), CHUNK_ROWS):
        part = rows[lo : lo + CHUNK_ROWS]
        rec = records[part]
        fid = rec["fid"].astype(np.int64)
        begin = rec["offset"].astype(np.int64) + BLOCK
        size = rec["size"].astype(np.int64)
        if ((np.diff(fid) < 0) | ((np.diff(fid) == 0) & (np.diff(begin) < 0))).any():  # else in order already
            order = np.lexsort((begin, fid))
            part, fid, begin, size = part[order], fid[order], begin[order], size[order]
        bounds = np.flatnonzero(np.diff(fid)) + 1
        shards = []
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(part)]):
            if cancel is not None:
                cancel.raise_if_cancelled()
            shards.append(_ShardRuns.plan(ds, int(fid[a]), part[a:b], begin[a:b], size[a:b], batch_bytes))
        yield from _read_shards(shards, cancel)


@dataclass
class _ShardRuns:
    """The rows of one shard in a chunk, ascending by offset, cut into runs ``(i, j, first, last)``."""

    fid: int
    mapped: mmap.mmap
    rows: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    runs: list[tuple[int, int, int, int]]

    @classmethod
    def plan(cls, ds: Dataset, fid: int, rows: np.ndarray, begin: np.ndarray, size: np.ndarray,
             batch_bytes: int) -> _ShardRuns:
        mapped = ds.shard_map(fid)
        end = begin + size
        _check_bounds(ds, fid, rows, begin, end, len(mapped))
        reach = np.maximum.accumulate(end)  # ascending even where a damaged index has overlapping payloads
        # cut where the span from a run's first payload would pass batch_bytes (a big payload is a run alone)
        runs = []
        i, n = 0, len(rows)
        while i < n:
            j = min(n, max(i + 1, int(np.searchsorted(reach, begin[i] + batch_bytes, side="right"))))
            runs.append((i, j, int(begin[i]), int(reach[j - 1])))
            i = j
        return cls(fid, mapped, rows, begin, end, runs)

    def merged_runs(self, k: int) -> list[tuple[int, int, int, int]]:
        """Every ``k`` consecutive runs taken as one."""
        return [(group[0][0], group[-1][1], group[0][2], max(run[3] for run in group))
                for group in (self.runs[a : a + k] for a in range(0, len(self.runs), k))]


def _read_shards(shards: list[_ShardRuns], cancel: CancelToken | None) -> Iterator[PayloadRun]:
    with ExitStack() as stack:
        wholes = [stack.enter_context(memoryview(s.mapped)) for s in shards]
        cached = _residency(wholes, shards)
        populator = _Populator.start(wholes, shards, cached)
        try:
            for s, whole, in_cache in zip(shards, wholes, cached):
                # read ahead far, as cat's reads do; other readers of the shard browse it afterwards
                _advise(s.mapped, getattr(mmap, "MADV_SEQUENTIAL", None), 0, len(s.mapped))
                try:
                    for i, j, first, last in (s.merged_runs(WARM_RUNS) if in_cache else s.runs):
                        with whole[first:last] as view:
                            yield PayloadRun(s.fid, s.rows[i:j], s.begin[i:j] - first, s.end[i:j] - first, view)
                        _advise(s.mapped, getattr(mmap, "MADV_DONTNEED", None), first, last)
                        if populator is not None and not in_cache:
                            populator.room.release()
                        if cancel is not None:
                            cancel.raise_if_cancelled()
                finally:
                    _advise(s.mapped, getattr(mmap, "MADV_NORMAL", None), 0, len(s.mapped))
        finally:
            if populator is not None:
                populator.stop()  # before the mappings' buffers are let go


def _advise(mapped: mmap.mmap, advice: int | None, first: int, last: int) -> None:
    if advice is None or last <= first or not hasattr(mapped, "madvise"):
        return
    page = mmap.PAGESIZE
    start = first // page * page
    mapped.madvise(advice, start, last - start)


_LIBC = libc_calls()
_populate_works = True  # False once the kernel refused MADV_POPULATE_READ


def _in_page_cache(mincore: Callable[[int, int, ctypes.Array], int], address: int,
                   spans: list[tuple[int, int]]) -> bool:
    """Whether the runs are in the page cache, judged by ``RESIDENCY_PROBES`` pages spread over them (asking
    about every page costs more than the page faults it would spare)."""
    page = mmap.PAGESIZE
    resident = ctypes.create_string_buffer(1)
    picks = np.linspace(0, len(spans) - 1, min(len(spans), RESIDENCY_PROBES)).astype(int).tolist()
    for k in sorted(set(picks)):
        first, last = spans[k]
        for at in {first, (first + last) // 2, last - 1}:
            if mincore(address + at // page * page, 1, resident) != 0 or not resident.raw[0] & 1:
                return False
    return True


def _residency(wholes: list[memoryview], shards: list[_ShardRuns]) -> list[bool]:
    """Per shard: are its runs in the page cache (False where Linux's mincore is not at hand)."""
    if _LIBC is None:
        return [False] * len(shards)
    return [not len(whole) or _in_page_cache(_LIBC[1], np.frombuffer(whole, np.uint8).ctypes.data,
                                             [(first, last) for _, _, first, last in s.runs])
            for whole, s in zip(wholes, shards)]


class _Populator:
    """Faults runs in, in order, on a second thread, at most ``POPULATE_AHEAD`` ahead of the caller.

    Runs are ``(address, length)`` of a mapping, of the shards not in the page cache only: for
    those that are, the caller's own page faults cost less than populating. Not started at all
    when every shard is in the page cache (a thread of Python code between GIL-free calls takes
    the GIL from the caller). It goes on from one shard to the next, so reading does not stop at
    a shard's end. The caller releases ``room`` as it finishes each run of those shards, and
    calls ``stop`` (which waits for the thread) before the mappings' buffers are released.
    """

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.room = threading.Semaphore(POPULATE_AHEAD + 1)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="payload-populate", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls, wholes: list[memoryview], shards: list[_ShardRuns], cached: list[bool]) -> _Populator | None:
        if _LIBC is None or not _populate_works or all(cached):
            return None
        page = mmap.PAGESIZE
        spans = []
        for whole, s, in_cache in zip(wholes, shards, cached):
            if not in_cache:
                address = np.frombuffer(whole, np.uint8).ctypes.data
                spans += [(address + first // page * page, last - first // page * page) for _, _, first, last in s.runs]
        return cls(spans)

    def _run(self) -> None:
        global _populate_works
        assert _LIBC is not None
        madvise = _LIBC[0]
        for span in self.spans:
            self.room.acquire()
            if self.stopping:
                return
            if madvise(span[0], span[1], MADV_POPULATE_READ) != 0:
                _populate_works = ctypes.get_errno() != errno.EINVAL  # not this kernel; other errors: not this run
                if not _populate_works:
                    return

    def stop(self) -> None:
        self.stopping = True
        self.room.release()
        self.thread.join()
