"""The TACO panel and its edit dialog, driven as a person would, with results checked by tacozip and zipfile."""
from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import tacozip
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.views.formats.taco.edit_dialog import TacoEditDialog, parse_u64
from app.views.formats.taco.panel import PANELS, TacoEntriesPanel
from itarcore.document import open_document

TACO = Path(__file__).parents[1] / "data" / "taco"
MANIFEST = json.loads((TACO / "manifest.json").read_text())
FIXTURES = ["taco_0entries.tacozip", "taco_3entries.tacozip", "taco_3entries_before_update.tacozip"]


@pytest.fixture
def open_panel(qtbot, tmp_path):
    docs = []

    def make(name: str) -> TacoEntriesPanel:
        path = tmp_path / name
        shutil.copyfile(TACO / name, path)
        doc = open_document(path)
        docs.append(doc)
        panel = TacoEntriesPanel(doc)
        qtbot.addWidget(panel)
        panel.resize(760, 300)
        panel.show()
        return panel

    yield make
    for doc in docs:
        doc.close()


@pytest.fixture
def answer_yes(monkeypatch):
    asked = []

    def fake_question(parent, title, text, *args, **kwargs):
        asked.append(text)
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", fake_question)
    return asked


def _write(qtbot, dialog: TacoEditDialog, panel: TacoEntriesPanel) -> None:
    with qtbot.waitSignal(panel.reloadRequested, timeout=10_000):
        qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=10_000)


def test_registered_for_taco() -> None:
    assert PANELS == [TacoEntriesPanel]


@pytest.mark.parametrize("name", FIXTURES)
def test_each_fixture_shows_its_entries(open_panel, name: str) -> None:
    panel = open_panel(name)
    want = MANIFEST[name]
    assert panel.table.rowCount() == len(want["entries"])
    for row, (offset, length) in enumerate(want["entries"]):
        assert panel.table.item(row, 1).text() == f"{offset:,}"
        assert panel.table.item(row, 2).text() == f"{length:,}"
        assert panel.table.item(row, 3).text() == want["points_at"][row]
        assert panel.table.item(row, 5).text() == f"{offset + length:,}"
    assert panel.empty_note.isVisibleTo(panel) == (not want["entries"])


def test_selecting_an_entry_highlights_its_bytes_and_member(open_panel, qtbot) -> None:
    panel = open_panel("taco_3entries.tacozip")
    highlights, selections = [], []
    panel.followBytes.connect(lambda *a: highlights.append(a))  # a selection: followed, never forced into view
    panel.selectRows.connect(lambda *a: selections.append(a))
    panel.table.setCurrentCell(1, 0)
    assert highlights == [(2751, 1310)]
    assert selections[0][0] == "members"
    assert np.array_equal(selections[0][1], [MANIFEST["taco_3entries.tacozip"]["members"].index(
        "METADATA/level1.parquet")])


