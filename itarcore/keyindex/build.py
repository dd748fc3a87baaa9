"""Building a key index: the rows of an index sorted by (keyhash, crashid, row), on disk.

An external sort with bounded memory: chunks of rows are sorted into runs (a temporary
file beside the target), then the runs are merged batch by batch into the key file,
which is written atomically. Rows sharing a keyhash but not a crash id (hash
collisions, a handful per fold) are put in crash id order at the end. An index whose
rows are already in key order gets a small "in order" file instead, with nothing sorted.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_write
from ..formats.taridx import TaridxIndex
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from ..rowpass import iter_row_chunks
from .store import (
    FENCE_STRIDE,
    KIND_IN_ORDER,
    KIND_SORTED,
    IndexIdentity,
    KeyFileLayout,
    KeyIndex,
    key_file_path,
    pread_array,
    row_dtype_for,
)

# Rows sorted at once: about 200 MB of working memory, whatever the size of the index.
SORT_CHUNK_ROWS = 1 << 21
WRITE_PIECE = 4 << 20


def _no_checkpoint() -> None:
    return None


def stable_argsort_u64(keys: np.ndarray, checkpoint: Callable[[], None] = _no_checkpoint) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for uint64 keys, 3x faster on hashes.

    Sorts one uint64 per key (the key's high bits, then its position) with numpy's
    fast unstable sort; positions whose keys differ only in the low bits (rare for
    hashes) are re-sorted exactly. ``checkpoint`` runs between the steps (each one
    numpy call over the keys: ~30 ms for 2M keys), so a cancel is seen within a step.
    """
    m = len(keys)
    shift = max(1, (m - 1).bit_length())
    if m < 2 or shift > 40:
        return np.argsort(keys, kind="stable")
    low = np.uint64((1 << shift) - 1)
    packed = (keys & ~low) | np.arange(m, dtype=np.uint64)
    checkpoint()
    packed.sort()
    checkpoint()
    perm = (packed & low).astype(np.int64)
    in_order = keys[perm]
    checkpoint()
    bad = np.flatnonzero(in_order[1:] < in_order[:-1])
    if len(bad):  # re-sort each group of equal high bits holding a misordered pair (found by binary search)
        highs = np.unique(packed[bad] & ~low)
        starts, stops = packed.searchsorted(highs), packed.searchsorted(highs | low, side="right")
        sel = np.concatenate([np.arange(a, b) for a, b in zip(starts.tolist(), stops.tolist())])
        fix = np.lexsort((perm[sel], in_order[sel]))
        perm[sel] = perm[sel][fix]
    return perm


