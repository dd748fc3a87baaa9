"""Dataset API (itarcore.dataset) against tarfile truth on the reference fixture folds.

Truth is computed independently: Python's ``tarfile`` member list of each shard (fid = position of the sorted
suffix), stems and extensions split by the NOTES.md rules, ``xxhash`` for keyhashes, ``struct``/numpy for index bytes.
"""
from __future__ import annotations

import io
import json
import shutil
import struct
import tarfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import xxhash

from itarcore.cli import main
from itarcore.dataset import Dataset
from itarcore.errors import DatasetError, MissingShardError
from itarcore.formats.taridx import write_taridx

FOLDS = ("train", "val", "mixed")
HDR = struct.Struct("<8sHHHHQQIIQQB7s")
# The spec's row record, written out independently of the product's dtype.
ROW = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                ("keyhash", "<u8")])
assert ROW.itemsize == 32


class Member(NamedTuple):
    fid: int
    shard: str
    name: str
    stem: str
    ext: str
    offset: int  # the member's own 512-byte header
    size: int
    data: bytes


def notes_split(name: str) -> tuple[str, str]:
    """NOTES.md: base name after the last '/', stem before the first '.', extension after it, lower-cased."""
    base = name.rsplit("/", 1)[-1]
    stem, _, ext = base.partition(".")
    return stem, ext.lower()


def fold_truth(folder: Path, fold: str) -> list[Member]:
    """Every regular member of the fold's shards, in fid order then archive order, read by tarfile."""
    shards = sorted(folder.glob(f"{fold}_*.tar"), key=lambda p: p.name[len(fold) + 1 : -4])
    out = []
    for fid, shard in enumerate(shards):
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if not m.isfile():
                    continue
                stem, ext = notes_split(m.name)
                data = tf.extractfile(m).read()
                out.append(Member(fid, shard.name, m.name, stem, ext, m.offset_data - 512, m.size, data))
    return out


@pytest.fixture(scope="module")
def truth() -> dict[str, list[Member]]:
    folder = Path(__file__).parents[1] / "data" / "taridx" / "webds"
    return {fold: fold_truth(folder, fold) for fold in FOLDS}


def by_location(members: list[Member]) -> dict[tuple[int, int], Member]:
    return {(m.fid, m.offset): m for m in members}


def row_loc(ds: Dataset, row: int) -> tuple[int, int]:
    rec = ds.rows[row]
    return int(rec["fid"]), int(rec["offset"])


def header_of(path: Path) -> dict:
    names = ("magic", "major", "minor", "rec_size", "hdr_size", "n_stems", "n_rows", "n_ext", "n_crash",
             "off_crash", "off_arr", "flags", "reserved")
    return dict(zip(names, HDR.unpack_from(path.read_bytes(), 0)))


