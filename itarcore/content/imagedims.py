"""Image width and height of many payloads from their headers, without decoding pixels.

The header parsers are the TBL converter's (:mod:`itarcore.formats.tbl_dims`): JPEG, PNG,
WebP and BMP read in numpy for a whole batch at once (a JPEG's markers walked to its
frame header), anything else Pillow reads opened lazily (header only). A payload that
is not a readable image gets (0, 0).
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..decoders import last_part
from ..formats.tbl_dims import image_dims
from ..formats.tbl_write import EXT_FORMATS


def _readable_image_extensions() -> frozenset[str]:
    Image.init()
    return frozenset(ext.lstrip(".").lower() for ext, fmt in Image.registered_extensions().items()
                     if fmt in Image.OPEN)


IMAGE_EXTENSIONS = _readable_image_extensions()


def is_image_extension(ext: str) -> bool:
    """True for extensions whose last part Pillow can read ('jpg', 'left.jpg', 'png', …)."""
    return last_part(ext) in IMAGE_EXTENSIONS


def image_extension_mask(extensions: list[str]) -> np.ndarray:
    """Per extension id: is it an image Pillow can read (never empty, so indexing it by id 0 works)."""
    return np.array([is_image_extension(e) for e in extensions] or [False], bool)


def format_codes(extensions: list[str]) -> np.ndarray:
    """The TBL format code of each extension (which header parser to try first; 0: Pillow decides)."""
    return np.array([EXT_FORMATS.get(last_part(e), 0) for e in extensions] or [0], np.uint8)


def image_sizes(buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(n, 2) width and height of the payloads ``buf[starts:starts+sizes]``; (0, 0) where unreadable."""
    width, height = image_dims(buf, starts, sizes, codes, clamp=False)
    return np.stack([width, height], axis=1)
