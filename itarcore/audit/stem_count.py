"""Counts over every row of an index in bounded memory: distinct stems, and runs of equal keys.

Stems are the distinct (keyhash, crashid) pairs. With a cached key index they are
counted in one pass in key order. An index too big to stay in the page cache between
passes gets its key index built first (an external sort, kept in the cache for lookups
and the audit). Otherwise the keyhash range is cut into partitions:
a first pass counts the rows under each 16-bit keyhash prefix, then each partition
(consecutive prefixes holding at most ``partition_rows`` rows; a single prefix holding
more, which random hashes never do, stays whole) is gathered in a pass over the rows and
sorted. Memory: one partition's keyhashes (8 bytes a row) and one chunk of rows,
whatever the number of rows; the rows' pages are released behind each chunk.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

from ..formats.taridx import RECORD_SIZE, TaridxIndex, contiguous_runs
from ..keyindex import KeyIndex, build_key_index
from ..progress import CancelToken
from ..rowpass import DEFAULT_CHUNK_ROWS, iter_row_chunks
from .sample_chunks import key_order_chunks

PARTITION_ROWS = 1 << 23  # 64 MiB of keyhashes a partition
PREFIX_BITS = 16


def count_stems(index: TaridxIndex, cancel: CancelToken | None = None, *,
                cache_dir: str | os.PathLike[str] | None = None, partition_rows: int = PARTITION_ROWS,
                chunk_rows: int = DEFAULT_CHUNK_ROWS, in_page_cache: bool | None = None) -> int:
    """Distinct (keyhash, crashid) pairs among the rows: through the cached key index if there is one.

    ``in_page_cache``: whether the rows stay in the page cache between passes (default:
    they take at most half the memory); if not, and more than one partition is needed,
    the key index is built (into the cache, else a temporary folder) and counted through.
    """
    if index.n_rows == 0:
        return 0
    with contextlib.ExitStack() as stack:
        key_index = KeyIndex.open_cached(index, cache_dir)
        if key_index is None and index.n_rows > partition_rows:
            if in_page_cache is None:
                in_page_cache = index.is_remote or index.n_rows * RECORD_SIZE <= _memory_bytes() // 2
            if not in_page_cache:
                key_index = _build_keys(index, cache_dir, cancel, stack)
        if key_index is not None:
            stack.callback(key_index.close)
            return _count_in_key_order(index, key_index, cancel, chunk_rows)
        return sum(_count_partition(index, lo, hi, held, cancel, chunk_rows)
                   for lo, hi, held in _partitions(index, cancel, partition_rows, chunk_rows))


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 1 << 62  # unknown: assume it fits (the partitioned passes are right either way)


def _build_keys(index: TaridxIndex, cache_dir: str | os.PathLike[str] | None, cancel: CancelToken | None,
                stack: contextlib.ExitStack) -> KeyIndex:
    try:
        return build_key_index(index, cache_dir, cancel=cancel)
    except OSError:  # the cache cannot be written: a folder removed after the count
        private = stack.enter_context(tempfile.TemporaryDirectory(prefix="itar-count-keys-"))
        return build_key_index(index, private, cancel=cancel)


def count_runs(index: TaridxIndex, cancel: CancelToken | None = None,
               chunk_rows: int = DEFAULT_CHUNK_ROWS) -> int:
    """Runs of equal (keyhash, crashid) among adjacent rows (:func:`contiguous_runs`, a chunk at a time)."""
    runs, last = 0, None
    for _, part in iter_row_chunks(index, chunk_rows, cancel=cancel):
        kh, cid = part["keyhash"], part["crashid"]
        runs += contiguous_runs(kh, cid)
        if last is not None and last == (kh[0], cid[0]):
            runs -= 1  # the run goes on across the chunk edge
        last = (kh[-1], cid[-1])
    return runs


def _count_in_key_order(index: TaridxIndex, key_index: KeyIndex, cancel: CancelToken | None,
                        chunk_rows: int) -> int:
    """Key order puts equal keyhashes together, their crash ids ascending; chunks hold whole keyhashes."""
    n_stems = 0
    collisions = key_index.collisions
    for keys, rows in key_order_chunks(index, key_index, cancel, chunk_rows):
        crashid = np.zeros(len(rows), np.uint32)
        if len(collisions):  # only rows of colliding keyhashes have crash ids: read just those
            hit = np.flatnonzero(np.isin(keys, collisions))
            crashid[hit] = index.rows["crashid"][rows[hit]]
        n_stems += contiguous_runs(keys, crashid)
    return n_stems


def _partitions(index: TaridxIndex, cancel: CancelToken | None, partition_rows: int,
                chunk_rows: int) -> list[tuple[int, int, int]]:
    """Keyhash prefix ranges ``[lo, hi)`` of at most ``partition_rows`` rows each (one range if all fit),
    with the rows each holds."""
    n_prefixes = 1 << PREFIX_BITS
    if index.n_rows <= partition_rows:
        return [(0, n_prefixes, index.n_rows)]
    per_prefix = np.zeros(n_prefixes, np.int64)
    for _, part in iter_row_chunks(index, chunk_rows, cancel=cancel):
        per_prefix += np.bincount(_prefixes(part["keyhash"]), minlength=n_prefixes)
    ranges, lo, held = [], 0, 0
    for prefix, count in enumerate(per_prefix.tolist()):
        if held and held + count > partition_rows:
            ranges.append((lo, prefix, held))
            lo, held = prefix, 0
        held += count
    ranges.append((lo, n_prefixes, held))
    return ranges


def _prefixes(keyhash: np.ndarray) -> np.ndarray:
    return (keyhash >> np.uint64(64 - PREFIX_BITS)).astype(np.intp)


def _count_partition(index: TaridxIndex, lo: int, hi: int, held: int, cancel: CancelToken | None,
                     chunk_rows: int) -> int:
    """Distinct pairs among the ``held`` rows whose keyhash prefix is in ``[lo, hi)``.

    Rows without a crash id (nearly all) are counted by their keyhashes alone, gathered
    into one array of ``held`` keys; the few with one as (keyhash, crashid) pairs: the
    two sets of pairs cannot overlap.
    """
    keys, filled = np.empty(held, np.uint64), 0
    crashed = []
    for _, part in iter_row_chunks(index, chunk_rows, cancel=cancel):
        kh, cid = np.ascontiguousarray(part["keyhash"]), part["crashid"]  # masks run twice as fast on a copy
        inside = kh >= np.uint64(lo << (64 - PREFIX_BITS))  # prefix >= lo, without shifting every key
        if hi < 1 << PREFIX_BITS:
            inside &= kh < np.uint64(hi << (64 - PREFIX_BITS))
        no_crash = cid == 0
        picked = kh[inside & no_crash]
        keys[filled : filled + len(picked)] = picked
        filled += len(picked)
        with_crash = np.flatnonzero(inside & ~no_crash)
        if len(with_crash):
            crashed.append((kh[with_crash], cid[with_crash]))
    keys = keys[:filled]
    keys.sort()
    n_stems = _distinct_steps(keys)
    del keys
    if crashed:
        ckh = np.concatenate([c[0] for c in crashed])
        ccid = np.concatenate([c[1] for c in crashed])
        order = np.lexsort((ccid, ckh))
        ckh, ccid = ckh[order], ccid[order]
        n_stems += contiguous_runs(ckh, ccid)
    return n_stems


def _distinct_steps(sorted_keys: np.ndarray) -> int:
    return 1 + int(np.count_nonzero(sorted_keys[1:] != sorted_keys[:-1])) if len(sorted_keys) else 0
