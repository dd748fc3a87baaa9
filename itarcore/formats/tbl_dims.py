"""Image width × height from the first bytes of a file, for TBL v2 index entries.

PNG, BMP, WebP and JPEG keep their size at known places in their headers, so reading
it there costs a few microseconds; anything else (TIFF, odd variants, a PNG named .jpg)
goes to Pillow, which parses headers lazily without decoding pixels. Non-images get (0, 0).
:func:`image_dims` gives the same answers for many samples of one buffer at once.
"""
from __future__ import annotations

import io
import struct
from functools import lru_cache

import numpy as np
from PIL import Image

_U16 = 0xFFFF
# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _png(d: bytes) -> tuple[int, int] | None:
    if len(d) >= 24 and d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR":
        return struct.unpack_from(">II", d, 16)
    return None


def _bmp(d: bytes) -> tuple[int, int] | None:
    if len(d) >= 26 and d[:2] == b"BM":
        header_len = struct.unpack_from("<I", d, 14)[0]
        if header_len == 12:  # OS/2 BITMAPCOREHEADER: 16-bit sizes
            w, h = struct.unpack_from("<HH", d, 18)
            return w, h
        w, h = struct.unpack_from("<ii", d, 18)
        return abs(w), abs(h)  # negative height means top-down rows
    return None


