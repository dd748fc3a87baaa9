"""TBL panel and Convert dialog, headless with pytest-qt."""
from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from app.views.formats.tbl.convert_dialog import ConvertDialog
from app.views.formats.tbl.panel import TblSamplePanel
from itarcore.decoders import decode
from itarcore.document import open_document
from itarcore.formats.tbl import TblFile
from itarcore.jobs import convert_tar_to_tbl
from itarcore.progress import Progress

DATA = Path(__file__).parents[1] / "data" / "tbl"
FIXTURES = ["v1_from_v1code.tbl", "v1_independent.tbl", "v2_plain.tbl", "v2_lz4_meta.tbl", "v2_empty.tbl"]


@pytest.fixture
def panel_for(qtbot):
    opened = []

    def make(path):
        doc = open_document(path)
        panel = TblSamplePanel(doc)
        qtbot.addWidget(panel)
        opened.append((doc, panel))
        return doc, panel

    yield make
    for doc, panel in opened:
        panel.shutdown()
        doc.close()


@pytest.mark.parametrize("name", FIXTURES)
def test_panel_opens_each_fixture_and_previews_an_image(panel_for, name):
    doc, panel = panel_for(DATA / name)
    samples = doc.table("samples")
    if not samples.n_rows:
        assert not panel.verify_all.isEnabled() and panel.verify_result.text() == "No samples."
        return
    with tarfile.open(DATA / "images.tar") as tf:
        first = tf.extractfile(tf.getmembers()[0]).read()
    panel.on_row_selected("samples", 0)
    assert "Sample 0" in panel.caption.text() and "JPEG" in panel.caption.text()
    payload = samples.payload(0)
    assert bytes(payload.data) == first  # decompressed when the fixture stores it as LZ4
    decoded = decode(bytes(payload.data), payload.ext, payload.meta)
    assert decoded.kind == "image" and decoded.value.size == (16, 12)  # hand-checked: img_000.jpg is 16x12
    if doc.source.version == 2:
        assert (payload.meta["width"], payload.meta["height"]) == (16, 12)


def test_panel_shows_metadata_tree_and_crc(panel_for, qtbot):
    _doc, panel = panel_for(DATA / "v2_lz4_meta.tbl")
    panel.on_row_selected("samples", 4)
    assert panel.tree.top_keys() == ["label", "name"]
    assert panel.tree.topLevelItem(1).text(1) == '"class1/img_004.tif"'  # a JSON string, in JSON's quotes
    assert "json" in panel.meta_caption.text() and "0x" in panel.crc_label.text() and "ok" in panel.crc_label.text()
    with qtbot.waitSignal(panel.highlightBytes) as sig:
        qtbot.mouseClick(panel.show_bytes, Qt.MouseButton.LeftButton)
    with TblFile(DATA / "v2_lz4_meta.tbl") as tbl:
        assert sig.args == [int(tbl.entries["offset"][4]), int(tbl.entries["size"][4])]
    panel.on_row_selected("metadata", 7)  # a metadata row follows its sample
    assert "Sample 7" in panel.caption.text()


def test_verify_all_finds_the_corrupted_sample(panel_for, qtbot, tmp_path):
    path = tmp_path / "bad.tbl"
    shutil.copy(DATA / "v2_plain.tbl", path)
    path.chmod(0o644)
    with TblFile(path) as tbl:
        at = int(tbl.entries["offset"][9]) + 200
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x0F
    path.write_bytes(bytes(raw))
    _doc, panel = panel_for(path)
    panel.on_row_selected("samples", 9)
    assert "MISMATCH" in panel.crc_label.text()  # small files are verified at open
    with qtbot.waitSignal(panel.selectRows, timeout=10_000) as sig:
        qtbot.mouseClick(panel.verify_all, Qt.MouseButton.LeftButton)
    assert sig.args[0] == "samples" and sig.args[1].tolist() == [9]
    qtbot.waitUntil(lambda: panel.worker is None)
    assert "11 ok" in panel.verify_result.text() and "1 MISMATCH" in panel.verify_result.text()


