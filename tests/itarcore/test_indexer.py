"""Fold indexing (itarcore.indexing.indexer, itarcore.jobs) reproduces the reference fixtures byte for byte."""
from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pytest

from itarcore.errors import WriteError
from itarcore.formats.taridx import write_taridx
from itarcore.indexing.indexer import discover_folds, index_shards
from itarcore.jobs import index_folds

# every scan runs through both fast walks (compiled and numpy)
pytestmark = pytest.mark.usefixtures("scan_route")

FOLDS = ("train", "val", "mixed")
HDR = struct.Struct("<8sHHHHQQIIQQB7s")
ROW = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                ("keyhash", "<u8")])
FLAGS_OFFSET = 56  # 8 + 4 * 2 + 2 * 8 + 2 * 4 + 2 * 8


def fixture(data_dir: Path, fold: str) -> bytes:
    return (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()


def shards_of(folder: Path, fold: str) -> list[Path]:
    return sorted(folder.glob(f"{fold}_*.tar"), key=lambda p: p.name[len(fold) + 1 : -4])


def rows_of(raw: bytes) -> np.ndarray:
    off_arr = HDR.unpack_from(raw, 0)[10]
    return np.frombuffer(raw, dtype=ROW, offset=off_arr)


def test_index_folds_reproduces_every_fixture(webds: Path, data_dir: Path) -> None:
    for fold in FOLDS:
        (webds / f"{fold}.taridx").unlink()
    results = index_folds(webds)
    assert sorted(r.fold for r in results) == sorted(FOLDS)
    for r in results:
        assert r.path == webds / f"{r.fold}.taridx"
        assert r.path.read_bytes() == fixture(data_dir, r.fold), r.fold
        h = HDR.unpack_from(fixture(data_dir, r.fold), 0)
        assert (r.n_rows, r.n_stems) == (h[6], h[5])
    assert sorted(p.name for p in webds.glob("*.taridx")) == sorted(f"{f}.taridx" for f in FOLDS)
    leftovers = [p.name for p in webds.iterdir() if not p.name.endswith((".tar", ".taridx"))]
    assert leftovers == []  # no temp files


@pytest.mark.parametrize("fold", FOLDS)
def test_index_one_fold_to_output(webds: Path, data_dir: Path, tmp_path: Path, fold: str) -> None:
    out = tmp_path / "elsewhere" / "x.taridx"
    out.parent.mkdir()
    (result,) = index_folds(webds, [fold], output=out)
    assert result.path == out
    assert out.read_bytes() == fixture(data_dir, fold)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("fold", FOLDS)
def test_index_shards_jobs(data_dir: Path, tmp_path: Path, fold: str, jobs: int) -> None:
    shards = shards_of(data_dir / "taridx" / "webds", fold)
    built = index_shards(shards, jobs=jobs)
    want = fixture(data_dir, fold)
    h = HDR.unpack_from(want, 0)
    assert np.array_equal(built.rows.view(np.uint8).reshape(-1, 32), rows_of(want).view(np.uint8).reshape(-1, 32))
    assert built.n_stems == h[5]
    assert built.contiguous is bool(h[11] & 1)
    assert "\n".join(built.extensions).encode() == want[64 : h[9]]
    assert "\n".join(built.crash_stems).encode() == want[h[9] : h[10]]
    out = tmp_path / f"{fold}.taridx"
    write_taridx(out, built.rows, built.extensions, built.crash_stems, built.n_stems, built.contiguous)
    assert out.read_bytes() == want


def test_contiguous_on_mixed(webds: Path, data_dir: Path, tmp_path: Path) -> None:
    want = fixture(data_dir, "mixed")
    h = HDR.unpack_from(want, 0)
    assert h[11] & 1 == 0, "the mixed fixture is meant to be non-contiguous"
    rows = rows_of(want)
    order = np.lexsort((rows["crashid"], rows["keyhash"]))  # stable: equal keys keep their row order
    expected_rows = rows[order]

    out = tmp_path / "mixed_sorted.taridx"
    (result,) = index_folds(webds, ["mixed"], output=out, contiguous=True)
    raw = out.read_bytes()
    assert raw[FLAGS_OFFSET] & 1 == 1
    assert result.contiguous is True
    header = bytearray(want[:64])
    header[FLAGS_OFFSET] |= 1
    assert raw == bytes(header) + want[64 : h[10]] + expected_rows.tobytes()
    # stable: within each sample, rows keep the archive order
    got = rows_of(raw)
    for a, b in itertools.pairwise(got):
        if (a["keyhash"], a["crashid"]) == (b["keyhash"], b["crashid"]):
            assert (a["fid"], a["offset"]) < (b["fid"], b["offset"])


def test_contiguous_on_already_contiguous_fold_changes_nothing(webds: Path, data_dir: Path, tmp_path: Path) -> None:
    """The reference's ``iTarState.force_contiguous`` returns the state unchanged when it is already contiguous:
    a fold whose samples are already adjacent keeps its archive row order."""
    out = tmp_path / "val.taridx"
    index_folds(webds, ["val"], output=out, contiguous=True)
    assert out.read_bytes() == fixture(data_dir, "val")


def test_discover_folds(tmp_path: Path) -> None:
    for name in ("a_b_0001.tar", "a_b_0000.tar", "x.tar", "val_0000.tar", "val_0010.tar", "val_0002.tar",
                 "val_0003.txt", "val.taridx", "_0000.tar"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "dir_0000.tar").mkdir()
    folds = discover_folds(tmp_path)
    assert list(folds) == sorted(folds)
    assert folds["a_b"] == [tmp_path / "a_b_0000.tar", tmp_path / "a_b_0001.tar"]
    assert folds["val"] == [tmp_path / "val_0000.tar", tmp_path / "val_0002.tar", tmp_path / "val_0010.tar"]
    assert "x" not in folds and "dir" not in folds
    assert not any(p.name == "x.tar" for paths in folds.values() for p in paths)
    assert set(folds) <= {"a_b", "val"}


def test_if_exists_stop_raises_and_keeps_file(webds: Path) -> None:
    target = webds / "val.taridx"
    target.write_bytes(b"old index bytes")
    with pytest.raises(WriteError) as err:
        index_folds(webds, ["val"], if_exists="stop")
    assert "val.taridx" in str(err.value)
    assert target.read_bytes() == b"old index bytes"


def test_if_exists_backup_keeps_old_bytes(webds: Path, data_dir: Path) -> None:
    target = webds / "val.taridx"
    target.write_bytes(b"old index bytes")
    (result,) = index_folds(webds, ["val"], if_exists="backup")
    assert target.read_bytes() == fixture(data_dir, "val")
    backups = [p for p in webds.iterdir() if p.name.startswith("val.taridx") and p != target]
    assert len(backups) == 1
    assert backups[0].read_bytes() == b"old index bytes"
    assert result.backup == backups[0]


def test_if_exists_replace_overwrites(webds: Path, data_dir: Path) -> None:
    target = webds / "val.taridx"
    target.write_bytes(b"old index bytes")
    index_folds(webds, ["val"], if_exists="replace")
    assert target.read_bytes() == fixture(data_dir, "val")
    assert sorted(p.name for p in webds.iterdir() if p.name.startswith("val.taridx")) == ["val.taridx"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_moves_inside_each_shard(data_dir: Path, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    from itarcore.formats import tar as tar_module

    monkeypatch.setattr(tar_module, "_SCAN_CHUNK_BLOCKS", 16)  # 8 KiB chunks: several reports per shard
    shards = shards_of(data_dir / "taridx" / "webds", "train")
    total = sum(p.stat().st_size for p in shards)
    seen = []
    index_shards(shards, jobs=jobs, progress=lambda p: seen.append(p.done))
    assert seen[-1] == total
    assert any(0 < d < shards[0].stat().st_size for d in seen)  # reported before the first shard was done
    assert seen == sorted(seen)