@pytest.mark.parametrize("name", FIXTURES)
def test_edit_through_dialog_writes_and_reloads(open_panel, qtbot, answer_yes, name: str, tmp_path) -> None:
    panel = open_panel(name)
    dialog = panel.open_editor()
    members = {m.name: m for m in panel.taco.zip.members}
    while dialog.table.rowCount():
        dialog.table.selectRow(0)
        qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
    # pick COLLECTION.json from the member list, then type a second range by hand
    dialog.member_combo.setCurrentIndex(list(members).index("COLLECTION.json"))
    qtbot.mouseClick(dialog.fill_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    dialog.set_entry(1, "0x29", "116")
    assert dialog.table.item(1, 2).text() == "TACO_HEADER"
    _write(qtbot, dialog, panel)
    path = str(tmp_path / name)
    want = [(members["COLLECTION.json"].data_offset, members["COLLECTION.json"].compressed_size), (41, 116)]
    assert tacozip.read_header(path) == want
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        assert zf.read("COLLECTION.json") == Path(path).read_bytes()[want[0][0]:want[0][0] + want[0][1]]
    assert "offset 41  length 116" in answer_yes[0]
    assert dialog.result() == dialog.DialogCode.Accepted


def test_dialog_reproduces_the_fixture_update(open_panel, qtbot, answer_yes, tmp_path) -> None:
    panel = open_panel("taco_3entries_before_update.tacozip")
    dialog = panel.open_editor()
    for offset, length in MANIFEST["taco_3entries.tacozip"]["entries"]:
        row = dialog.add_row(0, 0)
        dialog.set_entry(row, f"{offset:,}", str(length))
    dialog.grab().save(str(tmp_path / "taco_dialog.png"))
    _write(qtbot, dialog, panel)
    assert (tmp_path / "taco_3entries_before_update.tacozip").read_bytes() == \
        (TACO / "taco_3entries.tacozip").read_bytes()
    panel.grab().save(str(tmp_path / "taco_panel.png"))


def test_invalid_input_blocks_writing(open_panel, qtbot) -> None:
    panel = open_panel("taco_3entries.tacozip")
    dialog = panel.open_editor()
    dialog.set_entry(0, "-5", "10")
    assert not dialog.save_button.isEnabled()
    assert "entry 0 offset" in dialog.problems.text()
    dialog.set_entry(0, str(2**64), "10")
    assert not dialog.save_button.isEnabled()
    dialog.set_entry(0, str(2**64 - 1), "1")
    assert dialog.save_button.isEnabled() and "past end of file" in dialog.problems.text()
    for _ in range(10):
        qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    assert dialog.table.rowCount() == 7 and not dialog.add_button.isEnabled()


def test_declining_the_confirmation_writes_nothing(open_panel, qtbot, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    panel = open_panel("taco_3entries.tacozip")
    path = tmp_path / "taco_3entries.tacozip"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    dialog = panel.open_editor()
    dialog.set_entry(0, "202", "75")
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert dialog.worker is None and dialog.isVisible()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_archive_broken_after_opening_shows_error_and_is_untouched(open_panel, qtbot, answer_yes, tmp_path) -> None:
    panel = open_panel("taco_3entries.tacozip")
    path = tmp_path / "taco_3entries.tacozip"
    data = bytearray(path.read_bytes())
    data[4176:4180] = b"PK\x09\x09"  # someone damages the central directory while the dialog is open
    path.write_bytes(bytes(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    dialog = panel.open_editor()
    dialog.set_entry(0, "202", "75")
    with qtbot.waitSignal(dialog.failed, timeout=10_000) as blocker:
        qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=10_000)
    assert "signature" in str(blocker.args[0])
    box = dialog.findChild(QMessageBox, "errorDialog")
    assert box is not None and str(path) in box.informativeText() and "not changed" in box.text()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert dialog.isVisible() and dialog.save_button.isEnabled()


@pytest.mark.parametrize("text, value", [("1,399", 1399), ("0x577", 1399), (" 42 ", 42), ("1_000", 1000)])
def test_parse_u64(text: str, value: int) -> None:
    assert parse_u64(text) == value


@pytest.mark.parametrize("text", ["", "-1", "abc", str(2**64), "1.5"])
def test_parse_u64_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_u64(text)


def test_number_problems_are_told_in_plain_words(open_panel) -> None:
    panel = open_panel("taco_3entries.tacozip")
    dialog = panel.open_editor()
    for offset, words in (("12a", "“12a” is not a whole number"), ("", "is empty"), ("0xzz", "hexadecimal digits"),
                          (str(2**64), "larger than the largest 64-bit value")):
        dialog.set_entry(0, offset, "10")
        text = dialog.problems.text()
        assert "entry 0 offset: " in text and words in text, text
        assert "invalid literal" not in text and "int()" not in text and "base 10" not in text
        assert not dialog.save_button.isEnabled()
    dialog.set_entry(0, "0x10", "1,024")  # hex and thousands separators are fine
    assert "entry 0 offset" not in dialog.problems.text() and "entry 0 (16 + 1,024)" in dialog.problems.text()
