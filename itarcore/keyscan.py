"""Stem lookups without a key index: a scan of the keyhash column, on two threads.

The scan is bound by memory bandwidth: every 32-byte row holds a key, so every cache
line of the rows is read. Chunks go to the threads in row order (numpy releases the GIL
while comparing), at most ``2 * threads`` ahead of the caller, which merges the results
in row order, reports progress and checks cancel between chunks: a cancel stops the
scan within a few chunks, however busy the machine. Each thread compares a 4-byte
aligned word inside the keyhash first (in most indexes the keyhash itself is not 8-byte
aligned, and numpy reads unaligned columns through a copy), then the few candidates'
full keyhash and crash id, and releases the chunk's pages behind it, so a scan of a
32 GB index never stays resident.
"""
from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .formats.taridx import ROW_DTYPE, TaridxIndex
from .progress import CancelToken, ProgressCallback, ProgressReporter

SCAN_CHUNK_ROWS = 1 << 21  # 64 MiB of rows: a few ms of scanning between cancel checks; 2 in flight
SCAN_THREADS = 2
_KEY_AT = ROW_DTYPE.fields["keyhash"][1]


def scan_key_rows(index: TaridxIndex, keyhash: int, crashid: int, chunk: int = SCAN_CHUNK_ROWS,
                  threads: int = SCAN_THREADS, progress: ProgressCallback | None = None,
                  cancel: CancelToken | None = None) -> np.ndarray:
    """Rows with this (keyhash, crashid), ascending (int64); raises ``Cancelled`` between chunks."""
    scan = _ChunkScan(index, keyhash, crashid, max(1, int(chunk)), cancel)
    reporter = ProgressReporter(progress, index.n_rows, "rows", cancel)
    starts = iter(range(0, index.n_rows, scan.chunk))
    hits: list[np.ndarray] = [np.zeros(0, np.int64)]
    if threads <= 1:
        for start in starts:
            hits.append(scan(start))
            reporter.update(min(index.n_rows, start + scan.chunk))
        return np.concatenate(hits)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="stem-scan")
    try:
        pending: deque[tuple[int, Future[np.ndarray]]] = deque()
        for start in starts:
            pending.append((start, pool.submit(scan, start)))
            if len(pending) < 2 * threads:
                continue
            hits.append(_collect(pending, reporter, index.n_rows, scan.chunk))
        while pending:
            hits.append(_collect(pending, reporter, index.n_rows, scan.chunk))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return np.concatenate(hits)


def _collect(pending: deque[tuple[int, Future[np.ndarray]]], reporter: ProgressReporter, n_rows: int,
             chunk: int) -> np.ndarray:
    start, future = pending.popleft()
    found = future.result()
    reporter.update(min(n_rows, start + chunk))  # raises Cancelled: the chunks not yet begun are dropped
    return found


class _ChunkScan:
    """The rows of one chunk that hold the key; callable from several threads at once."""

    def __init__(self, index: TaridxIndex, keyhash: int, crashid: int, chunk: int,
                 cancel: CancelToken | None) -> None:
        self.index, self.chunk, self.cancel = index, chunk, cancel
        rows = index.rows
        self.keyhash, self.crashid = rows["keyhash"], rows["crashid"]
        self.target, self.target_crash = np.uint64(keyhash), crashid
        self.words, self.word = _aligned_key_words(rows, keyhash)
        self._local = threading.local()

    def __call__(self, start: int) -> np.ndarray:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        stop = min(len(self.keyhash), start + self.chunk)
        if self.words is None:
            match = np.flatnonzero(self.keyhash[start:stop] == self.target)
        else:
            equal = self._buffer(stop - start)
            np.equal(self.words[start:stop], self.word, out=equal)
            match = np.flatnonzero(equal) if equal.any() else np.zeros(0, np.intp)
            match = match[self.keyhash[start + match] == self.target]
        found = (match[self.crashid[start + match] == self.target_crash] + start).astype(np.int64)
        self.index.release_rows(start, stop)
        return found

    def _buffer(self, n: int) -> np.ndarray:
        buf = getattr(self._local, "buf", None)
        if buf is None or len(buf) < n:
            buf = self._local.buf = np.empty(n, bool)
        return buf[:n]


def _aligned_key_words(rows: np.ndarray, keyhash: int) -> tuple[np.ndarray | None, np.uint32]:
    """A strided u32 view of a 4-byte aligned word inside each row's keyhash, and the target's word.

    Any 8 bytes hold an aligned 4-byte word. None when the rows are not contiguous records in
    memory (a remote index's rows are fetched in blocks as they are read).
    """
    if not isinstance(rows, np.ndarray) or rows.dtype != ROW_DTYPE or not rows.flags.c_contiguous or not len(rows):
        return None, np.uint32(0)
    first_key = rows.ctypes.data + _KEY_AT
    shift = -first_key % 4  # bytes from the keyhash's start to the aligned word in it
    raw = rows.view(np.uint8)
    at = _KEY_AT + shift
    words = raw[at : at + ROW_DTYPE.itemsize * (len(rows) - 1) + 4].view("<u4")[:: ROW_DTYPE.itemsize // 4]
    word = int.from_bytes(int(keyhash).to_bytes(8, "little")[shift : shift + 4], "little")
    return words, np.uint32(word)
