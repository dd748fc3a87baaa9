"""Stems read without scanning shards for long names equal the Dataset's (which always scans)."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
from content_folds import WEBDS

from itarcore.content.names import header_names_suffice, stem_names
from itarcore.dataset import Dataset
from itarcore.jobs import index_fold


def check_fold(index: Path, shard_dir: Path | None = None) -> np.ndarray:
    with Dataset.open(index, shard_dir) as ds:
        assert not ds.missing_shards
        rows = np.arange(ds.n_rows)
        fast = stem_names(ds, rows[::-1])[::-1]  # any order
        direct = header_names_suffice(ds, rows)
    with Dataset.open(index, shard_dir) as ds:
        assert fast == ds.stem_names(rows) and all(fast)
    return direct


def test_fixture_and_scale_folds(fold64_master: Path, tmp_path: Path) -> None:
    for fold in ("train", "val", "mixed"):
        check_fold(WEBDS / f"{fold}.taridx")
    index_fold(sorted(fold64_master.glob("big_*.tar")), tmp_path / "big.taridx")  # folders, upper case, collisions
    check_fold(tmp_path / "big.taridx", fold64_master)


def test_long_names_are_never_taken_from_the_header(tmp_path: Path) -> None:
    names = ["a.jpg", "d/" + "y" * 150 + ".jpg", "b.jpg", "é.jpg", "c.jpg", "z" * 99 + ".txt"]
    path = tmp_path / "p_0000.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
        info = tarfile.TarInfo("folder")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        info = tarfile.TarInfo("after_dir.jpg")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    index_fold([path], tmp_path / "p.taridx")
    direct = check_fold(tmp_path / "p.taridx")
    # behind a long name, a non-ASCII name (pax headers) or a directory entry: read through the scan
    assert direct.tolist() == [True, False, True, False, True, False, False]


def test_shard_order_shortcut_agrees_with_searching_each_shard(fold64_master: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore.content import names

    index_fold(sorted(fold64_master.glob("big_*.tar")), tmp_path / "big.taridx")
    for index, shard_dir in [(WEBDS / f"{fold}.taridx", None) for fold in ("train", "val", "mixed")] + [
            (tmp_path / "big.taridx", fold64_master)]:
        with Dataset.open(index, shard_dir) as ds:
            assert names._in_shard_order(ds.rows["fid"], ds.rows["offset"], step=7)  # as indexes are written
            rows = np.arange(ds.n_rows)[::-1]
            shortcut = header_names_suffice(ds, rows)
            with monkeypatch.context() as patched:
                patched.setattr(names, "_in_shard_order", lambda *args: False)
                assert shortcut.tolist() == header_names_suffice(ds, rows).tolist()
            shuffled = ds.rows.copy()
            shuffled[[0, -1]] = shuffled[[-1, 0]]
            assert not names._in_shard_order(shuffled["fid"], shuffled["offset"], step=7)
