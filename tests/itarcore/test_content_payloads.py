"""Payload runs (the reader under stats and dedup) and dedup's fingerprint pre-filter, against ``tarfile`` truth.

The fingerprint looks at the first and last 64 bytes of a payload only, so the folds here are
made of payloads that agree there and differ in between, of every size around the window,
at run and shard ends: dedup must still group exactly the byte-identical ones.
"""
from __future__ import annotations

import ctypes
import errno
import random
import threading
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import xxhash
from content_folds import READERS, fold_shards, shard_members, stem_ext, use_reader, write_fold

from itarcore.content import dedup, payloads
from itarcore.content.dedup import WINDOW, find_duplicates
from itarcore.content.payloads import PayloadRun, iter_payload_runs
from itarcore.dataset import Dataset


def tricky_fold(tmp: Path) -> Path:
    """Two shards of payloads that share sizes, heads and tails; some byte-identical, some one byte apart."""
    rng = random.Random(1414)
    head, tail = rng.randbytes(WINDOW), rng.randbytes(WINDOW)
    shards: list[list[tuple[str, bytes]]] = [[], []]
    n = 0

    def add(shard: int, ext: str, data: bytes) -> None:
        nonlocal n
        shards[shard].append((f"m{n:04d}.{ext}", data))
        n += 1

    for size in (1, 2, 7, 8, 9, 63, 64, 65, 127, 128, 129, 200, 5000):
        base = rng.randbytes(size)
        add(0, "bin", base)
        add(1, "bin", base)  # a twin in the other shard
        flipped = bytearray(base)
        flipped[size // 2] ^= 0x01  # one byte apart, in the middle
        add(0, "bin", bytes(flipped))
        if size > 2 * WINDOW:  # same head and tail, different middle: the fingerprint cannot tell these apart
            middle = size - 2 * WINDOW
            for _ in range(3):
                add(1, "mid", head + rng.randbytes(middle) + tail)
            twin = head + b"\x00" * middle + tail
            add(0, "mid", twin)
            add(1, "mid", twin)
    add(0, "txt", b"")  # empty payloads are never compared
    add(1, "txt", b"")
    add(0, "bin", b"same bytes, another extension")
    add(1, "dat", b"same bytes, another extension")
    last = rng.randbytes(40)
    add(0, "end", last)  # each the last member of its shard
    add(1, "end", last)
    return write_fold(tmp / "tricky", "tricky", shards)


def truth_groups(index: Path) -> dict[tuple[str, bytes], list[str]]:
    """(ext, payload) -> stems, for every non-empty payload that occurs more than once, by tarfile."""
    found = defaultdict(list)
    for shard in fold_shards(index.parent, "tricky"):
        for name, data in shard_members(shard):
            stem, ext = stem_ext(name)
            if data:
                found[(ext, data)].append(stem)
    return {key: sorted(stems) for key, stems in found.items() if len(stems) > 1}


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    use_reader(request.param, monkeypatch)
    return request.param


@pytest.mark.parametrize("batch_bytes", [1, 3000, payloads.BATCH_BYTES])
def test_dedup_groups_exactly_the_identical_payloads(tmp_path: Path, reader: str, batch_bytes: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    index = tricky_fold(tmp_path)
    truth = truth_groups(index)
    monkeypatch.setattr(payloads, "BATCH_BYTES", batch_bytes)
    monkeypatch.setattr(payloads.iter_payload_runs, "__defaults__", (None, batch_bytes))
    report = find_duplicates([index])
    got = {(g.ext, g.digest): sorted(m.stem for m in g.members) for g in report.groups}
    want = {(ext, xxhash.xxh3_128_hexdigest(data)): stems for (ext, data), stems in truth.items()}
    assert got == want
    assert all(g.size == len(data) for g in report.groups for (ext, data) in truth if g.ext == ext
               and g.digest == xxhash.xxh3_128_hexdigest(data))
    members = [data for shard in fold_shards(index.parent, "tricky") for _, data in shard_members(shard) if data]
    assert (report.rows_hashed, report.bytes_hashed) == (len(members), sum(map(len, members)))
    assert not [t for t in threading.enumerate() if t.name == "payload-populate"]


def test_fingerprint_depends_only_on_the_payload() -> None:
    rng = random.Random(7)
    for size in (1, 5, 63, 64, 65, 128, 129, 1000):
        data = rng.randbytes(size)
        filler = rng.randbytes(300)
        # the same payload early, between other bytes, and as the very last bytes of the run's buffer
        buf = data + filler + data + filler[:17] + data
        starts = np.array([0, size + 300, 2 * size + 317])
        run = PayloadRun(0, np.arange(3), starts, starts + size, memoryview(buf))
        keys = dedup._fingerprints(run)
        assert keys[0] == keys[1] == keys[2], size
        changed = bytearray(data)
        changed[0] ^= 0x80
        changed[-1] ^= 0x01
        other = PayloadRun(0, np.arange(2), np.array([0, size]), np.array([size, 2 * size]),
                           memoryview(data + bytes(changed)))
        assert len(set(dedup._fingerprints(other).tolist())) == 2, size


def test_runs_hold_every_payload_and_stop_cleanly(tmp_path: Path, reader: str) -> None:
    index = tricky_fold(tmp_path)
    truth = {stem_ext(name): data for shard in fold_shards(index.parent, "tricky") for name, data in
             shard_members(shard)}
    with Dataset.open(index) as ds:
        rows = np.arange(ds.n_rows)[::-1]  # any order in; ordered by shard and offset out
        seen = {}
        runs = 0
        for run in iter_payload_runs(ds, rows, batch_bytes=700):
            runs += 1
            assert list(run.rows) == sorted(run.rows, key=lambda r: int(ds.rows["offset"][r]))
            for row, data in run.payloads():
                seen[(ds.stem_names([row])[0], ds.ext_of(row))] = bytes(data)
        assert seen == truth
        want = 0
        for fid in (0, 1):
            mine = np.flatnonzero(ds.rows["fid"] == fid)
            mine = mine[np.argsort(ds.rows["offset"][mine])]
            begin = ds.rows["offset"][mine].astype(np.int64) + 512
            planned = len(payloads._ShardRuns.plan(ds, fid, mine, begin, ds.rows["size"][mine].astype(np.int64),
                                                   700).runs)
            want += -(-planned // payloads.WARM_RUNS) if reader == "cached" else planned  # cached: WARM_RUNS at a time
        assert runs == want and want > 4
        runs = iter_payload_runs(ds, rows, batch_bytes=700)
        next(runs)
        runs.close()  # the populating thread is joined before the mapping is let go
    assert not [t for t in threading.enumerate() if t.name == "payload-populate"]


def test_a_kernel_without_populate_read_falls_back_to_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = tricky_fold(tmp_path)
    calls = []

    def refusing_madvise(address: int, length: int, advice: int) -> int:
        calls.append(advice)
        ctypes.set_errno(errno.EINVAL)
        return -1

    monkeypatch.setattr(payloads, "_LIBC", (refusing_madvise, lambda *args: 0))
    monkeypatch.setattr(payloads, "_in_page_cache", lambda *args: False)
    monkeypatch.setattr(payloads, "_populate_works", True)
    before = find_duplicates([index]).to_json()
    assert calls == [payloads.MADV_POPULATE_READ] and payloads._populate_works is False  # asked once, then never
    assert {(g["ext"], g["hash"]) for g in before["groups"]} == {
        (ext, xxhash.xxh3_128_hexdigest(data)) for ext, data in truth_groups(index)}
    monkeypatch.setattr(payloads, "_LIBC", None)
    assert find_duplicates([index]).to_json() == before


def test_shared_keys_against_counting_every_pair() -> None:
    rng = np.random.default_rng(14)
    for n in (0, 1, 2, 7, 300):
        columns = [rng.integers(0, 3, n), rng.integers(0, 40, n), rng.integers(0, 5, n).astype(np.uint64)]
        rows = list(zip(*(c.tolist() for c in columns)))
        want = [rows.count(r) > 1 for r in rows]
        assert dedup._shared_keys(*columns).tolist() == want