def test_convert_dialog_runs_a_conversion(qtbot, tmp_path):
    dialog = ConvertDialog()
    qtbot.addWidget(dialog)
    src = tmp_path / "images.tar"
    shutil.copy(DATA / "images.tar", src)
    dialog.add_inputs([str(src)])
    assert dialog.output.text() == str(tmp_path / "images.tbl")
    dialog.lz4.setChecked(True)
    dialog.metadata.setChecked(True)
    dialog.show()
    with qtbot.waitSignal(dialog.conversionDone, timeout=20_000) as sig:
        qtbot.mouseClick(dialog.convert_button, Qt.MouseButton.LeftButton)
    result = sig.args[0]
    qtbot.waitUntil(lambda: dialog.worker is None)
    assert result.num_samples == 12 and dialog.message_box.objectName() == "convertResult"
    with TblFile(tmp_path / "images.tbl") as tbl:  # the dialog's file equals the library's own output
        assert tbl.verify().ok and json.loads(tbl.metadata_bytes(tbl.metadata[0]))["name"] == "class0/img_000.jpg"
        convert_tar_to_tbl(src, tmp_path / "lib.tbl", lz4=True, metadata_from="json")
    assert (tmp_path / "images.tbl").read_bytes() == (tmp_path / "lib.tbl").read_bytes()
    dialog.v1.setChecked(True)
    assert not dialog.lz4.isEnabled() and not dialog.lz4.isChecked()


def test_convert_dialog_shows_errors(qtbot, tmp_path):
    dialog = ConvertDialog()
    qtbot.addWidget(dialog)
    bad = tmp_path / "cut.tar"
    bad.write_bytes((DATA / "images.tar").read_bytes()[:3000])  # ends inside the second member's data
    dialog.add_inputs([str(bad)])
    with qtbot.waitSignal(dialog.conversionDone, timeout=20_000) as sig:
        qtbot.mouseClick(dialog.convert_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.worker is None)
    assert "cut.tar" in str(sig.args[0]) and dialog.message_box.objectName() == "errorDialog"
    assert sorted(os.listdir(tmp_path)) == ["cut.tar"]


@pytest.mark.parametrize("durable", [True, False])
def test_convert_dialog_waits_for_the_disk_unless_told_not_to(qtbot, tmp_path, monkeypatch, durable):
    from itarcore.formats import tbl_write

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(tbl_write.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    dialog = ConvertDialog()
    qtbot.addWidget(dialog)
    dialog.add_inputs([str(DATA / "images.tar")])
    dialog.output.setText(str(tmp_path / "out.tbl"))
    assert dialog.durable.isChecked()  # the safe choice is the default
    dialog.durable.setChecked(durable)
    with qtbot.waitSignal(dialog.conversionDone, timeout=20_000):
        qtbot.mouseClick(dialog.convert_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.worker is None)
    assert (tmp_path / "out.tbl").read_bytes() == (DATA / "v2_plain.tbl").read_bytes()
    assert len(synced) == (1 if durable else 0)


def test_convert_dialog_names_the_shard_in_progress_when_there_are_several(qtbot, tmp_path):
    dialog = ConvertDialog()
    qtbot.addWidget(dialog)
    dialog.add_inputs([str(tmp_path / "train_0000.tar")])
    report = Progress(5, 10, "samples", current=str(tmp_path / "train_0001.tar"), rate=1234.0)
    dialog._on_progress(report)
    assert dialog.rate.text().startswith("1,234 samples/s")  # one input: no shard to name
    dialog.add_inputs([str(tmp_path / "train_0001.tar")])
    dialog._on_progress(report)
    assert dialog.rate.text().startswith("train_0001.tar: 1,234 samples/s")
    assert dialog.progress.text() == "5 / 10 samples"
    dialog._on_progress(Progress(41_234, 150_000, "samples", rate=1.0))
    assert dialog.progress.text() == "41,234 / 150,000 samples"
