"""Batched, bounds-checked payload access for passes over many rows.

Rows are taken a chunk at a time, ordered by (shard, offset) within the chunk, and read
from the shard's mmap in runs of at most ``BATCH_BYTES``, their pages dropped from this
process behind each run (``MADV_DONTNEED``; the page cache keeps them), so a pass reads
each shard sequentially with a resident size of about one run, whatever the size of the
fold. The mapping is marked sequential while a pass reads it (``MADV_SEQUENTIAL``: far
read-ahead, as ``cat``'s reads get); asking for each run ahead (``MADV_WILLNEED``) cost
several times more CPU on a cold page cache. Hashing straight from the page cache costs
a quarter of the CPU of ``pread`` into a buffer when the shards are cached.
"""
from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..formats.tar_fields import BLOCK
from ..progress import CancelToken

BATCH_BYTES = 32 << 20  # one sequential read-ahead run
CHUNK_ROWS = 1 << 18  # rows ordered and checked at a time


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
        order = np.lexsort((begin, fid))
        part, fid, begin, size = part[order], fid[order], begin[order], size[order]
        bounds = np.flatnonzero(np.diff(fid)) + 1
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(part)]):
            if cancel is not None:
                cancel.raise_if_cancelled()
            shard = int(fid[a])
            yield from _runs_of_shard(ds, shard, part[a:b], begin[a:b], size[a:b], batch_bytes, cancel)


def _runs_of_shard(ds: Dataset, fid: int, rows: np.ndarray, begin: np.ndarray, size: np.ndarray,
                   batch_bytes: int, cancel: CancelToken | None) -> Iterator[PayloadRun]:
    mapped = ds.shard_map(fid)
    end = begin + size
    _check_bounds(ds, fid, rows, begin, end, len(mapped))
    reach = np.maximum.accumulate(end)  # ascending even where a damaged index has overlapping payloads
    # cut where the span from a run's first payload would pass batch_bytes (a big payload is a run alone)
    i, n = 0, len(rows)
    _advise(mapped, getattr(mmap, "MADV_SEQUENTIAL", None), 0, len(mapped))  # read ahead far, as cat's reads do
    try:
        with memoryview(mapped) as whole:
            while i < n:
                limit = begin[i] + batch_bytes
                j = min(n, max(i + 1, int(np.searchsorted(reach, limit, side="right"))))
                first, last = int(begin[i]), int(reach[j - 1])
                with whole[first:last] as view:
                    yield PayloadRun(fid, rows[i:j], begin[i:j] - first, end[i:j] - first, view)
                _advise(mapped, getattr(mmap, "MADV_DONTNEED", None), first, last)
                if cancel is not None:
                    cancel.raise_if_cancelled()
                i = j
    finally:
        _advise(mapped, getattr(mmap, "MADV_NORMAL", None), 0, len(mapped))  # other readers of the shard browse it


def _advise(mapped: mmap.mmap, advice: int | None, first: int, last: int) -> None:
    if advice is None or last <= first or not hasattr(mapped, "madvise"):
        return
    page = mmap.PAGESIZE
    start = first // page * page
    mapped.madvise(advice, start, last - start)