def build_key_index(index: TaridxIndex, cache_dir: str | os.PathLike[str] | None = None, *,
                    progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                    chunk_rows: int = SORT_CHUNK_ROWS) -> KeyIndex:
    """Build (or rebuild) the key index of ``index`` in the cache and open it.

    Progress counts rows over three passes (order check, run sort, merge). Cancel or an
    error leaves no file behind (the previous key file, if any, stays as it was).
    """
    identity = IndexIdentity.of(index)
    target = key_file_path(identity, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    n = index.n_rows
    reporter = ProgressReporter(progress, 3 * n, "rows", cancel)
    path_bytes = identity.path.encode("utf-8", "surrogateescape")
    in_order = _fence_if_in_key_order(index, reporter, chunk_rows)
    if in_order is not None:
        fence, collisions = in_order
        layout = KeyFileLayout(KIND_IN_ORDER, n, 0, path_bytes, len(collisions))
        with atomic_write(target) as fh:
            fh.write(layout.header(identity).ljust(layout.off_collisions, b"\0"))
            fh.write(collisions.astype("<u8").tobytes())
            fh.write(fence.astype("<u8").tobytes())
            if cancel is not None:
                cancel.raise_if_cancelled()
    else:
        reporter.update(n)
        _write_sorted(index, target, identity, KeyFileLayout(KIND_SORTED, n, row_dtype_for(n).itemsize, path_bytes),
                      chunk_rows, reporter)
    reporter.cancel = None  # written and renamed: a cancel from now on is too late to undo anything
    reporter.finish()
    opened = KeyIndex.open_file(target, index, identity)
    if opened is None:  # only if the file was replaced under us meanwhile
        raise OSError(f"{target}: the key index just written does not open")
    return opened


def _write_sorted(index: TaridxIndex, target: Path, identity: IndexIdentity, layout: KeyFileLayout,
                  chunk_rows: int, reporter: ProgressReporter) -> None:
    """Sorted runs into an unnamed scratch file, then merged into the key file (written atomically)."""
    row_dtype = row_dtype_for(layout.n_rows)
    runs_path = target.with_name(f".{target.name}.runs-{os.getpid()}")
    runs_fd = os.open(runs_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(runs_path)  # unnamed from now on: nothing is left behind, whatever happens
    to_close = [runs_fd]
    try:
        runs, collisions = _sort_runs(index, runs_fd, row_dtype, chunk_rows, reporter)
        layout = dataclasses.replace(layout, n_collisions=len(collisions))
        with atomic_write(target) as fh:
            to_close.append(os.dup(fh.fileno()))  # a cancelled key file's pages are freed in the background too
            fh.write(layout.header(identity))
            fh.flush()
            os.ftruncate(fh.fileno(), layout.file_size)
            fence = _merge_runs(runs_fd, runs, layout, fh.fileno(), chunk_rows, reporter,
                                CrashOrder(index.rows["crashid"], collisions))
            _pwrite_all(fh.fileno(), collisions.astype("<u8"), layout.off_collisions)
            _checkpoint(reporter)()
            _pwrite_all(fh.fileno(), fence, layout.off_fence)
            _checkpoint(reporter)()
    finally:  # the last close of a big file frees its pages (~0.2 s a GB): not while the caller waits
        threading.Thread(target=lambda: [os.close(fd) for fd in to_close], name="keyindex-close", daemon=True).start()


def _fence_if_in_key_order(index: TaridxIndex, reporter: ProgressReporter,
                           chunk_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(fence, collisions) of the index's own rows if they are sorted by (keyhash, crashid), else None.

    Stops at the first row out of order, so an index in archive order costs one chunk.
    """
    last: tuple[int, int] | None = None
    fence = [np.zeros(0, np.uint64)]
    crashed = [np.zeros(0, np.uint64)]
    for start, part in iter_row_chunks(index, chunk_rows, reporter=reporter):
        kh, cid = part["keyhash"], part["crashid"]
        if last is not None and (int(kh[0]), int(cid[0])) < last:
            return None
        ok = (kh[1:] > kh[:-1]) | ((kh[1:] == kh[:-1]) & (cid[1:] >= cid[:-1]))
        if not ok.all():
            return None
        _checkpoint(reporter)()
        fence.append(np.array(kh[(-start) % FENCE_STRIDE :: FENCE_STRIDE]))
        crashed.append(np.unique(kh[cid != 0]))
        last = (int(kh[-1]), int(cid[-1]))
    return np.concatenate(fence), np.unique(np.concatenate(crashed))


def _checkpoint(reporter: ProgressReporter) -> Callable[[], None]:
    """Cancel check between the steps of a chunk (each step: one numpy call or write of at most a chunk)."""
    cancel = reporter.cancel
    return cancel.raise_if_cancelled if cancel is not None else _no_checkpoint


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a range back now (``sync_file_range``, Linux), without waiting.

    The final fsync then has little left to wait for: a cancel or exit right after
    the last batch is not held up by a gigabyte of dirty pages.
    """
    if _sync_file_range is not None and length > 0:
        _sync_file_range(fd, ctypes.c_int64(offset), ctypes.c_int64(length), _SYNC_FILE_RANGE_WRITE)


def _load_sync_file_range() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range = _load_sync_file_range()


def _pwrite_all(fd: int, array: np.ndarray, offset: int, checkpoint: Callable[[], None] = _no_checkpoint) -> None:
    """Write ``array`` at ``offset`` in pieces of at most ``WRITE_PIECE`` bytes, ``checkpoint`` after each.

    A write can wait for writeback (the kernel throttles writers of many dirty pages):
    pieces keep a cancel from waiting for a whole chunk's worth of it.
    """
    view = memoryview(np.ascontiguousarray(array)).cast("B")
    while len(view):
        written = os.pwrite(fd, view[:WRITE_PIECE], offset)
        view, offset = view[written:], offset + written
        checkpoint()


def _sort_runs(index: TaridxIndex, fd: int, row_dtype: np.dtype, chunk_rows: int,
               reporter: ProgressReporter) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Sorted runs of ``chunk_rows`` rows into ``fd`` (keys, then rows); also the keyhashes of crash rows."""
    n = index.n_rows
    runs: list[tuple[int, int]] = []
    crash_keys = [np.zeros(0, np.uint64)]
    checkpoint = _checkpoint(reporter)
    for start, part in iter_row_chunks(index, chunk_rows, reporter=reporter):
        keys = np.ascontiguousarray(part["keyhash"])
        checkpoint()
        perm = stable_argsort_u64(keys, checkpoint)
        _pwrite_all(fd, keys[perm], start * 8, checkpoint)
        checkpoint()
        _pwrite_all(fd, (perm + start).astype(row_dtype), n * 8 + start * row_dtype.itemsize, checkpoint)
        checkpoint()
        crashed = np.flatnonzero(part["crashid"])
        if len(crashed):
            crash_keys.append(np.unique(keys[crashed]))
        runs.append((start, start + len(keys)))
    return runs, np.unique(np.concatenate(crash_keys))


@dataclass
class _Run:
    pos: int  # next unread element in the run file
    end: int
    keys: np.ndarray
    rows: np.ndarray


@dataclass
class CrashOrder:
    """Puts the rows of colliding keyhashes in (crashid, row) order; the merge leaves them by row alone."""

    crashid: np.ndarray  # the index's crashid column
    collisions: np.ndarray  # sorted keyhashes of rows with a crash id

    def apply(self, keys: np.ndarray, rows: np.ndarray) -> None:
        if not len(self.collisions):
            return
        for keyhash in np.unique(keys[np.isin(keys, self.collisions)]).tolist():
            lo, hi = int(keys.searchsorted(keyhash, "left")), int(keys.searchsorted(keyhash, "right"))
            segment = rows[lo:hi]
            rows[lo:hi] = segment[np.argsort(self.crashid[segment], kind="stable")]


def _merge_runs(runs_fd: int, spans: list[tuple[int, int]], layout: KeyFileLayout, out_fd: int,
                budget: int, reporter: ProgressReporter, crash_order: CrashOrder) -> np.ndarray:
    """k-way merge, a batch at a time: everything below the smallest last buffered key is final.

    A key equal to that bound waits for the next batch, so all rows of one key are
    merged (and crash-ordered) in the same batch. Returns the fence (every
    ``FENCE_STRIDE``-th key of the output).
    """
    n, row_dtype = layout.n_rows, row_dtype_for(layout.n_rows)
    block = max(256, budget // (2 * max(1, len(spans))))  # buffers refill to 2 blocks: a batch <= budget
    runs = [_Run(s, e, np.zeros(0, np.uint64), np.zeros(0, row_dtype)) for s, e in spans]

    def read_more(run: _Run) -> None:
        count = min(block, run.end - run.pos)
        keys = pread_array(runs_fd, np.dtype("<u8"), count, run.pos * 8)
        rows = pread_array(runs_fd, row_dtype, count, n * 8 + run.pos * row_dtype.itemsize)
        run.keys, run.rows = np.concatenate((run.keys, keys)), np.concatenate((run.rows, rows))
        run.pos += count

    done = 0
    fence = [np.zeros(0, np.uint64)]
    checkpoint = _checkpoint(reporter)
    while done < n:
        for run in runs:
            if len(run.keys) < block and run.pos < run.end:
                read_more(run)
        checkpoint()
        live = [run for run in runs if run.pos < run.end]
        bound = min(run.keys[-1] for run in live) if live else None
        cuts = [len(run.keys) if bound is None else int(run.keys.searchsorted(bound, "left")) for run in runs]
        if not any(cuts):  # a key fills whole blocks: read on until past it (equal keys must go together)
            for run in live:
                if run.keys[-1] == bound:
                    read_more(run)
            continue
        keys = np.concatenate([run.keys[:cut] for run, cut in zip(runs, cuts)])
        rows = np.concatenate([run.rows[:cut] for run, cut in zip(runs, cuts)])
        for run, cut in zip(runs, cuts):
            run.keys, run.rows = run.keys[cut:], run.rows[cut:]
        checkpoint()
        perm = stable_argsort_u64(keys, checkpoint)  # runs are in row order, so ties stay in row order
        keys, rows = keys[perm], rows[perm]
        checkpoint()
        crash_order.apply(keys, rows)
        _pwrite_all(out_fd, keys, layout.off_keys + done * 8, checkpoint)
        checkpoint()
        _pwrite_all(out_fd, rows, layout.off_order + done * row_dtype.itemsize, checkpoint)
        _start_writeback(out_fd, layout.off_keys + done * 8, 8 * len(keys))
        _start_writeback(out_fd, layout.off_order + done * row_dtype.itemsize, row_dtype.itemsize * len(rows))
        checkpoint()
        fence.append(keys[(-done) % FENCE_STRIDE :: FENCE_STRIDE].copy())  # a view would keep the batch alive
        done += len(keys)
        reporter.update(2 * n + done)
    return np.concatenate(fence)
