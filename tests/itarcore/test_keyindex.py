"""Key index (itarcore.keyindex): lookups equal the scan's, stale files are never used, in-order indexes need no sort.

Truth is independent: tarfile member lists for the fixture folds, and for generated folds
a numpy mask per key (``(keyhash == k) & (crashid == c)``) and ``np.lexsort`` for the order.
"""
from __future__ import annotations

import itertools
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
import xxhash

from itarcore import Cancelled, CancelToken
from itarcore.dataset import Dataset
from itarcore.formats.taridx import read_taridx, write_taridx
from itarcore.jobs import index_fold
from itarcore.keyindex import KeyIndex, build_key_index, key_file_path, stable_argsort_u64
from itarcore.keyindex.store import IndexIdentity

ROW = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                ("keyhash", "<u8")])
FOLDS = ("train", "val", "mixed")


def tar_stems(folder: Path, fold: str) -> set[str]:
    stems = set()
    for shard in folder.glob(f"{fold}_*.tar"):
        with tarfile.open(shard) as tf:
            stems |= {m.name.rsplit("/", 1)[-1].partition(".")[0] for m in tf.getmembers() if m.isfile()}
    return stems


def generated_rows(n: int, n_keys: int, seed: int, crash_every: int = 7) -> np.ndarray:
    """``n`` rows over ``n_keys`` keyhashes in random order; some keyhashes also carry crash ids 1 and 2."""
    rng = np.random.default_rng(seed)
    rows = np.zeros(n, ROW)
    keys = rng.integers(0, 2**64, n_keys, dtype=np.uint64, endpoint=False)
    keys[: n_keys // 10] >>= np.uint64(40)  # share high bits, so the fast sort's exact fix-up runs too
    pick = rng.integers(0, n_keys, n)
    rows["keyhash"] = keys[pick]
    rows["crashid"] = np.where(pick % crash_every == 0, rng.integers(0, 3, n), 0)
    rows["offset"] = np.arange(n) * 1024
    return rows


def scan_truth(rows: np.ndarray, keyhash: int, crashid: int) -> list[int]:
    return np.flatnonzero((rows["keyhash"] == np.uint64(keyhash)) & (rows["crashid"] == crashid)).tolist()


@pytest.mark.parametrize("fold", FOLDS)
def test_fixture_folds_lookups_equal_scan(webds: Path, tmp_path: Path, fold: str) -> None:
    cache = tmp_path / "cache"
    with Dataset.open(webds / f"{fold}.taridx", cache_dir=cache) as ds:
        assert ds.key_index_state == "none"
        scanned = {stem: ds.lookup_stem(stem).tolist() for stem in tar_stems(webds, fold)}
        crash = {stem: ds.lookup_stem(stem).tolist() for stem in ds.index.crash_stems}
        ds.build_key_index()
        assert ds.key_index_state == "ready"
        for stem, rows in scanned.items():
            assert rows, stem
            assert ds.lookup_stem(stem).tolist() == rows, stem
        for stem, rows in crash.items():
            assert ds.lookup_stem(stem).tolist() == rows, stem
        assert ds.lookup_stem("no_such_stem_anywhere").size == 0
    if fold in ("train", "val"):
        assert any(crash.values()), "the fixture's crash stems must be covered"
    with Dataset.open(webds / f"{fold}.taridx", cache_dir=cache) as again:  # a second open finds it cached
        assert again.key_index_state == "ready"
        assert {s: again.lookup_stem(s).tolist() for s in scanned} == scanned


@pytest.mark.parametrize("chunk_rows", [7, 1000, 1 << 22])
def test_generated_fold_with_collisions(tmp_path: Path, chunk_rows: int) -> None:
    rows = generated_rows(5000, 700, seed=chunk_rows)
    n_stems = len(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))
    write_taridx(tmp_path / "g.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=n_stems)
    with read_taridx(tmp_path / "g.taridx") as index:
        ki = build_key_index(index, tmp_path / "cache", chunk_rows=chunk_rows)
        assert ki.kind == "sorted"
        want_order = np.lexsort((np.arange(len(rows)), rows["crashid"], rows["keyhash"]))
        assert ki.rows_at(0, len(rows)).tolist() == want_order.tolist()
        assert ki.keys_at(0, len(rows)).tolist() == rows["keyhash"][want_order].tolist()
        assert ki.collisions.tolist() == np.unique(rows["keyhash"][rows["crashid"] > 0]).tolist()
        for kh, cid in set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())):
            assert ki.lookup(kh, cid).tolist() == scan_truth(rows, kh, cid)
            assert ki.lookup(kh, 9).size == 0
        assert ki.lookup(12345, 0).size == 0
        ki.close()


