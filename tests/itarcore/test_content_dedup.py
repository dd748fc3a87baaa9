"""`dedup` finds every duplicate planted in a generated pair of folds, and nothing else."""
from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import pytest
from content_folds import WEBDS, write_fold
from PIL import Image

from itarcore.audit import audit_index
from itarcore.cli import main
from itarcore.content.dedup import find_duplicates
from itarcore.content.near import close_pairs
from itarcore.errors import Cancelled, DatasetError, FormatError, ItarError
from itarcore.progress import CancelToken


def planted_folds(tmp: Path) -> tuple[Path, Path, set[frozenset]]:
    """train (3 shards) and val (2 shards) with planted duplicates; returns the expected groups."""
    rng = random.Random(14)
    unique = lambda n: rng.randbytes(n)
    a, txt, leak, both, same_size = unique(900), unique(40), unique(700), unique(333), unique(512)
    train = [[], [], []]
    val = [[], []]
    for i in range(30):  # unique members, many of them the same size as a planted one
        train[i % 3] += [(f"t{i:03d}.jpg", unique(512)), (f"t{i:03d}.cls", b"1"), (f"t{i:03d}.txt", unique(40))]
    for i in range(12):
        val[i % 2] += [(f"v{i:03d}.jpg", unique(512)), (f"v{i:03d}.cls", b"1")]
    train[0] += [("dupA.jpg", a), ("dupC.txt", txt), ("dupD.txt", txt), ("sz1.jpg", same_size)]
    train[2] += [("dupB.jpg", a), ("dupE.txt", txt), ("leakT.jpg", leak), ("bothT1.png", both)]
    train[1] += [("bothT2.png", both), ("other.png", a), ("empty1.txt", b""), ("empty2.txt", b""), ("README", b"x")]
    val[1] += [("leakV.jpg", leak), ("bothV.png", both), ("README", b"x"), ("empty.txt", b"")]
    expected = {
        frozenset({("train", "dupA", "jpg"), ("train", "dupB", "jpg")}),
        frozenset({("train", "dupC", "txt"), ("train", "dupD", "txt"), ("train", "dupE", "txt")}),
        frozenset({("train", "leakT", "jpg"), ("val", "leakV", "jpg")}),
        frozenset({("train", "bothT1", "png"), ("train", "bothT2", "png"), ("val", "bothV", "png")}),
    }
    return write_fold(tmp / "ds", "train", train), write_fold(tmp / "ds", "val", val), expected


def found_groups(data: dict) -> set[frozenset]:
    return {frozenset((m["fold"], m["stem"], g["ext"]) for m in g["members"]) for g in data["groups"]}


