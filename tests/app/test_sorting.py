"""The two-step sort without Qt: the first window equals the start of a full stable sort."""
from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

from app.models import sorting
from app.models.sorting import SortKey, first_window, full_order
from itarcore.document import Column, Table
from itarcore.errors import Cancelled
from itarcore.progress import CancelToken

LABELS = ["jpg", "cls", "json"]  # label order: cls < jpg < json


def make_table(n: int, seed: int = 3) -> Table:
    rng = np.random.default_rng(seed)
    records = np.zeros(n, [("fid", "<u2"), ("size", "<u8"), ("ext", "<u2"), ("keyhash", "<u8"), ("delta", "<i8")])
    records["size"] = rng.integers(0, 50, n)  # many ties
    records["ext"] = rng.integers(0, 3, n)
    records["keyhash"] = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * 2 + 1  # full 64-bit range
    records["delta"] = rng.integers(-(2**40), 2**40, n)
    return Table("rows", n, [Column("Size", records["size"], "size"), Column("Ext", records["ext"], "enum", LABELS),
                             Column("Keyhash", records["keyhash"], "hex"), Column("Delta", records["delta"], "int"),
                             Column("Ratio", records["delta"] / 7.0, "float")])


def stable_truth(table: Table, key: SortKey, rows: np.ndarray | None) -> np.ndarray:
    """Python's sorted() over (key, row): an independent stable order, both directions."""
    col = table.column(key.column)
    values = col.values
    rows = np.arange(table.n_rows) if rows is None else rows
    if col.kind == "enum":
        keyed = [(LABELS[int(values[r])], int(r)) for r in rows]
        if key.descending:
            by_label = sorted({label for label, _ in keyed}, reverse=True)
            keyed = [(by_label.index(label), r) for label, r in keyed]
    else:
        keyed = [((-1 if key.descending else 1) * values[r].item(), int(r)) for r in rows]
    return np.asarray([r for _, r in sorted(keyed)], dtype=np.int64)


@pytest.mark.parametrize("title", ["Size", "Ext", "Keyhash", "Delta", "Ratio"])
@pytest.mark.parametrize("descending", [False, True])
def test_first_window_is_the_start_of_the_full_stable_order(monkeypatch, title, descending):
    # small chunks and split thresholds so a 30,000-row table takes every multi-chunk, multi-thread path
    monkeypatch.setattr(sorting, "CHUNK", 4096)
    monkeypatch.setattr(sorting, "SMALL", 5000)
    table = make_table(30_000)
    key = SortKey(title, descending)
    truth = stable_truth(table, key, None)
    order = full_order(table, key, None, buckets=8)
    assert np.array_equal(order, truth)
    for k in (1, 37, 1000):
        assert np.array_equal(first_window(table, key, None, k), truth[:k])
    # a filtered subset: source rows, still stable
    subset = np.flatnonzero(table.column("Ext").values != 1)
    truth = stable_truth(table, key, subset)
    assert np.array_equal(full_order(table, key, subset, buckets=8), truth)
    assert np.array_equal(first_window(table, key, subset, 500), truth[:500])


def test_all_equal_keys_keep_row_order():
    table = Table("rows", 10_000, [Column("Size", np.zeros(10_000, np.uint64), "size")])
    assert np.array_equal(first_window(table, SortKey("Size", True), None, 50), np.arange(50))
    assert np.array_equal(full_order(table, SortKey("Size", True), None), np.arange(10_000))


def test_cancel_stops_the_full_sort(monkeypatch):
    monkeypatch.setattr(sorting, "CHUNK", 4096)
    monkeypatch.setattr(sorting, "SMALL", 5000)
    table = make_table(30_000)
    cancel = CancelToken()
    reports = []

    def progress(p):
        reports.append(p)
        cancel.cancel()  # the user cancels after the first report

    with pytest.raises(Cancelled):
        full_order(table, SortKey("Size"), None, progress=progress, cancel=cancel)
    assert 1 <= len(reports) <= sorting.THREADS  # each thread stops at its next check


def test_lazy_columns_cannot_be_sorted():
    table = Table("rows", 3, [Column("Stem", lambda rows: ["a"] * len(rows), "text")])
    with pytest.raises(TypeError, match="Stem"):
        full_order(table, SortKey("Stem"), None)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")
def test_sort_threads_run_below_the_gui_threads_priority():
    """Both cores sorting must not keep the GUI thread waiting for one: the sort's threads are niced."""
    def nice(_: int) -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    mine = nice(0)
    assert sorting._parallel(nice, [0, 1]) == [min(19, mine + sorting.BACKGROUND_NICE)] * 2
    assert nice(0) == mine  # the caller's own thread keeps its priority


@pytest.mark.parametrize("descending", [False, True])
def test_floats_with_nan_zeros_and_infinities_sort_as_numpy_does_in_both_steps(monkeypatch, descending):
    """NaN after every number (both directions), -0.0 equal to 0.0: the first window is still the full order's start."""
    monkeypatch.setattr(sorting, "CHUNK", 1000)
    monkeypatch.setattr(sorting, "SMALL", 1500)
    rng = np.random.default_rng(11)
    n = 12_000
    values = rng.choice([-2.5, -0.0, 0.0, 1.0, 7.25, np.inf, -np.inf], n)
    values[rng.random(n) < 0.6] = np.nan  # most chunks hold more NaNs than a window's rows
    values[rng.random(n) < 0.05] = -np.nan  # NaN with its sign bit set
    table = Table("rows", n, [Column("Ratio", values, "float")])
    sign = -1.0 if descending else 1.0
    truth = np.asarray(sorted(range(n), key=lambda r: (bool(np.isnan(values[r])),
                                                        0.0 if np.isnan(values[r]) else sign * values[r], r)))
    key = SortKey("Ratio", descending)
    assert np.array_equal(full_order(table, key, None, buckets=4), truth)
    for k in (1, 300, 1000, 5000, n):
        assert np.array_equal(first_window(table, key, None, k), truth[:k]), k