def test_one_key_larger_than_a_merge_block(tmp_path: Path) -> None:
    """Equal keys spanning whole merge blocks must still come out in row order."""
    rows = generated_rows(6000, 50, seed=3)
    rows["keyhash"][::2] = 77  # 3000 rows of one key across every run
    write_taridx(tmp_path / "g.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(tmp_path / "g.taridx") as index:
        ki = build_key_index(index, tmp_path / "cache", chunk_rows=64)
        want_order = np.lexsort((np.arange(len(rows)), rows["crashid"], rows["keyhash"]))
        assert ki.rows_at(0, len(rows)).tolist() == want_order.tolist()
        assert ki.lookup(77, 0).tolist() == scan_truth(rows, 77, 0)
        ki.close()


def test_stable_argsort_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    for keys in (rng.integers(0, 2**64, 10000, dtype=np.uint64, endpoint=False),
                 rng.integers(0, 50, 10000).astype(np.uint64),  # every key shares its high bits
                 np.repeat(rng.integers(0, 2**64, 300, dtype=np.uint64, endpoint=False), 7)[rng.permutation(2100)],
                 np.zeros(0, np.uint64), np.array([5], np.uint64)):
        assert stable_argsort_u64(keys).tolist() == np.argsort(keys, kind="stable").tolist()


def test_stale_key_index_is_never_used(tmp_path: Path) -> None:
    rows = generated_rows(400, 90, seed=5)
    path = tmp_path / "s.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with Dataset.open(path, cache_dir=tmp_path / "c") as ds:
        ds.build_key_index()
    before = os.stat(path)
    # rewrite in place: same size, rows swapped, mtime set back to what it was
    changed = rows.copy()
    changed["keyhash"] = changed["keyhash"][::-1]
    with open(path, "r+b") as fh:
        fh.seek(before.st_size - changed.nbytes)
        fh.write(changed.tobytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    with Dataset.open(path, cache_dir=tmp_path / "c") as ds:
        assert ds.key_index is None and ds.key_index_state == "none"
        kh = int(changed["keyhash"][0])
        assert ds.lookup_key(kh, int(changed["crashid"][0])).tolist() == scan_truth(changed, kh, int(changed["crashid"][0]))
    # only the mtime changes (e.g. `touch`): stale as well
    with Dataset.open(path, cache_dir=tmp_path / "c") as ds:
        ds.build_key_index()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    with read_taridx(path) as index:
        assert KeyIndex.open_cached(index, tmp_path / "c") is None


def test_damaged_key_file_is_ignored(tmp_path: Path) -> None:
    rows = generated_rows(300, 40, seed=6)
    path = tmp_path / "d.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(path) as index:
        built = build_key_index(index, tmp_path / "c")
        key_file = built.path
        built.close()
        assert key_file is not None and KeyIndex.open_cached(index, tmp_path / "c") is not None
        with open(key_file, "r+b") as fh:
            fh.truncate(os.path.getsize(key_file) - 8)
        assert KeyIndex.open_cached(index, tmp_path / "c") is None
        key_file.write_bytes(b"ITARKEYS" + bytes(200))
        assert KeyIndex.open_cached(index, tmp_path / "c") is None


def test_index_in_key_order_is_searched_without_building(tmp_path: Path) -> None:
    rows = generated_rows(3000, 400, seed=8)
    rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]
    path = tmp_path / "o.taridx"
    n_stems = len(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=n_stems)
    with read_taridx(path) as index:
        ki = build_key_index(index, tmp_path / "c", chunk_rows=100)
        assert ki.kind == "in_order"
        assert ki.path is not None and ki.path.stat().st_size <= 8192  # a marker, no sorted columns
        for kh, cid in set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())):
            assert ki.lookup(kh, cid).tolist() == scan_truth(rows, kh, cid)
        assert ki.lookup(int(rows["keyhash"][0]) ^ 1, 0).tolist() == scan_truth(rows, int(rows["keyhash"][0]) ^ 1, 0)
        ki.close()
    with Dataset.open(path, cache_dir=tmp_path / "c") as ds:  # remembered with the cache
        assert ds.key_index is not None and ds.key_index.kind == "in_order"


