"""Payload decoders (itarcore.decoders) against Pillow/numpy/json/pickletools and hand-computed values.

The seg and rle layouts follow the reference implementation (glzn ``glzn/data/encoders.py``: ``SEG16`` is a 16-bit
grey PNG, ``SEG24``/``SEG32`` put the most significant byte in R, ``RLE`` is its own header+table+runs layout).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import pickletools
import shlex
import struct
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from itarcore.decoders import Decoded, DecodeError, decode

WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"
IMAGE_EXTS = {"jpg", "png", "webp", "left.jpg"}


def fixture_members() -> list[tuple[str, str, bytes]]:
    out = []
    for shard in sorted(WEBDS.glob("*.tar")):
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    ext = m.name.rsplit("/", 1)[-1].partition(".")[2].lower()
                    out.append((m.name, ext, tf.extractfile(m).read()))
    return out


MEMBERS = fixture_members()


def test_fixture_members_cover_every_kind() -> None:
    exts = {ext for _, ext, _ in MEMBERS}
    assert exts == {"jpg", "cls", "json", "png", "txt", "npy", "seg8", "left.jpg", "webp", ""}


def _check_member(name: str, ext: str, data: bytes) -> None:
    got = decode(data, ext)
    if ext in IMAGE_EXTS:
        truth = Image.open(io.BytesIO(data))
        assert got.kind == "image", name
        assert got.value.size == truth.size
        assert np.array_equal(np.asarray(got.value), np.asarray(truth))
        assert f"{truth.width}×{truth.height}" in got.description
    elif ext == "cls":
        assert (got.kind, got.value) == ("label", int(data)), name
    elif ext == "json":
        assert (got.kind, got.value) == ("json", json.loads(data)), name
    elif ext == "txt":
        assert (got.kind, got.value) == ("text", data.decode("utf-8")), name
    elif ext == "npy":
        truth = np.load(io.BytesIO(data), allow_pickle=False)
        assert got.kind == "array"
        assert got.value.dtype == truth.dtype and np.array_equal(got.value, truth)
        assert str(tuple(truth.shape)) in got.description and str(truth.dtype) in got.description
    elif ext == "seg8":
        truth = np.array(Image.open(io.BytesIO(data)).convert("L"))  # the reference's SEG8 decode
        assert got.kind == "array"
        assert np.array_equal(got.value, truth) and got.value.shape == truth.shape
    elif ext == "":  # the fixtures' extensionless members are text (a README): detected as such
        assert (got.kind, got.value) == ("text", data.decode("utf-8")), name
    else:
        pytest.fail(f"unexpected extension {ext!r} in fixtures")


@pytest.mark.parametrize("shard", sorted(p.name for p in WEBDS.glob("*.tar")))
def test_every_fixture_member_decodes_like_its_library(shard: str) -> None:
    with tarfile.open(WEBDS / shard) as tf:
        members = [m for m in tf.getmembers() if m.isfile()]
        assert members
        for m in members:
            ext = m.name.rsplit("/", 1)[-1].partition(".")[2].lower()
            _check_member(m.name, ext, tf.extractfile(m).read())


def test_descriptions_name_size_and_shape() -> None:
    jpg = next(d for n, e, d in MEMBERS if e == "jpg")
    npy = next(d for n, e, d in MEMBERS if e == "npy")
    assert "24×16" in decode(jpg, "jpg").description
    assert "JPEG" in decode(jpg, "jpg").description
    desc = decode(npy, "npy").description
    assert "(4, 5)" in desc and "float32" in desc


def test_empty_txt_member() -> None:
    empties = [(n, e, d) for n, e, d in MEMBERS if n.endswith("_EMPTY.TXT")]
    assert len(empties) == 3
    for name, ext, data in empties:
        assert ext == "txt" and data == b""
        got = decode(data, ext)
        assert got.kind == "text" and got.value == ""


def test_readme_without_extension_is_text() -> None:
    readmes = [(n, e, d) for n, e, d in MEMBERS if n == "README"]
    assert readmes
    for _, ext, data in readmes:
        assert ext == ""
        got = decode(data, "")
        assert data == b"member without extension\n"
        assert got.kind == "text" and got.value == "member without extension\n"


def test_extensionless_binary_stays_bytes_and_json_is_json() -> None:
    binary = bytes(range(256))
    assert decode(binary, "") == Decoded("bytes", binary, "256 bytes")
    assert decode(b"\x00hello", "").kind == "bytes"  # a NUL: not text
    got = decode(b'  {"labels": ["cat", "dog"]}\n', "")
    assert (got.kind, got.value) == ("json", {"labels": ["cat", "dog"]})
    assert decode("naïve café\n".encode(), "").value == "naïve café\n"


def test_tskit_metadata_bytes_are_json_not_an_array() -> None:
    meta = {"name": "tsk_ind_0", "location": [1.5, 2.0]}
    raw = json.dumps(meta).encode()
    for dtype in ("int8", "uint8"):
        got = decode(np.frombuffer(raw, np.int8).astype(dtype).tobytes(), "kastore",
                     {"dtype": dtype, "length": len(raw), "key": "individuals/metadata"})
        assert (got.kind, got.value) == ("json", meta)
    numbers = np.array([0, 1, 2, 200], np.uint8)  # small numbers (control bytes) stay an array
    got = decode(numbers.tobytes(), "kastore", {"dtype": "uint8", "length": 4})
    assert got.kind == "array" and got.value.tolist() == [0, 1, 2, 200]


def test_seg_masks_say_they_hold_labels() -> None:
    got = decode(_png(np.array([[0, 1], [2, 2]], np.uint8)), "seg8")
    assert got.kind == "array" and got.role == "labels"
    assert decode(np.zeros(3, np.float32).tobytes(), "kastore", {"dtype": "float32"}).role == ""


# -- pickle is never unpickled -------------------------------------------------------------------------------------


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("ext", ["pkl", "pickle"])
def test_pickle_is_shown_never_run(tmp_path: Path, protocol: int, ext: str) -> None:
    # first prove the payload is live: unpickling a twin really runs the command
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Evil(proof), protocol=protocol))
    assert proof.exists()

    marker = tmp_path / "marker"
    payload = pickle.dumps(_Evil(marker), protocol=protocol)
    got = decode(payload, ext)
    assert not marker.exists()
    assert got.kind == "pickle"
    assert "system" in got.value
    out = io.StringIO()
    pickletools.dis(payload, out=out)
    assert got.value == out.getvalue()


def test_object_npy_is_refused_without_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    buf = io.BytesIO()
    np.save(buf, np.array([_Evil(marker), 1], dtype=object), allow_pickle=True)
    with pytest.raises(DecodeError):
        decode(buf.getvalue(), "npy")
    assert not marker.exists()


# -- segmentation masks (reference layouts) ----------------------------------------------------------------------------

def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_seg16_grey16_png() -> None:
    want = np.array([[0, 1, 255], [256, 4097, 65535]], dtype=np.uint16)
    data = _png(want)
    assert Image.open(io.BytesIO(data)).mode.startswith("I")  # really a 16-bit PNG
    got = decode(data, "seg16")
    assert got.kind == "array"
    assert got.value.tolist() == [[0, 1, 255], [256, 4097, 65535]]


def test_seg24_rgb_png_r_is_high_byte() -> None:
    # hand-computed: value = R * 65536 + G * 256 + B  (reference SEG24._fromrgb)
    rgb = np.array([[[1, 2, 3], [0, 0, 9], [255, 255, 255]],
                    [[0, 1, 0], [16, 0, 0], [0, 0, 0]]], dtype=np.uint8)
    want = [[0x010203, 9, 0xFFFFFF], [256, 0x100000, 0]]
    got = decode(_png(rgb), "seg24")
    assert got.kind == "array"
    assert got.value.tolist() == want


def test_seg32_rgba_png_r_is_high_byte() -> None:
    # hand-computed: value = R * 2**24 + G * 2**16 + B * 2**8 + A  (reference SEG32._fromrgba)
    rgba = np.array([[[1, 2, 3, 4], [0, 0, 0, 255], [255, 255, 255, 255]],
                     [[0, 0, 1, 0], [128, 0, 0, 0], [0, 0, 0, 0]]], dtype=np.uint8)
    want = [[0x01020304, 255, 0xFFFFFFFF], [256, 0x80000000, 0]]
    got = decode(_png(rgba), "seg32")
    assert got.kind == "array"
    assert got.value.tolist() == want


@pytest.mark.parametrize("ext", ["seg24", "seg32"])
def test_seg_multi_channel_refuses_grey(ext: str) -> None:
    with pytest.raises(DecodeError):
        decode(_png(np.zeros((2, 2), np.uint8)), ext)


# -- rle (reference layout) --------------------------------------------------------------------------------------------

def _reference_rle(table: list[int], table_dtype: str, dtype_byte: int, shape: tuple[int, ...],
                   runs: list[int], counts: list[int]) -> bytes:
    """glzn RLE layout: 1 dtype byte, shape length u64 BE, table length u64 BE, shape (u64), table, then the
    run table indices followed by the run counts, both as uint8 here."""
    shape_b = np.array(shape, dtype="<u8").tobytes()
    table_b = np.array(table, dtype=table_dtype).tobytes()
    rle_b = np.array([runs, counts], dtype=np.uint8).tobytes()
    return (bytes([dtype_byte]) + len(shape_b).to_bytes(8, "big") + len(table_b).to_bytes(8, "big")
            + shape_b + table_b + rle_b)


def test_rle_reference_layout_uint8() -> None:
    # array [[3, 3, 3, 7], [7, 7, 0, 0]]: runs 3x3, 7x3, 0x2; table [0, 3, 7]; old and new dtype uint8 -> byte 0x00
    data = _reference_rle([0, 3, 7], "<u1", 0x00, (2, 4), [1, 2, 0], [3, 3, 2])
    got = decode(data, "rle")
    assert got.kind == "array"
    assert got.value.tolist() == [[3, 3, 3, 7], [7, 7, 0, 0]]


def test_rle_reference_layout_int16() -> None:
    # int16 values, uint8 runs: dtype byte = ((log2(16) - 3) << 1 | signed) << 4 | 0 = 0x30
    data = _reference_rle([-300, 5], "<i2", 0x30, (5,), [1, 0], [2, 3])
    got = decode(data, "rle")
    assert got.value.tolist() == [5, 5, -300, -300, -300]
    assert got.value.dtype == np.int16


# -- raw pixels, typed arrays, mat ---------------------------------------------------------------------------------------

def test_raw_u8_with_width_height() -> None:
    data = bytes(range(24))
    rgb = decode(data, "raw_u8", {"width": 4, "height": 2})
    assert rgb.kind == "image" and rgb.value.size == (4, 2) and rgb.value.mode == "RGB"
    assert np.array_equal(np.asarray(rgb.value), np.arange(24, dtype=np.uint8).reshape(2, 4, 3))
    grey = decode(data, "raw_u8", {"width": 6, "height": 4})
    assert grey.value.mode == "L"
    assert np.array_equal(np.asarray(grey.value), np.arange(24, dtype=np.uint8).reshape(4, 6))
    with pytest.raises(DecodeError):
        decode(data, "raw_u8")
    with pytest.raises(DecodeError):
        decode(data, "raw_u8", {"width": 5, "height": 5})


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                   "float32", "float64"])
def test_kastore_typed_arrays(dtype: str) -> None:
    want = np.array([0, 1, 2, 100, 7], dtype=dtype)
    raw = want.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    got = decode(raw, "kastore", {"dtype": dtype, "key": "nodes/time"})
    assert got.kind == "array"
    assert got.value.dtype.kind == want.dtype.kind and got.value.dtype.itemsize == want.dtype.itemsize
    assert got.value.tolist() == want.tolist()
    assert "nodes/time" in got.description


def test_kastore_bad_length_or_dtype() -> None:
    with pytest.raises(DecodeError):
        decode(b"\x00" * 7, "kastore", {"dtype": "int32"})
    with pytest.raises(DecodeError):
        decode(b"\x00" * 8, "kastore", {})


def test_mat_if_scipy() -> None:
    sio = pytest.importorskip("scipy.io")
    want = np.arange(6, dtype=np.float64).reshape(2, 3)
    buf = io.BytesIO()
    sio.savemat(buf, {"x": want})
    got = decode(buf.getvalue(), "mat")
    assert got.kind == "array" and np.array_equal(got.value, want)
    assert "(2, 3)" in got.description


# -- hostile and broken images ------------------------------------------------------------------------------------------

def _png_header_only(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_png_claiming_huge_size_is_refused() -> None:
    data = _png_header_only(100_000, 100_000)
    with pytest.raises(Image.DecompressionBombError):  # Pillow itself calls it a bomb
        Image.open(io.BytesIO(data))
    with pytest.raises(DecodeError):
        decode(data, "png")


def test_bomb_guard_stays_on(monkeypatch: pytest.MonkeyPatch) -> None:
    jpg = next(d for n, e, d in MEMBERS if e == "jpg")
    assert decode(jpg, "jpg").kind == "image"
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)  # 24*16 = 384 > 2 * 10: Pillow raises
    with pytest.raises(DecodeError, match="(?i)bomb"):
        decode(jpg, "jpg")


@pytest.mark.parametrize("ext", ["jpg", "png", "webp", "left.jpg"])
def test_garbage_image_bytes(ext: str) -> None:
    with pytest.raises(DecodeError):
        decode(b"this is not an image at all" * 4, ext)


def test_truncated_jpeg() -> None:
    jpg = next(d for n, e, d in MEMBERS if e == "jpg")
    with pytest.raises(DecodeError):
        decode(jpg[: len(jpg) // 2], "jpg")


def test_bad_npy_payload() -> None:
    with pytest.raises(DecodeError):
        decode(b"\x93NUMPY garbage", "npy")


@pytest.mark.parametrize("ext,data,text,why", [
    ("cls", b"seven", "seven", "not an ASCII integer"),
    ("cls", b"\xff\xfe7", "\ufffd\ufffd7", "not an ASCII integer"),  # invalid UTF-8 (the fuzz find)
    ("json", b"{not json", "{not json", "invalid JSON"),
    ("json", b'{"a": "\xff"}', '{"a": "\ufffd"}', "invalid JSON"),
])
def test_text_payloads_that_do_not_parse_show_as_text(ext: str, data: bytes, text: str, why: str) -> None:
    """Labels and JSON never fail to preview: they fall back to their text, undecodable bytes replaced."""
    got = decode(data, ext)
    assert (got.kind, got.value) == ("text", text)
    assert why in got.description and "shown as text" in got.description
