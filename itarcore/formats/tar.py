"""Fast tar header scanning for webdataset-style shards.

Walking 512-byte headers one by one in Python costs about a microsecond each.
The fast path finds every header at once with numpy instead: each USTAR/GNU
header has ``ustar`` at byte 257 of its block, so all candidate blocks are found
in one strided pass over the file (read a few MiB at a time), their size fields
are parsed as columns, and the chain ``next = offset + 512 + round_up(size)`` is checked as a
whole. If the chain holds from byte 0 to the end-of-archive block, the
candidates are exactly the headers. If not (old v7 headers, a ``ustar`` look-
alike inside a payload, data after the end marker), a strict sequential walk
(``tar_sequential``) gives the exact answer or a precise error. Both paths verify every header
checksum, so corruption never becomes silent garbage rows. Every route (numpy,
compiled, sequential) reads fields by the same rules and hands anything odd to the
sequential walk, so all report the same members or the same error. Long names are
resolved in ``tar_names``.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..errors import TruncatedError
from ..indexing import jit
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from ..storage.buffers import read_buffer
from .tar_fields import BLOCK, base256, checksums_ok, parse_octal_columns
from .tar_names import NAME_LEN, resolve_names

# Bytes 256..263 of a block read as one little-endian word: 'ustar' is at bytes 257..261.
_MAGIC_WORD = 32
_MAGIC_MASK = np.uint64(0xFF_FF_FF_FF_FF << 8)
_MAGIC_VALUE = np.uint64(int.from_bytes(b"\0ustar\0\0", "little"))
_REGULAR = (ord("0"), 0, ord("7"))
_ZERO_BLOCK = bytes(BLOCK)


@dataclass
class TarScan:
    """Regular-file members of one tar, in archive order."""

    path: str
    file_size: int
    header_offsets: np.ndarray  # int64: each member's own 512-byte header
    sizes: np.ndarray  # int64 payload sizes
    name_fields: np.ndarray  # (n, w <= 100) uint8: each header's raw name field, all-NUL trailing columns dropped
    full_names: dict[int, bytes] = field(default_factory=dict)  # row -> name when not the name field alone
    end_offset: int = 0  # where the end-of-archive marker (or EOF) begins
    skipped: int = 0  # non-regular records (directories, links, pax, GNU long names)
    method: str = "vectorised"  # which walk produced it: compiled, vectorised or sequential

    @property
    def n_members(self) -> int:
        return len(self.header_offsets)

    @property
    def data_offsets(self) -> np.ndarray:
        return self.header_offsets + BLOCK

    def name_bytes(self, row: int) -> bytes:
        full = self.full_names.get(row)
        if full is not None:
            return full
        return bytes(self.name_fields[row]).split(b"\0", 1)[0]

    @property
    def names(self) -> list[str]:
        return [decode_name(self.name_bytes(i)) for i in range(self.n_members)]


def decode_name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def scan_tar(
    path: str | os.PathLike[str],
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    *,
    compiled: bool | None = None,
    threads: int | None = None,
) -> TarScan:
    """List the regular members of ``path`` (offsets, sizes, names); raise FormatError on corruption.

    ``compiled`` picks the compiled walk (numba) or numpy; by default ``jit.worthwhile`` decides.
    ``threads`` splits numpy's pass over the file (default :func:`scan_threads`); the
    compiled walk follows the header chain and is one thread.
    """
    path = os.fspath(path)
    with open(path, "rb", buffering=0) as fh:
        file_size = os.fstat(fh.fileno()).st_size
        if file_size == 0:
            return _empty(path, 0)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            mm.madvise(mmap.MADV_SEQUENTIAL) if hasattr(mmap, "MADV_SEQUENTIAL") else None
            reporter = ProgressReporter(progress, file_size, "bytes", cancel)
            if compiled is None:
                compiled = jit.worthwhile(file_size)
            if compiled and jit.available():
                scan = _scan_compiled(mm, path, file_size, reporter)
            else:
                blocks = _BlockReader(fh.fileno(), mm, file_size)
                scan = _scan_vectorised(blocks, path, reporter, scan_threads() if threads is None else threads)
            if scan is None:
                from .tar_sequential import scan_sequential  # only for archives the fast routes hand over

                scan = scan_sequential(mm, path, file_size, reporter)
            reporter.finish()
            return scan
        finally:
            try:
                mm.close()
            except BufferError:  # an error's traceback still holds a numpy view; GC closes the map
                pass


def crop_names(fields: np.ndarray) -> np.ndarray:
    """(n, 100) name fields without the columns that are NUL in every row (a compact copy, or the input if compact).

    Names are usually a fraction of the 100-byte field; this keeps the scan's memory per
    member small. Every name still ends at its first NUL or at the end of the row.
    """
    used = np.flatnonzero(fields.max(axis=0)) if len(fields) else ()  # max: a third faster than any(axis=0)
    width = used[-1] + 1 if len(used) else 0
    compact = width == fields.shape[1] and fields.flags.c_contiguous and fields.base is None  # its own memory
    return fields if compact else fields[:, :width].copy()


def _stack_names(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenate name-field blocks of different widths, NUL padded to the widest."""
    out = np.zeros((sum(len(p) for p in parts), max((p.shape[1] for p in parts), default=0)), np.uint8)
    row = 0
    for part in parts:
        out[row : row + len(part), : part.shape[1]] = part
        row += len(part)
    return out


