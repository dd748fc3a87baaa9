"""`export`: new shards read back with tarfile hold exactly the chosen members, the index is what indexing writes."""
from __future__ import annotations

import csv
import fnmatch
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from content_folds import WEBDS, fold_shards, shard_members, stem_ext, write_fold

from itarcore.cli import main
from itarcore.content.export import export_list, export_subset
from itarcore.content.selection import Selection
from itarcore.errors import Cancelled, DatasetError, WriteError
from itarcore.jobs import index_fold
from itarcore.progress import CancelToken


def source_members(folder: Path, fold: str) -> list[tuple[str, str, str, bytes]]:
    """(shard, stem, ext, payload) of every member, in fold order, by tarfile."""
    return [(shard.name, *stem_ext(name), data) for shard in fold_shards(folder, fold)
            for name, data in shard_members(shard)]


def expected_order(chosen: list[tuple[str, str, str, bytes]]) -> list[tuple[str, str, bytes]]:
    """Samples in order of their first chosen member, each sample's members in fold order."""
    by_stem: dict[str, list] = {}
    for _, stem, ext, data in chosen:
        by_stem.setdefault(stem, []).append((stem, ext, data))
    return [m for members in by_stem.values() for m in members]


def exported(folder: Path, fold: str) -> list[tuple[str, str, bytes]]:
    return [(*stem_ext(name), data) for shard in fold_shards(folder, fold) for name, data in shard_members(shard)]


def assert_index_as_indexer_writes(out: Path, fold: str, tmp: Path) -> None:
    again = tmp / "again.taridx"
    index_fold(fold_shards(out, fold), again)
    assert (out / f"{fold}.taridx").read_bytes() == again.read_bytes()


