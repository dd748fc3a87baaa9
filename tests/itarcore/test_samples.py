"""Sample grouping (Dataset.compute_samples) in small chunks against a plain dict grouping of the rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itarcore import Cancelled, CancelToken
from itarcore.dataset import Dataset
from itarcore.formats.taridx import write_taridx

ROW = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                ("keyhash", "<u8")])


def dict_grouping(rows: np.ndarray) -> list[list[int]]:
    """Samples as lists of rows, in order of first row: the definition, written plainly."""
    groups: dict[tuple[int, int], list[int]] = {}
    for r, key in enumerate(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())):
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def write_fold(path: Path, n: int, n_keys: int, seed: int, adjacent: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**64, n_keys, dtype=np.uint64, endpoint=False)
    keys[::5] = keys[1::5][: len(keys[::5])]  # pairs of stems sharing a keyhash: told apart by crash id
    crash = np.zeros(n_keys, np.uint32)
    crash[::5] = 1 + np.arange(len(crash[::5])) % 3
    pick = np.sort(rng.integers(0, n_keys, n)) if adjacent else rng.integers(0, n_keys, n)
    rows = np.zeros(n, ROW)
    rows["keyhash"], rows["crashid"] = keys[pick], crash[pick]
    rows["offset"] = np.arange(n) * 512
    n_stems = len(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))
    write_taridx(path, rows, ["jpg"], ["c1", "c2", "c3"], n_stems=n_stems)
    return rows


@pytest.mark.parametrize("adjacent", [True, False])
@pytest.mark.parametrize("chunk_rows", [3, 64, 1 << 21])
def test_chunked_grouping_equals_dict_grouping(tmp_path: Path, adjacent: bool, chunk_rows: int) -> None:
    rows = write_fold(tmp_path / "f.taridx", 3000, 900, seed=chunk_rows, adjacent=adjacent)
    expected = dict_grouping(rows)
    assert adjacent or any(g != list(range(g[0], g[0] + len(g))) for g in expected)  # the case we mean
    with Dataset.open(tmp_path / "f.taridx") as ds:
        groups = ds.compute_samples(chunk_rows=chunk_rows)
        assert groups.contiguous is adjacent
        assert (ds.key_index is None) is adjacent  # a key index is built only when rows are not adjacent
        assert groups.n_samples == len(expected)
        assert [groups.rows_of(i).tolist() for i in range(groups.n_samples)] == expected
        for i, members in enumerate(expected):
            assert int(groups.keyhash[i]) == int(rows["keyhash"][members[0]])
            assert int(groups.crashid[i]) == int(rows["crashid"][members[0]])
            for r in members:
                assert groups.sample_of_row(r) == i
                assert ds.rows_of_sample(r).tolist() == members
        assert groups.first_rows.itemsize <= 4  # 4 bytes a sample for < 2**32 rows


def test_grouping_reports_progress_and_reuses_the_key_index(tmp_path: Path) -> None:
    rows = write_fold(tmp_path / "f.taridx", 2000, 500, seed=4, adjacent=False)
    reports = []
    with Dataset.open(tmp_path / "f.taridx") as ds:
        ds.build_key_index()
        key_file = ds.key_index.path
        mtime = key_file.stat().st_mtime_ns
        groups = ds.compute_samples(progress=reports.append, chunk_rows=100)
        assert groups.key_index is ds.key_index and key_file.stat().st_mtime_ns == mtime  # not rebuilt
        assert [groups.rows_of(i).tolist() for i in range(groups.n_samples)] == dict_grouping(rows)
    assert reports and reports[-1].done == reports[-1].total
    assert [p.done for p in reports] == sorted(p.done for p in reports)


def test_cancelled_grouping_leaves_nothing_and_can_run_again(tmp_path: Path, _private_cache: Path) -> None:
    rows = write_fold(tmp_path / "f.taridx", 2000, 500, seed=5, adjacent=False)
    token = CancelToken()

    def cancel_at_first_report(_p) -> None:
        token.cancel()

    with Dataset.open(tmp_path / "f.taridx") as ds:
        with pytest.raises(Cancelled):
            ds.compute_samples(progress=cancel_at_first_report, cancel=token, chunk_rows=50)
        assert ds.key_index is None and ds.key_index_state == "none"
        assert [p for p in _private_cache.rglob("*") if p.is_file()] == []
        groups = ds.compute_samples(chunk_rows=50)
        assert [groups.rows_of(i).tolist() for i in range(groups.n_samples)] == dict_grouping(rows)


def test_empty_index_has_no_samples(tmp_path: Path) -> None:
    write_taridx(tmp_path / "e.taridx", np.zeros(0, ROW), [], [], n_stems=0)
    with Dataset.open(tmp_path / "e.taridx") as ds:
        assert ds.compute_samples().n_samples == 0
