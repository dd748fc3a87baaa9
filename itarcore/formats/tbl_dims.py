"""Image width × height from the first bytes of a file, for TBL v2 index entries.

PNG, BMP, WebP and JPEG keep their size at known places in their headers, so reading
it there costs a few microseconds; anything else (TIFF, odd variants) goes to Pillow,
which parses headers lazily without decoding pixels. Non-images get (0, 0).
"""
from __future__ import annotations

import io
import struct
from collections.abc import Sequence

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


def pil_size(data: bytes | memoryview) -> tuple[int, int]:
    """(width, height) through Pillow's lazy header parse; (0, 0) for non-images."""
    try:
        with Image.open(io.BytesIO(data)) as im:
            return im.size
    except Exception:  # noqa: BLE001 - Pillow raises many unrelated types for non-images; they just have no size
        return 0, 0


def image_size(data: bytes, fmt: int = 0) -> tuple[int, int]:
    """(width, height) of one image; ``fmt`` is a TBL format code picking the fast header parser."""
    parse = _FAST.get(int(fmt))
    found = parse(data) if parse is not None else None
    if found is None:
        if fmt in (0, 6, 7, 8):  # unknown, video and raw pixels: Pillow would only guess
            return (0, 0) if fmt else pil_size(data)
        found = pil_size(data)
    w, h = found
    return (w, h) if 0 <= w <= _U16 and 0 <= h <= _U16 else (0, 0)  # the index holds u16 dims


def image_dims(datas: Sequence[bytes], formats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Width and height arrays (uint16) for a batch of samples."""
    dims = np.array([image_size(d, f) for d, f in zip(datas, formats.tolist())], dtype=np.int64).reshape(-1, 2)
    return dims[:, 0].astype(np.uint16), dims[:, 1].astype(np.uint16)