def test_export_by_label_and_extension(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "subset"
    assert main(["export", str(WEBDS / "train.taridx"), "--output", str(out), "--label", "3", "--ext", "jpg",
                 "--ext", "cls", "--shard-size", "8k", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    members = source_members(WEBDS, "train")
    labelled = {stem for _, stem, ext, data in members if ext == "cls" and data.strip() == b"3"}
    chosen = [m for m in members if m[1] in labelled and m[2] in ("jpg", "cls")]
    assert exported(out, "train") == expected_order(chosen)
    assert summary["samples"] == len(labelled) and summary["members"] == len(chosen)
    shards = fold_shards(out, "train")
    assert [p.name for p in shards] == [f"train_{i:04d}.tar" for i in range(len(shards))] and len(shards) > 1
    seen: dict[str, str] = {}
    for shard in shards:
        assert shard.stat().st_size <= 8192 + 10240  # the target, plus the end-of-archive record padding
        for name, _ in shard_members(shard):
            assert seen.setdefault(stem_ext(name)[0], shard.name) == shard.name  # a sample is never split
    assert_index_as_indexer_writes(out, "train", tmp_path)
    assert main(["verify", "--full", str(out / "train.taridx")]) == 0


def test_non_contiguous_source_gets_contiguous_samples(tmp_path: Path) -> None:
    out = tmp_path / "m"
    result = export_subset(WEBDS / "mixed.taridx", Selection(min_size=1), out, fold="part")
    chosen = [m for m in source_members(WEBDS, "mixed") if len(m[3]) >= 1]
    assert exported(out, "part") == expected_order(chosen)
    assert result.index == out / "part.taridx" and result.n_rows == len(chosen)
    assert_index_as_indexer_writes(out, "part", tmp_path)
    from itarcore.formats.taridx import read_taridx

    with read_taridx(result.index) as index:
        assert index.contiguous


def test_member_conditions_and_whole_samples(tmp_path: Path) -> None:
    members = source_members(WEBDS, "train")
    sel = Selection(shards=["train_0001.tar"], min_size=860, max_size=870, extensions=["jpg"])
    export_subset(WEBDS / "train.taridx", sel, tmp_path / "a")
    chosen = [m for m in members if m[0] == "train_0001.tar" and 860 <= len(m[3]) <= 870 and m[2] == "jpg"]
    assert exported(tmp_path / "a", "train") == expected_order(chosen) and chosen
    whole = Selection(stem_glob="train00001*", extensions=["png"], whole_samples=True)
    export_subset(WEBDS / "train.taridx", whole, tmp_path / "b")
    stems = {s for _, s, e, _ in members if e == "png" and fnmatch.fnmatchcase(s, "train00001*")}
    assert exported(tmp_path / "b", "train") == expected_order([m for m in members if m[1] in stems]) and stems


def test_long_and_non_ascii_names_get_new_headers_others_are_copied(tmp_path: Path) -> None:
    long_stem = "x" * 120
    shards = [[("a.jpg", b"A" * 700), (f"dir/{long_stem}.jpg", b"L" * 33), ("b.jpg", b"B" * 5),
               ("café.jpg", b"C" * 9)]]
    folder = tmp_path / "src"
    folder.mkdir()
    path = folder / "n_0000.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in shards[0]:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(data), 1_600_000_000, "someone"
            tar.addfile(info, io.BytesIO(data))
    index_fold([path], folder / "n.taridx")
    out = tmp_path / "out"
    export_subset(folder / "n.taridx", Selection(), out)
    with tarfile.open(out / "n_0000.tar") as tf:
        got = [(m.name, tf.extractfile(m).read(), m.mtime, m.uname) for m in tf.getmembers()]
    assert got == [(n, d, 1_600_000_000, "someone") for n, d in shards[0]]
    src, dst = path.read_bytes(), (out / "n_0000.tar").read_bytes()
    assert dst[:512] == src[:512]  # a.jpg: header copied as it is
    assert_index_as_indexer_writes(out, "n", tmp_path)


def test_cancel_leaves_nothing(tmp_path: Path) -> None:
    token = CancelToken()
    out = tmp_path / "out"

    def cancel_midway(p: object) -> None:
        token.cancel()

    with pytest.raises(Cancelled):
        export_subset(WEBDS / "train.taridx", Selection(), out, shard_size=20_000, progress=cancel_midway,
                      cancel=token)
    assert list(tmp_path.iterdir()) == []


def test_stem_list_and_csv(tmp_path: Path) -> None:
    stems_file = tmp_path / "stems.txt"
    stems_file.write_text("mixed000021\n\n  mixed000003 \nnot-there\n")
    sel = Selection(stems=["mixed000021", "mixed000003", "not-there"])
    result = export_list(WEBDS / "mixed.taridx", sel, tmp_path / "s.txt")
    assert (tmp_path / "s.txt").read_text() == "mixed000003\nmixed000021\n" and result.n_samples == 2
    assert main(["export", str(WEBDS / "mixed.taridx"), "--output", str(tmp_path / "m.csv"), "--csv",
                 "--stems", str(stems_file)]) == 0
    rows = list(csv.DictReader((tmp_path / "m.csv").open()))
    want = [(s, e, str(len(d)), sh) for sh, s, e, d in source_members(WEBDS, "mixed")
            if s in ("mixed000003", "mixed000021")]
    assert [(r["stem"], r["ext"], r["size"], r["shard"]) for r in rows] == \
        [w for stem in ("mixed000003", "mixed000021") for w in want if w[0] == stem]


def test_bad_input_is_itar_error_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    index = WEBDS / "train.taridx"
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep me")
    with pytest.raises(WriteError, match="not an empty folder"):
        export_subset(index, Selection(), taken)
    with pytest.raises(DatasetError, match="matches no member"):
        export_subset(index, Selection(stem_glob="nothing*"), tmp_path / "a")
    with pytest.raises(DatasetError, match="no shard 'train_0009.tar'"):
        export_subset(index, Selection(shards=["train_0009.tar"]), tmp_path / "a")
    bad_list = tmp_path / "bad.txt"
    bad_list.write_bytes(b"ok\n\xff\xfe\n")
    assert main(["export", str(index), "--output", str(tmp_path / "a"), "--stems", str(bad_list)]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse refuses it: one line, exit 2
        main(["export", str(index), "--output", str(tmp_path / "a"), "--min-size", "lots"])
    assert usage.value.code == 2 and "not a size: 'lots'" in capsys.readouterr().err
    folder = tmp_path / "f"
    shutil.copytree(WEBDS, folder)
    shard = folder / "train_0002.tar"
    data = bytearray(shard.read_bytes())
    data[512 * 3 + 148] ^= 1  # a member header's checksum: the index no longer matches the shard
    shard.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=r"train_0002\.tar: row \d+: no regular member's tar header"):
        export_subset(folder / "train.taridx", Selection(), tmp_path / "stale")
    shard.write_bytes(bytes(data[:40_000]))
    with pytest.raises(DatasetError, match="past the end of the shard"):
        export_subset(folder / "train.taridx", Selection(), tmp_path / "cut")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "f", "taken"]
    assert (taken / "x").read_text() == "keep me"


def test_generated_fold_round_trip_with_label_field(tmp_path: Path) -> None:
    shards = [[(f"s{i}.json", json.dumps({"y": {"c": "ab"[i % 2]}}).encode()), (f"s{i}.txt", b"t%d" % i)]
              for i in range(6)]
    index = write_fold(tmp_path / "g", "g", [[m for s in shards[:3] for m in s], [m for s in shards[3:] for m in s]])
    out = tmp_path / "o"
    export_subset(index, Selection(labels=["b"], label_field="y.c", extensions=["txt"]), out)
    assert exported(out, "g") == [(f"s{i}", "txt", b"t%d" % i) for i in (1, 3, 5)]
