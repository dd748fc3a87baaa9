"""Scan a tar through ranged reads (a remote shard): large blocks, payloads jumped over.

:class:`BlockReader` keeps one window of the file, filled by ``read(offset, length)``.
A read for bytes outside the window starts a new window *at those bytes*: a payload
that runs past the window is never downloaded, the next read begins at the header
after it. How much that read fetches depends on the jump:

- after a jump over more than ``skip_threshold`` bytes (a large member), a short probe
  (64 KiB): a full block there would mostly be the next large payload;
- otherwise (the members are small, the stream goes on) 8x the previous read, up to
  ``block_size``. A shard's first read is 1 MiB, so a shard of small members reaches
  whole blocks on its second read, and one that starts with a large member does not
  fetch a block of it.

Given ``read_ranges`` (several ranges in one round trip), the first jump over a large
payload also fetches the file's last 64 KiB beside its probe: the end-of-archive marker
the walk must check, which it would otherwise read in a round trip of its own after the
last large member. A shard of ``n`` large members then costs ``n`` round trips, not ``n+1``
(the same requests, one fewer waited for in turn); a shard of small members never jumps
and never reads its tail apart.

The defaults and their reasons are in ``read_plan``.

:func:`scan_tar_stream` walks the header chain window by window with the same vectorised
field parsing as the local scan (``tar.block_candidates``). Anything it does not handle
on this fast route (GNU long names, pax records, a header that is not where the chain
says, a bad checksum or size, a truncated file) goes to the strict sequential walk of
``tar.py`` reading through the same :class:`BlockReader`, which gives the exact members
or the exact error, as it does for local files. So a remote scan reports the same
members and the same errors as scanning the same bytes locally.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import TruncatedError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .read_plan import FIRST_READ, GROWTH, PROBE_SIZE, ReadPlan
from .tar import _REGULAR, _ZERO_BLOCK, TarScan, _empty, _stack_names, block_candidates, crop_names
from .tar_fields import BLOCK
from .tar_names import header_name
from .tar_sequential import scan_sequential

_SPECIAL = (ord("L"), ord("K"), ord("x"), ord("g"))  # records that change the next member's name or size

ReadAt = Callable[[int, int], "bytes | memoryview"]
ReadRanges = Callable[[list[tuple[int, int]]], "list[bytes] | list[bytes | memoryview]"]


class BlockReader:
    """One window of a file read by ``read(offset, length)``; slicing it reads as a bytes-like file."""

    def __init__(self, read: ReadAt, size: int, name: str, plan: ReadPlan | None = None,
                 read_ranges: ReadRanges | None = None) -> None:
        self._read, self._read_ranges, self.size, self.name = read, read_ranges, size, name
        plan = plan or ReadPlan()
        self.block_size = -(-plan.block_size // BLOCK) * BLOCK  # whole tar blocks: headers never straddle windows
        self.skip_threshold = plan.skip_threshold
        self.probe = min(PROBE_SIZE, self.block_size)
        self.read_size = min(FIRST_READ, self.block_size)
        self.start = self.end = 0
        self.view = memoryview(b"")
        self.tail_start, self.tail = size, memoryview(b"")  # the file's end, once fetched beside a probe
        self.bytes_fetched = self.requests = 0

    def window(self, offset: int) -> tuple[int, memoryview]:
        """(start, bytes) of a window holding ``offset`` (< size)."""
        if not self.start <= offset < self.end:
            self._fetch(offset, 1)
        return self.start, self.view

    def __getitem__(self, key: slice) -> bytes:
        start, stop = key.start, min(key.stop, self.size)
        if stop <= start:
            return b""
        if not (self.start <= start and stop <= self.end):
            self._fetch(start, stop - start)
        return bytes(self.view[start - self.start : stop - self.start])

    def _fetch(self, offset: int, need: int) -> None:
        if self.tail_start <= offset:  # every read from here on ends at the file's end: the tail holds it
            self.start, self.end, self.view = self.tail_start, self.size, self.tail
            return
        gap = offset - self.end
        jumped = self.requests and gap > self.skip_threshold
        if jumped:
            self.read_size = self.probe  # a large payload was jumped over: the next is likely large too
        elif self.requests:
            self.read_size = min(self.block_size, self.read_size * GROWTH)
        kept = self.view[offset - self.start :] if self.start <= offset < self.end else memoryview(b"")
        at = offset + len(kept)
        length = min(max(self.read_size, need - len(kept)), self.size - at)
        tail_at = (self.size - self.probe) // BLOCK * BLOCK  # whole tar blocks, as every window starts
        if jumped and self._read_ranges is not None and self.tail_start == self.size and tail_at > at + length:
            data, tail = self._read_ranges([(at, length), (tail_at, self.size - tail_at)])
            self._check_length(tail, tail_at, self.size - tail_at)
            self.tail_start, self.tail = tail_at, memoryview(tail)
            self.bytes_fetched += len(tail)
            self.requests += 1
        else:
            data = self._read(at, length)
        self._check_length(data, at, length)
        self.bytes_fetched += length
        self.requests += 1
        self.view = memoryview(bytes(kept) + bytes(data) if len(kept) else data)
        self.start, self.end = offset, offset + len(self.view)

    def _check_length(self, data: bytes | memoryview, at: int, length: int) -> None:
        if len(data) != length:  # the source promises exact reads; never scan a short one
            raise TruncatedError(self.name, "data", at, "short read", expected=f"{length} bytes",
                                 found=f"{len(data)} bytes")


def scan_tar_stream(reader: BlockReader, progress: ProgressCallback | None = None,
                    cancel: CancelToken | None = None) -> TarScan:
    """The regular members of the tar behind ``reader``: what ``scan_tar`` gives for the same bytes."""
    reporter = ProgressReporter(progress, reader.size, "bytes", cancel)
    if reader.size == 0:
        return _empty(reader.name, 0)
    scan = _chain_scan(reader, reporter)
    if scan is None:
        scan = scan_sequential(reader, reader.name, reader.size, reporter)
    reporter.finish()
    return scan


def _chain_scan(reader: BlockReader, reporter: ProgressReporter) -> TarScan | None:
    """Follow the header chain a window at a time; None for anything only the sequential walk handles."""
    size, pos = reader.size, 0
    parts: list[tuple[np.ndarray, ...]] = []  # (offsets, sizes, typeflags, names) per window
    full_names: dict[int, bytes] = {}
    n_regular = 0
    while True:
        if pos == size:
            break  # no end-of-archive marker: accepted, as the sequential walk does
        if pos + BLOCK > size:
            return None  # a cut header: the sequential walk names it
        start, view = reader.window(pos)
        n_blocks = len(view) // BLOCK
        blocks = np.frombuffer(view, np.uint8, count=n_blocks * BLOCK).reshape(n_blocks, BLOCK)
        chain = _window_chain(blocks, start, pos)
        if chain is None:
            return None
        cand, sizes, flags, names, prefixed, ends = chain
        if len(cand):
            regular = np.isin(flags, _REGULAR)
            for i in np.flatnonzero(prefixed & regular).tolist():  # ustar prefix: the name has two parts
                off = int(cand[i]) * BLOCK
                full, field = header_name(view, off - start), bytes(view[off - start : off - start + 100])
                if full != field.split(b"\0", 1)[0]:
                    full_names[n_regular + int(np.count_nonzero(regular[:i]))] = full
            n_regular += int(np.count_nonzero(regular))
            parts.append((cand * BLOCK, sizes, flags, names))
            pos = int(ends[-1])
            if pos > size:
                return None  # the last payload runs past the end: the sequential walk reports it
        if pos < start + n_blocks * BLOCK:  # the chain stops inside the window: only an end marker may be here
            if bytes(view[pos - start : pos - start + BLOCK]) != _ZERO_BLOCK:
                return None
            break
        reporter.update(pos)
    return _assemble(reader, parts, full_names, pos)


def _window_chain(blocks: np.ndarray, start: int, pos: int) -> tuple[np.ndarray, ...] | None:
    """The chain's records in one window from header ``pos``, with their ends; None when it is not plain."""
    cand, sizes, size_ok, checksum_ok, flags, names, prefixed = block_candidates(blocks, start // BLOCK)
    keep = cand >= pos // BLOCK
    if not keep.all():  # the window began inside a payload: candidates before ``pos`` are payload bytes
        cand, sizes, size_ok, checksum_ok, flags, names, prefixed = (
            a[keep] for a in (cand, sizes, size_ok, checksum_ok, flags, names, prefixed))
    window_end = start + len(blocks) * BLOCK
    if len(cand) == 0 or cand[0] != pos // BLOCK:
        # no header here: an end marker (checked by the caller) or something only the sequential walk reads
        return (cand[:0], sizes[:0], flags[:0], names[:0], prefixed[:0], np.array([pos], np.int64))
    ends = (cand + 1 + (sizes + BLOCK - 1) // BLOCK) * BLOCK
    on_chain = _follow(cand, ends, window_end)
    if on_chain is not None:
        cand, sizes, size_ok, checksum_ok, flags, names, prefixed, ends = (
            a[on_chain] for a in (cand, sizes, size_ok, checksum_ok, flags, names, prefixed, ends))
    if not (size_ok.all() and checksum_ok.all()) or np.isin(flags, _SPECIAL).any():
        return None
    return cand, sizes, flags, names, prefixed, ends


def _follow(cand: np.ndarray, ends: np.ndarray, window_end: int) -> np.ndarray | None:
    """Indices of the candidates on the chain from ``cand[0]``, or None when every candidate is on it."""
    if np.array_equal(ends[:-1], cand[1:] * BLOCK):
        return None
    where = {int(b) * BLOCK: i for i, b in enumerate(cand.tolist())}  # look-alikes in payloads are skipped
    chain, i = [], 0
    while True:
        chain.append(i)
        nxt = int(ends[i])
        if nxt >= window_end or nxt not in where:
            return np.array(chain, np.int64)
        i = where[nxt]


def _assemble(reader: BlockReader, parts: list[tuple[np.ndarray, ...]], full_names: dict[int, bytes],
              end: int) -> TarScan:
    if not parts:
        return _empty(reader.name, reader.size)
    offsets, sizes, flags = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(3))
    regular = np.isin(flags, _REGULAR)
    names = _stack_names([p[3][np.isin(p[2], _REGULAR)] for p in parts])
    return TarScan(reader.name, reader.size, offsets[regular], sizes[regular], crop_names(names), full_names,
                   end, int(np.count_nonzero(~regular)), method="stream")


__all__ = ["BlockReader", "ReadPlan", "scan_tar_stream"]
