"""Payload bytes -> Python values, chosen by extension, for previews and the CLI.

Every decoder returns a :class:`Decoded`: a ``kind`` the GUI dispatches on, the
value, and a short description ("JPEG 24×16 RGB", "float32 array (4, 5)").
Pickle is never unpickled: it is shown as a disassembly. Pillow's
decompression-bomb guard stays on. Text payloads (labels, JSON, text) never fail:
what does not parse is shown as text, undecodable bytes replaced. Other undecodable
data raises :class:`DecodeError`, and :func:`decode` raises nothing else, whatever a
third-party decoder (Pillow, numpy, scipy, pyarrow) raises on a damaged payload.
"""
from __future__ import annotations

import io
import json
import pickletools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from .errors import ItarError

MAX_TEXT_PREVIEW = 4 << 20  # decode at most this much text for a preview


class DecodeError(ItarError):
    """A payload could not be decoded as its extension says."""


@dataclass
class Decoded:
    kind: str  # image | json | text | array | label | pickle | table | bytes
    value: Any
    description: str
    role: str = ""  # "labels": an integer array of class ids (a segmentation mask), one colour per id


def looks_like_text(data: bytes | memoryview, sample: int = 4096) -> bool:
    """UTF-8 without NULs or other control bytes besides tab, newline, CR and form feed (a README)."""
    head = bytes(data[:sample])
    if not head or b"\0" in head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut at the sample's end
            return False
        text = head[:exc.start].decode("utf-8")
    controls = sum(1 for c in text if ord(c) < 32 and c not in "\t\n\r\f")
    return controls == 0


def _text_or_json(data: bytes | memoryview, meta: dict | None = None) -> Decoded:
    """Text whose content is JSON (``{`` or ``[`` first) shown as JSON, other text as text."""
    if bytes(data[:64]).lstrip()[:1] in (b"{", b"["):
        got = decode_json(data, meta)
        if got.kind == "json":
            return got
    return decode_text(data, meta)


def _image_extensions() -> set[str]:
    Image.init()
    return {ext.lstrip(".").lower() for ext in Image.registered_extensions()}


IMAGE_EXTENSIONS = _image_extensions()


def last_part(ext: str) -> str:
    """Decoder key of a (possibly multi-dot) extension: 'left.jpg' -> 'jpg'."""
    return ext.rsplit(".", 1)[-1].lower()


def _describe_image(img: Image.Image) -> str:
    return f"{img.format or 'image'} {img.width}×{img.height} {img.mode}"


def decode_image(data: bytes, meta: dict | None = None) -> Decoded:
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Image.DecompressionBombError as exc:
        raise DecodeError(f"image refused by Pillow's decompression-bomb guard: {exc}") from None
    except UnidentifiedImageError:
        raise DecodeError(f"not a recognised image ({len(data):,} bytes starting {bytes(data[:8]).hex(' ')})") from None
    return Decoded("image", img, _describe_image(img))


