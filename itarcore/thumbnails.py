"""Payload -> small thumbnail, decoded at reduced size where the codec allows, cached on disk.

JPEG is decoded with Pillow's ``draft`` (the DCT scales by 1/2, 1/4 or 1/8 while decoding,
so a 4000-pixel photo never exists at full size); other images use ``reduce`` before the
final ``thumbnail``. A payload that is not an image gets a typed placeholder: its kind
("JSON", "text", "npy", "label", …) and a one-line summary of its value.

The cache holds one small file per (index identity, row, size) under
``cache_root()/thumbs/<identity hash>/``: written atomically, versioned, never trusted
when its header does not match, and safe to delete at any time.
"""
from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import xxhash
from PIL import Image

from .atomic import atomic_write
from .cachedir import cache_root
from .decoders import DecodeError, decode, decode_image, decoder_for, last_part
from .formats.taridx import TaridxIndex
from .keyindex.store import IndexIdentity

CACHE_VERSION = 1
_MAGIC = b"ITHUMB\0"
_HEADER = struct.Struct("<7sBIQHHB")  # magic, version, size, row, width, height, kind length
LOSSLESS_PIXELS = 64 * 64  # thumbnails this small are cached as PNG
SUMMARY_CHARS = 80  # what a placeholder shows of a text, JSON or label value

_KINDS = {"json": "JSON", "text": "text", "label": "label", "array": "array", "pickle": "pickle",
          "table": "table", "bytes": "bytes"}


@dataclass(frozen=True)
class Thumbnail:
    """An RGB(A) image no larger than ``size`` on either side, or a placeholder (``image`` is None)."""

    kind: str  # "image", or the placeholder's kind: "JSON", "text", "npy", "label", "bytes", "error"
    image: Image.Image | None = None
    summary: str = ""  # the placeholder's one-line value, or the image's description

    @property
    def is_image(self) -> bool:
        return self.image is not None


def _fit(img: Image.Image, size: int) -> Image.Image:
    if img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.getbands() or "transparency" in img.info else "RGB")
    img.thumbnail((size, size), Image.Resampling.BILINEAR, reducing_gap=2.0)
    return img


def image_thumbnail(data: bytes, size: int) -> Thumbnail:
    """Decode an image payload at reduced size (JPEG draft mode) and fit it in ``size`` × ``size``."""
    try:
        img = Image.open(io.BytesIO(data))
        described = f"{img.format or 'image'} {img.width}×{img.height} {img.mode}"
        if img.format == "JPEG":
            scale = size / max(img.width, img.height, 1)  # the thumbnail's own size, not a size × size box
            img.draft("RGB", (max(1, int(img.width * scale)), max(1, int(img.height * scale))))  # DCT scales ≤ 1/8
        else:
            factor = min(img.width, img.height) // (2 * size)
            img.load()
            if factor >= 2:
                img = img.reduce(factor)
        img.load()
        return Thumbnail("image", _fit(img, size), described)
    except Image.DecompressionBombError as exc:
        return Thumbnail("error", None, f"refused by Pillow's decompression-bomb guard: {exc}")
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a damaged image, shown as such
        return Thumbnail("error", None, f"not a decodable image ({type(exc).__name__}: {exc})")


def _summary(value: object, description: str) -> str:
    if isinstance(value, str | int | float):
        text = " ".join(str(value).split())
    elif isinstance(value, dict | list):
        import json

        text = json.dumps(value, ensure_ascii=False)
    else:
        text = description
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def make_thumbnail(data: bytes, ext: str, size: int) -> Thumbnail:
    """A thumbnail of one payload: the image reduced to fit ``size``, else a typed placeholder."""
    if decoder_for(ext) is decode_image:
        return image_thumbnail(data, size)
    try:
        item = decode(data, ext)
    except DecodeError as exc:
        return Thumbnail("error", None, str(exc))
    key = last_part(ext)
    if item.kind == "image":  # a decoder that yields pixels (raw arrays, some .npy)
        img = item.value if isinstance(item.value, Image.Image) else None
        if img is not None:
            return Thumbnail("image", _fit(img.copy(), size), item.description)
    kind = key if item.kind == "array" and key else _KINDS.get(item.kind, key or item.kind)
    return Thumbnail(kind, None, _summary(item.value, item.description))


