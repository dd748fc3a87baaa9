"""Samples of a fold: groups of rows with equal (keyhash, crashid), numbered in order of first row.

Only the first row of each sample is kept (4 bytes a sample). When every sample's rows
are adjacent, a sample's rows run from its first row to the next sample's; otherwise
they come from the key index, which is built (chunked, on disk) if there is none. The
grouping itself is two chunked passes (the rows, then the key order) plus one byte a
row of scratch, so grouping 1B rows needs about 5 bytes a row besides the page cache.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .formats.taridx import TaridxIndex
from .keyindex import KeyIndex
from .keyindex.store import row_dtype_for
from .progress import CancelToken, Progress, ProgressCallback, ProgressReporter
from .rowpass import DEFAULT_CHUNK_ROWS, iter_row_chunks

KeyIndexSource = Callable[[ProgressCallback, CancelToken | None], KeyIndex]


class _PerSample:
    """``column[first_rows[sample]]`` on demand: a sample's keyhash or crash id without a copy per sample."""

    def __init__(self, index: TaridxIndex, field: str, first_rows: np.ndarray) -> None:
        self._index, self._field, self._first_rows = index, field, first_rows

    def __len__(self) -> int:
        return len(self._first_rows)

    def __getitem__(self, sample: int | np.ndarray) -> np.ndarray:
        return self._index.rows[self._field][self._first_rows[sample]]


class SampleGroups:
    """Samples by first row. ``rows_of``/``sample_of_row`` answer from the key index when rows are not adjacent."""

    def __init__(self, index: TaridxIndex, first_rows: np.ndarray, key_index: KeyIndex | None) -> None:
        self.index = index
        self.first_rows = first_rows  # ascending
        self.key_index = key_index  # None: each sample's rows are adjacent
        self.keyhash = _PerSample(index, "keyhash", first_rows)
        self.crashid = _PerSample(index, "crashid", first_rows)

    @property
    def n_samples(self) -> int:
        return len(self.first_rows)

    @property
    def contiguous(self) -> bool:
        return self.key_index is None

    def rows_of(self, sample: int) -> np.ndarray:
        if not 0 <= sample < self.n_samples:
            raise IndexError(f"sample {sample} out of range (0..{self.n_samples - 1})")
        first = int(self.first_rows[sample])
        if self.key_index is None:
            stop = int(self.first_rows[sample + 1]) if sample + 1 < self.n_samples else self.index.n_rows
            return np.arange(first, stop, dtype=np.int64)
        rec = self.index.rows[first]
        return self.key_index.lookup(int(rec["keyhash"]), int(rec["crashid"]))

    def sample_of_row(self, row: int) -> int:
        if self.key_index is None:
            return int(np.searchsorted(self.first_rows, row, side="right")) - 1
        rec = self.index.rows[row]
        first = int(self.key_index.lookup(int(rec["keyhash"]), int(rec["crashid"]))[0])
        sample = int(np.searchsorted(self.first_rows, first))
        if sample >= self.n_samples or int(self.first_rows[sample]) != first:
            raise IndexError(f"row {row} is in no sample")
        return sample


def _concat(parts: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _run_starts(index: TaridxIndex, reporter: ProgressReporter, chunk_rows: int, limit: int) -> np.ndarray | None:
    """First rows of the runs of equal (keyhash, crashid); None as soon as there are more than ``limit``."""
    dtype = row_dtype_for(index.n_rows)
    parts: list[np.ndarray] = []
    count = 0
    last: tuple[int, int] | None = None
    for start, part in iter_row_chunks(index, chunk_rows, reporter=reporter):
        kh, cid = part["keyhash"], part["crashid"]
        starts = np.flatnonzero((kh[1:] != kh[:-1]) | (cid[1:] != cid[:-1])) + (start + 1)
        if last != (int(kh[0]), int(cid[0])):
            starts = np.concatenate(([start], starts))
        count += len(starts)
        if count > limit:
            return None
        parts.append(starts.astype(dtype))
        last = (int(kh[-1]), int(cid[-1]))
    return _concat(parts, dtype)


def _first_rows_by_key(index: TaridxIndex, key_index: KeyIndex, reporter: ProgressReporter,
                       chunk_rows: int) -> np.ndarray:
    """The first row of every sample, ascending: one pass over the key order marks them in a byte map."""
    n = index.n_rows
    is_first = np.zeros(n, np.bool_)
    base = reporter.done
    last: int | None = None
    for lo in range(0, n, chunk_rows):
        hi = min(n, lo + chunk_rows)
        keys = key_index.keys_at(lo, hi)
        rows = key_index.rows_at(lo, hi)
        new = np.empty(hi - lo, np.bool_)  # keyhash changes; crash ids are split below
        new[1:] = keys[1:] != keys[:-1]
        new[0] = last != int(keys[0])
        is_first[rows[new]] = True
        last = int(keys[-1])
        key_index.release(lo, hi)
        reporter.update(base + hi)
    crashid = index.rows["crashid"]
    for keyhash in key_index.collisions.tolist():  # a few rows per crash stem
        lo, hi = key_index.key_range(keyhash)
        rows = key_index.rows_at(lo, hi)
        ids = crashid[rows]
        is_first[rows[1:][ids[1:] != ids[:-1]]] = True
    dtype = row_dtype_for(n)
    out = np.empty(int(np.count_nonzero(is_first)), dtype)
    filled = 0
    for lo in range(0, n, chunk_rows):  # flatnonzero a chunk at a time: no int64 copy of every first row
        found = np.flatnonzero(is_first[lo : lo + chunk_rows]) + lo
        out[filled : filled + len(found)] = found
        filled += len(found)
    return out


def group_samples(index: TaridxIndex, key_index: KeyIndex | KeyIndexSource | None = None, *,
                  progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                  chunk_rows: int = DEFAULT_CHUNK_ROWS) -> SampleGroups:
    """Group the rows of ``index`` into samples (chunked, cancellable, bounded memory).

    ``key_index`` is used when rows are not adjacent by sample; a callable
    ``(progress, cancel) -> KeyIndex`` is called only then (to build one).
    """
    n = index.n_rows
    have_keys = isinstance(key_index, KeyIndex)
    total = n if index.header.contiguous else n * (2 if have_keys else 5)
    reporter = ProgressReporter(progress, max(total, 1), "rows", cancel)
    n_stems = index.header.n_stems
    starts = _run_starts(index, reporter, chunk_rows, limit=n_stems)
    if starts is not None and len(starts) == n_stems:  # runs >= samples: equal exactly when every sample is one run
        reporter.finish()
        return SampleGroups(index, starts, None)
    reporter.total = max(reporter.total, n * (2 if have_keys else 5))
    reporter.update(n)
    if not isinstance(key_index, KeyIndex):
        if key_index is None:
            raise ValueError("rows are not contiguous by sample: grouping them needs a key index")
        key_index = key_index(_relay(reporter, n), cancel)
        reporter.update(4 * n)
    first_rows = _first_rows_by_key(index, key_index, reporter, chunk_rows)
    reporter.finish()
    return SampleGroups(index, first_rows, key_index)


def _relay(reporter: ProgressReporter, base: int) -> ProgressCallback:
    """Progress of a sub-job (the key index build, 3 passes) as part of this one."""
    def report(p: Progress) -> None:
        reporter.update(base + p.done, message=p.message)
    return report