@pytest.mark.parametrize("fold,in_key_order", [("mixed", True), ("train", False)])
def test_contiguous_index_job_output(webds: Path, tmp_path: Path, fold: str, in_key_order: bool) -> None:
    """``index --contiguous`` sorts a non-contiguous fold by (keyhash, crashid), so its key index is only a
    marker; a fold already contiguous keeps its archive order (as the reference does) and gets a sorted one."""
    out = tmp_path / f"{fold}.taridx"
    index_fold(sorted(webds.glob(f"{fold}_*.tar")), out, contiguous=True)
    with Dataset.open(out, shard_dir=webds, cache_dir=tmp_path / "c") as ds:
        assert ds.index.contiguous
        ds.build_key_index()
        assert ds.key_index is not None
        assert ds.key_index.kind == ("in_order" if in_key_order else "sorted")
        for stem in tar_stems(webds, fold) | set(ds.index.crash_stems):
            assert ds.lookup_stem(stem).tolist() == ds.scan_key(*ds.stem_key(stem)).tolist(), stem


class CancelAfter(CancelToken):
    """Cancelled from its ``checks``-th poll on: stops a job at a chosen chunk, whatever the timing."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.checks = checks
        self.polls = 0

    @property
    def cancelled(self) -> bool:
        self.polls += 1
        return self.polls > self.checks


@pytest.mark.parametrize("fraction", [0.0, 0.2, 0.5, 0.8, 0.97])  # order check, run sort, merge
def test_cancel_leaves_no_cache_file(tmp_path: Path, fraction: float) -> None:
    rows = generated_rows(4000, 900, seed=9)
    path = tmp_path / "x.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(path) as index:
        counter = CancelAfter(10**9)
        build_key_index(index, tmp_path / "count", cancel=counter, chunk_rows=256).close()
        token = CancelAfter(int(counter.polls * fraction))
        with pytest.raises(Cancelled):
            build_key_index(index, tmp_path / "c", cancel=token, chunk_rows=256)
        folder = key_file_path(IndexIdentity.of(index), tmp_path / "c").parent
        assert list(folder.iterdir()) == []
        assert KeyIndex.open_cached(index, tmp_path / "c") is None


def test_key_file_is_named_by_index_path(tmp_path: Path) -> None:
    rows = generated_rows(50, 10, seed=2)
    write_taridx(tmp_path / "n.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(tmp_path / "n.taridx") as index:
        built = build_key_index(index, tmp_path / "c")
        want = xxhash.xxh64(os.path.realpath(tmp_path / "n.taridx").encode()).hexdigest() + ".keys"
        assert built.path == tmp_path / "c" / "keys" / want
        built.close()


@pytest.mark.parametrize("in_order", [False, True])
def test_fence_blocks_at_every_edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_order: bool) -> None:
    """A tiny fence stride: keys spanning many blocks, sitting on block edges, below the first and past the last."""
    from itarcore.keyindex import build, store

    monkeypatch.setattr(store, "FENCE_STRIDE", 4)
    monkeypatch.setattr(build, "FENCE_STRIDE", 4)
    rows = generated_rows(2000, 60, seed=11)
    rows["keyhash"][::3] = rows["keyhash"][0]  # one key spans a third of all positions
    if in_order:
        rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]
    path = tmp_path / "f.taridx"
    write_taridx(path, rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(path) as index:
        ki = build_key_index(index, tmp_path / "c", chunk_rows=37)
        assert ki.kind == ("in_order" if in_order else "sorted")
        keys = sorted(set(rows["keyhash"].tolist()))
        probes = {*keys, keys[0] - 1, keys[-1] + 1, 0, 2**64 - 1}
        for kh in probes:
            for cid in (0, 1, 2):
                assert ki.lookup(kh, cid).tolist() == scan_truth(rows, kh, cid), (kh, cid)
        ki.close()
        reopened = KeyIndex.open_cached(index, tmp_path / "c")
        assert reopened is not None and reopened.lookup(keys[0], 0).tolist() == scan_truth(rows, keys[0], 0)
        reopened.close()


def test_unwritable_cache_falls_back_to_a_private_folder(tmp_path: Path) -> None:
    rows = generated_rows(500, 80, seed=12)
    write_taridx(tmp_path / "u.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_bytes(b"x")
    with Dataset.open(tmp_path / "u.taridx", cache_dir=not_a_folder) as ds:
        built = ds.build_key_index()
        assert built.path is not None and not built.path.is_relative_to(tmp_path)
        kh = int(rows["keyhash"][0])
        assert ds.lookup_key(kh, int(rows["crashid"][0])).tolist() == scan_truth(rows, kh, int(rows["crashid"][0]))
        private = built.path.parents[1]
    assert not private.exists()  # removed at close


def test_build_memory_is_bounded_by_the_chunk_not_the_index(tmp_path: Path) -> None:
    """Peak numpy allocations (tracemalloc) follow chunk_rows, whatever the number of rows."""
    import tracemalloc

    rows = generated_rows(1_200_000, 400_000, seed=13)
    write_taridx(tmp_path / "m.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    with read_taridx(tmp_path / "m.taridx") as index:
        tracemalloc.start()
        try:
            build_key_index(index, tmp_path / "c", chunk_rows=16384).close()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # ~3 MB: one chunk's sort or one merge batch; the key order alone would be 1.2M x 12 bytes = 14.4 MB
    assert peak < 6 << 20, f"peak {peak:,} bytes for 16,384-row chunks of a 1,200,000-row index"


@pytest.mark.parametrize("checks", [0, 3, 40])
def test_scan_stops_within_a_chunk_per_thread_of_cancel(webds: Path, checks: int) -> None:
    """Latency in chunks, not seconds: after cancel, no scan thread starts another chunk."""
    with Dataset.open(webds / "train.taridx", key_index=False) as ds:
        token = CancelAfter(checks)
        scanned_after_cancel = []
        release = ds.index.release_rows

        def count(start: int, stop: int) -> None:  # called once per chunk scanned
            scanned_after_cancel.append(token.polls > checks)
            release(start, stop)

        ds.index.release_rows = count
        with pytest.raises(Cancelled):
            ds.lookup_stem("train000000", chunk=5, cancel=token)
        assert len(scanned_after_cancel) <= checks + 2  # 738 rows: 148 chunks if it ran on
        assert sum(scanned_after_cancel) <= 2  # at most the chunk each of the 2 threads was in
        ds.index.release_rows = release
        found = ds.lookup_stem("train000000", chunk=5, cancel=CancelToken()).tolist()
        assert found == ds.scan_key(*ds.stem_key("train000000")).tolist() and len(found) > 1


@pytest.mark.parametrize("in_key_order", [False, True])
def test_build_checks_cancel_between_chunk_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 in_key_order: bool) -> None:
    """Cancel latency in chunks: no two steps (a chunk read, sorted or written) run without a cancel
    check between them, and none is bigger than a chunk; once cancel is seen, no step runs."""
    from itarcore.keyindex import build

    rows = generated_rows(20_000, 3000, seed=5)  # 5 runs of 4000: merge blocks of 400, batches <= 4000
    if in_key_order:
        rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]
    write_taridx(tmp_path / "x.taridx", rows, ["jpg"], ["c1", "c2"], n_stems=1)
    events: list[tuple[str, int]] = []
    real_pwrite = build._pwrite_all

    def pwrite(fd: int, array: np.ndarray, offset: int, *checkpoint) -> None:
        events.append(("step", len(array)))
        real_pwrite(fd, array, offset, *checkpoint)

    class Polled(CancelAfter):
        @property
        def cancelled(self) -> bool:
            answer = CancelAfter.cancelled.fget(self)
            events.append(("cancelled" if answer else "poll", 0))
            return answer

    monkeypatch.setattr(build, "_pwrite_all", pwrite)
    def sort(keys: np.ndarray, checkpoint) -> np.ndarray:
        events.append(("step", len(keys)))
        return stable_argsort_u64(keys, checkpoint)

    def chunks(*args, **kwargs):
        for start, part in real_chunks(*args, **kwargs):
            events.append(("step", len(part)))
            yield start, part

    real_chunks = build.iter_row_chunks
    monkeypatch.setattr(build, "stable_argsort_u64", sort)
    monkeypatch.setattr(build, "iter_row_chunks", chunks)
    with read_taridx(tmp_path / "x.taridx") as index:
        build_key_index(index, tmp_path / "all", cancel=Polled(10**9), chunk_rows=4000).close()
        steps = [size for kind, size in events if kind == "step"]
        assert len(steps) >= 5 and max(steps) <= 4000
        kinds = [kind for kind, _ in events]
        assert all(not (a == b == "step") for a, b in itertools.pairwise(kinds)), events  # a poll between any two
        n_polls = kinds.count("poll")
        for stop_at in (0, n_polls // 3, n_polls - 3):
            events.clear()
            with pytest.raises(Cancelled):
                build_key_index(index, tmp_path / f"c{stop_at}", cancel=Polled(stop_at), chunk_rows=4000)
            kinds = [kind for kind, _ in events]
            assert "cancelled" in kinds and "step" not in kinds[kinds.index("cancelled"):]
