"""The threaded keyhash scan (itarcore.keyscan) against a plain numpy mask, and its cancel.

Truth is ``np.flatnonzero((keyhash == k) & (crashid == c))`` over an in-memory copy of the
rows. The folds hold hash collisions (one keyhash, several crash ids), crash stems, and
keys equal to a probe in every byte but one, so the scan's 4-byte pre-filter lets them
through and the full-key check must drop them. The rows sit at every alignment mod 8.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itarcore import Cancelled, CancelToken
from itarcore.dataset import Dataset
from itarcore.formats.taridx import ROW_DTYPE, read_taridx, write_taridx
from itarcore.keyscan import _aligned_key_words, scan_key_rows


def fold_rows(n: int, n_keys: int, seed: int) -> np.ndarray:
    """Rows over ``n_keys`` keys and as many near keys (one byte changed); every 5th pick may carry a crash id."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**64, n_keys, dtype=np.uint64, endpoint=False)
    near = keys.copy()
    near[::2] ^= np.uint64(0xFF << 56)  # differs from keys[i] in its last byte only
    near[1::2] ^= np.uint64(0x01)  # ... in its first byte only
    pool = np.concatenate([keys, near])
    rows = np.zeros(n, ROW_DTYPE)
    pick = rng.integers(0, len(pool), n)
    rows["keyhash"] = pool[pick]
    rows["crashid"] = np.where(pick % 5 == 0, rng.integers(0, 3, n), 0)  # collisions: crash ids 1, 2
    rows["offset"] = np.arange(n) * 512
    return rows


def probes(rows: np.ndarray, every: int = 1) -> list[tuple[int, int]]:
    """Keys of the rows (each ``every``-th, and both crash ids of the first colliding one), and absent keys."""
    pairs = sorted(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))[::every]
    kh = int(rows["keyhash"][rows["crashid"] > 0][0])
    pairs += [(kh, 0), (kh, 1), (kh, 2), (kh, 3), (kh ^ (1 << 63), 0), (kh ^ (0xFF << 8), 0), (0, 0), (2**64 - 1, 0)]
    return pairs


def truth(rows: np.ndarray, keyhash: int, crashid: int) -> list[int]:
    return np.flatnonzero((rows["keyhash"] == np.uint64(keyhash)) & (rows["crashid"] == crashid)).tolist()


@pytest.mark.parametrize("pad", range(8))  # the extension table's length sets the rows' alignment
def test_scan_equals_numpy_truth_at_every_alignment(tmp_path: Path, pad: int) -> None:
    rows = fold_rows(3000, 400, seed=pad)
    path = tmp_path / "f.taridx"
    write_taridx(path, rows, ["jpg", "x" * (pad + 1)], ["crash-a", "crash-b"], n_stems=1)
    with read_taridx(path, check_rows=False) as index:
        assert (index.header.off_arr + 24) % 8 == (64 + 4 + pad + 1 + 15 + 24) % 8
        words, _ = _aligned_key_words(index.rows, 0)
        assert words is not None and words.flags.aligned  # the pre-filter reads without numpy's copy
        for chunk, threads, every in [(1 << 22, 2, 3), (7, 2, 40), (64, 3, 10), (1000, 1, 10)]:
            for kh, cid in probes(rows, every):
                got = scan_key_rows(index, kh, cid, chunk=chunk, threads=threads)
                assert got.dtype == np.int64 and got.tolist() == truth(rows, kh, cid), (chunk, threads, kh, cid)


@pytest.mark.parametrize("shift", range(8))
def test_scan_of_rows_in_memory_at_any_address(tmp_path: Path, shift: int) -> None:
    """A remote index's rows live in memory: the pre-filter's word is found from their own address."""
    rows = fold_rows(900, 120, seed=20 + shift)
    path = tmp_path / "m.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(path, check_rows=False) as index:
        buf = np.zeros(rows.nbytes + 8, np.uint8)
        buf[shift : shift + rows.nbytes] = rows.view(np.uint8)
        index.rows = np.frombuffer(buf[shift : shift + rows.nbytes].data, ROW_DTYPE)
        for kh, cid in probes(rows, 7):
            assert scan_key_rows(index, kh, cid, chunk=50).tolist() == truth(rows, kh, cid)


def test_dataset_lookups_without_key_index_equal_truth_for_crash_stems(webds: Path) -> None:
    with Dataset.open(webds / "train.taridx", key_index=False) as ds:
        rows = np.array(ds.rows)
        assert ds.index.crash_stems
        for stem in ds.index.crash_stems:
            kh, cid = ds.stem_key(stem)
            assert cid > 0 and ds.lookup_stem(stem, chunk=16).tolist() == truth(rows, kh, cid) != []
            assert ds.scan_key(kh, 0, chunk=16).tolist() == truth(rows, kh, 0)  # its colliding partner


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_cancel_from_progress_stops_within_the_chunks_in_flight(tmp_path: Path, threads: int) -> None:
    """Cancelled at the first progress report: the call raises (no result) after at most
    ``2 * threads`` chunks (those handed out), of 600."""
    rows = fold_rows(3000, 50, seed=3)
    path = tmp_path / "c.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(path, check_rows=False) as index:
        scanned: list[int] = []
        release = index.release_rows
        index.release_rows = lambda start, stop: (scanned.append(start), release(start, stop))  # once a chunk
        token = CancelToken()
        reports = []

        def on_progress(p) -> None:
            reports.append(p.done)
            token.cancel()

        kh = int(rows["keyhash"][0])
        with pytest.raises(Cancelled):
            scan_key_rows(index, kh, 0, chunk=5, threads=threads, progress=on_progress, cancel=token)
        assert reports == [5]
        assert 1 <= len(scanned) <= 2 * threads if threads > 1 else scanned == [0]
        scanned.clear()
        assert scan_key_rows(index, kh, 0, chunk=5, threads=threads, cancel=CancelToken()).tolist() == truth(rows, kh, 0)
        assert sorted(scanned) == list(range(0, 3000, 5))


def test_cancelled_before_the_scan_reads_nothing(tmp_path: Path) -> None:
    rows = fold_rows(100, 10, seed=4)
    write_taridx(tmp_path / "z.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with Dataset.open(tmp_path / "z.taridx", key_index=False) as ds:
        token = CancelToken()
        token.cancel()
        scanned = []
        ds.index.release_rows = lambda start, stop: scanned.append(start)
        with pytest.raises(Cancelled):
            ds.lookup_key(int(rows["keyhash"][0]), 0, chunk=10, cancel=token)
        assert scanned == []
