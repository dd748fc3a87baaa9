"""The audit's sample checks a chunk at a time, in the order of a key index.

Key order puts each sample's rows together, so a chunk of key positions holds whole
samples (the last keyhash of a chunk is carried into the next one). Each chunk is
checked on its own: duplicate (sample, extension) pairs, samples whose rows are not one
run (first to last row spans more rows than the sample has), the extensions each sample
has. Memory: a copy of the extid column (2 bytes a row), a few chunks, and the rows the
findings name; the index itself is read in sequence only.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..formats.taridx import TaridxIndex
from ..keyindex import KeyIndex
from ..progress import CancelToken
from ..rowpass import DEFAULT_CHUNK_ROWS, iter_row_chunks

EXT_BITS = 16  # extids are u16: (group << 16 | extid) is one sortable int64 per row


@dataclass
class SampleTally:
    """What the sample checks found, before it is worded as findings."""

    n_ext: int
    n_groups: int = 0  # distinct (keyhash, crashid): samples and extension-less members
    dup_groups: int = 0
    dup_rows: list[np.ndarray] = field(default_factory=list)
    split_groups: int = 0
    split_rows: list[np.ndarray] = field(default_factory=list)
    bare_groups: int = 0  # groups of extension-less members only (not samples)
    bare_rows: list[np.ndarray] = field(default_factory=list)
    n_samples: int = 0
    ext_samples: np.ndarray = field(init=False)  # per extension id: the samples that have it
    # given extension ids: (samples lacking one of them, their rows); a second pass when needed
    lacking: Callable[[list[int]], tuple[int, np.ndarray]] = field(init=False)

    def __post_init__(self) -> None:
        self.ext_samples = np.zeros(self.n_ext, np.int64)


@dataclass
class _ChunkGroups:
    """The groups (samples, or extension-less members) of one chunk, rows in key order."""

    rows: np.ndarray  # int64
    counts: np.ndarray  # rows of each group
    pair_group: np.ndarray  # the distinct (group, valid extid) pairs
    pair_ext: np.ndarray
    bare: np.ndarray  # bool per group: extension-less members only
    split: np.ndarray  # bool per group: rows not one run
    dup_groups: int
    dup_rows: np.ndarray

    def rows_where(self, group_flags: np.ndarray) -> np.ndarray:
        return self.rows[np.repeat(group_flags, self.counts)]


def tally_samples(index: TaridxIndex, key_index: KeyIndex, cancel: CancelToken | None = None,
                  chunk_rows: int = DEFAULT_CHUNK_ROWS) -> SampleTally:
    """One pass over the key order (a second only to name the samples lacking a common extension)."""
    exts = index.extensions
    empty = np.array([e == "" for e in exts], bool)
    tally = SampleTally(len(exts))

    columns = _RowColumns(index, key_index.collisions, _extid_column(index, cancel, chunk_rows))

    def chunks() -> Iterator[_ChunkGroups]:
        for keys, rows in key_order_chunks(index, key_index, cancel, chunk_rows):
            yield _group_chunk(columns, keys, rows, empty)

    for groups in chunks():
        tally.n_groups += len(groups.counts)
        tally.dup_groups += groups.dup_groups
        tally.dup_rows.append(groups.dup_rows)
        tally.split_groups += int(groups.split.sum())
        tally.split_rows.append(groups.rows_where(groups.split))
        tally.bare_groups += int(groups.bare.sum())
        tally.bare_rows.append(groups.rows_where(groups.bare))
        samples = ~groups.bare
        tally.n_samples += int(samples.sum())
        tally.ext_samples += np.bincount(groups.pair_ext[samples[groups.pair_group]], minlength=len(exts))

    def lacking(common: list[int]) -> tuple[int, np.ndarray]:
        n_lacking, parts = 0, [np.zeros(0, np.int64)]
        for groups in chunks():
            present = np.isin(groups.pair_ext, common)
            n_common = np.bincount(groups.pair_group[present], minlength=len(groups.counts))
            flags = ~groups.bare & (n_common < len(common))
            n_lacking += int(flags.sum())
            parts.append(groups.rows_where(flags))
        return n_lacking, np.concatenate(parts)

    tally.lacking = lacking
    return tally


def key_order_chunks(index: TaridxIndex, key_index: KeyIndex, cancel: CancelToken | None,
                      chunk_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(keys, rows) of consecutive key positions, each holding every row of its keyhashes."""
    n = index.n_rows
    carry_keys, carry_rows = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    for lo in range(0, n, max(1, chunk_rows)):
        hi = min(n, lo + max(1, chunk_rows))
        keys = np.concatenate((carry_keys, key_index.keys_at(lo, hi)))
        rows = np.concatenate((carry_rows, key_index.rows_at(lo, hi)))
        key_index.release(lo, hi)
        cut = len(keys) if hi == n else int(keys.searchsorted(keys[-1], "left"))  # the last keyhash may go on
        keys, carry_keys, rows, carry_rows = keys[:cut], keys[cut:], rows[:cut], rows[cut:]
        if cut:
            yield keys, rows
        if cancel is not None:
            cancel.raise_if_cancelled()