def _empty(path: str, size: int) -> TarScan:
    return TarScan(path, size, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, NAME_LEN), np.uint8))


_SCAN_CHUNK_BLOCKS = 1 << 13  # 4 MiB of the file per pass: fits the caches, and bounds the memory held at once


class _BlockReader:
    """A shard's 512-byte blocks, read a chunk at a time into a buffer each thread reuses.

    Reads, not the map, for numpy's pass: ``pread`` into a buffer that stays in the CPU's
    caches streams the file as ``cat`` does, and is cheaper than faulting in every page of
    the map and releasing it after (``MADV_DONTNEED``), which is what kept the resident
    size flat before. Where ``os.preadv`` is missing, the chunk is copied out of the map
    and its pages released. Short reads mean the file shrank during the scan.
    """

    def __init__(self, fd: int, mm: mmap.mmap, file_size: int) -> None:
        self.fd, self.mm, self.file_size = fd, mm, file_size
        self.n_blocks = file_size // BLOCK
        self.local = threading.local()
        if hasattr(os, "posix_fadvise"):  # as cat does: the kernel reads ahead further
            with contextlib.suppress(OSError):  # only a hint
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)

    def chunk(self, start: int, path: str) -> np.ndarray:
        """Blocks ``start`` up to ``start + _SCAN_CHUNK_BLOCKS`` (fewer at the end), valid until this thread's next call."""
        n = min(_SCAN_CHUNK_BLOCKS, self.n_blocks - start)
        buffer = getattr(self.local, "buffer", None)
        if buffer is None or len(buffer) < n:
            rows = max(n, min(_SCAN_CHUNK_BLOCKS, self.n_blocks))
            buffer = self.local.buffer = read_buffer((rows, BLOCK))  # chunks start on pages: 5x on AMD (storage.buffers)
        part = buffer[:n]
        offset = start * BLOCK
        if _PREADV:
            got = os.preadv(self.fd, [part], offset)
            if got != n * BLOCK:
                raise TruncatedError(path, "file", offset + got, "the file shrank while it was being scanned",
                                     expected=f"{self.file_size} bytes", found=f"{offset + got} bytes")
        else:
            part[...] = np.frombuffer(self.mm, np.uint8, n * BLOCK, offset).reshape(n, BLOCK)
            if hasattr(mmap, "MADV_DONTNEED"):
                self.mm.madvise(mmap.MADV_DONTNEED, offset, n * BLOCK)
        return part

    def scratch(self, n: int) -> np.ndarray:
        """This thread's reused room for up to ``n`` header blocks: fresh memory each chunk would be
        faulted in and zeroed by the kernel every time, a tenth of a scan's time."""
        headers = getattr(self.local, "headers", None)
        if headers is None or len(headers) < n:
            headers = self.local.headers = np.empty((n, BLOCK), np.uint8)
        return headers


_PREADV = hasattr(os, "preadv")


