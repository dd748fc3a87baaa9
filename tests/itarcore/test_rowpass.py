"""Chunked passes over all rows (itarcore.rowpass): coverage, page release, cancel; the document's counts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itarcore import Cancelled, CancelToken
from itarcore.dataset import Dataset
from itarcore.document.taridx import _Counts
from itarcore.formats.taridx import TaridxIndex, read_taridx, write_taridx
from itarcore.rowpass import iter_row_chunks

ROW = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                ("keyhash", "<u8")])


def write_rows(path: Path, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    rows = np.zeros(n, ROW)
    rows["extid"] = rng.integers(0, 3, n)
    rows["crashid"] = rng.integers(0, 3, n)
    rows["size"] = rng.integers(0, 1 << 40, n)
    rows["keyhash"] = rng.integers(0, 1 << 62, n)
    write_taridx(path, rows, ["jpg", "cls", "json"], ["c1", "c2"], n_stems=1)
    return rows


def test_chunks_cover_every_row_once_and_release_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = write_rows(tmp_path / "r.taridx", 1000)
    released: list[tuple[int, int]] = []
    monkeypatch.setattr(TaridxIndex, "release_rows", lambda self, a, b: released.append((a, b)))
    reports = []
    with read_taridx(tmp_path / "r.taridx") as index:
        seen = [(start, part["keyhash"].copy()) for start, part in iter_row_chunks(index, 128, progress=reports.append)]
    assert [s for s, _ in seen] == list(range(0, 1000, 128))
    assert np.array_equal(np.concatenate([k for _, k in seen]), rows["keyhash"])
    assert released == [(s, min(1000, s + 128)) for s in range(0, 1000, 128)]
    assert reports[-1].done == reports[-1].total == 1000


def test_release_rows_keeps_data_readable(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "r.taridx", 5000)
    with read_taridx(tmp_path / "r.taridx") as index:
        before = index.rows["keyhash"].copy()
        index.release_rows(0, index.n_rows)
        assert np.array_equal(index.rows["keyhash"], before)
        assert np.array_equal(before, rows["keyhash"])


def test_cancel_stops_between_chunks(tmp_path: Path) -> None:
    write_rows(tmp_path / "r.taridx", 1000)
    token = CancelToken()
    got = []
    with read_taridx(tmp_path / "r.taridx") as index, pytest.raises(Cancelled):
        for start, _ in iter_row_chunks(index, 100, cancel=token):
            got.append(start)
            if start == 300:
                token.cancel()
    assert got == [0, 100, 200, 300]


def test_document_counts_equal_bincount(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "r.taridx", 3000)
    with Dataset.open(tmp_path / "r.taridx") as ds:
        counts = _Counts(ds)
        reports = []
        counts.compute(progress=reports.append)
        n_rows, n_bytes = counts.ext()
        assert n_rows.tolist() == [int((rows["extid"] == e).sum()) for e in range(3)]
        assert n_bytes.tolist() == [int(rows["size"][rows["extid"] == e].astype(object).sum()) for e in range(3)]
        assert counts.crash().tolist() == [int((rows["crashid"] == c).sum()) for c in range(3)]
        assert reports and reports[-1].done == 3000
