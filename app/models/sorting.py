"""Sorting a huge table in two steps: the first screen at once, the full order in the background.

Pure numpy (no Qt), so it runs in a worker and is tested without a view. Every order
here is *stable*: rows with equal keys keep their row order, ascending and descending,
so the first window :func:`first_window` returns is exactly the start of the full
order :func:`full_order` returns later (the grid swaps one for the other without
moving the user's selection).

Memory stays near 16 bytes a row (the order array plus one key-sized array): keys are
read chunk by chunk from the table's column (often a view into a memory-mapped file),
once, never as copies of whole records. Where a key's range and the row count fit in 64 bits
together, a row's key and position are packed into one uint64 ("composite"), so numpy's
SIMD ``np.sort`` orders them stably, >10× faster than a stable ``argsort``.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from itarcore.document import Table
from itarcore.progress import CancelToken, Progress
from itarcore.storage.residency import in_file_mapping, release_elements

CHUNK = 1 << 21  # rows per step: bounded temporaries, regular cancel and progress points
THREADS = 2  # numpy releases the GIL while it compares, sorts and searches: chunks go to threads
SMALL = 1 << 20  # below this many rows one stable sort is quicker than splitting
BACKGROUND_NICE = 10  # added to the nice value: the sort's threads yield a core to the GUI thread the moment it wakes


class KeysRead:
    """A key column read into memory once (integer keys), for the full order to sort without a second pass.

    ``buffer`` is a uint64 array of one element a row; 64-bit keys are read straight into it
    (``keys`` is then a view of it), so packing them later needs no more memory. Chunks may be
    read by several threads; each notes its own smallest and largest key."""

    def __init__(self, sk: SortKeys) -> None:
        self.buffer = np.empty(sk.n, np.uint64)
        dtype = sk.dtype
        self.keys = self.buffer.view(dtype) if dtype.itemsize == 8 else np.empty(sk.n, dtype)
        self._limits: dict[int, tuple[int, int]] = {}  # chunk start -> (min, max) of its keys

    def read(self, sk: SortKeys, i0: int, i1: int) -> np.ndarray:
        """The keys of positions [i0, i1), kept here; returns them (a view)."""
        part = sk.keys(i0, i1, out=self.keys[i0:i1])
        if len(part):
            self._limits[i0] = (part.min().item(), part.max().item())
        return part

    @property
    def lo(self) -> int:
        return min((lo for lo, _ in self._limits.values()), default=0)

    @property
    def hi(self) -> int:
        return max((hi for _, hi in self._limits.values()), default=0)

    def packed(self, pos_bits: int, spans: list[tuple[int, int]]) -> np.ndarray:
        """``buffer`` filled with each row's key (less ``lo``) above its position: one uint64 a row, unique.

        The arithmetic wraps modulo 2**64, which gives ``key - lo`` exactly for signed keys too."""
        offset = np.uint64(self.lo % (1 << 64))

        def pack(span: tuple[int, int]) -> None:
            i0, i1 = span
            part = self.buffer[i0:i1]
            if self.keys.base is not self.buffer:
                part[...] = self.keys[i0:i1]
            part -= offset
            part <<= np.uint64(pos_bits)
            part |= np.arange(i0, i1, dtype=np.uint64)

        _parallel(pack, spans)
        return self.buffer


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False


def sortable(table: Table, title: str) -> bool:
    return not table.column(title).lazy


class SortKeys:
    """The order-giving key of ``rows`` (None = all rows) by ``key``, read a chunk at a time.

    ``keys(i0, i1)`` gives keys of positions ``[i0, i1)`` whose ascending order is the wanted
    order: enum codes become the rank of their label, descending integers are bit-inverted.
    """

    def __init__(self, table: Table, key: SortKey, rows: np.ndarray | None) -> None:
        col = table.column(key.column)
        if col.lazy:
            raise TypeError(f"column '{key.column}' is computed on demand and cannot be sorted")
        self.values: np.ndarray = col.values  # type: ignore[assignment]
        self.mapped = in_file_mapping(self.values)
        self.rows = rows
        self.n = len(self.values) if rows is None else len(rows)
        self.descending = key.descending
        self.rank: np.ndarray | None = None
        if col.kind == "enum" and col.labels is not None:
            # order enums by their label, not their code
            labels = [str(s) for s in col.labels]
            self.rank = np.empty(len(labels), dtype=np.int64)
            self.rank[np.argsort(np.asarray(labels), kind="stable")] = np.arange(len(labels))

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the order-giving keys (reads no row)."""
        return self._order_giving(self.values[:0]).dtype

    def keys(self, i0: int, i1: int, out: np.ndarray | None = None) -> np.ndarray:
        """Keys of positions [i0, i1), written into ``out`` when given (one copy out of the mapping)."""
        if self.rows is None:
            return self._read(None, i0, i1, out)
        return self._read(self.rows[i0:i1], out=out)

    def keys_at(self, pos: np.ndarray) -> np.ndarray:
        """Keys of arbitrary positions (a sample, a bucket); safe to call from several threads.

        Ascending positions (a sample, a bucket) are read a chunk of rows at a time, each chunk's pages
        released behind it: a sample scattered over the file would otherwise map most of it in."""
        pos = np.asarray(pos, dtype=np.int64)
        src = pos if self.rows is None else self.rows[pos]
        if not self.mapped or not len(src) or np.any(src[1:] < src[:-1]):
            return self._read(src)
        cuts = np.searchsorted(src, np.arange(int(src[0]) + CHUNK, int(src[-1]) + 1, CHUNK))
        return np.concatenate([self._read(part) for part in np.split(src, cuts)])

    def _read(self, src: np.ndarray | None, i0: int = 0, i1: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """Keys of source rows ``src`` (or of the slice [i0, i1)); a file mapping's pages are released
        behind the read (sorting keeps the order array and one key column, never the index in RAM)."""
        raw = self.values[i0:i1] if src is None else self.values[src]
        keys = self._order_giving(raw)
        if out is not None:
            out[...] = keys
            keys = out
        if self.mapped:
            if np.may_share_memory(keys, self.values):
                keys = keys.copy()
            lo, hi = (i0, i1) if src is None else ((int(src.min()), int(src.max()) + 1) if len(src) else (0, 0))
            release_elements(self.values, lo, hi)
        return keys

    def _order_giving(self, v: np.ndarray) -> np.ndarray:
        if self.rank is not None:
            v = self.rank[np.clip(v, 0, len(self.rank) - 1)]
        if v.dtype.kind == "b":
            v = v.astype(np.uint8)
        if v.dtype.kind == "f":
            v = v.astype(np.float64)  # a copy, changed in place below
            if self.descending:
                np.negative(v, out=v)
            return _float_order(v)
        return ~v if self.descending else v  # ~ reverses the order of any integer type, with no overflow

    def chunks(self) -> list[tuple[int, int]]:
        return [(i, min(self.n, i + CHUNK)) for i in range(0, self.n, CHUNK)]


def _float_order(v: np.ndarray) -> np.ndarray:
    """int64 keys (overwriting the float64 ``v``) in the order numpy's sort gives the floats: -0.0 ties with
    0.0, and every NaN, whatever its sign bit, ties after +inf. Integers compare exactly in a threshold or
    a partition, where a NaN compares false with everything."""
    v += 0.0  # -0.0 becomes 0.0
    v[np.isnan(v)] = np.nan  # one NaN, its sign bit clear: above +inf
    bits = v.view(np.int64)
    bits ^= (bits >> 63) & np.int64(0x7FFF_FFFF_FFFF_FFFF)  # a negative float's magnitude bits count down
    return bits


def _parallel(fn: Callable, items: list, threads: int = THREADS) -> list:
    if len(items) <= 1 or threads <= 1:
        return [fn(it) for it in items]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="grid-sort", initializer=_yield_to_gui) as pool:
        return list(pool.map(fn, items))


