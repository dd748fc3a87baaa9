"""The rows of a remote .taridx, read on demand in blocks through a bounded LRU cache.

A local index maps its rows (a zero-copy numpy view). A remote one cannot, and reading
every row at open would fetch gigabytes to show a few. :class:`LazyRows` answers the
ways the readers index the row array (a row, a slice, an index array, a field column)
by fetching only the blocks of rows they cover, in one batched request, and keeps the
most recently used blocks up to a byte budget. Anything that needs every row (a stem
scan, ``np.asarray(rows)``) reads every row, as asked, in large ranged reads.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..storage import RangedSource

BLOCK_ROWS = 1 << 15  # 1 MiB of 32-byte rows per block
CACHE_BYTES = int(os.environ.get("ITARCORE_ROW_CACHE_BYTES") or 64 << 20)
DIRECT_READ_BYTES = 16 << 20  # pieces of a read too big for the cache (fetched together, not cached)


class RowBlockCache:
    """Blocks of rows of one index, least recently used dropped first once over ``max_bytes``."""

    def __init__(self, source: RangedSource, off_arr: int, n_rows: int, dtype: np.dtype,
                 max_bytes: int | None = None, block_rows: int = BLOCK_ROWS) -> None:
        self.source, self.off_arr, self.n_rows, self.dtype = source, off_arr, n_rows, dtype
        self.block_rows = block_rows
        budget = CACHE_BYTES if max_bytes is None else max_bytes
        self.max_blocks = max(2, budget // (block_rows * dtype.itemsize))
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _span(self, first_row: int, stop_row: int) -> tuple[int, int]:
        return self.off_arr + first_row * self.dtype.itemsize, (stop_row - first_row) * self.dtype.itemsize

    def blocks(self, ids: list[int]) -> dict[int, np.ndarray]:
        """Blocks ``ids`` (ascending, unique), fetching the missing ones in one batched read."""
        with self._lock:
            found = {k: self._blocks[k] for k in ids if k in self._blocks}
            for k in found:
                self._blocks.move_to_end(k)
        missing = [k for k in ids if k not in found]
        if missing:
            spans = [self._span(k * self.block_rows, min(self.n_rows, (k + 1) * self.block_rows)) for k in missing]
            for k, raw in zip(missing, self.source.read_ranges(spans)):
                found[k] = np.frombuffer(bytes(raw), self.dtype)
            with self._lock:
                for k in missing:
                    self._blocks[k] = found[k]
                while len(self._blocks) > self.max_blocks:
                    self._blocks.popitem(last=False)
        return found

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start..stop`` (a fresh array)."""
        if stop <= start:
            return np.zeros(0, self.dtype)
        first, last = start // self.block_rows, (stop - 1) // self.block_rows
        if last - first + 1 > self.max_blocks // 2:  # a long pass: read it straight, leave the cache alone
            offset, length = self._span(start, stop)
            pieces = [(o, min(DIRECT_READ_BYTES, offset + length - o))
                      for o in range(offset, offset + length, DIRECT_READ_BYTES)]
            return np.frombuffer(b"".join(bytes(p) for p in self.source.read_ranges(pieces)), self.dtype)
        got = self.blocks(list(range(first, last + 1)))
        joined = np.concatenate([got[k] for k in range(first, last + 1)])
        base = first * self.block_rows
        return joined[start - base : stop - base]

    def take(self, index: np.ndarray) -> np.ndarray:
        """Rows at ``index`` (non-negative ints, any order)."""
        if not len(index):
            return np.zeros(0, self.dtype)
        ids = np.unique(index // self.block_rows).tolist()
        if len(ids) > self.max_blocks // 2:  # spread wide: fetch just these rows (near ones share a request)
            wanted = np.unique(index)
            got_rows = self.source.read_ranges([self._span(r, r + 1) for r in wanted.tolist()])
            found = np.frombuffer(b"".join(bytes(g) for g in got_rows), self.dtype)
            return found[np.searchsorted(wanted, index)]
        got = self.blocks(ids)
        out = np.empty(len(index), self.dtype)
        block_of = index // self.block_rows
        for k in ids:
            where = np.flatnonzero(block_of == k)
            out[where] = got[k][index[where] - k * self.block_rows]
        return out


class LazyRows:
    """Quacks like the row array of an index (or one field of it), reading rows only when indexed."""

    __hash__ = None  # type: ignore[assignment]
    ndim = 1

    def __init__(self, cache: RowBlockCache, field: str | None = None) -> None:
        self._cache, self._field = cache, field
        self.dtype = cache.dtype if field is None else cache.dtype.fields[field][0]

    @property
    def shape(self) -> tuple[int]:
        return (self._cache.n_rows,)

    @property
    def size(self) -> int:
        return self._cache.n_rows

    def __len__(self) -> int:
        return self._cache.n_rows

    def _out(self, rows: np.ndarray) -> Any:
        return rows if self._field is None else rows[self._field]

    def __getitem__(self, key: Any) -> Any:
        n = self._cache.n_rows
        if isinstance(key, str):
            if self._field is not None:
                raise KeyError(key)
            return LazyRows(self._cache, key)
        if isinstance(key, (int, np.integer)):
            row = int(key) + n if key < 0 else int(key)
            if not 0 <= row < n:
                raise IndexError(f"row {int(key)} out of range for {n} rows")
            return self._out(self._cache.rows(row, row + 1))[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._out(self._cache.rows(start, stop))
            return self._out(self._cache.take(np.arange(start, stop, step, dtype=np.int64)))
        index = np.asarray(key)
        if index.dtype == bool:
            if index.shape != (n,):
                raise IndexError(f"boolean index of shape {index.shape} for {n} rows")
            index = np.flatnonzero(index)
        index = index.astype(np.int64, copy=True).reshape(-1)
        index[index < 0] += n
        if len(index) and (index.min() < 0 or index.max() >= n):
            raise IndexError(f"row index out of range for {n} rows")
        return self._out(self._cache.take(index)).reshape(np.shape(key) if np.asarray(key).dtype != bool else -1)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def __iter__(self) -> Any:
        for start in range(0, len(self), self._cache.block_rows):
            yield from self[start : start + self._cache.block_rows]

    def tobytes(self) -> bytes:
        return np.asarray(self).tobytes()

    def copy(self) -> np.ndarray:
        return np.asarray(self)

    def _compare(self, other: Any, op: str) -> np.ndarray:
        return getattr(np.asarray(self), op)(other)

    def __eq__(self, other: object) -> np.ndarray:  # type: ignore[override]
        return self._compare(other, "__eq__")

    def __ne__(self, other: object) -> np.ndarray:  # type: ignore[override]
        return self._compare(other, "__ne__")

    def __lt__(self, other: Any) -> np.ndarray:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> np.ndarray:
        return self._compare(other, "__le__")

    def __gt__(self, other: Any) -> np.ndarray:
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> np.ndarray:
        return self._compare(other, "__ge__")
