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


def test_select_rows_by_size_bins_and_shard_matches_numpy():
    from app.views.formats.taridx.plots_controls import select_rows, size_range_of_bins

    rng = np.random.default_rng(3)
    rows = np.zeros(20_000, ROW_DTYPE)
    rows["fid"] = rng.integers(0, 5, rows.size)
    rows["size"] = rng.integers(0, 1 << 22, rows.size) >> rng.integers(0, 22, rows.size)
    rows["size"][:4] = [0, 1023, 1024, 2047]  # the edges of bins 11 and 12
    low, high = size_range_of_bins(11, 11)
    assert (low, high) == (1024, 2047)
    bits = np.array([int(s).bit_length() for s in rows["size"].tolist()])
    for lo_bin, hi_bin, fid in ((11, 11, None), (0, 5, None), (3, 20, 2), (0, 64, None)):
        low, high = size_range_of_bins(lo_bin, hi_bin)
        got = select_rows(rows, low, high, fid, chunk_rows=777)
        truth = np.flatnonzero((bits >= lo_bin) & (bits <= hi_bin) & ((rows["fid"] == fid) if fid is not None else True))
        np.testing.assert_array_equal(got, truth)


def test_picker_filters_the_rows_tab_to_a_shard_and_size_range(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import Qt

    from app.views.main_window import MainWindow
    from app.views.settings import SETTINGS_ENV

    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "settings.ini"))
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    try:
        with qtbot.waitSignal(w.previewSettled, timeout=15_000), qtbot.waitSignal(w.documentOpened, timeout=15_000):
            w.open_path(str(WEBDS / "train.taridx"))
        plots = next(p for p in w.panels if p.title == "Plots")
        with qtbot.waitSignal(plots.computed, timeout=10_000):
            plots.parent().raise_()
        picker = plots.picker
        sizes = plots.dataset.rows["size"]
        fids = plots.dataset.rows["fid"]
        bits = np.array([int(s).bit_length() for s in sizes.tolist()])
        # every shard is listed, and typing part of a name finds it (a fold may have thousands)
        assert picker.shards.count() == 1 + 3
        completer = picker.shards.completer()
        completer.setCompletionPrefix("train_0002")
        assert completer.completionCount() == 1 and completer.currentCompletion().startswith("2: train_0002.tar")
        lo, hi = int(np.median(bits)) - 1, int(np.median(bits)) + 1
        picker.sizes.setValue((lo, hi))
        in_range = (bits >= lo) & (bits <= hi)
        assert f"{int(in_range.sum()):,} rows" in picker.summary.text()
        lo_x, hi_x = plots.size_region.getRegion()
        assert (lo_x, hi_x) == (lo - 1, hi)
        picker.shards.setCurrentIndex(1 + 2)
        rows_tab = w.tabs_by_name["rows"]
        with qtbot.waitSignal(rows_tab.viewApplied, timeout=10_000):
            qtbot.mouseClick(picker.show_button, Qt.MouseButton.LeftButton)
        truth = np.flatnonzero(in_range & (fids == 2))
        assert len(truth) and [rows_tab.model.source_row(i) for i in range(rows_tab.model.n_view)] == truth.tolist()
        assert "shard 2" in rows_tab.filter_bar.drill_label.text()
        plots.grab().save(str(tmp_path / "plots_picker.png"))
    finally:
        w.shutdown()


def test_counting_an_index_releases_its_pages_and_stops_between_chunks(monkeypatch, tmp_path):

    from synthetic import write_index

    from itarcore.errors import Cancelled
    from itarcore.formats.taridx import read_taridx
    from itarcore.progress import CancelToken

    path = tmp_path / "mid.taridx"
    write_index(path, 100_000)
    monkeypatch.setattr("app.views.formats.taridx.plots_panel.CHUNK", 30_000)
    with read_taridx(path) as index:
        released: list[tuple[int, int]] = []
        real_release = index.release_rows
        monkeypatch.setattr(index, "release_rows", lambda a, b: (released.append((a, b)), real_release(a, b)))
        stats = compute_fold_stats(index, 3)
        assert released == [(0, 30_000), (30_000, 60_000), (60_000, 90_000), (90_000, 100_000)]
        rows = np.array(index.rows)
        assert stats.rows_per_shard.tolist() == np.bincount(rows["fid"]).tolist()
        cancel = CancelToken()
        released.clear()
        with pytest.raises(Cancelled):
            compute_fold_stats(index, 3, progress=lambda p: cancel.cancel(), cancel=cancel)
        # cancelled while reporting the first chunk: at most the chunk already in hand follows
        assert released in ([(0, 30_000)], [(0, 30_000), (30_000, 60_000)])


