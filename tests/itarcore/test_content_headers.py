"""Image sizes from headers and size percentiles, against Pillow's full open and numpy's percentiles."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from itarcore.content.dims import EDGES, dims_bins
from itarcore.content.imagedims import format_codes, image_sizes, is_image_extension
from itarcore.content.sizehist import EXACT, SizeHistograms, bin_floor, size_bins

IMAGES_TAR = Path(__file__).resolve().parents[1] / "data" / "tbl" / "images.tar"


def encoded(fmt: str, size: tuple[int, int], mode: str = "RGB", **options: object) -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, (10, 200, 30, 128)[: len(mode)] if mode != "P" else 3).save(out, fmt, **options)
    return out.getvalue()


def sizes_of(payloads: list[bytes], exts: list[str]) -> list[tuple[int, int]]:
    """image_sizes over one buffer holding every payload, as the stats pass calls it."""
    buf = np.frombuffer(b"".join(payloads) + b"\0", np.uint8)
    lengths = np.array([len(p) for p in payloads])
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    return [tuple(d) for d in image_sizes(buf, starts, lengths, format_codes(exts)).tolist()]


def test_fixture_images_match_pillow() -> None:
    with tarfile.open(IMAGES_TAR) as tf:
        members = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isreg()]
    assert len(members) == 12
    exts = [name.partition(".")[2] for name, _ in members]
    assert all(is_image_extension(e) for e in exts)
    assert sizes_of([d for _, d in members], exts) == [Image.open(io.BytesIO(d)).size for _, d in members]


GENERATED = {
    "jpeg-progressive": (encoded("JPEG", (301, 17), progressive=True), "jpg"),
    "jpeg-exif": (encoded("JPEG", (5, 999), exif=Image.Exif().tobytes() + b"\0" * 4000), "jpeg"),
    "png-wide": (encoded("PNG", (70000, 1), mode="L"), "png"),
    "gif": (encoded("GIF", (33, 44), mode="P"), "gif"),
    "bmp": (encoded("BMP", (12, 7)), "bmp"),
    "webp-lossless": (encoded("WEBP", (640, 3), lossless=True), "webp"),
    "webp-lossy": (encoded("WEBP", (100, 200), quality=50), "webp"),
    "webp-alpha": (encoded("WEBP", (9, 9), mode="RGBA", quality=50), "left.webp"),
    "tiff-via-pillow": (encoded("TIFF", (21, 8)), "tif"),
    "png-named-jpg": (encoded("PNG", (13, 31)), "jpg"),
}


def test_generated_images_match_pillow_in_one_batch() -> None:
    payloads, exts = zip(*GENERATED.values())
    assert sizes_of(list(payloads), list(exts)) == [Image.open(io.BytesIO(p)).size for p in payloads]


@pytest.mark.parametrize("data", [b"", b"\xff\xd8\xff", b"\xff\xd8\xff\xe0\x00\x02\xff\xda", b"\x89PNG\r\n\x1a\n",
                                  b"GIF89a", b"RIFF\0\0\0\0WEBPVP8 ", b"plain text, not an image"])
def test_damaged_headers_are_unreadable(data: bytes) -> None:
    assert sizes_of([data, encoded("PNG", (3, 4))], ["jpg", "png"]) == [(0, 0), (3, 4)]


def test_non_images_are_not_image_extensions() -> None:
    assert [e for e in ("jpg", "left.jpg", "PNG", "cls", "json", "npy", "seg8") if is_image_extension(e)] == \
        ["jpg", "left.jpg", "PNG"]


def test_dims_bins_follow_the_edges() -> None:
    pixels_list = (1, 2, 3, 4, 5, 100, 1023, 1024, 65535, 65536, 1 << 20)
    for pixels, b in zip(pixels_list, dims_bins(np.array(pixels_list)).tolist()):
        assert EDGES[b] <= pixels and (pixels < EDGES[b + 1] or b == len(EDGES) - 2), pixels


def test_size_bins_bracket_every_size() -> None:
    rng = np.random.default_rng(5)
    sizes = np.concatenate([np.arange(0, 5000), rng.integers(0, 1 << 62, 20000, dtype=np.uint64),
                            (np.uint64(1) << np.arange(11, 63, dtype=np.uint64)),
                            (np.uint64(1) << np.arange(11, 63, dtype=np.uint64)) - np.uint64(1)]).astype(np.uint64)
    bins = size_bins(sizes)
    floor = bin_floor(bins)
    assert (floor <= sizes).all()
    assert (sizes - floor <= floor // 128).all()  # within one sub-bin (1/128 of an octave)
    assert (floor[sizes < EXACT] == sizes[sizes < EXACT]).all()
    assert (np.diff(bins[np.argsort(sizes, kind="stable")]) >= 0).all()  # monotone


def test_percentiles_against_numpy() -> None:
    rng = np.random.default_rng(7)
    small = rng.integers(0, EXACT, 999).astype(np.uint64)
    large = rng.lognormal(12, 2, 5000).astype(np.uint64)
    hist = SizeHistograms(2)
    hist.add(np.zeros(len(small), np.int64), small)
    hist.add(np.ones(len(large), np.int64), large)
    for q in (0, 1, 50, 90, 99, 100):
        assert hist.percentile(0, q) == int(np.percentile(small, q, method="inverted_cdf"))
        exact = int(np.percentile(large, q, method="inverted_cdf"))
        assert abs(hist.percentile(1, q) - exact) <= exact / 128, q
    assert (int(hist.minimum[1]), int(hist.maximum[1])) == (int(large.min()), int(large.max()))


def test_minimum_and_maximum_per_extension_by_either_route(monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore.content import sizehist

    rng = np.random.default_rng(1)
    extids, sizes = rng.integers(0, 40, 50_000), rng.integers(0, 1 << 40, 50_000).astype(np.uint64)
    want_min = [int(sizes[extids == e].min()) for e in range(40)]
    want_max = [int(sizes[extids == e].max()) for e in range(40)]
    for few in (0, 100):  # 40 extensions in the chunk: ufunc.at, then one extension at a time
        monkeypatch.setattr(sizehist, "FEW_EXTENSIONS", few)
        hist = SizeHistograms(40)
        hist.add(extids[:25_000], sizes[:25_000])
        hist.add(extids[25_000:], sizes[25_000:])
        assert hist.minimum.tolist() == want_min and hist.maximum.tolist() == want_max