def _webp(d: bytes) -> tuple[int, int] | None:
    if len(d) < 30 or d[:4] != b"RIFF" or d[8:12] != b"WEBP":
        return None
    chunk = d[12:16]
    if chunk == b"VP8 " and d[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack_from("<HH", d, 26)
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and d[20] == 0x2F:
        bits = int.from_bytes(d[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(d[24:27], "little") + 1, int.from_bytes(d[27:30], "little") + 1
    return None


def _jpeg(d: bytes) -> tuple[int, int] | None:
    if d[:2] != b"\xff\xd8":
        return None
    pos, end = 2, len(d)
    while pos + 4 <= end:
        if d[pos] != 0xFF:
            return None
        marker = d[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:  # markers without a length
            pos += 2
            continue
        length = (d[pos + 2] << 8) | d[pos + 3]
        if marker in _SOF_MARKERS:
            if pos + 9 > end:
                return None
            h, w = struct.unpack_from(">HH", d, pos + 5)
            return w, h
        if marker in (0xD9, 0xDA) or length < 2:  # end of image or scan data before any frame
            return None
        pos += 2 + length
    return None


_FAST = {1: _jpeg, 2: _png, 3: _webp, 4: _bmp}


# A sample named as an image that its own parser cannot read is asked of Pillow, but only as
# one of the still-image formats datasets mislabel: each starts with one of these bytes, so any
# other sample skips Pillow (trying all of Pillow's formats on a non-image costs ~40 µs, these ~3).
_STILL_FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF", "JPEG2000")
_STILL_FIRST_BYTE = np.zeros(256, bool)
_STILL_FIRST_BYTE[[0xFF, 0x89, ord("G"), ord("R"), ord("B"), ord("I"), ord("M"), 0x00]] = True  # in that order


@lru_cache(maxsize=4)
def _openable(formats: tuple[str, ...]) -> tuple[str, ...]:
    """The names among ``formats`` this Pillow opens, after loading all its plugins (once)."""
    Image.init()  # Pillow loads only its commonest plugins (no TIFF, WebP) before a full search
    return tuple(f for f in formats if f in Image.OPEN)


def pil_size(data: bytes | memoryview, formats: tuple[str, ...] | None = None) -> tuple[int, int]:
    """(width, height) through Pillow's lazy header parse (of ``formats``, default all); (0, 0) for non-images."""
    if formats is not None:
        formats = _openable(formats)
    try:
        with Image.open(io.BytesIO(data), formats=formats) as im:
            return im.size
    except Exception:  # noqa: BLE001 - Pillow raises many unrelated types for non-images; they just have no size
        return 0, 0


_NO_DIMS = (6, 7, 8)  # video and raw pixels: Pillow would only guess


def image_size(data: bytes, fmt: int = 0, clamp: bool = True) -> tuple[int, int]:
    """(width, height) of one image; ``fmt`` is a TBL format code picking the fast header parser.

    ``clamp``: sizes the TBL index cannot hold (over 65,535) give (0, 0), as for a non-image.
    """
    parse = _FAST.get(int(fmt))
    found = parse(data) if parse is not None else None
    if found is None:
        if fmt == 0 or fmt in _NO_DIMS:  # unknown: Pillow's verdict; video and raw pixels have none
            return (0, 0) if fmt else pil_size(data)
        if not data or not _STILL_FIRST_BYTE[data[0]]:
            return (0, 0)
        found = pil_size(data, _STILL_FORMATS)
    w, h = found
    return (w, h) if not clamp or (0 <= w <= _U16 and 0 <= h <= _U16) else (0, 0)  # the index holds u16 dims


# -- many samples at once -----------------------------------------------------------------------
# The same header reads as above, as numpy gathers over all samples of one format together.
# Each reader returns (done, w, h) for rows long enough for its header: done marks the rows
# it decided exactly as the parsers above would; the rest (odd files, Pillow's cases) go
# through image_size one by one.

def _read(buf: np.ndarray, dtype: str, at: np.ndarray) -> np.ndarray:
    """The numbers of type ``dtype`` starting at byte offsets ``at`` of ``buf`` (unaligned reads)."""
    size = np.dtype(dtype).itemsize
    return np.ndarray((max(0, len(buf) - size + 1),), dtype, buffer=buf, strides=(1,))[at].astype(np.int64)


def _magic(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _png_many(buf, at):
    done = (_read(buf, ">u4", at) == _magic(b"\x89PNG")) & (_read(buf, ">u4", at + 4) == _magic(b"\r\n\x1a\n"))
    done &= _read(buf, ">u4", at + 12) == _magic(b"IHDR")
    return done, _read(buf, ">u4", at + 16), _read(buf, ">u4", at + 20)


def _bmp_many(buf, at):
    done = _read(buf, ">u2", at) == _magic(b"BM")
    core = _read(buf, "<u4", at + 14) == 12  # OS/2 BITMAPCOREHEADER: 16-bit sizes
    w = np.where(core, _read(buf, "<u2", at + 18), np.abs(_read(buf, "<i4", at + 18)))  # negative: top-down rows
    h = np.where(core, _read(buf, "<u2", at + 20), np.abs(_read(buf, "<i4", at + 22)))
    return done, w, h


def _webp_many(buf, at):
    riff = (_read(buf, ">u4", at) == _magic(b"RIFF")) & (_read(buf, ">u4", at + 8) == _magic(b"WEBP"))
    chunk = _read(buf, ">u4", at + 12)
    lossy = riff & (chunk == _magic(b"VP8 ")) & (_read(buf, ">u4", at + 22) & 0xFFFFFF == _magic(b"\x9d\x01\x2a"))
    lossless = riff & (chunk == _magic(b"VP8L")) & (buf[at + 20] == 0x2F)
    extended = riff & (chunk == _magic(b"VP8X"))
    bits = _read(buf, "<u4", at + 21)
    w = np.select([lossy, lossless], [_read(buf, "<u2", at + 26) & 0x3FFF, (bits & 0x3FFF) + 1],
                  (_read(buf, "<u4", at + 24) & 0xFFFFFF) + 1)
    h = np.select([lossy, lossless], [_read(buf, "<u2", at + 28) & 0x3FFF, ((bits >> 14) & 0x3FFF) + 1],
                  (_read(buf, "<u4", at + 26) >> 8) + 1)
    return lossy | lossless | extended, w, h


# What _jpeg does at "FF xx": skip a fill byte, skip a bare marker, read the frame size, give up, or skip a segment
_FILL, _BARE, _SOF, _STOP, _SEGMENT = range(5)
_JPEG_ACTION = np.full(256, _SEGMENT, np.uint8)
_JPEG_ACTION[[0x01, 0xD8, *range(0xD0, 0xD8)]] = _BARE
_JPEG_ACTION[sorted(_SOF_MARKERS)] = _SOF
_JPEG_ACTION[[0xD9, 0xDA]] = _STOP
_JPEG_ACTION[0xFF] = _FILL
_JPEG_STEP = np.array([1, 2, 0, 0, 2])  # bytes skipped besides a segment's length
_JPEG_MAX_STEPS = 64  # markers walked in numpy; longer walks finish in Python


def _jpeg_many(buf, at, lengths):
    """_jpeg for all rows at once: each step moves every still-walking row to its next marker."""
    done = np.zeros(len(at), bool)
    w, h = np.zeros(len(at), np.int64), np.zeros(len(at), np.int64)
    rows = np.flatnonzero(_read(buf, ">u2", at) == 0xFFD8)
    pos = np.full(len(rows), 2, np.int64)
    for _ in range(_JPEG_MAX_STEPS):
        room = pos + 4 <= lengths[rows]
        rows, pos = rows[room], pos[room]  # the rest ran out of data: image_size decides
        if not len(rows):
            break
        word = _read(buf, ">u4", at[rows] + pos)  # FF, marker, segment length
        action = np.where(word >> 24 == 0xFF, _JPEG_ACTION[(word >> 16) & 0xFF], _STOP)
        length = word & 0xFFFF
        found = (action == _SOF) & (pos + 9 <= lengths[rows])
        size = _read(buf, ">u4", at[rows[found]] + pos[found] + 5)
        done[rows[found]], h[rows[found]], w[rows[found]] = True, size >> 16, size & 0xFFFF
        segment = action == _SEGMENT
        walking = (action == _FILL) | (action == _BARE) | (segment & (length >= 2))
        pos = pos + _JPEG_STEP[action] + np.where(segment, length, 0)
        rows, pos = rows[walking], pos[walking]
    return done, w, h


_HAS_DIMS = np.ones(256, bool)  # by format code
_HAS_DIMS[list(_NO_DIMS)] = False
_HEADER_BYTES = {2: 24, 3: 30, 4: 26}  # what _png, _webp and _bmp need before reading
_FAST_MANY = {2: _png_many, 3: _webp_many, 4: _bmp_many}


def image_dims(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, formats: np.ndarray,
               clamp: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Width and height (uint16) of the samples ``buf[starts[i] : starts[i] + lengths[i]]``, as image_size gives.

    ``clamp=False``: int64 sizes, not limited to what the TBL index holds.
    """
    starts, lengths = np.asarray(starts, np.int64), np.asarray(lengths, np.int64)
    w, h = np.zeros(len(starts), np.int64), np.zeros(len(starts), np.int64)
    todo = _HAS_DIMS[formats]
    jpeg = np.flatnonzero((formats == 1) & (lengths >= 2))
    done, w[jpeg], h[jpeg] = _jpeg_many(buf, starts[jpeg], lengths[jpeg])
    todo[jpeg[done]] = False
    for fmt, read in _FAST_MANY.items():
        rows = np.flatnonzero((formats == fmt) & (lengths >= _HEADER_BYTES[fmt]))
        done, w[rows], h[rows] = read(buf, starts[rows])
        todo[rows[done]] = False
    named = np.flatnonzero(todo & (formats != 0) & (lengths > 0))  # cheap first: what cannot reach Pillow
    todo[named[~_STILL_FIRST_BYTE[buf[starts[named]]]]] = False
    for i in np.flatnonzero(todo).tolist():
        w[i], h[i] = image_size(buf[starts[i] : starts[i] + lengths[i]].tobytes(), int(formats[i]), clamp)
    if not clamp:
        return w, h
    fits = (w >= 0) & (w <= _U16) & (h >= 0) & (h <= _U16)  # the index holds u16 dims
    return np.where(fits, w, 0).astype(np.uint16), np.where(fits, h, 0).astype(np.uint16)
