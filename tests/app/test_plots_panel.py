"""Plots panel: the statistics match hand counts and tarfile; the panel draws them."""
from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from app.views.formats.taridx.plots_panel import N_SIZE_BINS, PlotsPanel, bin_edges, compute_fold_stats, size_bin
from itarcore.dataset import Dataset
from itarcore.document import Document
from itarcore.formats.taridx import ROW_DTYPE

WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"


def test_size_bins_are_bit_lengths():
    sizes = np.array([0, 1, 2, 3, 4, 1023, 1024, 2**40 + 5], dtype=np.uint64)
    assert size_bin(sizes).tolist() == [int(s).bit_length() for s in sizes.tolist()]
    for k in (0, 1, 5, 11):
        lo, hi = bin_edges(k)
        assert size_bin(np.array([lo, hi - 1], np.uint64)).tolist() == [k, k]


def test_stats_match_python_counts(monkeypatch):
    rng = np.random.default_rng(7)
    rows = np.zeros(5000, ROW_DTYPE)
    rows["fid"] = rng.integers(0, 4, rows.size)
    rows["extid"] = rng.integers(0, 3, rows.size)
    rows["size"] = rng.integers(0, 1 << 20, rows.size) >> rng.integers(0, 20, rows.size)
    monkeypatch.setattr("app.views.formats.taridx.plots_panel.CHUNK", 777)  # several chunks, one partial
    stats = compute_fold_stats(rows, 3)
    hist = np.zeros((3, N_SIZE_BINS), int)
    per_rows, per_bytes = [0] * 4, [0] * 4
    for r in rows.tolist():
        fid, _offset, size, extid = r[0], r[1], r[2], r[3]
        hist[extid, int(size).bit_length()] += 1
        per_rows[fid] += 1
        per_bytes[fid] += int(size)
    np.testing.assert_array_equal(stats.size_hist, hist)
    assert stats.rows_per_shard.tolist() == per_rows
    assert stats.bytes_per_shard.tolist() == per_bytes


def test_panel_plots_rows_and_bytes_per_shard(qtbot, tmp_path):
    dataset = Dataset.open(WEBDS / "train.taridx")
    panel = PlotsPanel(Document(str(WEBDS / "train.taridx"), "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(panel)
    panel.resize(900, 600)
    with qtbot.waitSignal(panel.computed, timeout=5000):
        panel.show()
    counts, totals = [], []
    for fid in range(3):
        with tarfile.open(WEBDS / f"train_{fid:04d}.tar") as tar:
            members = tar.getmembers()
        counts.append(len(members))
        totals.append(sum(m.size for m in members))
    (rows_bars,) = [i for i in panel.rows_plot.getPlotItem().items if hasattr(i, "opts") and "height" in i.opts]
    assert list(rows_bars.opts["height"]) == counts
    assert panel.stats.bytes_per_shard.tolist() == totals
    # one histogram curve per extension, and its rows add up to the extension's count
    curves = panel.hist_plot.getPlotItem().listDataItems()
    assert len(curves) == len(dataset.extensions)
    assert sorted(int(c.yData.sum()) for c in curves) == sorted(
        np.bincount(dataset.rows["extid"]).tolist())
    assert "jpg" in panel.legend.text()
    panel.log_counts.setChecked(True)
    panel.grab().save(str(tmp_path / "plots.png"))
    panel.shutdown()
    dataset.close()
