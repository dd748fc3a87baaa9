"""The Statistics heatmap's axes on a laptop: extension and shard names never overlap (their drawn rects, as the
axis lays them out), each is whole or cut in the middle, and the full name is on hover."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")
from gui_helpers import axis_tick_specs, settle
from PySide6.QtCore import QPointF

from app.views.formats.taridx.stats_plots import LabelBars, ShardExtHeatmap

EXTENSIONS = ["jpg", "segmentation_mask.png", "depth_map.exr", "caption.en.txt", "cls", "metadata.json",
              "instance_boxes.npy", "", "json"]
SHARDS = [f"imagenet-1k-train-{i:06d}.tar" for i in range(40)]


def drawn_texts(axis) -> list[tuple]:
    """(rect, text) of every tick label the axis draws now."""
    return [(rect, text) for rect, _flags, text in axis_tick_specs(axis)]


def assert_apart_and_faithful(texts: list[tuple], names: list[str], axis) -> None:
    assert texts
    bounds = axis.boundingRect().adjusted(-1, -1, 1, 1)
    for i, (rect, text) in enumerate(texts):
        assert bounds.contains(rect), (text, rect, bounds)  # the axis made room: nothing drawn is clipped
        assert not any(rect.intersects(other) for other, _ in texts[i + 1:]), (text, [t for _, t in texts])
        head, sep, tail = text.partition("…")
        # a whole name, or one cut once in the middle that keeps both of its ends
        assert text in names or (sep and any(n.startswith(head) and n.endswith(tail) and len(n) > len(text) - 1
                                             for n in names)), text


@pytest.fixture
def heatmap(qtbot):
    plot = ShardExtHeatmap()
    qtbot.addWidget(plot)
    matrix = np.arange(len(SHARDS) * len(EXTENSIONS), dtype=np.int64).reshape(len(SHARDS), len(EXTENSIONS))
    stats = SimpleNamespace(fids=list(range(len(SHARDS))), shard_ext=matrix, extensions=EXTENSIONS,
                            shard_names=dict(enumerate(SHARDS)))
    plot.show_stats(stats)
    return plot


@pytest.mark.parametrize("size", [(330, 300), (420, 360), (900, 800)])  # 1366- and 1440-px docks, a big window
def test_heatmap_tick_labels_never_overlap_and_are_whole_or_cut_in_the_middle(heatmap, size, tmp_path):
    heatmap.resize(*size)
    heatmap.show()
    settle()
    heatmap.grab().save(str(tmp_path / f"heatmap-{size[0]}.png"))
    names = [e or "(none)" for e in EXTENSIONS]
    bottom = drawn_texts(heatmap.getAxis("bottom"))
    assert_apart_and_faithful(bottom, names, heatmap.getAxis("bottom"))
    assert_apart_and_faithful(drawn_texts(heatmap.getAxis("left")), SHARDS, heatmap.getAxis("left"))
    # every extension is labelled (upright where the cells are narrow), the short ones whole
    assert len(bottom) == len(names) and {"jpg", "cls", "json"} <= {t for _, t in bottom}
    assert heatmap.getAxis("bottom").rotated == (size[0] < 900)
    # the counts printed in the cells: only where they fit, so never over each other
    shown = []
    for item in heatmap.cell_texts:
        if item.isVisible():
            m = item.textItem.document().documentMargin()
            shown.append(item.textItem.mapRectToScene(item.textItem.boundingRect().adjusted(m, m, -m, -m)))
    assert not any(a.intersects(b) for i, a in enumerate(shown) for b in shown[i + 1:])
    if size[0] >= 900:
        assert len(shown) == len(heatmap.cell_texts)  # 40 rows of 9 cells: each count fits its cell
    # the data area keeps most of the width: long shard names are cut, not given the plot
    assert heatmap.getPlotItem().vb.width() >= 0.5 * size[0]


def test_every_name_is_whole_on_hover_over_its_axis_and_its_cells(heatmap):
    heatmap.resize(330, 300)
    heatmap.show()
    settle()
    vb = heatmap.getPlotItem().vb
    bottom, left = heatmap.getAxis("bottom"), heatmap.getAxis("left")
    for column, name in enumerate(EXTENSIONS):
        at = vb.mapViewToScene(QPointF(column + 0.5, 0.5))
        bottom.hoverEvent(SimpleNamespace(isExit=lambda: False, scenePos=lambda at=at: at))
        assert bottom.toolTip() == (name or "(none)")
    for row in (0, 17, len(SHARDS) - 1):
        at = vb.mapViewToScene(QPointF(0.5, row + 0.5))
        left.hoverEvent(SimpleNamespace(isExit=lambda: False, scenePos=lambda at=at: at))
        assert left.toolTip() == SHARDS[row]
    cell = SimpleNamespace(isExit=lambda: False, pos=lambda: QPointF(1.5, 3.5))  # image coordinates
    heatmap.image.hoverEvent(cell)
    assert heatmap.image.toolTip() == f"{SHARDS[3]} · segmentation_mask.png: {3 * len(EXTENSIONS) + 1:,} rows"


def test_label_bars_thin_and_cut_long_label_names(qtbot):
    bars = LabelBars()
    qtbot.addWidget(bars)
    totals = {f"n0{i:07d} {'great white shark' if i % 2 else 'tench'}": 100 - i for i in range(30)}
    bars.show_totals(totals, "cls")
    bars.resize(330, 260)
    bars.show()
    settle()
    texts = drawn_texts(bars.getAxis("bottom"))
    assert_apart_and_faithful(texts, list(totals), bars.getAxis("bottom"))
    assert 1 < len(texts) < len(totals)  # 30 labels in 330 px: every other one, upright


def test_cell_counts_are_redrawn_on_the_same_items(heatmap, qtbot):
    """A partial result every 0.25 s resets the cells' text items (new counts, colours) instead of making new ones."""
    heatmap.resize(900, 800)
    heatmap.show()
    settle()
    items = list(heatmap.cell_texts)
    matrix = np.arange(len(SHARDS) * len(EXTENSIONS), dtype=np.int64).reshape(len(SHARDS), len(EXTENSIONS))
    grown = matrix * 1000
    heatmap.show_stats(SimpleNamespace(fids=list(range(len(SHARDS))), shard_ext=grown, extensions=EXTENSIONS,
                                       shard_names=dict(enumerate(SHARDS))))
    assert heatmap.cell_texts == items and all(item.scene() is heatmap.scene() for item in items)
    assert [item.toPlainText() for item in items] == [f"{n:,}" for n in grown.ravel().tolist()]
    top = np.log1p(float(grown.max()))
    dark = [np.log1p(float(n)) > 0.5 * top for n in grown.ravel().tolist()]
    assert [item.color.getRgb()[:3] for item in items] == [(255, 255, 255) if d else (20, 30, 90) for d in dark]
    assert [(item.pos().x(), item.pos().y()) for item in items] == [
        (c + 0.5, r + 0.5) for r in range(len(SHARDS)) for c in range(len(EXTENSIONS))]
    fewer = grown[:3, :2]
    heatmap.show_stats(SimpleNamespace(fids=[0, 1, 2], shard_ext=fewer, extensions=EXTENSIONS[:2],
                                       shard_names=dict(enumerate(SHARDS))))
    assert heatmap.cell_texts == items[:6] and all(item.scene() is None for item in items[6:])
    assert [item.toPlainText() for item in heatmap.cell_texts] == [f"{n:,}" for n in fewer.ravel().tolist()]
