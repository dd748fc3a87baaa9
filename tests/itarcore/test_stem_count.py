"""Bounded-memory counts (itarcore.audit.stem_count) and the quick check built on them.

Truth is independent: a Python set of (keyhash, crashid) pairs, ``itertools.groupby`` for
runs, and for ``quick_check`` findings worked out row by row in Python.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest

from itarcore import Cancelled, CancelToken
from itarcore.audit import quick_check
from itarcore.audit.stem_count import count_runs, count_stems
from itarcore.formats.taridx import ROW_DTYPE, read_taridx, write_taridx
from itarcore.keyindex import KeyIndex, build_key_index

BLOCK = 512


def collided_rows(n: int, n_keys: int, seed: int, *, shared_prefix: bool = False) -> np.ndarray:
    """Rows over ``n_keys`` keyhashes, some with crash ids 1 and 2 (collisions) beside crash id 0."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**64, n_keys, dtype=np.uint64, endpoint=False)
    if shared_prefix:  # a third of the keys under one 16-bit prefix: a partition bigger than asked for
        keys[: n_keys // 3] = (keys[: n_keys // 3] & np.uint64(2**48 - 1)) | np.uint64(0xBEEF << 48)
    rows = np.zeros(n, ROW_DTYPE)
    pick = rng.integers(0, n_keys, n)
    rows["keyhash"] = keys[pick]
    rows["crashid"] = np.where(pick % 6 == 0, rng.integers(0, 3, n), 0)
    rows["keyhash"][: n // 10] = np.sort(rows["keyhash"][: n // 10])  # some runs of equal keys
    return rows


def stems_truth(rows: np.ndarray) -> int:
    return len(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))


def runs_truth(rows: np.ndarray) -> int:
    return sum(1 for _ in itertools.groupby(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))


@pytest.mark.parametrize("shared_prefix", [False, True])
@pytest.mark.parametrize("partition_rows,chunk_rows", [(1 << 23, 1 << 21), (500, 333), (97, 64), (1, 1000)])
def test_counts_equal_python_sets(tmp_path: Path, partition_rows: int, chunk_rows: int, shared_prefix: bool) -> None:
    rows = collided_rows(4000, 1500, seed=partition_rows, shared_prefix=shared_prefix)
    write_taridx(tmp_path / "s.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(tmp_path / "s.taridx", check_rows=False) as index:
        got = count_stems(index, cache_dir=tmp_path / "none", partition_rows=partition_rows, chunk_rows=chunk_rows)
        assert got == stems_truth(rows)
        assert count_runs(index, chunk_rows=chunk_rows) == runs_truth(rows)


@pytest.mark.parametrize("in_key_order", [False, True])
def test_count_through_a_cached_key_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_key_order: bool) -> None:
    from itarcore.audit import stem_count

    rows = collided_rows(3000, 700, seed=5)
    if in_key_order:
        rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]
    write_taridx(tmp_path / "k.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(tmp_path / "k.taridx", check_rows=False) as index:
        build_key_index(index, tmp_path / "cache").close()
        assert count_stems(index, cache_dir=tmp_path / "other", partition_rows=300) == stems_truth(rows)
        monkeypatch.setattr(stem_count, "_partitions", None)  # no partitioned pass from here on
        assert count_stems(index, cache_dir=tmp_path / "cache", chunk_rows=128) == stems_truth(rows)


@pytest.mark.parametrize("writable", [True, False])
def test_index_bigger_than_the_page_cache_is_counted_through_a_built_key_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writable: bool) -> None:
    from itarcore.audit import stem_count

    rows = collided_rows(3000, 900, seed=7)
    write_taridx(tmp_path / "b.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    cache = tmp_path / "cache"
    if not writable:
        cache.write_bytes(b"not a folder")
    monkeypatch.setattr(stem_count, "_partitions", None)  # the partitioned passes would fail
    with read_taridx(tmp_path / "b.taridx", check_rows=False) as index:
        assert count_stems(index, cache_dir=cache, partition_rows=1000, in_page_cache=False) == stems_truth(rows)
        assert (KeyIndex.open_cached(index, cache) is not None) == writable  # kept for lookups when it can be


def test_count_cancels_between_chunks(tmp_path: Path) -> None:
    rows = collided_rows(2000, 300, seed=6)
    write_taridx(tmp_path / "c.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    token = CancelToken()
    with read_taridx(tmp_path / "c.taridx", check_rows=False) as index:
        seen = []
        release = index.release_rows
        index.release_rows = lambda a, b: (seen.append(a), token.cancel(), release(a, b))
        with pytest.raises(Cancelled):
            count_stems(index, token, cache_dir=tmp_path / "none", partition_rows=100, chunk_rows=50)
        assert seen == [0]


def test_quick_check_findings_equal_row_by_row_truth(tmp_path: Path) -> None:
    """Missing, extra and short shards and a wrong stem count, each against Python's own reading of the rows."""
    rng = np.random.default_rng(8)
    n = 5000
    rows = collided_rows(n, 1200, seed=8)
    rows["fid"] = rng.integers(0, 5, n)  # shards 0..4; 3 is missing, 5 is extra
    rows["offset"] = rng.integers(0, 40, n) * BLOCK
    rows["size"] = rng.integers(0, 3 * BLOCK, n)
    shard_size = {0: 100 * BLOCK, 1: 20 * BLOCK, 2: 100 * BLOCK, 4: 0, 5: 10 * BLOCK}
    for fid, size in shard_size.items():
        with open(tmp_path / f"f_{fid:04d}.tar", "wb") as fh:
            fh.truncate(size)
    path = tmp_path / "f.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=7)
    old = os.stat(tmp_path / "f_0000.tar").st_mtime - 100
    os.utime(path, (old, old))  # every shard looks modified after the index
    report = quick_check(path)
    want_missing = [r for r in range(n) if rows["fid"][r] == 3]
    want_out = {fid: [r for r in range(n) if rows["fid"][r] == fid
                      and int(rows["offset"][r]) + BLOCK + int(rows["size"][r]) > size]
                for fid, size in shard_size.items() if fid != 5}
    kinds = [(f.kind, f.rows, f.shards) for f in report.findings]
    stems = [f for f in report.findings if f.kind == "stem_count"]
    assert len(stems) == 1 and f"rows hold {stems_truth(rows)} distinct" in stems[0].message
    assert ("missing_shard", want_missing, ["f_0003.tar"]) in kinds
    assert ("extra_shard", [], ["f_0005.tar"]) in kinds
    outside = [(k, r) for k, r, _ in kinds if k in ("outside_shard", "shard_modified")]
    assert outside == [("outside_shard" if want_out[f] else "shard_modified", want_out[f]) for f in (0, 1, 2, 4)]
    assert want_out[1] and want_out[4] and not want_out[0]
