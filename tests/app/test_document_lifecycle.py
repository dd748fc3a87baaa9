"""The main window's document life-cycle: switching files, per-tab context, the stale-shard banner, N/P keys."""
from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from gui_helpers import open_file
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from itarcore.dataset import Dataset

DATA = Path(__file__).resolve().parents[1] / "data"
WEBDS = DATA / "taridx" / "webds"
TREES = DATA / "kastore" / "example.trees"


def panel(window, title: str):
    return next(p for p in window.panels if p.title == title)


def settle() -> None:
    for _ in range(20):
        QApplication.processEvents()


def test_opening_files_over_an_open_one_prints_nothing(qtbot, window, capfd):
    open_file(qtbot, window, WEBDS / "train.taridx")
    samples, plots = panel(window, "Samples"), panel(window, "Plots")
    with qtbot.waitSignal(samples.samplesReady, timeout=10_000):
        samples.parent().raise_()
    with qtbot.waitSignal(plots.computed, timeout=10_000):
        plots.parent().raise_()
    for path in (WEBDS / "train.taridx", TREES, WEBDS / "train.taridx"):
        open_file(qtbot, window, path)
        settle()
    assert window.path == str(WEBDS / "train.taridx")
    assert capfd.readouterr().err == ""  # no "Internal C++ object (SamplesPanel) already deleted"


def test_next_and_previous_sample_keep_working_after_the_grid_takes_focus(qtbot, window):
    open_file(qtbot, window, WEBDS / "train.taridx")
    samples = panel(window, "Samples")
    with qtbot.waitSignal(samples.sampleShown, timeout=10_000):
        samples.parent().raise_()
    start = samples.current
    window.activateWindow()  # window shortcuts need the active window, as on a desktop
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    samples.list.setFocus()
    grid = window.tabs_by_name["rows"].grid
    for step in range(1, 4):
        with qtbot.waitSignal(samples.sampleShown, timeout=10_000):
            qtbot.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_N)
        assert samples.current == start + step
        if step == 1:
            grid.view.setFocus()  # where selecting the sample's rows leaves the user
    with qtbot.waitSignal(samples.sampleShown, timeout=10_000):
        qtbot.keyClick(grid.view, Qt.Key.Key_P)
    assert samples.current == start + 2
    rows = samples.groups.rows_of(samples.current)
    assert grid.current_source_row() in set(rows.tolist())
    # a letter typed into a text box stays a letter
    key = window.tabs_by_name["rows"].filter_bar.key
    key.setFocus()
    qtbot.keyClicks(key, "n")
    assert key.text() == "n" and samples.current == start + 2


def test_other_tabs_show_their_own_context_not_the_rows_record(qtbot, window):
    open_file(qtbot, window, WEBDS / "train.taridx")
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        assert window.go_to_row(5)
    assert window.preview.payload is not None
    exts = window.tabs_by_name["extensions"]
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        window.tabs.setCurrentWidget(exts)
    row = exts.grid.current_source_row()
    assert row == 0
    offset, size = exts.table.byte_range(row)
    assert window.hex_pane.highlight == (offset, offset + size)
    name = Path(WEBDS / "train.taridx").read_bytes()[offset:offset + size].decode()
    assert name == exts.model.text(0, 1)
    assert window.preview.payload is None  # an extension has no payload: not the row's JPEG
    assert "no payload" in window.preview.placeholder.text()


def _swap_first_two_members(shard: Path) -> None:
    with tarfile.open(shard) as tf:
        infos = tf.getmembers()
        payloads = [tf.extractfile(i).read() for i in infos]
    order = [1, 0, *range(2, len(infos))]
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as tf:
        for i in order:
            tf.addfile(infos[i], io.BytesIO(payloads[i]))


def test_shards_newer_than_the_index_bring_a_banner_that_runs_the_audit(qtbot, window, webds):
    index = webds / "train.taridx"
    open_file(qtbot, window, index)
    assert not window.banner.isVisible()  # shards older than the index: nothing to suggest
    shard = webds / "train_0001.tar"
    _swap_first_two_members(shard)
    later = index.stat().st_mtime + 60
    os.utime(shard, (later, later))
    open_file(qtbot, window, index)
    assert window.banner.isVisible()
    assert "train_0001.tar" in " ".join(window.banner.warnings)
    assert window.banner.action.isVisible() and window.banner.action.text() == "Run the audit"
    audit = panel(window, "Audit")
    qtbot.mouseClick(window.banner.action, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: audit.report is not None and audit.worker is None, timeout=30_000)
    assert not audit.visibleRegion().isEmpty()  # its tab came to the front
    errors = {f.kind for f in audit.report.findings if f.severity == "error"}
    assert "row_mismatch" in errors
    window.close_document()
    assert not window.banner.isVisible() and not window.banner.action.isVisible()


def test_samples_panel_says_what_it_will_group_and_can_start_again_after_cancel(qtbot, window, monkeypatch):
    open_file(qtbot, window, WEBDS / "train.taridx")
    samples = panel(window, "Samples")
    n_rows = samples.dataset.n_rows
    assert samples.message.text() == f"Open this panel to group {n_rows:,} rows into samples."
    assert samples._worker is None  # nothing reads every row at open

    real = Dataset.compute_samples

    def slow_then_real(self, progress=None, cancel=None):
        while not cancel.cancelled:  # a pass that is still going when the user cancels
            time.sleep(0.001)
        cancel.raise_if_cancelled()

    monkeypatch.setattr(Dataset, "compute_samples", slow_then_real)
    samples.parent().raise_()
    qtbot.waitUntil(lambda: samples._worker is not None)
    assert samples.cancel_button.isVisible()
    qtbot.mouseClick(samples.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: samples._worker is None)
    assert "cancelled" in samples.message.text()
    settle()
    assert samples._worker is None and samples.start_button.isVisible()  # not restarted behind the user's back
    monkeypatch.setattr(Dataset, "compute_samples", real)
    with qtbot.waitSignal(samples.samplesReady, timeout=10_000):
        qtbot.mouseClick(samples.start_button, Qt.MouseButton.LeftButton)
    truth = set(zip(samples.dataset.rows["keyhash"].tolist(), samples.dataset.rows["crashid"].tolist()))
    assert samples.groups.n_samples == len(truth)
    assert not samples.start_button.isVisible()
    assert np.array_equal(np.sort(samples.groups.rows_of(0)), samples.groups.rows_of(0))


def test_a_long_status_note_is_elided_and_never_widens_the_window(qtbot, window):
    width = window.width()
    note = "Stem lookups use a scan while the key index builds; " * 12
    window.status.set_note(note)
    settle()
    label = window.status.note_label
    assert label.isVisible() and label.text() == note and label.toolTip() == note
    assert label.width() <= 420 and window.width() == width
    window.status.set_note("")
    assert not label.isVisible()


def test_a_file_opened_right_after_a_failed_open_opens(qtbot, window, tmp_path):
    bad = tmp_path / "broken.kas"
    bad.write_bytes(TREES.read_bytes()[:64] + b"\xff" * 40)
    # asked for from inside the failure's own report, before the failed worker's `finished` arrives
    window.openFailed.connect(lambda *_: window.open_path(str(TREES)))
    with qtbot.waitSignal(window.documentOpened, timeout=15_000) as opened:
        window.open_path(str(bad))
    assert opened.args == [str(TREES)] and window.path == str(TREES)
    for box in QApplication.topLevelWidgets():
        if box.objectName() == "errorDialog":
            box.close()
