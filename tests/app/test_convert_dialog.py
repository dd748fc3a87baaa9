"""Convert dialog: the right file in errors, plain words, asks before replacing, fresh progress, Open result."""
from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import shown
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.views.formats.tbl.convert_dialog import ConvertDialog

DATA = Path(__file__).parents[1] / "data" / "tbl"


@pytest.fixture
def dialog(qtbot):
    return shown(qtbot, ConvertDialog())


def convert(qtbot, dialog):
    with qtbot.waitSignal(dialog.conversionDone, timeout=20_000) as sig:
        qtbot.mouseClick(dialog.convert_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.worker is None)
    return sig.args[0]


def test_error_names_the_bad_input_in_plain_words(qtbot, dialog, tmp_path):
    good = tmp_path / "good.tar"
    shutil.copy(DATA / "images.tar", good)
    junk = tmp_path / "junk.tar"
    junk.write_bytes(bytes(range(256)) * 8)  # not a tar: its first "header" has a wrong checksum
    dialog.add_inputs([str(good), str(junk)])
    assert dialog.output.text() == str(tmp_path / "good.tbl")
    error = convert(qtbot, dialog)
    with pytest.raises(Exception) as truth:  # the library names junk.tar too
        tarfile.open(junk).close()
    assert truth.value is not None
    box = dialog.message_box
    assert box.objectName() == "errorDialog"
    assert "junk.tar" in box.text() and "good.tbl" not in box.text()  # the file at fault, not the output
    assert box.informativeText().startswith(str(junk))
    details = box.informativeText()
    assert "b'" not in details and "None" not in details and "\\x" not in details  # no Python internals
    assert "checksum" in details and "at byte 148" in details
    assert str(junk) in str(error)
    box.close()


def test_asks_before_replacing_and_keeps_the_file_on_no(qtbot, dialog, tmp_path, monkeypatch):
    src = tmp_path / "images.tar"
    shutil.copy(DATA / "images.tar", src)
    dialog.add_inputs([str(src)])
    out = tmp_path / "images.tbl"
    out.write_bytes(b"precious")
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: (asked.append(a[2]), QMessageBox.StandardButton.No)[1])
    qtbot.mouseClick(dialog.convert_button, Qt.MouseButton.LeftButton)
    assert asked and "images.tbl" in asked[0]
    assert dialog.worker is None and out.read_bytes() == b"precious"
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    result = convert(qtbot, dialog)
    assert result.num_samples == 12 and out.read_bytes()[:4] != b"prec"
    dialog.message_box.close()


def test_progress_starts_fresh_and_open_result_opens_the_file(qtbot, dialog, tmp_path, monkeypatch):
    src = tmp_path / "images.tar"
    shutil.copy(DATA / "images.tar", src)
    dialog.add_inputs([str(src)])
    convert(qtbot, dialog)
    assert dialog.progress.value() == 12
    dialog.message_box.close()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    seen = []
    real_start = dialog.progress.setVisible

    def on_visible(on):  # the moment the second run shows its bar, it holds nothing of the first
        seen.append((dialog.progress.value(), dialog.progress.text()))
        real_start(on)

    monkeypatch.setattr(dialog.progress, "setVisible", on_visible)
    opened = []
    dialog.openResult.connect(opened.append)
    result = convert(qtbot, dialog)
    assert seen[0][0] == -1 and "12" not in seen[0][1]
    button = next(b for b in dialog.message_box.buttons() if b.objectName() == "openResult")
    assert button.text() == "Open result"
    button.click()
    assert opened == [str(result.output)] and os.path.isfile(opened[0])
    assert not dialog.isVisible()