def axis_text_rects(axis) -> list:
    """Scene rects of an axis's drawn texts: its tick labels (as the axis lays them out) and its title."""
    from gui_helpers import axis_tick_specs

    rects = [axis.mapRectToScene(rect) for rect, _flags, _text in axis_tick_specs(axis)]
    if axis.label.isVisible():  # a QGraphicsTextItem: its rect has the document's blank margin around the text
        m = axis.label.document().documentMargin()
        rects.append(axis.label.mapRectToScene(axis.label.boundingRect().adjusted(m, m, -m, -m)))
    return rects


def show_train_plots(qtbot, w):
    """Open the train fixture fold in window ``w`` and bring its Plots panel forward, filled and laid out."""
    from gui_helpers import open_file, settle

    open_file(qtbot, w, WEBDS / "train.taridx")
    plots = next(p for p in w.panels if p.title == "Plots")
    with qtbot.waitSignal(plots.computed, timeout=10_000):
        plots.parent().raise_()
    settle()
    return plots


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_plots_keep_usable_heights_and_apart_labels_in_a_laptop_dock(qtbot, monkeypatch, tmp_path, size):
    from gui_helpers import laptop_window, settle
    from PySide6.QtCore import QPoint, QRect

    from app.views.formats.taridx.plots_panel import HIST_MIN_HEIGHT, SHARD_MIN_HEIGHT

    w = laptop_window(qtbot, monkeypatch, *size)
    try:
        plots = show_train_plots(qtbot, w)
        w.grab().save(str(tmp_path / f"plots-{size[0]}.png"))
        scroll = plots.plots_scroll
        for plot, least in ((plots.hist_plot, HIST_MIN_HEIGHT), (plots.rows_plot, SHARD_MIN_HEIGHT),
                            (plots.bytes_plot, SHARD_MIN_HEIGHT)):
            assert plot.height() >= least
            item = plot.getPlotItem()
            data = item.vb.sceneBoundingRect()
            assert data.height() >= 80  # room for the bars, between the title and the axis
            title = item.titleLabel.sceneBoundingRect()
            assert title.bottom() <= data.top() + 1  # the title above the bars
            texts = [title]
            for name in ("bottom", "left"):
                texts += axis_text_rects(item.getAxis(name))
            # no two texts (title, tick labels, axis titles) overlap, and all are inside the plot
            for i, a in enumerate(texts):
                assert plot.sceneRect().contains(a), a
                assert not any(a.intersects(b) for b in texts[i + 1:]), a
            # every plot is whole once scrolled to: nothing cut by the dock
            # (as a drag of the scroll bar: ensureWidgetVisible aims at a graphics view's cursor, not its frame)
            scroll.verticalScrollBar().setValue(plot.mapTo(scroll.widget(), QPoint(0, 0)).y())
            settle()
            shown = QRect(plot.mapTo(scroll.viewport(), QPoint(0, 0)), plot.size())
            assert scroll.viewport().rect().contains(shown)
        assert scroll.horizontalScrollBar().maximum() == 0  # no sideways scrolling in the dock
        legend, hist = plots._legend_scroll.geometry(), plots.hist_plot.geometry()
        assert not legend.intersects(hist)  # the legend sits under (or beside) the histogram, never over it
    finally:
        w.shutdown()


def test_in_a_scrolling_dock_the_wheel_scrolls_the_plots_and_ctrl_wheel_zooms(qtbot, monkeypatch):
    from gui_helpers import laptop_window, settle
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    def wheel(plot, modifiers) -> None:
        centre = QPointF(plot.viewport().rect().center())
        event = QWheelEvent(centre, QPointF(plot.viewport().mapToGlobal(centre.toPoint())), QPoint(0, 0),
                            QPoint(0, -120), Qt.MouseButton.NoButton, modifiers, Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(plot.viewport(), event)
        settle()

    w = laptop_window(qtbot, monkeypatch)
    try:
        plots = show_train_plots(qtbot, w)
        bar = plots.plots_scroll.verticalScrollBar()
        assert bar.maximum() > 0  # a laptop's dock: the plots scroll
        x_range = plots.hist_plot.getPlotItem().vb.viewRange()[0]
        wheel(plots.hist_plot, Qt.KeyboardModifier.NoModifier)
        assert bar.value() > 0  # scrolled down, over the histogram
        assert plots.hist_plot.getPlotItem().vb.viewRange()[0] == x_range  # not zoomed
        scrolled = bar.value()
        wheel(plots.hist_plot, Qt.KeyboardModifier.ControlModifier)
        assert bar.value() == scrolled
        assert plots.hist_plot.getPlotItem().vb.viewRange()[0] != x_range  # zoomed in x
    finally:
        w.shutdown()