def _yield_to_gui() -> None:
    """Run this thread at a lower priority: with both cores sorting, the GUI thread would otherwise wait
    its turn for tens of milliseconds. Linux sets a nice value per thread; elsewhere it is the process's."""
    if sys.platform.startswith("linux"):
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
        except OSError:  # a sandbox that forbids it: the sort only runs at the usual priority
            pass


def _smallest(keys: np.ndarray, pos: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest (key, position) pairs, in order."""
    order = np.lexsort((pos, keys))[:k]
    return keys[order], pos[order]


def first_window(table: Table, key: SortKey, rows: np.ndarray | None, k: int,
                 cancel: CancelToken | None = None, keep: list[KeysRead] | None = None) -> np.ndarray:
    """The first ``k`` rows of the stable order of ``rows`` by ``key``: source row numbers.

    One pass over the key column keeps a running threshold (the k-th best key so far), so
    only keys below it are kept; halves of the column go to two threads. Given ``keep`` (a
    list), the same pass keeps integer keys in memory and appends them to it as a
    :class:`KeysRead`, which :func:`full_order` then sorts without reading the column again.
    """
    sk = SortKeys(table, key, rows)
    k = max(0, min(k, sk.n))
    if k == 0:
        return np.zeros(0, np.int64)
    spans = sk.chunks()
    halves = [spans[: len(spans) // 2], spans[len(spans) // 2 :]] if len(spans) > 1 else [spans]
    kept = KeysRead(sk) if keep is not None else None

    def best_of(chunk_spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        cand_k: np.ndarray | None = None
        cand_p = np.zeros(0, np.int64)
        limit = None  # the k-th smallest key so far, once k candidates are known
        for i0, i1 in chunk_spans:
            if cancel is not None:
                cancel.raise_if_cancelled()
            keys = kept.read(sk, i0, i1) if kept is not None else sk.keys(i0, i1)
            if limit is not None:
                sel = np.flatnonzero(keys < limit)  # an equal key at a later row loses the tie
            elif len(keys) > k:
                sel = np.flatnonzero(keys <= np.partition(keys, k - 1)[k - 1])
            else:
                sel = np.arange(len(keys))
            if not len(sel):
                continue
            new_k, new_p = keys[sel], sel.astype(np.int64) + i0
            cand_k = new_k if cand_k is None else np.concatenate([cand_k, new_k])
            cand_p = np.concatenate([cand_p, new_p])
            cand_k, cand_p = _smallest(cand_k, cand_p, k)
            if len(cand_k) == k:
                limit = cand_k[-1]
        if cand_k is None:
            return np.zeros(0, sk.dtype), cand_p
        return cand_k, cand_p

    parts = _parallel(best_of, [h for h in halves if h])
    keys = np.concatenate([p[0] for p in parts])
    pos = np.concatenate([p[1] for p in parts])
    _, pos = _smallest(keys, pos, k)
    if kept is not None and keep is not None:
        keep.append(kept)
    return pos if rows is None else rows[pos]


def _keys_in_memory(sk: SortKeys, spans: list[tuple[int, int]], report: Callable[[int, int, str], None],
                    steps: int) -> KeysRead:
    """Every (integer) key, read from the column once (its pages released behind)."""
    kept = KeysRead(sk)

    def read(ix: int) -> None:
        kept.read(sk, *spans[ix])
        report(ix + 1, steps, "reading keys")

    _parallel(read, list(range(len(spans))))
    return kept


def full_order(table: Table, key: SortKey, rows: np.ndarray | None,
               progress: Callable[[Progress], None] | None = None,
               cancel: CancelToken | None = None, buckets: int = 16, read: KeysRead | None = None) -> np.ndarray:
    """The complete stable order of ``rows`` (None = all) by ``key``, as source row numbers.

    ``read``: the keys as :func:`first_window` kept them (``keep``), so the column is not read again.

    Keys (floats as int64 that keep their order) are read from the column once. Where a key's range
    and a row's position fit in 64 bits together (sizes, offsets, codes: nearly always), each row
    becomes one packed uint64 sorted in place by :func:`_sort_packed`: 8 bytes a row in all.
    Otherwise (hashes, most floats) a sample sort of the keys in memory: splitters from a sample
    cut the keys into ``buckets`` ranges; one pass notes each row's bucket (one byte a row), then
    the buckets are gathered and sorted in two threads and written side by side into the order array.
    """
    sk = SortKeys(table, key, rows)
    n = sk.n
    spans = sk.chunks()
    pos_bits = max(1, int(n).bit_length())
    parts = buckets if n > SMALL else 1

    def report(done: int, total: int, what: str) -> None:
        if cancel is not None:
            cancel.raise_if_cancelled()
        if progress is not None:
            progress(Progress(done, total, "steps", message=f"sorting by {key.column}: {what}"))

    if not n:
        report(1, 1, "sorted")
        order = np.zeros(0, np.int64)
        return order if rows is None else rows[order]
    reading = 0 if read is not None else len(spans)  # progress steps
    steps = reading + 1 + parts
    read = read if read is not None else _keys_in_memory(sk, spans, report, steps)
    if (read.hi - read.lo).bit_length() + pos_bits <= 64:
        order = _sort_packed(read.packed(pos_bits, spans), pos_bits, parts,
                             lambda done, what: report(reading + done, steps, what))
        return order if rows is None else np.take(rows, order)
    keys = read.keys  # too wide to pack (a hash, a float): a sample sort of the keys in memory
    if n <= SMALL or buckets <= 1:
        order = np.argsort(keys, kind="stable")
        report(1, 1, "sorted")
        return order if rows is None else rows[order]

    sample_pos = np.unique(np.random.default_rng(n).integers(0, n, min(n, 64 * buckets * 64)))
    sample = np.sort(keys[sample_pos])
    splitters = sample[(np.arange(1, buckets) * len(sample)) // buckets]
    bucket_of = np.empty(n, dtype=np.uint8)
    steps = len(spans) + buckets

    def mark(ix: int) -> None:
        i0, i1 = spans[ix]
        bucket_of[i0:i1] = np.searchsorted(splitters, keys[i0:i1], side="right")
        report(ix + 1, steps, "splitting")

    _parallel(mark, list(range(len(spans))))
    counts = np.zeros(buckets, dtype=np.int64)
    for i0, i1 in spans:
        counts += np.bincount(bucket_of[i0:i1], minlength=buckets)[:buckets]
    starts = np.concatenate([[0], np.cumsum(counts)])
    order = np.empty(n, dtype=np.int64)
    done = [len(spans)]

    def sort_bucket(b: int) -> None:
        if cancel is not None:
            cancel.raise_if_cancelled()
        pos = np.flatnonzero(bucket_of == b)  # ascending: ties keep their row order
        if len(pos):
            order[starts[b] : starts[b + 1]] = pos[np.argsort(keys[pos], kind="stable")]
        done[0] += 1
        report(done[0], steps, "sorting")

    _parallel(sort_bucket, list(range(buckets)))
    if rows is not None:
        np.take(rows, order, out=order)
    return order


def _sort_packed(packed: np.ndarray, pos_bits: int, parts: int,
                 report: Callable[[int, str], None]) -> np.ndarray:
    """Packed (key, position) values sorted in place; returns the positions (a view of the same memory).

    ``np.partition`` splits the array at its median (linear), then each half goes to its own
    thread, which cuts it into ``parts // 2`` ranges the same way and sorts them one by one, with
    a cancel check between ranges. Sorting ranges of a few million values is quicker per value
    than one large sort, and the halves keep both cores busy."""
    n = len(packed)
    halves = [packed]
    if parts > 1:
        packed.partition(n // 2)
        halves = [packed[: n // 2], packed[n // 2 :]]
    report(1, "splitting")
    done = [1]

    def sort_half(half: np.ndarray) -> None:
        per_half = max(1, parts // len(halves))
        cuts = [len(half) * i // per_half for i in range(1, per_half)]
        if cuts:
            half.partition(cuts)
        bounds = [0, *cuts, len(half)]
        for b in range(per_half):
            report(done[0], "sorting")
            half[bounds[b] : bounds[b + 1]].sort()  # unique values: any sort is stable
            done[0] += 1

    _parallel(sort_half, halves)
    packed &= np.uint64((1 << pos_bits) - 1)
    report(1 + parts, "sorted")
    return packed.view(np.int64)