# -- the on-disk cache -------------------------------------------------------------------------------
def _encode(thumb: Thumbnail, row: int, size: int) -> bytes:
    kind = thumb.kind.encode("utf-8")[:255]
    body = io.BytesIO()
    if thumb.image is not None:
        w, h = thumb.image.size
        # JPEG keeps a 100k-sample cache in hundreds of megabytes; alpha and tiny images stay lossless
        lossless = thumb.image.mode == "RGBA" or w * h <= LOSSLESS_PIXELS
        # 4:4:4: chroma subsampling costs colourful detail 3x the error for 30 % fewer bytes
        thumb.image.save(body, "PNG" if lossless else "JPEG", **({} if lossless else {"quality": 92, "subsampling": 0}))
    else:
        w = h = 0
        body.write(thumb.summary.encode("utf-8"))
    return _HEADER.pack(_MAGIC, CACHE_VERSION, size, row, w, h, len(kind)) + kind + body.getvalue()


def _decode(blob: bytes, row: int, size: int) -> Thumbnail | None:
    if len(blob) < _HEADER.size:
        return None
    magic, version, b_size, b_row, w, h, n_kind = _HEADER.unpack_from(blob)
    if magic != _MAGIC or version != CACHE_VERSION or b_size != size or b_row != row:
        return None
    start = _HEADER.size + n_kind
    kind = blob[_HEADER.size : start].decode("utf-8", "replace")
    if not w:
        return Thumbnail(kind, None, blob[start:].decode("utf-8", "replace"))
    try:
        img = Image.open(io.BytesIO(blob[start:]))
        img.load()
    except Exception:  # noqa: BLE001 - a damaged cache file is a miss
        return None
    return Thumbnail(kind, img, "") if img.size == (w, h) else None


class ThumbnailCache:
    """Thumbnails of one index's rows on disk; any read problem is a miss, any write problem is ignored."""

    def __init__(self, index: TaridxIndex, cache_dir: str | os.PathLike[str] | None = None) -> None:
        identity = IndexIdentity.of(index)
        name = xxhash.xxh64(repr(identity).encode("utf-8", "surrogateescape")).hexdigest()
        self.folder = cache_root(cache_dir) / "thumbs" / name
        self.writable = True

    def path_for(self, row: int, size: int) -> Path:
        return self.folder / f"{size}" / f"{row >> 12:x}" / f"{row}.thumb"

    def load(self, row: int, size: int) -> Thumbnail | None:
        try:
            blob = self.path_for(row, size).read_bytes()
        except OSError:
            return None
        return _decode(blob, row, size)

    def store(self, row: int, size: int, thumb: Thumbnail) -> None:
        if not self.writable:
            return
        path = self.path_for(row, size)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(path, durable=False) as fh:
                fh.write(_encode(thumb, row, size))
        except OSError:
            self.writable = False  # a read-only or full cache folder: thumbnails still show, uncached


def row_thumbnail(dataset, row: int, size: int, cache: ThumbnailCache | None = None) -> Thumbnail:
    """The thumbnail of ``dataset``'s ``row`` at ``size``: from ``cache`` if there, else decoded and stored."""
    if cache is not None:
        hit = cache.load(row, size)
        if hit is not None:
            return hit
    from .errors import ItarError

    try:
        data = dataset.read_payload(row)
        ext = dataset.ext_of(row)
    except (ItarError, OSError) as exc:
        return Thumbnail("error", None, str(exc))  # a missing shard is not cached: it may come back
    thumb = make_thumbnail(data, ext, size)
    if cache is not None:
        cache.store(row, size, thumb)
    return thumb
