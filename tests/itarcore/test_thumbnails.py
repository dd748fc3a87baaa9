"""Thumbnails: reduced-size decode against a full Pillow decode, typed placeholders, and the disk cache."""
from __future__ import annotations

import io
import json
import shutil
import tarfile

import numpy as np
import pytest
from PIL import Image

from itarcore.dataset import Dataset
from itarcore.thumbnails import ThumbnailCache, make_thumbnail, row_thumbnail


def _jpeg(w: int, h: int) -> bytes:
    yy, xx = np.mgrid[0:h, 0:w]
    pixels = np.stack([xx * 255 // w, yy * 255 // h, (xx + yy) * 255 // (w + h)], axis=-1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=95)
    return out.getvalue()


def test_a_big_jpeg_is_decoded_in_draft_mode_and_matches_a_full_decode_reduced():
    data = _jpeg(1600, 1200)
    thumb = make_thumbnail(data, "jpg", 128)
    assert thumb.is_image and thumb.image.size == (128, 96)
    assert thumb.summary == "JPEG 1600×1200 RGB"
    full = Image.open(io.BytesIO(data)).convert("RGB").resize((128, 96), Image.Resampling.LANCZOS)
    diff = np.abs(np.asarray(thumb.image, np.int16) - np.asarray(full, np.int16))
    assert diff.mean() < 3 and diff.max() < 16


def test_png_and_small_images_are_fitted_never_enlarged():
    out = io.BytesIO()
    Image.new("RGBA", (900, 300), (10, 200, 30, 128)).save(out, "PNG")
    thumb = make_thumbnail(out.getvalue(), "png", 90)
    assert thumb.image.size == (90, 30) and thumb.image.mode == "RGBA"
    assert np.allclose(thumb.image.getpixel((45, 15)), (10, 200, 30, 128), atol=1)  # premultiplied rounding
    assert make_thumbnail(_jpeg(24, 16), "jpg", 128).image.size == (24, 16)


@pytest.mark.parametrize("ext, data, kind, summary", [
    ("json", json.dumps({"label": {"class": 3}}).encode(), "JSON", '{"label": {"class": 3}}'),
    ("txt", b"a photo of  a\ncat", "text", "a photo of a cat"),
    ("cls", b"7", "label", "7"),
    ("sample.jpg", b"not an image", "error", "not a decodable image"),
])
def test_payloads_that_are_not_images_get_typed_placeholders(ext, data, kind, summary):
    thumb = make_thumbnail(data, ext, 64)
    assert thumb.image is None and thumb.kind == kind and thumb.summary.startswith(summary)


def test_npy_placeholder_names_the_array():
    out = io.BytesIO()
    np.save(out, np.zeros((4, 5), np.float32))
    thumb = make_thumbnail(out.getvalue(), "npy", 64)
    assert thumb.kind == "npy" and "(4, 5)" in thumb.summary and "float32" in thumb.summary


def test_a_cached_photo_thumbnail_is_the_decoded_one_within_jpeg_loss(webds, tmp_path):
    from itarcore.thumbnails import Thumbnail, _decode, _encode

    thumb = make_thumbnail(_jpeg(1600, 1200), "jpg", 128)
    back = _decode(_encode(thumb, 5, 128), 5, 128)
    assert back.kind == "image" and back.image.size == thumb.image.size
    assert np.abs(np.asarray(back.image, np.int16) - np.asarray(thumb.image, np.int16)).mean() < 2
    assert _decode(_encode(thumb, 5, 128), 6, 128) is None  # another row's file is never taken for this one
    assert _decode(_encode(Thumbnail("JSON", None, "{}"), 5, 128), 5, 128) == Thumbnail("JSON", None, "{}")


def test_cache_round_trip_identity_and_damage(webds, tmp_path):
    cache_dir = tmp_path / "cache"
    index = webds / "train.taridx"
    with Dataset.open(index) as ds:
        jpg = next(r for r in range(ds.n_rows) if ds.ext_of(r) == "jpg")
        js = next(r for r in range(ds.n_rows) if ds.ext_of(r) == "json")
        cache = ThumbnailCache(ds.index, cache_dir)
        first = row_thumbnail(ds, jpg, 64, cache)
        assert cache.path_for(jpg, 64).is_file()
        again = cache.load(jpg, 64)
        assert again is not None and again.image.size == first.image.size
        assert np.array_equal(np.asarray(again.image), np.asarray(first.image))  # tiny: cached losslessly
        placeholder = row_thumbnail(ds, js, 64, cache)
        assert cache.load(js, 64) == placeholder
        assert cache.load(jpg, 32) is None  # another size is another entry
        cache.path_for(jpg, 64).write_bytes(b"ITHUMB\0garbage")
        assert cache.load(jpg, 64) is None  # a damaged file is a miss ...
        assert row_thumbnail(ds, jpg, 64, cache).image.size == first.image.size  # ... and is rewritten
        assert cache.load(jpg, 64) is not None
        shutil.rmtree(cache_dir)  # safe to delete at any time
        assert row_thumbnail(ds, jpg, 64, cache).image.size == first.image.size
        # the thumbnail is the member's bytes as tarfile reads them
        name = ds.member_names([jpg])[0]
    payloads = {}
    for shard in sorted(webds.glob("train_*.tar")):
        with tarfile.open(shard) as tf:
            payloads.update({m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()})
    ref = Image.open(io.BytesIO(payloads[name])).convert("RGB")
    assert np.array_equal(np.asarray(first.image), np.asarray(ref))  # 24×16 fits 64: no reduction
    index.touch()  # a changed index is another identity: its old thumbnails are never used
    with Dataset.open(index) as ds:
        assert ThumbnailCache(ds.index, cache_dir).folder != cache.folder
