"""Statistics view on the train fixture: its tables hold the core's numbers, and those match tarfile's counts."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from app.views.formats.taridx.stats_panel import StatsPanel
from itarcore.content.stats import compute_stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "itarcore"))
from content_folds import WEBDS, shard_members, stem_ext
from gui_helpers import taridx_panel


@pytest.fixture
def panel(qtbot):
    with taridx_panel(qtbot, StatsPanel, WEBDS / "train.taridx", (900, 700)) as w:
        yield w


def table_dict(table) -> dict[str, list[str]]:
    return {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, table.columnCount())]
            for r in range(table.rowCount())}


def tar_truth() -> tuple[Counter, Counter, Counter]:
    """Members and bytes per extension, and cls values, straight from the shards."""
    count, size, labels = Counter(), Counter(), Counter()
    for shard in sorted(WEBDS.glob("train_*.tar")):
        for name, data in shard_members(shard):
            ext = stem_ext(name)[1]
            count[ext] += 1
            size[ext] += len(data)
            if ext == "cls":
                labels[data.decode().strip()] += 1
    return count, size, labels


def test_stats_view_shows_the_cores_numbers_and_they_match_tarfile(qtbot, panel):
    shown = []
    panel.statsShown.connect(shown.append)
    with qtbot.waitSignal(panel.worker.finished if panel.worker else panel.statsShown, timeout=60_000):
        panel.start()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    assert shown and shown[-1].complete
    assert any(not s.complete for s in shown[:-1])  # partial results were drawn before the end
    core = compute_stats(panel.dataset)
    count, size, labels = tar_truth()
    exts = table_dict(panel.ext_table)
    for row in core.extension_rows():
        name = row["ext"] or "(none)"
        assert exts[name][:2] == [f"{row['count']:,}", f"{row['bytes']:,}"]
        assert (row["count"], row["bytes"]) == (count[row["ext"]], size[row["ext"]])
    assert sum(int(v[0].replace(",", "")) for v in exts.values()) == sum(count.values())
    label_rows = table_dict(panel.label_table)
    assert {k: int(v[0]) for k, v in label_rows.items()} == dict(labels) == core.label_totals()
    shards = table_dict(panel.shard_table)
    assert {k: int(v[0].replace(",", "")) for k, v in shards.items()} == {r["shard"]: r["rows"]
                                                                          for r in core.shard_rows()}
    assert panel.heatmap.matrix.sum() == sum(count.values())
    assert panel.dims_table.item(0, 2).text() == f"{core.dims.images - core.dims.unreadable:,}"
    panel.per_shard.setChecked(True)
    per_shard = [[panel.label_table.item(r, c).text() for c in range(3)] for r in range(panel.label_table.rowCount())]
    assert sum(int(c) for _, _, c in per_shard) == sum(labels.values())
    assert {s for s, _, _ in per_shard} == {p.name for p in WEBDS.glob("train_*.tar")}


def test_a_json_field_as_label_source(qtbot, panel):
    panel.label_combo.setEditText("no.such.field")
    panel.start()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    assert panel.stats.label_source is not None and "no.such.field" in panel.stats.label_source
    assert panel.stats.label_missing == panel.stats.label_members > 0  # every JSON member lacks it
    assert "without the field" in panel.summary.text()


def test_cancel_stops_the_job(qtbot, panel):
    panel.start()
    panel.cancel()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    assert panel.summary.text() == "Cancelled."
    assert panel.run_button.isEnabled() and not panel.cancel_button.isVisible()