def decode_raw_pixels(data: bytes, meta: dict | None = None) -> Decoded:
    meta = meta or {}
    width, height = int(meta.get("width", 0)), int(meta.get("height", 0))
    if width <= 0 or height <= 0:
        raise DecodeError("raw pixels need a width and height")
    channels = int(meta.get("channels") or (len(data) // (width * height) if width * height else 0))
    modes = {1: "L", 3: "RGB", 4: "RGBA"}
    if channels not in modes or len(data) != width * height * channels:
        raise DecodeError(f"{len(data)} bytes do not make a {width}×{height} image with 1, 3 or 4 channels")
    img = Image.frombytes(modes[channels], (width, height), bytes(data))
    return Decoded("image", img, f"raw u8 {width}×{height} {modes[channels]}")


def _as_text(data: bytes, why: str) -> Decoded:
    """The fallback of every text payload that does not parse: its text, bad bytes replaced, and why."""
    shown = decode_text(data)
    return Decoded("text", shown.value, f"{why}; shown as text")


def decode_cls(data: bytes, meta: dict | None = None) -> Decoded:
    raw = bytes(data).strip() if len(data) <= 64 else b""
    if re.fullmatch(rb"[+-]?[0-9]+", raw):
        return Decoded("label", int(raw), f"class label {int(raw)}")
    return _as_text(data, "class label is not an ASCII integer")


def decode_json(data: bytes, meta: dict | None = None) -> Decoded:
    try:
        value = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return _as_text(data, f"invalid JSON ({exc})")
    what = type(value).__name__
    size = f", {len(value)} entries" if isinstance(value, (list, dict)) else ""
    return Decoded("json", value, f"JSON {what}{size}")


def decode_text(data: bytes, meta: dict | None = None) -> Decoded:
    part = bytes(data[:MAX_TEXT_PREVIEW])
    text = part.decode("utf-8", "replace")
    cut = " (first 4 MiB)" if len(data) > MAX_TEXT_PREVIEW else ""
    if not text:
        return Decoded("text", "", "empty text")
    return Decoded("text", text, f"UTF-8 text, {text.count(chr(10)) + 1} lines{cut}")


def _describe_array(arr: np.ndarray, what: str = "array") -> str:
    return f"{arr.dtype} {what} {tuple(arr.shape)}"


def decode_npy(data: bytes, meta: dict | None = None) -> Decoded:
    try:
        arr = np.load(io.BytesIO(bytes(data)), allow_pickle=False)
    except ValueError as exc:
        raise DecodeError(f"not a plain .npy array (object arrays are refused): {exc}") from None
    return Decoded("array", arr, _describe_array(arr))


def _png_channels(data: bytes) -> np.ndarray:
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except UnidentifiedImageError:
        raise DecodeError("segmentation mask is not a PNG") from None
    return np.asarray(img)


def _decode_seg(bits: int) -> Callable[[bytes, dict | None], Decoded]:
    def decode(data: bytes, meta: dict | None = None) -> Decoded:
        pixels = _png_channels(data)
        if bits == 8:
            mask = pixels if pixels.ndim == 2 else pixels[..., 0]
            mask = mask.astype(np.uint8)
        elif bits == 16 and pixels.dtype != np.uint8 and pixels.ndim == 2:
            mask = pixels.astype(np.uint16)  # a true 16-bit grey PNG
        else:
            if pixels.ndim != 3:
                raise DecodeError(f"seg{bits} needs a multi-channel PNG, found shape {pixels.shape}")
            n_ch = {16: 2, 24: 3, 32: 4}[bits]
            if pixels.shape[2] < n_ch:
                raise DecodeError(f"seg{bits} needs {n_ch} channels, found {pixels.shape[2]}")
            mask = np.zeros(pixels.shape[:2], np.uint32)
            for ch in range(n_ch):  # as the reference packs them: R is the high byte, e.g. R*65536 + G*256 + B
                mask |= pixels[..., ch].astype(np.uint32) << np.uint32(8 * (n_ch - 1 - ch))
        return Decoded("array", mask, _describe_array(mask, f"seg{bits} mask"), role="labels")

    return decode


def _rle_dtype(code: int) -> np.dtype:
    """The reference's 4-bit dtype code: (log2(bits) - 3) << 1 | signed."""
    bits = 8 << (code >> 1)
    if bits > 64:
        raise DecodeError(f"RLE dtype code {code} names a {bits}-bit integer")
    return np.dtype(f"<{'i' if code & 1 else 'u'}{bits // 8}")


def decode_rle(data: bytes, meta: dict | None = None) -> Decoded:
    """The reference's run-length layout (glzn encoders).

    1 byte: value dtype code (high nibble) and run dtype code (low nibble); u64 BE byte
    length of the shape and of the value table; the shape (u64); the value table; then
    the runs as table indices followed by run lengths, both of the run dtype.
    """
    raw = bytes(data)
    if len(raw) < 17:
        raise DecodeError(f"RLE payload of {len(raw)} bytes is shorter than its 17-byte header")
    value_dt, run_dt = _rle_dtype(raw[0] >> 4), _rle_dtype(raw[0] & 0x0F)
    shape_len = int.from_bytes(raw[1:9], "big")
    table_len = int.from_bytes(raw[9:17], "big")
    body = len(raw) - 17
    if shape_len % 8 or table_len % value_dt.itemsize or shape_len + table_len > body:
        raise DecodeError(f"RLE shape ({shape_len} bytes) and table ({table_len} bytes) do not fit the payload")
    shape = tuple(int(d) for d in np.frombuffer(raw, "<u8", shape_len // 8, 17))
    table = np.frombuffer(raw, value_dt, table_len // value_dt.itemsize, 17 + shape_len)
    runs_raw = raw[17 + shape_len + table_len :]
    if len(runs_raw) % (2 * run_dt.itemsize):
        raise DecodeError(f"RLE run section of {len(runs_raw)} bytes is not whole (index, count) pairs")
    runs = np.frombuffer(runs_raw, run_dt).reshape(2, -1)
    index, counts = runs[0].astype(np.int64), runs[1].astype(np.int64)
    total = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(index) and int(index.max()) >= len(table):
        raise DecodeError(f"RLE run points at value {int(index.max())} of a {len(table)}-entry table")
    if int(counts.sum()) != total or total > 1 << 28:
        raise DecodeError(f"RLE runs cover {int(counts.sum())} elements, the shape {shape} needs {total}")
    arr = np.repeat(table[index], counts).reshape(shape)
    return Decoded("array", arr, _describe_array(arr, f"run-length array ({len(index)} runs)"))


def decode_mat(data: bytes, meta: dict | None = None) -> Decoded:
    try:
        from scipy.io import loadmat
    except ImportError:
        raise DecodeError("MATLAB files need scipy: pip install 'itar-browser[mat]'") from None
    content = loadmat(io.BytesIO(bytes(data)))
    arrays = {k: v for k, v in content.items() if not k.startswith("__")}
    if len(arrays) == 1:
        (name, arr), = arrays.items()
        if isinstance(arr, np.ndarray) and arr.dtype != object:
            return Decoded("array", arr, _describe_array(arr, f"MATLAB '{name}'"))
    summary = {k: f"{getattr(v, 'dtype', type(v).__name__)} {getattr(v, 'shape', '')}" for k, v in arrays.items()}
    return Decoded("json", summary, f"MATLAB file, {len(arrays)} variables")


def decode_pickle(data: bytes, meta: dict | None = None) -> Decoded:
    out = io.StringIO()
    try:
        pickletools.dis(bytes(data), out=out)
        text = out.getvalue()
    except Exception as exc:  # noqa: BLE001 - any opcode error ends the listing
        text = out.getvalue() + f"\n(disassembly stopped: {exc})"
    return Decoded("pickle", text, f"pickle, {len(data):,} bytes (shown as opcodes, never unpickled)")


def decode_parquet(data: bytes, meta: dict | None = None, max_rows: int = 50) -> Decoded:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return Decoded("text", "Parquet preview needs pyarrow: pip install 'itar-browser[parquet]'",
                       f"parquet, {len(data):,} bytes (pyarrow not installed)")
    import pyarrow as pa

    pf = pq.ParquetFile(pa.BufferReader(bytes(data)))
    table = pf.read_row_groups(list(range(min(pf.num_row_groups, 4)))).slice(0, max_rows)
    note = ""
    try:
        rows = table.to_pylist()
    except UnicodeDecodeError:  # a string column holds bytes that are not UTF-8: show its values as bytes
        as_bytes = [pa.field(f.name, pa.binary()) if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                    else f for f in table.schema]
        rows, note = table.cast(pa.schema(as_bytes)).to_pylist(), " (text that is not UTF-8 shown as bytes)"
    value = {"schema": str(pf.schema_arrow), "rows": rows, "num_rows": pf.metadata.num_rows,
             "columns": table.column_names}
    return Decoded("table", value,
                   f"parquet, {pf.metadata.num_rows:,} rows × {pf.metadata.num_columns} columns{note}")


def decode_typed_array(data: bytes, meta: dict | None = None) -> Decoded:
    """A bare little-endian array whose dtype comes with the payload (kastore items)."""
    meta = meta or {}
    try:
        dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    except (KeyError, TypeError) as exc:
        raise DecodeError(f"array payload without a usable dtype: {exc}") from None
    if len(data) % dtype.itemsize:
        raise DecodeError(f"{len(data)} bytes are not a whole number of {dtype} elements")
    if dtype.itemsize == 1 and dtype.kind in "iu" and looks_like_text(data, len(data)):
        return _text_or_json(data, meta)  # tskit keeps metadata, schemas and provenance as JSON in int8/uint8
    arr = np.frombuffer(bytes(data), dtype)
    key = meta.get("key")
    return Decoded("array", arr, _describe_array(arr, f"array '{key}'" if key else "array"))


def decode_bytes(data: bytes, meta: dict | None = None) -> Decoded:
    return Decoded("bytes", bytes(data), f"{len(data):,} bytes")


DECODERS: dict[str, Callable[..., Decoded]] = {
    "cls": decode_cls,
    "json": decode_json,
    "txt": decode_text,
    "text": decode_text,
    "npy": decode_npy,
    "seg8": _decode_seg(8),
    "seg16": _decode_seg(16),
    "seg24": _decode_seg(24),
    "seg32": _decode_seg(32),
    "rle": decode_rle,
    "mat": decode_mat,
    "pkl": decode_pickle,
    "pickle": decode_pickle,
    "parquet": decode_parquet,
    "raw_u8": decode_raw_pixels,
    "kastore": decode_typed_array,
}


def decoder_for(ext: str) -> Callable[..., Decoded]:
    ext = ext.lower()
    if ext in DECODERS:
        return DECODERS[ext]
    key = last_part(ext)
    if key in DECODERS:
        return DECODERS[key]
    if key in IMAGE_EXTENSIONS:
        return decode_image
    return decode_bytes


def decode(data: bytes | memoryview, ext: str, meta: dict | None = None) -> Decoded:
    """Decode a payload by its extension (multi-dot extensions use their last part).

    Returns a :class:`Decoded` or raises :class:`DecodeError`, nothing else: the decoders
    call third-party parsers that raise whatever a damaged payload makes them raise.
    """
    decoder = decoder_for(ext)
    if not data and decoder not in (decode_bytes, decode_text, decode_json):
        return Decoded("bytes", b"", "empty payload")
    if decoder is decode_bytes and looks_like_text(data):  # README, LICENSE, a .cfg: no extension says text
        decoder = _text_or_json
    try:
        return decoder(data, meta)
    except DecodeError:
        raise
    except Exception as exc:  # any failure of a decoder means "cannot decode this payload"
        what = last_part(ext) or "untyped"
        raise DecodeError(f"not a decodable {what} payload ({type(exc).__name__}: {exc})") from exc
