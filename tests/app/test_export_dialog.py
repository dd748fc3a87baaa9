"""Export Subset dialog end to end on the train fixture: grid filter -> new shards + index, label -> stem list, cancel."""
from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "itarcore"))
from content_folds import WEBDS, fold_shards, shard_members, stem_ext
from gui_helpers import open_file

from app.views.formats.taridx import export_dialog
from app.views.formats.taridx.export_dialog import ExportDialog
from itarcore.jobs import index_fold


@pytest.fixture
def window(qtbot, window, tmp_path):
    shutil.copytree(WEBDS, tmp_path / "webds")
    open_file(qtbot, window, tmp_path / "webds" / "train.taridx")
    return window


def open_dialog(window) -> ExportDialog:
    window.actions_.export_subset.trigger()
    dialog = window.findChildren(ExportDialog)[-1]
    assert dialog.isVisible()
    return dialog


def run(qtbot, dialog) -> None:
    dialog.export_button.click()
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=60_000)


def test_the_grids_filter_exported_as_shards_and_a_byte_identical_index(qtbot, window, tmp_path):
    rows_tab = window.tabs_by_name["rows"]
    with qtbot.waitSignal(rows_tab.viewApplied, timeout=30_000):
        qtbot.keyClicks(rows_tab.filter_bar.substring, "train00001")
    dialog = open_dialog(window)
    assert dialog.source_buttons["rows in the grid's current view"].isChecked()
    out = tmp_path / "subset"
    dialog.output_edit.setText(str(out))
    dialog.fold_edit.setText("picked")
    run(qtbot, dialog)
    assert dialog.status.text().startswith("Wrote 10 samples")
    source = [(stem_ext(n), data) for shard in fold_shards(WEBDS, "train") for n, data in shard_members(shard)]
    chosen = [(se, data) for se, data in source if "train00001" in se[0]]
    written = [(stem_ext(n), data) for shard in fold_shards(out, "picked") for n, data in shard_members(shard)]
    assert written == chosen  # every chosen member, byte for byte, samples contiguous in source order
    fresh = tmp_path / "fresh.taridx"
    index_fold(fold_shards(out, "picked"), fresh, fold="picked")
    assert (out / "picked.taridx").read_bytes() == fresh.read_bytes()
    with qtbot.waitSignal(window.documentOpened, timeout=30_000) as opened:
        dialog.open_button.click()
    assert opened.args == [str(out / "picked.taridx")]


def test_samples_of_a_label_as_a_stem_list(qtbot, window, tmp_path):
    dialog = open_dialog(window)
    dialog.source_buttons["label"].setChecked(True)
    dialog.label_box.setEditText("3")
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("stems"))
    out = tmp_path / "label3.txt"
    dialog.output_edit.setText(str(out))
    run(qtbot, dialog)
    truth = [stem_ext(n)[0] for shard in fold_shards(WEBDS, "train") for n, data in shard_members(shard)
             if stem_ext(n)[1] == "cls" and data.strip() == b"3"]
    assert out.read_text().split() == truth and truth
    assert not dialog.open_button.isVisible()  # a stem list is not an index to open


def test_cancel_leaves_no_output(qtbot, window, tmp_path, monkeypatch):
    gate = threading.Event()
    real = export_dialog.export_subset

    def held(*args, **kwargs):  # the job starts only once the user has pressed Cancel
        gate.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(export_dialog, "export_subset", held)
    dialog = open_dialog(window)
    out = tmp_path / "never"
    dialog.output_edit.setText(str(out))
    dialog.export_button.click()
    dialog.cancel_button.click()
    gate.set()
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=60_000)
    assert dialog.status.text() == "Cancelled: nothing was written."
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".never")]
