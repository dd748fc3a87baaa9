"""Windowed payload runs (only each payload's head and tail read, packed), against the bytes themselves."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from content_folds import READERS, fold_shards, shard_members, stem_ext, use_reader, write_fold

from itarcore.content.payloads import iter_payload_runs
from itarcore.content.windows import WindowPlan
from itarcore.dataset import Dataset
from itarcore.errors import DatasetError


def packed_bytes(data: bytes, plan: WindowPlan, s0: int, s1: int) -> bytes:
    """What ShardFile.read_spans puts in the buffer for reads s0:s1, by slicing the file's bytes."""
    return b"".join(data[a:z] for a, z in zip(plan.starts[s0:s1].tolist(), plan.ends[s0:s1].tolist()))


@pytest.mark.parametrize("seed", range(12))
def test_plan_packs_every_window_of_every_row(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 60)
    sizes = [rng.choice([0, 1, 5, 63, 64, 65, 300, 2000, 9000]) for _ in range(n)]
    gaps = [rng.choice([0, 1, 511, 4000, 5000]) for _ in range(n)]
    begin = np.cumsum([g + s for g, s in zip(gaps, [0, *sizes[:-1]])]) + 7
    if seed % 3 == 0 and n > 2:  # a damaged index: one payload overlapping the next
        begin[1] = begin[0] + max(sizes[0] // 2, 0)
        order = np.argsort(begin, kind="stable")
        begin, sizes = begin[order], [sizes[i] for i in order]
    size = np.array(sizes, np.int64)
    end = begin + size
    data = rng.randbytes(int(end.max()) + 100)
    head = np.array([rng.choice([0, 1, 64, 1024, 10**6]) for _ in range(n)], np.int64)
    tail = rng.choice([0, 64, 200])
    head_end = begin + np.clip(head, 0, size)
    tail_begin = np.maximum(end - tail, head_end)
    buffer_size = rng.choice([1, 100, 3000, 20000, 1 << 20])
    plan = WindowPlan.build(begin, head_end, tail_begin, end, buffer_size, gap=rng.choice([0, 600, 4096]))
    seen = []
    for i, j, s0, s1 in plan.runs:
        seen += range(i, j)
        if s0 < 0:  # read through the mmap: its windows alone would not fit
            assert j == i + 1 and plan.row_end[i] - plan.row_start[i] >= 0
            continue
        view = packed_bytes(data, plan, s0, s1)
        assert len(view) <= buffer_size
        base = int(plan.packed[s0])
        for k in range(i, j):
            a, z = int(plan.row_start[k]) - base, int(plan.row_end[k]) - base
            b, e, h = int(begin[k]), int(end[k]), int(head_end[k] - begin[k])
            assert view[a : a + h] == data[b : b + h], k
            t = int(end[k] - tail_begin[k])
            if t:
                assert view[z - t : z] == data[e - t : e], k
            if h == e - b:  # read whole: its end is where it ends
                assert z - a == e - b
    assert seen == list(range(n))  # every row once, in order


def windowed_fold(tmp: Path) -> Path:
    rng = random.Random(1400)
    shards: list[list[tuple[str, bytes]]] = [[], []]
    for i in range(80):
        size = rng.choice([0, 1, 63, 64, 65, 700, 5000, 20000])
        shards[i % 2].append((f"s{i:03d}.{rng.choice(['bin', 'jpg', 'cls'])}", rng.randbytes(size)))
    return write_fold(tmp / "w", "w", shards)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("tail", [0, 64])
def test_windowed_runs_hold_each_payloads_head_and_tail(tmp_path: Path, reader: str, tail: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    use_reader(reader, monkeypatch)
    index = windowed_fold(tmp_path)
    truth = {stem_ext(name): data for shard in fold_shards(index.parent, "w") for name, data in shard_members(shard)}
    with Dataset.open(index) as ds:
        rows = np.arange(ds.n_rows)[::-1]
        heads = (rows * 37) % 3000  # a different head for each row, in the order of ``rows``
        head_of = dict(zip(rows.tolist(), heads.tolist()))
        seen = set()
        windowed = 0
        for run in iter_payload_runs(ds, rows, batch_bytes=9000, heads=heads, tail=tail):
            windowed += run.windowed
            view = bytes(run.view)
            for row, a, z, size in zip(run.rows.tolist(), run.starts.tolist(), run.ends.tolist(), run.sizes.tolist()):
                data = truth[(ds.stem_names([row])[0], ds.ext_of(row))]
                assert size == len(data)
                h = min(head_of[row], size)
                assert view[a : a + h] == data[:h]
                t = min(tail, size - h)
                assert view[z - t : z] == data[size - t :]
                seen.add(row)
        assert seen == set(rows.tolist())
        assert (windowed > 0) == reader.startswith("windows")


@pytest.mark.parametrize("when", ["before", "during"])
def test_a_shard_cut_short_is_a_dataset_error(tmp_path: Path, when: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore.content import windows

    use_reader("windows", monkeypatch)
    index = windowed_fold(tmp_path)
    shard = fold_shards(index.parent, "w")[1]
    with Dataset.open(index) as ds:
        rows = np.flatnonzero(ds.rows["fid"] == 1)
        ds.shard_map(1)  # mapped at its full size
        if when == "before":
            with open(shard, "r+b") as fh:
                fh.truncate(3000)
            match = r"w_0001\.tar: the shard was cut short"
        else:  # between the check of its size and the reads
            read = windows.ShardFile.read_spans

            def cut_then_read(self, plan, s0, s1, into):  # type: ignore[no-untyped-def]
                with open(shard, "r+b") as fh:
                    fh.truncate(3000)
                return read(self, plan, s0, s1, into)

            monkeypatch.setattr(windows.ShardFile, "read_spans", cut_then_read)
            match = r"w_0001\.tar: \d+ of \d+ bytes read from offsets"
        with pytest.raises(DatasetError, match=match):
            list(iter_payload_runs(ds, rows, heads=64, tail=64))