def collision_pairs(data_dir: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in (data_dir / "taridx" / "collisions.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            a, b = line.split("\t")
            pairs.append((a, b))
    return pairs


# -- stem -> rows -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fold", FOLDS)
def test_every_stem_resolves_to_its_members(webds: Path, truth, fold: str) -> None:
    members = truth[fold]
    want: dict[str, set[tuple[int, int]]] = {}
    for m in members:
        want.setdefault(m.stem, set()).add((m.fid, m.offset))
    loc = by_location(members)
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        assert ds.n_rows == len(members)
        for stem, locations in want.items():
            rows = ds.lookup_stem(stem)
            got = [row_loc(ds, int(r)) for r in rows]
            assert len(got) == len(locations), stem
            assert set(got) == locations, stem
            for r, key in zip(rows.tolist(), got):
                assert int(ds.rows[r]["size"]) == loc[key].size
                assert ds.ext_of(r) == loc[key].ext
        assert len(ds.lookup_stem("no_such_stem_anywhere")) == 0


@pytest.mark.parametrize("chunk", [5, 64])
def test_chunked_lookup_equals_truth(webds: Path, truth, chunk: int) -> None:
    """Small chunks force the multi-chunk (threaded) scan; the answer must not depend on the chunking."""
    want: dict[str, list[tuple[int, int]]] = {}
    for m in truth["train"]:
        want.setdefault(m.stem, []).append((m.fid, m.offset))
    with Dataset.open(webds / "train.taridx") as ds:
        for stem, locations in want.items():
            rows = ds.lookup_stem(stem, chunk=chunk)
            assert [row_loc(ds, int(r)) for r in rows] == locations, stem  # ascending rows = archive order


@pytest.mark.parametrize("fold", ["train", "val"])
def test_crash_stems_land_on_their_own_rows(webds: Path, data_dir: Path, truth, fold: str) -> None:
    pairs = collision_pairs(data_dir)
    assert pairs, "collisions.txt lists no pairs"
    stems_in_fold = {m.stem for m in truth[fold]}
    checked = 0
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        for a, b in pairs:
            assert a != b and xxhash.xxh64(a.encode()).intdigest() == xxhash.xxh64(b.encode()).intdigest()
            if a not in stems_in_fold or b not in stems_in_fold:
                continue
            checked += 1
            rows_a, rows_b = ds.lookup_stem(a), ds.lookup_stem(b)
            want_a = {(m.fid, m.offset) for m in truth[fold] if m.stem == a}
            want_b = {(m.fid, m.offset) for m in truth[fold] if m.stem == b}
            assert {row_loc(ds, int(r)) for r in rows_a} == want_a
            assert {row_loc(ds, int(r)) for r in rows_b} == want_b
            assert len(rows_a) == len(want_a) and len(rows_b) == len(want_b)
            # same keyhash, told apart only by crashid: the stem seen later is the crash stem
            first = min([*want_a, *want_b])
            canonical, crash = (rows_a, rows_b) if first in want_a else (rows_b, rows_a)
            crash_stem = b if first in want_a else a
            assert set(ds.rows["crashid"][canonical].tolist()) == {0}
            crashid = ds.index.crash_stems.index(crash_stem) + 1
            assert set(ds.rows["crashid"][crash].tolist()) == {crashid}
            assert ds.stem_names(crash) == [crash_stem] * len(crash)
    assert checked >= 1, f"no collision pair in fold {fold}"


# -- names and payloads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fold", FOLDS)
def test_member_and_stem_names_equal_tarfile(webds: Path, truth, fold: str) -> None:
    loc = by_location(truth[fold])
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        rows = list(range(ds.n_rows))
        expected = [loc[row_loc(ds, r)] for r in rows]
        assert ds.member_names(rows) == [m.name for m in expected]
        assert ds.stem_names(rows) == [m.stem for m in expected]
        assert ds.member_names(np.array([5, 0, 5])) == [expected[5].name, expected[0].name, expected[5].name]


@pytest.mark.parametrize("fold", FOLDS)
def test_read_payload_equals_extractfile(webds: Path, truth, fold: str) -> None:
    loc = by_location(truth[fold])
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        for r in range(ds.n_rows):
            assert ds.read_payload(r) == loc[row_loc(ds, r)].data, r
        for bad in (-1, ds.n_rows):
            with pytest.raises(DatasetError):
                ds.read_payload(bad)


# -- samples --------------------------------------------------------------------------------------------------------


def hand_samples(ds: Dataset) -> list[list[int]]:
    groups: dict[tuple[int, int], list[int]] = {}
    for r, (kh, cid) in enumerate(zip(ds.rows["keyhash"].tolist(), ds.rows["crashid"].tolist())):
        groups.setdefault((kh, cid), []).append(r)
    return list(groups.values())  # dicts keep first-appearance order


@pytest.mark.parametrize("fold,contiguous", [("train", True), ("val", True), ("mixed", False)])
def test_samples_equal_hand_grouping(webds: Path, truth, fold: str, contiguous: bool) -> None:
    assert bool(header_of(webds / f"{fold}.taridx")["flags"] & 1) is contiguous  # the case we mean to cover
    loc = by_location(truth[fold])
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        expected = hand_samples(ds)
        # the same grouping, by tarfile stems in first-appearance order
        by_stem: dict[str, list[int]] = {}
        for r in range(ds.n_rows):
            by_stem.setdefault(loc[row_loc(ds, r)].stem, []).append(r)
        assert list(by_stem.values()) == expected
        assert len(expected) == header_of(webds / f"{fold}.taridx")["n_stems"]

        groups = ds.compute_samples()
        assert groups.n_samples == len(expected)
        assert [groups.rows_of(i).tolist() for i in range(groups.n_samples)] == expected
        assert [g.tolist() for g in ds.iter_samples()] == expected
        for i, rows in enumerate(expected):
            assert int(groups.keyhash[i]) == int(ds.rows["keyhash"][rows[0]])
            assert int(groups.crashid[i]) == int(ds.rows["crashid"][rows[0]])
        if not contiguous:
            assert any(rows != list(range(rows[0], rows[0] + len(rows))) for rows in expected)


@pytest.mark.parametrize("fold", FOLDS)
def test_sample_of_row_agrees_with_rows_of(webds: Path, fold: str) -> None:
    with Dataset.open(webds / f"{fold}.taridx") as ds:
        groups = ds.compute_samples()
        seen = []
        for i in range(groups.n_samples):
            for r in groups.rows_of(i).tolist():
                assert groups.sample_of_row(r) == i
                seen.append(r)
        assert sorted(seen) == list(range(ds.n_rows))


def test_sample_of_row_interleaved_crash_stems(tmp_path: Path) -> None:
    """Non-contiguous rows where one keyhash carries two stems (crash id 0 and 1): the key search picks by crash id."""
    rng = np.random.default_rng(7)
    keys = [(5, 0), (5, 1), (9, 0), (2, 0), (5, 0), (2, 0), (9, 0), (5, 1), (7, 0)] * 3
    order = rng.permutation(len(keys))
    rows = np.zeros(len(keys), ROW)
    rows["keyhash"] = [keys[i][0] for i in order]
    rows["crashid"] = [keys[i][1] for i in order]
    rows["offset"] = np.arange(len(keys)) * 1024
    write_taridx(tmp_path / "f.taridx", rows, ["jpg"], ["crashed-stem"], n_stems=5)
    with Dataset.open(tmp_path / "f.taridx") as ds:
        groups = ds.compute_samples()
        assert groups.key_index is not None and groups.key_index.kind == "sorted"  # the key-index path
        first_seen: dict[tuple[int, int], int] = {}
        for r, key in enumerate(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())):
            first_seen.setdefault(key, len(first_seen))
            assert groups.sample_of_row(r) == first_seen[key]


# -- missing shards and bounds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("gone", ["train_0001.tar", "train_0002.tar"])
def test_missing_shard_is_named(webds: Path, truth, gone: str) -> None:
    (webds / gone).unlink()
    loc = by_location(truth["train"])
    gone_fid = {m.shard: m.fid for m in truth["train"]}[gone]
    with Dataset.open(webds / "train.taridx") as ds:
        assert ds.missing_shards == [gone]
        with pytest.raises(MissingShardError) as err:
            ds.require_shards()
        assert gone in str(err.value)
        assert err.value.missing == [gone]
        fids = ds.rows["fid"]
        lost = np.flatnonzero(fids == gone_fid)
        kept = np.flatnonzero(fids != gone_fid)
        assert len(lost) and len(kept)
        with pytest.raises(DatasetError, match=gone.replace(".", r"\.")):
            ds.read_payload(int(lost[0]))
        for r in kept.tolist():
            assert ds.read_payload(r) == loc[row_loc(ds, r)].data
        assert ds.member_names(lost[:3]) == ["", "", ""]
        # crash stems still come from the crash table when their shard is gone
        for r in lost.tolist():
            crashid = int(ds.rows["crashid"][r])
            if crashid:
                assert ds.stem_names([r]) == [loc[row_loc(ds, r)].stem]


def _edit_row(index_path: Path, row: int, **values: int) -> None:
    raw = bytearray(index_path.read_bytes())
    off_arr = HDR.unpack_from(raw, 0)[10]
    rows = np.frombuffer(raw, dtype=ROW, offset=off_arr)
    for k, v in values.items():
        rows[row][k] = v
    index_path.write_bytes(bytes(raw))


def test_payload_past_shard_end_is_refused(webds: Path, truth) -> None:
    last = max(truth["val"], key=lambda m: m.offset)
    shard = webds / last.shard
    shard_size = shard.stat().st_size
    index = webds / "val.taridx"
    with Dataset.open(index) as ds:
        row = next(r for r in range(ds.n_rows) if row_loc(ds, r) == (last.fid, last.offset))
    # exactly to the end of the shard: allowed, and gives the shard's tail bytes
    _edit_row(index, row, size=shard_size - last.offset - 512)
    with Dataset.open(index) as ds:
        assert ds.read_payload(row) == shard.read_bytes()[last.offset + 512 :]
    # one byte further: refused
    _edit_row(index, row, size=shard_size - last.offset - 512 + 1)
    with Dataset.open(index) as ds:
        with pytest.raises(DatasetError) as err:
            ds.read_payload(row)
        assert last.shard in str(err.value)
        assert ds.read_payload(0) == truth["val"][0].data  # other rows still read
    # a header offset past the end
    _edit_row(index, row, offset=shard_size, size=1)
    with Dataset.open(index) as ds:
        with pytest.raises(DatasetError):
            ds.read_payload(row)
        with pytest.raises(DatasetError):
            ds.member_name_bytes(row)


# -- a crash stem with spaces ------------------------------------------------------------------------------------------


def _tiny_fold(folder: Path) -> Path:
    """tiny_0000.tar with 'a b.jpg', 'a b.cls', 'zz.cls'; index rows for 'a b' carry crashid 1."""
    folder.mkdir(exist_ok=True)
    shard = folder / "tiny_0000.tar"
    payloads = {"a b.jpg": b"\xff\xd8 not really a jpeg", "a b.cls": b"7", "zz.cls": b"3"}
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in payloads.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    exts = ["jpg", "cls"]
    rows = []
    with tarfile.open(shard) as tf:
        for m in tf.getmembers():
            stem, ext = notes_split(m.name)
            crashid = 1 if stem == "a b" else 0
            rows.append((0, m.offset_data - 512, m.size, exts.index(ext), crashid,
                         xxhash.xxh64(stem.encode()).intdigest()))
    write_taridx(folder / "tiny.taridx", np.array(rows, dtype=ROW), exts, ["a b"], n_stems=2)
    return folder / "tiny.taridx"


def test_crash_stem_with_spaces_resolves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = _tiny_fold(tmp_path / "tiny")
    raw = index.read_bytes()
    h = HDR.unpack_from(raw, 0)
    assert raw[h[9] : h[10]] == b"a b"  # the crash block really holds a stem with a space
    with Dataset.open(index) as ds:
        assert ds.index.crash_stems == ["a b"]
        rows = ds.lookup_stem("a b")
        assert rows.tolist() == [0, 1]
        assert [ds.read_payload(r) for r in rows.tolist()] == [b"\xff\xd8 not really a jpeg", b"7"]
        assert ds.stem_names(rows) == ["a b", "a b"]
        assert ds.lookup_stem("zz").tolist() == [2]
        assert len(ds.lookup_stem("a")) == 0
    assert main(["stem", str(index), "a b", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    objs = [json.loads(line) for line in lines]
    assert [(o["row"], o["ext"], o["crashid"], o["shard"]) for o in objs] == [
        (0, "jpg", 1, "tiny_0000.tar"), (1, "cls", 1, "tiny_0000.tar")]
    assert all(o["keyhash"] == xxhash.xxh64(b"a b").intdigest() for o in objs)


def test_shard_dir_argument(tmp_path: Path, webds: Path, truth) -> None:
    """Shards may live apart from the index when shard_dir is given."""
    elsewhere = tmp_path / "index_only"
    elsewhere.mkdir()
    shutil.copy(webds / "val.taridx", elsewhere / "val.taridx")
    with Dataset.open(elsewhere / "val.taridx") as ds:
        assert ds.missing_shards == ["val_0000.tar"]
    with Dataset.open(elsewhere / "val.taridx", shard_dir=webds) as ds:
        assert ds.missing_shards == []
        assert ds.read_payload(0) == truth["val"][0].data
