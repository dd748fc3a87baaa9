"""The kastore Array panel, on example.trees and on files made in the test."""
from __future__ import annotations

import json
from pathlib import Path

import kastore
import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtWidgets import QHeaderView

from app.views.formats.kastore.panel import PANELS, KastoreArrayPanel
from itarcore.document import open_document
from itarcore.formats.kastore_write import dump

DATA = Path(__file__).resolve().parents[1] / "data" / "kastore"
EXAMPLE = DATA / "example.trees"


@pytest.fixture
def make_panel(qtbot):
    docs = []

    def _make(path: Path) -> KastoreArrayPanel:
        doc = open_document(path)
        docs.append(doc)
        panel = KastoreArrayPanel(doc)
        qtbot.addWidget(panel)
        panel.resize(900, 600)
        return panel

    yield _make
    for doc in docs:
        doc.close()


def select(panel: KastoreArrayPanel, key: str) -> int:
    row = [it.key for it in panel.store.items_list].index(key)
    panel.on_row_selected("items", row)
    return row


def cell(model, row: int, col: int) -> str:
    return model.data(model.index(row, col))


def test_registered_and_titled() -> None:
    assert PANELS == [KastoreArrayPanel] and KastoreArrayPanel.title == "Array"


@pytest.mark.parametrize("key", ["provenances/record", "mutations/derived_state_offset", "populations/metadata"])
def test_ragged_column_rows_decoded(make_panel, key: str) -> None:
    panel = make_panel(EXAMPLE)
    select(panel, key)
    ref = kastore.load(EXAMPLE, read_all=True)
    data_key = key.removesuffix("_offset")
    raw, offsets = ref[data_key].tobytes(), ref[data_key + "_offset"]
    expected = [raw[offsets[i] : offsets[i + 1]].decode() for i in range(len(offsets) - 1)]
    model = panel.rows_model
    assert panel.tabs.currentIndex() == panel.rows_tab
    assert model.rowCount() == len(expected) > 0
    assert [model.row_text(i) for i in range(len(expected))] == expected
    for i in range(min(5, len(expected))):
        assert cell(model, i, 1) == str(len(expected[i].encode()))
        assert cell(model, i, 2) == expected[i][:240] + ("…" if len(expected[i]) > 240 else "")
    assert f"{len(expected):,} rows of" in panel.rows_caption.text()


def test_row_detail_pretty_prints_json(make_panel) -> None:
    panel = make_panel(EXAMPLE)
    select(panel, "provenances/record")
    panel.rows_view.selectRow(1)
    record = json.loads(panel.rows_model.row_text(1))
    assert panel.row_detail.toPlainText() == json.dumps(record, indent=2, ensure_ascii=False)
    assert record["parameters"]["command"] == "sim_mutations"


def test_float64_column_plotted_and_listed(make_panel) -> None:
    panel = make_panel(EXAMPLE)
    highlighted: list[tuple[int, int]] = []
    panel.followBytes.connect(lambda offset, size: highlighted.append((offset, size)))
    select(panel, "nodes/time")
    ref = kastore.load(EXAMPLE, read_all=True)["nodes/time"]
    assert len(panel.curve.yData) == len(ref) == 73
    np.testing.assert_array_equal(panel.curve.yData, ref)
    np.testing.assert_array_equal(panel.curve.xData, np.arange(73))
    assert panel.tabs.isTabEnabled(panel.plot_tab) and not panel.tabs.isTabEnabled(panel.rows_tab)
    assert panel.values_model.rowCount() == 73
    assert [cell(panel.values_model, i, 1) for i in (0, 8, 72)] == [str(ref[0]), str(ref[8]), str(ref[72])]
    assert highlighted == [(4859, 10), (41664, 584)]  # key, then array, per example.trees.keys.txt


def test_schema_shown_as_pretty_text(make_panel) -> None:
    panel = make_panel(EXAMPLE)
    select(panel, "populations/metadata_schema")
    raw = kastore.load(EXAMPLE, read_all=True)["populations/metadata_schema"].tobytes().decode()
    assert panel.tabs.currentIndex() == panel.text_tab
    assert panel.text_view.toPlainText() == json.dumps(json.loads(raw), indent=2)
    assert not panel.tabs.isTabEnabled(panel.plot_tab)


def test_key_and_array_buttons_highlight(make_panel, qtbot) -> None:
    panel = make_panel(EXAMPLE)
    select(panel, "edges/child")
    with qtbot.waitSignal(panel.highlightBytes) as blocker:
        panel.key_button.click()
    assert blocker.args == [4032, 11]
    with qtbot.waitSignal(panel.highlightBytes) as blocker:
        panel.array_button.click()
    assert blocker.args == [5184, 213 * 4]


def test_ten_million_values_are_virtual(make_panel, tmp_path: Path) -> None:
    n = 10_000_000
    path = tmp_path / "big.kas"
    dump({"big": np.arange(n, dtype=np.uint32) * 3, "small": np.array([1, 2], np.int8)}, path)
    panel = make_panel(path)
    select(panel, "big")
    assert panel.values_model.rowCount() == n
    assert cell(panel.values_model, n - 1, 1) == str((n - 1) * 3)
    header = panel.values_view.verticalHeader()
    assert header.sectionResizeMode(0) == QHeaderView.ResizeMode.Fixed
    panel.values_view.scrollToBottom()
    assert len(panel.curve.yData) == n
    assert panel.values_model.array.base is not None  # a view over the map, not a copy


def test_bad_offsets_explained_not_crashing(make_panel, tmp_path: Path, qtbot) -> None:
    path = tmp_path / "bad.trees"
    dump({"x": np.frombuffer(b"abcdef", np.uint8), "x_offset": np.array([0, 4, 2, 6], np.uint32)}, path)
    panel = make_panel(path)
    with qtbot.waitSignal(panel.statusMessage) as blocker:
        select(panel, "x_offset")
    assert "offsets decrease at row 1" in blocker.args[0]
    assert panel.rows_model.rowCount() == 0 and "cannot be split" in panel.rows_caption.text()


def test_screenshot(make_panel, tmp_path: Path) -> None:
    panel = make_panel(EXAMPLE)
    select(panel, "provenances/record")
    panel.rows_view.selectRow(0)
    shot = tmp_path / "kastore_panel.png"
    assert panel.grab().save(str(shot))
    assert shot.stat().st_size > 5000