def scan_threads() -> int:
    """Threads for numpy's pass over one file: its strided reads release the GIL and wait on memory."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass
class _Candidates:
    """Compact copies of the fields of every block that looks like a header."""

    blocks: np.ndarray  # block numbers
    sizes: np.ndarray  # int64, from octal or base-256 size fields
    size_ok: np.ndarray  # bool: the size field is a number
    checksum_ok: np.ndarray  # bool: the stored checksum matches the header bytes
    typeflags: np.ndarray
    names: np.ndarray  # (n, w): cropped name fields
    posix_prefix: np.ndarray  # bool: POSIX magic and a non-empty prefix field


def _find_candidates(blocks: _BlockReader, path: str, reporter: ProgressReporter, threads: int) -> _Candidates:
    """Blocks with 'ustar' at byte 257, and their fields, a chunk of the file at a time.

    ``threads`` chunks are read at once; progress and cancel are handled here, in order.
    """
    starts = range(0, blocks.n_blocks, _SCAN_CHUNK_BLOCKS)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="itar-scan") if threads > 1 and len(starts) > 1 else None

    def candidates(start: int) -> tuple[np.ndarray, ...]:
        part = blocks.chunk(start, path)
        return block_candidates(part, start, blocks.scratch(len(part)))  # copies: both buffers are reused

    try:
        found = pool.map(candidates, starts) if pool else (candidates(start) for start in starts)
        parts = []
        for start, part in zip(starts, found):
            parts.append(part)
            reporter.update(min(start + _SCAN_CHUNK_BLOCKS, blocks.n_blocks) * BLOCK)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # after a cancel or an error: chunks not begun never run
    columns = [list(column) for column in zip(*parts)]
    del parts
    fields = []
    for i, column in enumerate(columns):  # one field at a time, its chunk parts freed as it is joined
        columns[i] = None
        fields.append(_stack_names(column) if i == _NAMES_FIELD else np.concatenate(column))
        del column
    return _Candidates(*fields)


_NAMES_FIELD = 5  # position of names among _Candidates' fields


def block_candidates(part: np.ndarray, start: int, scratch: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The candidate fields (as :class:`_Candidates`) of (n, 512) blocks numbered from ``start``.

    A candidate has ``ustar`` at byte 257: one word of each block is read (the only pass over
    every block), and only the candidates' blocks are copied out, whole (the checksum needs
    every byte), into ``scratch`` when given (at least n blocks; every field returned is a copy).
    """
    words = np.ascontiguousarray(part).view("<u8")
    hits = np.flatnonzero((words[:, _MAGIC_WORD] & _MAGIC_MASK) == _MAGIC_VALUE)
    # take: a third faster than part[hits]; "clip" (the hits are in range) lets it write to out directly
    headers = np.take(part, hits, axis=0, out=None if scratch is None else scratch[: len(hits)], mode="clip")
    sizes, size_ok = parse_octal_columns(headers[:, 124:136])
    for i in np.flatnonzero(headers[:, 124] & 0x80):  # GNU base-256
        value = base256(bytes(headers[i, 124:136]))
        # an odd lead byte, a negative or huge size (a look-alike in a payload?): the sequential walk decides
        sizes[i], size_ok[i] = (value, True) if value is not None and 0 <= value < 1 << 62 else (0, False)
    # copies, not views: a view of a column would keep every whole 512-byte header alive
    fields = (hits + start, sizes, size_ok, checksums_ok(headers), headers[:, 156].copy(),
              crop_names(headers[:, :NAME_LEN]), (headers[:, 262] == 0) & (headers[:, 345] != 0))
    return fields


def _scan_vectorised(blocks: _BlockReader, path: str, reporter: ProgressReporter, threads: int = 1) -> TarScan | None:
    mm, file_size = blocks.mm, blocks.file_size
    if blocks.n_blocks == 0:
        return None
    if mm[:BLOCK] == _ZERO_BLOCK:
        return _empty(path, file_size)  # an archive that is only its end marker
    found = _find_candidates(blocks, path, reporter, threads)
    cand = found.blocks
    if len(cand) == 0 or cand[0] != 0:
        return None
    sizes = found.sizes
    if not found.size_ok.all():
        return None  # let the sequential walk name the bad field precisely
    ends = sizes + (BLOCK - 1)  # in place from here: one member-sized temporary, not four
    ends //= BLOCK
    ends += cand + 1
    ends *= BLOCK
    if len(cand) > 1 and not np.array_equal(ends[:-1], cand[1:] * BLOCK):
        return None
    end = int(ends[-1])
    if end > file_size or (end + BLOCK <= file_size and mm[end : end + BLOCK] != _ZERO_BLOCK):
        return None
    # Anything else odd goes to the sequential walk, even a plain error: it meets the errors in
    # archive order (a bad pax record before a bad checksum), so both routes report the same one.
    if end < file_size < end + BLOCK or not found.checksum_ok.all():
        return None
    if _pax_sets_size(mm, cand, sizes, found.typeflags):
        return None  # a pax size overrides the header's: only the sequential walk follows it
    del ends
    regular = np.isin(found.typeflags, _REGULAR)
    if regular.all():  # the usual shard: no copies
        return _finish_scan(mm, path, file_size, cand, sizes, found.typeflags, found.names, found.posix_prefix, end)
    return _finish_scan(mm, path, file_size, cand, sizes, found.typeflags, found.names[regular],
                        found.posix_prefix[regular], end)


