"""Compiled tar header walk, used when the optional ``fast`` extra (numba) is installed (see ``itarcore.indexing.jit``).

It follows the header chain exactly as the strict sequential walk does, but as machine
code: about 0.1 µs per header instead of about 1 µs, and it touches only header blocks
instead of every block of the file. It is resumable, so the caller can release the
pages of each chunk, report progress and honour cancel between calls. Anything it does
not handle itself (a checksum or number that does not parse, a size that reaches past the
file, truncation, a pax record that overrides the size) makes it stop with
``STOP_UNSUPPORTED``; the caller then runs the Python walk, which gives the exact answer
or the precise error. Numbers follow the one rule of ``tar_fields.parse_number``, so the
walk never reads a field differently from the Python walk; every read is bounds-checked
against the buffer (numba's own checks are off for speed).
"""
from __future__ import annotations

import numpy as np

from ..indexing.jit import compile_kernel

STOP_LIMIT = 0  # reached the caller's byte limit or filled the output arrays
STOP_END = 1  # end-of-archive block, or end of file exactly at a header boundary
STOP_UNSUPPORTED = 2  # let the Python walk handle (or report) what is at ``offset``


def _octal(buf, start, width):
    """Octal field by the rule of ``tar_fields.parse_number`` (spaces, digits, spaces; a NUL ends it); -1 if not."""
    value = 0
    started = False
    trailing = False
    for i in range(width):
        b = buf[start + i]
        if b == 0:
            return value  # the rest of the field is ignored
        if 48 <= b <= 55:
            if trailing:
                return -1
            value = value * 8 + (b - 48)
            started = True
        elif b == 32:
            trailing = started
        else:
            return -1
    return value


def _size(buf, start):
    """The 12-byte size field: octal, or positive GNU base-256 below 2**55; -1 if unsupported."""
    first = buf[start]
    if first & 0x80:
        if first != 0x80:
            return -1
        value = 0
        for i in range(1, 12):
            if value >> 47:
                return -1  # no file is that big: the Python walk names the problem
            value = (value << 8) | buf[start + i]
        return value
    return _octal(buf, start, 12)


def _pax_sets_size(buf, start, end):
    """Whether a pax payload has a ``size=`` record (it would override the header's size)."""
    for i in range(start, end - 5):
        if (buf[i] == 32 and buf[i + 1] == 115 and buf[i + 2] == 105 and buf[i + 3] == 122
                and buf[i + 4] == 101 and buf[i + 5] == 61):
            return True
    return False


def _byte_sum(words, offset):
    """Sum of the 512 bytes of the block at byte ``offset``, eight bytes per step (SWAR)."""
    lanes = np.uint64(0)  # unsigned throughout: numba would turn int64 + uint64 into a float
    mask = np.uint64(0x00FF00FF00FF00FF)
    lane = np.uint64(0xFFFF)
    base = offset >> 3
    for i in range(64):
        w = words[base + i]
        lanes += (w & mask) + ((w >> np.uint64(8)) & mask)  # four 16-bit lanes; 64 * 510 fits one
    total = (lanes & lane) + ((lanes >> np.uint64(16)) & lane) + ((lanes >> np.uint64(32)) & lane)
    return np.int64(total + (lanes >> np.uint64(48)))


def _signed_checksum(buf, offset):
    """The checksum as some old writers computed it: bytes summed as signed chars."""
    total = 256
    for i in range(512):
        if i < 148 or i >= 156:
            b = np.int64(buf[offset + i])
            total += b - 256 if b >= 128 else b
    return total


def _walk(buf, words, offset, limit, count, out_offsets, out_sizes, out_flags, out_names, out_prefixed):
    """Walk headers from ``offset`` until ``limit`` (or the outputs are full), writing from record ``count`` on.

    ``words`` is ``buf`` viewed as uint64. Returns (stop reason, next offset, records
    in the outputs). Every record (regular or not) is written, its checksum verified:
    offset, size, type flag, the 100-byte name field, and whether a POSIX prefix is set.
    """
    n = buf.shape[0]
    capacity = min(out_offsets.shape[0], out_sizes.shape[0], out_flags.shape[0], out_names.shape[0],
                   out_prefixed.shape[0])
    if out_names.shape[1] < 100 or words.shape[0] * 8 > n or offset < 0 or count < 0:
        return STOP_UNSUPPORTED, offset, count  # not buffers this walk can fill safely
    # Every read below is inside buf: offset is a multiple of 512 with offset + 512 <= n,
    # and a payload is followed only when offset + 512 + size <= n, so no sum can overflow.
    while count < capacity:
        if offset % 512 or offset + 512 > n:
            return (STOP_END if offset == n else STOP_UNSUPPORTED), offset, count
        if offset >= limit:
            break
        if offset + 512 > words.shape[0] * 8:  # the last block's bytes lie past the word view
            return STOP_UNSUPPORTED, offset, count
        total = _byte_sum(words, offset)
        if total == 0:
            return STOP_END, offset, count
        field_sum = 0
        for i in range(148, 156):
            field_sum += buf[offset + i]
        stored = _octal(buf, offset + 148, 8)
        if stored < 0 or (stored != total - field_sum + 256 and stored != _signed_checksum(buf, offset)):
            return STOP_UNSUPPORTED, offset, count
        size = _size(buf, offset + 124)
        if size < 0 or size > n - offset - 512:
            return STOP_UNSUPPORTED, offset, count
        data_end = offset + 512 + size
        flag = buf[offset + 156]
        if (flag == 120 or flag == 103) and _pax_sets_size(buf, offset + 512, data_end):
            return STOP_UNSUPPORTED, offset, count
        out_offsets[count] = offset
        out_sizes[count] = size
        out_flags[count] = flag
        out_names[count, :100] = buf[offset : offset + 100]
        out_prefixed[count] = buf[offset + 262] == 0 and buf[offset + 345] != 0
        count += 1
        offset = data_end + (-size) % 512
    return STOP_LIMIT, offset, count


_octal = compile_kernel(_octal)
_size = compile_kernel(_size)
_pax_sets_size = compile_kernel(_pax_sets_size)
_byte_sum = compile_kernel(_byte_sum)
_signed_checksum = compile_kernel(_signed_checksum)
walk_headers = compile_kernel(_walk)


def word_view(buf: np.ndarray) -> np.ndarray:
    """``buf`` (a whole number of 512-byte blocks or more) seen as uint64 words, for the checksum sums."""
    return buf[: len(buf) - len(buf) % 8].view(np.uint64)


def record_arrays(capacity: int, keep: tuple[np.ndarray, ...] = ()) -> tuple[np.ndarray, ...]:
    """Output arrays of the walk (offsets, sizes, type flags, name fields, prefix set), with ``keep`` copied in."""
    out = (np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity, np.uint8),
           np.empty((capacity, 100), np.uint8), np.empty(capacity, np.bool_))
    for new, old in zip(out, keep):
        new[: len(old)] = old
    return out