def test_dedup_finds_every_planted_duplicate_and_nothing_else(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    train, val, expected = planted_folds(tmp_path)
    assert main(["dedup", str(train), str(val), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert found_groups(data) == expected
    cross = {frozenset((m["fold"], m["stem"]) for m in g["members"]) for g in data["groups"] if g["cross_fold"]}
    assert cross == {frozenset({("train", "leakT"), ("val", "leakV")}),
                     frozenset({("train", "bothT1"), ("train", "bothT2"), ("val", "bothV")})}
    assert data["summary"] == {"groups": 4, "cross_fold_groups": 2, "duplicate_members": 6, "near_groups": None}
    for g in data["groups"]:  # rows and shards point at the members named
        for m in g["members"]:
            assert m["shard"].startswith(m["fold"] + "_")
    assert all(len(g["hash"]) == 32 for g in data["groups"])


def test_labels_and_bare_members_only_with_all(tmp_path: Path) -> None:
    train, val, expected = planted_folds(tmp_path)
    groups = found_groups(find_duplicates([train, val], skip=()).to_json())
    extra = groups - expected
    assert {g for g in extra if {e for _, _, e in g} == {"cls"}} and len(extra) == 2
    readme = next(g for g in extra if {e for _, _, e in g} == {""})
    assert readme == frozenset({("train", "README", ""), ("val", "README", "")})
    only_txt = found_groups(find_duplicates([train, val], extensions=["txt"]).to_json())
    assert only_txt == {g for g in expected if {e for _, _, e in g} == {"txt"}}


def test_verify_content_adds_leak_error_and_duplicate_warning(tmp_path: Path) -> None:
    train, _val, _expected = planted_folds(tmp_path)
    report = audit_index(train, content=True)
    by_kind = {f.kind: f for f in report.findings}
    leak, dup = by_kind["split_leak"], by_kind["duplicate_payload"]
    assert (leak.severity, dup.severity) == ("error", "warning")
    from itarcore.dataset import Dataset

    with Dataset.open(train) as ds:
        assert sorted(ds.stem_names(leak.rows)) == ["bothT1", "bothT2", "leakT"]
        assert sorted(ds.stem_names(dup.rows)) == ["bothT1", "bothT2", "dupA", "dupB", "dupC", "dupD", "dupE"]
    assert report.exit_code == 1
    plain = {f.kind for f in audit_index(train).findings}
    assert not plain & {"split_leak", "duplicate_payload"}


def test_verify_content_needs_full(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["verify", str(WEBDS / "val.taridx"), "--content"]) == 2
    assert "--full --content" in capsys.readouterr().err


def noise_image(seed: int, size: int = 96) -> Image.Image:
    rng = random.Random(seed)
    small = Image.new("L", (8, 8))
    small.putdata([rng.randrange(256) for _ in range(64)])
    return small.resize((size, size), Image.BILINEAR).convert("RGB")


def encode(img: Image.Image, fmt: str = "JPEG", **options: object) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **options)
    return out.getvalue()


@pytest.mark.parametrize("threads", [1, 3])
def test_near_duplicates_planted_across_folds(tmp_path: Path, monkeypatch, threads: int) -> None:
    pytest.importorskip("imagehash")
    import functools

    from itarcore.content import near as near_module

    # one thread, or three hashing each run's images (run.payloads are views: all hashed before the next run)
    monkeypatch.setattr(near_module, "near_groups", functools.partial(near_module.near_groups, threads=threads))
    monkeypatch.setattr(near_module, "iter_payload_runs",
                        functools.partial(near_module.iter_payload_runs, batch_bytes=4096))  # many small runs
    train = [[(f"t{i:03d}.jpg", encode(noise_image(i), quality=95)) for i in range(20)]]
    val = [[(f"v{i:03d}.jpg", encode(noise_image(100 + i), quality=95)) for i in range(10)]]
    val[0] += [("nearA.jpg", encode(noise_image(3), quality=60)),  # t003 re-encoded
               ("nearB.png", encode(noise_image(7).resize((80, 80)), "PNG"))]  # t007 resized, as PNG
    train[0] += [("t003copy.jpg", encode(noise_image(3), quality=95))]  # byte-identical: exact, not near
    t, v = write_fold(tmp_path / "n", "train", train), write_fold(tmp_path / "n", "val", val)
    report = find_duplicates([t, v], near=True).to_json()
    assert found_groups(report) == {frozenset({("train", "t003", "jpg"), ("train", "t003copy", "jpg")})}
    near = {frozenset((m["fold"], m["stem"]) for m in g["members"]) for g in report["near_groups"]}
    assert near == {frozenset({("train", "t003"), ("train", "t003copy"), ("val", "nearA")}),
                    frozenset({("train", "t007"), ("val", "nearB")})}
    assert all(g["cross_fold"] for g in report["near_groups"])


def test_close_pairs_against_brute_force() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, 40, dtype=np.uint64)
    flips = [base[i] ^ np.uint64(sum(1 << int(b) for b in rng.choice(64, k, replace=False)))
             for i, k in zip(range(40), [1, 2, 3, 4, 5, 6] * 7)]
    hashes = np.concatenate([base, np.array(flips, np.uint64)])
    for d in (0, 2, 4, 6):
        want = {(i, j) for i in range(len(hashes)) for j in range(i + 1, len(hashes))
                if int(hashes[i] ^ hashes[j]).bit_count() <= d}
        assert {tuple(p) for p in close_pairs(hashes, d).tolist()} == want


def test_missing_shard_is_listed_and_truncated_shard_raises(tmp_path: Path) -> None:
    train, val, _ = planted_folds(tmp_path)
    (train.parent / "val_0001.tar").unlink()
    report = find_duplicates([train, val]).to_json()
    assert report["missing_shards"] == ["val/val_0001.tar"]
    assert found_groups(report) == {frozenset({("train", "dupA", "jpg"), ("train", "dupB", "jpg")}),
                                    frozenset({("train", "dupC", "txt"), ("train", "dupD", "txt"),
                                               ("train", "dupE", "txt")}),
                                    frozenset({("train", "bothT1", "png"), ("train", "bothT2", "png")})}
    shard = train.parent / "train_0002.tar"
    shard.write_bytes(shard.read_bytes()[:30_000])
    with pytest.raises(DatasetError, match=r"train_0002\.tar: row \d+ payload"):
        find_duplicates([train])


def test_bad_input_and_cancel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bogus = tmp_path / "x.taridx"
    bogus.write_bytes(b"\0" * 100)
    with pytest.raises(FormatError):
        find_duplicates([bogus])
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        find_duplicates([WEBDS / "train.taridx"], cancel=token)
    monkeypatch.setitem(__import__("sys").modules, "imagehash", None)
    with pytest.raises(ItarError, match="imagehash"):
        find_duplicates([WEBDS / "val.taridx"], near=True)
    with pytest.raises(DatasetError, match="the same index is given twice"):
        find_duplicates([WEBDS / "val.taridx", WEBDS / ".." / "webds" / "val.taridx"])
    folder = tmp_path / "w"
    shutil.copytree(WEBDS, folder)
    assert main(["dedup", str(folder / "val.taridx"), "--max-distance", "99"]) == 2