def _pax_sets_size(mm: mmap.mmap, blocks: np.ndarray, sizes: np.ndarray, typeflags: np.ndarray) -> bool:
    """Whether a pax record (``x`` or ``g``) has a ``size`` key, as ``tar_walk`` checks it."""
    for i in np.flatnonzero(np.isin(typeflags, (ord("x"), ord("g")))).tolist():
        start = int(blocks[i]) * BLOCK + BLOCK
        if b" size=" in mm[start : start + int(sizes[i])]:
            return True
    return False


def _scan_compiled(mm: mmap.mmap, path: str, file_size: int, reporter: ProgressReporter) -> TarScan | None:
    """The header chain walked by compiled code (``tar_walk``), a chunk of the file at a time.

    Name fields are copied out of each chunk before its pages are released, so resident
    memory stays flat. ``None`` hands anything unusual to the strict Python walk.
    """
    from . import tar_walk  # imports numba: only when this route is taken

    buf = np.frombuffer(mm, np.uint8)
    words = tar_walk.word_view(buf)
    out = tar_walk.record_arrays(file_size // 4096 + 1024)  # about one header per page; grown if needed
    dontneed = getattr(mmap, "MADV_DONTNEED", None)
    offset = count = 0
    while True:
        if count == len(out[0]):
            out = tar_walk.record_arrays(2 * count, out)
        stop, next_offset, count = tar_walk.walk_headers(buf, words, offset, offset + _SCAN_CHUNK_BLOCKS * BLOCK,
                                                         count, *out)
        if stop == tar_walk.STOP_UNSUPPORTED:
            return None
        released = offset - offset % mmap.PAGESIZE
        if dontneed is not None and next_offset - released >= mmap.PAGESIZE:
            mm.madvise(dontneed, released, next_offset - next_offset % mmap.PAGESIZE - released)
        reporter.update(next_offset)
        offset = next_offset
        if stop == tar_walk.STOP_END:
            break
    del buf, words
    header_offsets, sizes, flags, names, prefixed = (a[:count] for a in out)
    regular = np.isin(flags, _REGULAR)
    if not regular.all():
        names, prefixed = names[regular], prefixed[regular]
    scan = _finish_scan(mm, path, file_size, header_offsets // BLOCK, sizes, flags, names, prefixed, offset)
    scan.method = "compiled"
    return scan


def _finish_scan(mm, path: str, file_size: int, header_blocks: np.ndarray, sizes: np.ndarray,
                 typeflags: np.ndarray, reg_names: np.ndarray, reg_prefix: np.ndarray, end: int) -> TarScan:
    """A TarScan from every record's header block, size and type (and the regular ones' name fields)."""
    regular = np.isin(typeflags, _REGULAR)
    special = np.flatnonzero(~regular)
    reg_idx = header_blocks if not len(special) else header_blocks[regular]
    scan = TarScan(
        path=path,
        file_size=file_size,
        header_offsets=reg_idx.astype(np.int64) * BLOCK,
        sizes=sizes if not len(special) and sizes.base is None else sizes[regular],  # not a view of a bigger buffer
        name_fields=crop_names(reg_names),
        end_offset=end,
        skipped=len(special),
    )
    # Long names (GNU 'L', pax 'x'/'g') and the ustar prefix need per-record work, but only on those records.
    has_long = np.isin(typeflags[special], (ord("L"), ord("x"), ord("g"))).any()
    if has_long or reg_prefix.any():
        row_of_block = {int(b): r for r, b in enumerate(reg_idx)}
        scan.full_names = resolve_names(mm, path, header_blocks, typeflags, sizes, row_of_block)
    return scan
