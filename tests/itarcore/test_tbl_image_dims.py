"""TBL image dimensions: the fast header parsers and the batch route against Pillow."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from itarcore.formats import tbl_dims
from itarcore.formats.tbl_dims import image_dims, image_size, pil_size
from itarcore.formats.tbl_write import format_for_name, formats_for_name_fields

DATA = Path(__file__).parents[1] / "data" / "tbl"
V2_FIXTURES = ["v2_plain.tbl", "v2_lz4_meta.tbl", "v2_empty.tbl"]
ALL_FIXTURES = ["v1_from_v1code.tbl", "v1_independent.tbl", *V2_FIXTURES]

def test_image_dims_fast_parsers_agree_with_pillow(tmp_path):
    cases = []
    for fmt, code, mode, size in [("JPEG", 1, "RGB", (33, 17)), ("PNG", 2, "RGBA", (5, 300)),
                                  ("WEBP", 3, "RGB", (40, 9)), ("BMP", 4, "L", (7, 8)), ("TIFF", 5, "RGB", (3, 4))]:
        path = tmp_path / f"x.{fmt.lower()}"
        Image.new(mode, size, 90).save(path, fmt)
        cases.append((path.read_bytes(), code, size))
    webp_lossless = tmp_path / "l.webp"
    Image.new("RGB", (123, 45)).save(webp_lossless, "WEBP", lossless=True)
    cases.append((webp_lossless.read_bytes(), 3, (123, 45)))
    progressive = tmp_path / "p.jpg"
    Image.new("RGB", (64, 48)).save(progressive, "JPEG", progressive=True)
    cases.append((progressive.read_bytes(), 1, (64, 48)))
    for data, code, size in cases:
        assert image_size(data, code) == size == pil_size(data)
    assert image_size(b"not an image", 1) == (0, 0)
    assert image_size(b"\x00" * 30, 8) == (0, 0)  # RAW_U8 has no header


def test_formats_for_name_fields_match_format_for_name():
    rng = np.random.default_rng(3)
    pieces = [b"a", b"Z", b"/", b".", b".", b"jpg", b"JPEG", b"Tif", b"tiff", b"png", b"WebP", b"bmp", b"mp4", b"AVI",
              b"\xe2\x84\xaa", b"\xc4\xb0", b"\xff", b"x" * 40]  # Kelvin sign and dotted I lower-case oddly
    fields = np.zeros((3000, 100), np.uint8)
    expected = []
    for row in range(len(fields)):
        raw = b"".join(pieces[i] for i in rng.integers(0, len(pieces), rng.integers(0, 12)))[:100]
        if row % 7 == 0:  # a name that fills the whole field, so no NUL ends it
            raw = (b"d/" * 50)[: 100 - 4] + b".Png"
        fields[row, : len(raw)] = np.frombuffer(raw, np.uint8)
        if row % 5 == 0 and len(raw) < 95:
            fields[row, len(raw) + 1 : len(raw) + 5] = np.frombuffer(b".jpg", np.uint8)  # bytes after the NUL
        expected.append(format_for_name(raw.decode("utf-8", "surrogateescape")))
    assert formats_for_name_fields(fields).tolist() == expected
    assert set(expected) == set(range(8))


def image_bytes(fmt: str, size: tuple[int, int], **options) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (9, 99, 199)).save(out, fmt, **options)
    return out.getvalue()


def odd_headers() -> list[tuple[bytes, int]]:
    """Valid images plus the header variants and damage each fast parser must treat exactly like image_size."""
    valid = [(image_bytes("JPEG", (33, 17)), 1), (image_bytes("JPEG", (64, 48), progressive=True), 1),
             (image_bytes("PNG", (5, 300)), 2), (image_bytes("WEBP", (40, 9)), 3),
             (image_bytes("WEBP", (123, 45), lossless=True), 3), (image_bytes("BMP", (7, 8)), 4),
             (image_bytes("TIFF", (3, 4)), 5)]
    jpeg, png, bmp = valid[0][0], valid[2][0], valid[5][0]
    out = list(valid)
    out.append((jpeg[:2] + b"\xff\xff\xff" + jpeg[2:], 1))  # fill bytes before a marker
    out.append((jpeg[:2] + b"\xff\xd0\xff\x01" + jpeg[2:], 1))  # markers without a length
    out.append((jpeg[:2] + b"\xff\xe1\x01\x00" + bytes(254) + jpeg[2:], 1))  # one more APP segment
    out.append((jpeg[:2] + b"\xff\xd9" + jpeg[2:], 1))  # end of image before any frame
    out.append((jpeg[:2] + b"\xff\xe0\x00\x01" + jpeg[2:], 1))  # segment length < 2
    out.append((jpeg[:2] + b"\xff\xfe\x00\x02" * 70 + jpeg[2:], 1))  # more segments than the numpy walk takes
    out.append((png[:16] + (70_000).to_bytes(4, "big") + png[20:], 2))  # wider than the u16 index holds
    out.append((bmp[:22] + (-8).to_bytes(4, "little", signed=True) + bmp[26:], 4))  # top-down rows
    out.append((bmp[:14] + (12).to_bytes(4, "little") + (300).to_bytes(2, "little") + b"\x07\x00" + bmp[22:], 4))
    out.append((b"RIFF\x00\x00\x00\x00WEBPVP8X" + bytes(8) + b"\x10\x00\x00\x20\x00\x00", 3))
    rng = np.random.default_rng(11)
    for data, code in valid * 30:  # truncations and flipped header bytes
        cut = bytearray(data[: int(rng.integers(0, 40))] if rng.random() < 0.3 else data)
        for at in rng.integers(0, min(len(cut), 40) or 1, int(rng.integers(0, 3))):
            if at < len(cut):
                cut[at] = int(rng.integers(0, 256))
        out.append((bytes(cut), code))
    return out + [(data, code) for data, _ in valid for code in (0, 6, 8)]  # unknown, video, raw pixels


def dims_of(samples: list[tuple[bytes, int]]) -> list[tuple[int, int]]:
    gap = b"\xff" * 5  # samples sit apart in the buffer, as in a tar
    buf = np.frombuffer(b"".join(d + gap for d, _ in samples), np.uint8)
    lengths = np.array([len(d) for d, _ in samples])
    starts = np.concatenate(([0], np.cumsum(lengths + len(gap))[:-1]))
    w, h = image_dims(buf, starts, lengths, np.array([c for _, c in samples], np.uint8))
    return list(zip(w.tolist(), h.tolist()))


@pytest.mark.filterwarnings("ignore::UserWarning:PIL.TiffImagePlugin")  # Pillow on the damaged TIFFs
def test_image_dims_batch_matches_image_size_and_pillow(monkeypatch):
    samples = odd_headers()
    dims = dims_of(samples)
    assert dims == [image_size(d, c) for d, c in samples]
    w, h = (np.array(v) for v in zip(*dims))
    assert (w[:7].tolist(), h[:7].tolist()) == ([33, 64, 5, 40, 123, 7, 3], [17, 48, 300, 9, 45, 8, 4])
    assert [(int(a), int(b)) for a, b in zip(w[:7], h[:7])] == [pil_size(d) for d, _ in samples[:7]]
    assert image_dims(np.zeros(0, np.uint8), [], [], np.zeros(0, np.uint8))[0].tolist() == []
    # the numpy readers decide the usual headers themselves, without the one-by-one parser
    fast = [s for i, s in enumerate(samples[:17]) if s[1] != 5 and i not in (10, 11, 12)]
    expected = [image_size(d, c) for d, c in fast]
    monkeypatch.setattr(tbl_dims, "image_size", None)
    assert dims_of(fast) == expected




def test_mislabelled_images_get_pillows_size_and_non_images_skip_pillow(monkeypatch):
    """A PNG or GIF named .jpg still gets its size; bytes no still-image format starts with never reach Pillow."""
    png, gif = image_bytes("PNG", (21, 13)), image_bytes("GIF", (8, 5))
    ppm = image_bytes("PPM", (6, 7))  # an exotic format: sized when its name says nothing, not as a "JPEG"
    noise = np.random.default_rng(5).integers(0, 256, 4000, dtype=np.uint8)
    noise[0] = ord("x")  # not a first byte of any still-image format
    samples = [(png, 1), (gif, 1), (ppm, 1), (ppm, 0), (noise.tobytes(), 1), (b"", 1)]
    expected = [(21, 13), (8, 5), (0, 0), (6, 7), (0, 0), (0, 0)]
    assert [image_size(d, c) for d, c in samples] == expected == dims_of(samples)
    asked = []
    real = tbl_dims.pil_size
    monkeypatch.setattr(tbl_dims, "pil_size", lambda data, formats=None: (asked.append(bytes(data[:1])),
                                                                          real(data, formats))[1])
    assert image_size(noise.tobytes(), 1) == (0, 0) and dims_of([(noise.tobytes(), 1)] * 50) == [(0, 0)] * 50
    assert asked == []
    assert dims_of([(png, 1)]) == [(21, 13)] and asked == [b"\x89"]