def _extid_column(index: TaridxIndex, cancel: CancelToken | None, chunk_rows: int) -> np.ndarray:
    """Every row's extid, read in one sequential pass (2 bytes a row, pages released behind)."""
    out = np.empty(index.n_rows, index.rows.dtype["extid"])
    for start, part in iter_row_chunks(index, chunk_rows, cancel=cancel):
        out[start : start + len(part)] = part["extid"]
    return out


@dataclass
class _RowColumns:
    """What a chunk gathers by row, never from the index at random (an index bigger than the
    memory would be read again for every chunk): extids from a copy, crash ids only for rows
    whose keyhash has any (the key index lists those keyhashes; every other row's is 0)."""

    index: TaridxIndex
    collisions: np.ndarray
    extid: np.ndarray

    def crashid(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), np.uint32)
        if len(self.collisions):
            hit = np.flatnonzero(np.isin(keys, self.collisions))
            out[hit] = self.index.rows["crashid"][rows[hit]]
        return out


def _group_chunk(columns: _RowColumns, keys: np.ndarray, rows: np.ndarray, empty: np.ndarray) -> _ChunkGroups:
    m, n_ext = len(keys), len(empty)
    crashid = columns.crashid(keys, rows)
    extid = columns.extid[rows].astype(np.int64)
    new = np.ones(m, bool)
    new[1:] = (keys[1:] != keys[:-1]) | (crashid[1:] != crashid[:-1])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    counts = np.diff(np.append(starts, m))
    spans = np.maximum.reduceat(rows, starts) - np.minimum.reduceat(rows, starts) + 1
    split = spans != counts

    pairs_of_rows = (group << EXT_BITS) | extid
    perm = np.argsort(pairs_of_rows, kind="stable")
    pairs = pairs_of_rows[perm]
    same = pairs[1:] == pairs[:-1]  # a (sample, extid) pair held by more rows than one
    marked = np.zeros(m, bool)
    marked[1:] |= same
    marked[:-1] |= same
    dup_group = pairs[1:][same] >> EXT_BITS  # ascending: count its distinct values by their steps
    dup_groups = int(np.count_nonzero(dup_group[1:] != dup_group[:-1])) + 1 if len(dup_group) else 0

    first = np.ones(m, bool)
    first[1:] = ~same
    distinct = pairs[first]
    pair_group, pair_ext = distinct >> EXT_BITS, distinct & ((1 << EXT_BITS) - 1)
    valid = pair_ext < n_ext
    pair_group, pair_ext = pair_group[valid], pair_ext[valid]
    n_valid = np.bincount(pair_group, minlength=len(starts))
    n_empty = np.bincount(pair_group[empty[pair_ext]], minlength=len(starts))
    bare = (n_empty > 0) & (n_valid == int(empty.sum()))
    return _ChunkGroups(rows, counts, pair_group, pair_ext, bare, split, dup_groups, rows[perm[marked]])
