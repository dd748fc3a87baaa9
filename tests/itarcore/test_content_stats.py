"""`stats`: every figure checked against an independent reading of the shards with tarfile, json and Pillow."""
from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from content_folds import READERS, WEBDS, fold_shards, jpeg, shard_members, stem_ext, use_reader, write_fold
from PIL import Image

from itarcore.cli import main
from itarcore.content.stats import compute_stats
from itarcore.errors import Cancelled, DatasetError, FormatError, ItarError
from itarcore.progress import CancelToken

IMAGE_EXTS = {"jpg", "png", "webp", "left.jpg"}


def truth(folder: Path, fold: str, label_of=None) -> dict:
    """The statistics of a fold computed from tarfile listings alone."""
    sizes: dict[str, list[int]] = {}
    shards, first_shard, labels, dims = [], {}, Counter(), Counter()
    for shard in fold_shards(folder, fold):
        per_ext, total = Counter(), 0
        for name, data in shard_members(shard):
            stem, ext = stem_ext(name)
            sizes.setdefault(ext, []).append(len(data))
            per_ext[ext] += 1
            total += len(data)
            first_shard.setdefault(stem, shard.name)
            if label_of is not None and (label := label_of(ext, data)) is not None:
                labels[label] += 1
            if ext in IMAGE_EXTS:
                dims[Image.open(io.BytesIO(data)).size] += 1
        shards.append({"shard": shard.name, "rows": sum(per_ext.values()), "bytes": total, "extensions": per_ext})
    samples = Counter(first_shard.values())
    for s in shards:
        s["samples"] = samples[s["shard"]]
    return {"sizes": sizes, "shards": shards, "samples": len(first_shard), "labels": labels, "dims": dims}


def cls_label(ext: str, data: bytes) -> str | None:
    return data.decode().strip() if ext == "cls" else None


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("fold", ["train", "val", "mixed"])
def test_stats_json_equals_tarfile_counts(fold: str, reader: str, capsys: pytest.CaptureFixture,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    use_reader(reader, monkeypatch)
    assert main(["stats", str(WEBDS / f"{fold}.taridx"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = truth(WEBDS, fold, cls_label)
    assert got["complete"] and got["rows"] == sum(len(v) for v in want["sizes"].values())
    assert got["samples"] == want["samples"]
    assert got["bytes"] == sum(sum(v) for v in want["sizes"].values())
    by_ext = {e["ext"]: e for e in got["extensions"]}
    assert set(by_ext) == set(want["sizes"])
    for ext, sizes in want["sizes"].items():
        e = by_ext[ext]
        assert (e["count"], e["bytes"], e["min"], e["max"]) == (len(sizes), sum(sizes), min(sizes), max(sizes))
        for q in (50, 90, 99):  # sizes under 1 KiB: exact
            assert e[f"p{q}"] == int(np.percentile(sizes, q, method="inverted_cdf")), (ext, q)
    assert [{k: s[k] for k in ("shard", "rows", "bytes", "samples", "extensions")} for s in got["shards"]] == \
        [{**s, "extensions": dict(s["extensions"])} for s in want["shards"]]
    assert got["labels"]["source"] == "cls"
    assert got["labels"]["counts"] == dict(want["labels"])
    per_shard_total = Counter()
    for counts in got["labels"]["per_shard"].values():
        per_shard_total.update(counts)
    assert per_shard_total == want["labels"]
    dims = got["image_dims"]
    assert dims["images"] == sum(want["dims"].values()) and dims["unreadable"] == 0
    assert {(s["width"], s["height"]): s["count"] for s in dims["sizes"]} == dict(want["dims"])
    assert sum(c for _, _, c in dims["cells"]) == dims["images"]


def test_labels_per_shard_match_tarfile() -> None:
    stats = compute_stats(WEBDS / "train.taridx")
    for shard in fold_shards(WEBDS, "train"):
        want = Counter(d.decode().strip() for n, d in shard_members(shard) if stem_ext(n)[1] == "cls")
        assert stats.label_per_shard()[shard.name] == dict(want)


def json_fold(tmp_path: Path) -> Path:
    docs = [{"label": {"class": "cat"}}, {"label": {"class": "dog"}}, {"label": {"class": "cat"}},
            {"label": {"other": 1}}, {"label": {"class": 7}}, {"label": [1]}]
    shards = [[], []]
    for i, doc in enumerate(docs):
        shards[i % 2] += [(f"s{i:03d}.json", json.dumps(doc).encode()), (f"s{i:03d}.jpg", jpeg(30 + i, 20, i))]
    shards[1] += [("broken.json", b"{not json"), ("odd.jpg", b"\xff\xd8\xff\xe0 truncated")]
    return write_fold(tmp_path / "jf", "train", shards)


def test_json_field_labels_and_image_sizes(tmp_path: Path) -> None:
    index = json_fold(tmp_path)

    stats = compute_stats(index, label_field="label.class").to_json()
    # by hand: cat, dog, cat, no "class", 7, a list (no "class"); one member is not JSON
    labels = stats["labels"]
    assert labels["source"] == "json:label.class"
    assert labels["counts"] == {"cat": 2, "(unreadable)": 1, "7": 1, "dog": 1}
    assert (labels["members"], labels["missing"], labels["unreadable"]) == (7, 2, 1)
    dims = stats["image_dims"]
    assert dims["images"] == 7 and dims["unreadable"] == 1
    assert {(s["width"], s["height"]) for s in dims["sizes"]} == {(30 + i, 20) for i in range(6)}


def encoded(fmt: str, size: tuple[int, int], mode: str = "RGB", **options: object) -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, (200, 40, 90, 10)[: len(mode)]).save(out, fmt, **options)
    return out.getvalue()


def long_header_images() -> list[tuple[str, bytes]]:
    """Images whose size lies at every depth: in the first bytes, past 1 KiB, past 64 KiB, and damaged ones."""
    rng = np.random.default_rng(3)
    icc = bytes(rng.integers(0, 256, 150_000, dtype=np.uint8))  # split over three APP2 segments, before the frame
    return [
        ("a.jpg", encoded("JPEG", (40, 30))),
        ("b.jpg", encoded("JPEG", (17, 300), exif=Image.Exif().tobytes() + b"\0" * 3000)),
        ("c.jpg", encoded("JPEG", (99, 5), icc_profile=icc)),
        ("d.jpg", encoded("JPEG", (64, 48), mode="CMYK")),
        ("e.jpg", encoded("JPEG", (301, 17), progressive=True, exif=b"Exif\0\0" + bytes(60_000))),
        ("f.png", encoded("PNG", (7, 9))),
        ("g.webp", encoded("WEBP", (33, 21), lossless=True)),
        ("h.webp", encoded("WEBP", (12, 8), mode="RGBA", quality=50)),
        ("i.bmp", encoded("BMP", (5, 6))),
        ("j.gif", encoded("GIF", (44, 33))),
        ("k.jpg", encoded("JPEG", (20, 20), icc_profile=icc)[:40_000]),  # cut short before its frame header
        ("l.png", b"\x89PNG\r\n\x1a\n" + bytes(5000)),
    ]


@pytest.mark.parametrize("reader", READERS)
def test_image_sizes_at_every_header_depth_match_pillow(tmp_path: Path, reader: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    use_reader(reader, monkeypatch)
    images = long_header_images()
    index = write_fold(tmp_path / "deep", "train", [images[::2], images[1::2]])
    want: Counter = Counter()
    unreadable = 0
    for _, data in images:
        try:
            want[Image.open(io.BytesIO(data)).size] += 1
        except OSError:
            unreadable += 1
    dims = compute_stats(index).to_json()["image_dims"]
    assert (dims["images"], dims["unreadable"]) == (len(images), unreadable) and unreadable == 2
    assert {(s["width"], s["height"]): s["count"] for s in dims["sizes"]} == dict(want)


def test_field_naming_an_extension_reads_those_members(tmp_path: Path) -> None:
    index = write_fold(tmp_path / "c2", "train", [[("a.cls2", b" 5\n"), ("b.cls2", b"5"), ("c.cls2", b"x")]])
    stats = compute_stats(index, label_field="cls2")
    assert stats.label_totals() == {"5": 2, "x": 1}


def test_partial_results_stream_in_phase_order_and_are_snapshots() -> None:
    parts = []
    final = compute_stats(WEBDS / "train.taridx", on_partial=parts.append)
    phases = [p.phase for p in parts]
    assert phases[-1] == "done" and phases == sorted(phases, key=["rows", "samples", "payloads", "done"].index)
    first = parts[0]
    assert not first.complete and first.label_totals() == {} and first.n_samples is None
    assert int(first.ext_count.sum()) == first.rows_counted
    assert parts[-1].to_json() == final.to_json()
    assert first is not final and first.labels is not final.labels


def test_cancel_stops_the_job() -> None:
    token = CancelToken()

    def cancel_on_first(_stats: object) -> None:
        token.cancel()

    with pytest.raises(Cancelled):
        compute_stats(WEBDS / "train.taridx", cancel=token, on_partial=cancel_on_first)


def test_missing_shard_is_listed_and_its_payloads_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    shutil.copytree(WEBDS, folder)
    (folder / "train_0001.tar").unlink()
    stats = compute_stats(folder / "train.taridx").to_json()
    assert stats["missing_shards"] == ["train_0001.tar"]
    kept = [s for s in fold_shards(WEBDS, "train") if s.name != "train_0001.tar"]
    want = Counter(d.decode().strip() for s in kept for n, d in shard_members(s) if stem_ext(n)[1] == "cls")
    assert stats["labels"]["counts"] == dict(want)
    assert stats["rows"] == 738  # the index statistics still count every row


def test_truncated_shard_raises_dataset_error(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    shutil.copytree(WEBDS, folder)
    shard = folder / "val_0000.tar"
    shard.write_bytes(shard.read_bytes()[:20_000])
    with pytest.raises(DatasetError, match=r"val_0000\.tar: row \d+ payload .* past the end"):
        compute_stats(folder / "val.taridx")


def test_bad_input_is_itar_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bogus = tmp_path / "x.taridx"
    bogus.write_bytes(b"not an index at all, just text" * 4)
    with pytest.raises(FormatError):
        compute_stats(bogus)
    with pytest.raises(ItarError, match="label field"):
        compute_stats(WEBDS / "val.taridx", label_field="a..b")
    assert main(["stats", str(bogus)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.taridx" in err


def test_counts_from_a_hostile_index_are_refused_not_allocated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore.content import stats as stats_module

    monkeypatch.setattr(stats_module, "MAX_CELLS", 5 * stats_module.N_BINS)  # as if the fold had too many
    with pytest.raises(DatasetError, match="10 extensions are too many"):
        compute_stats(WEBDS / "train.taridx")
    index = write_fold(tmp_path / "w", "w", [[("a.jpg", b"x")]])
    data = bytearray(index.read_bytes())
    data[-32:-30] = (60000).to_bytes(2, "little")  # the row's fid: 60,001 shard ids x 1 extension
    index.write_bytes(bytes(data))
    monkeypatch.setattr(stats_module, "MAX_CELLS", 50_000)
    with pytest.raises(DatasetError, match="60,001 shard ids × 1 extensions are too many cells"):
        compute_stats(index)
