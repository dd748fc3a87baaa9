"""File → Compare with…: the diff view docked in the main window, driven with pytest-qt."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import xxhash

pytest.importorskip("PySide6")
from diff_fixtures import SHARDS, build_modified_train, expected_diff, samples_of
from gui_helpers import open_file
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.views.formats.taridx import diff_view
from app.views.formats.taridx.diff_view import DiffView, compare_with
from itarcore.diff import diff_indexes
from itarcore.formats.taridx import read_taridx


@pytest.fixture
def folds(webds: Path, tmp_path: Path) -> tuple[Path, Path, dict]:
    injected = build_modified_train(webds, tmp_path / "new")
    return webds / "train.taridx", tmp_path / "new" / "train.taridx", injected


def compare(qtbot, window, other: Path) -> DiffView:
    view = compare_with(window, str(other))
    assert view is not None
    qtbot.waitUntil(lambda: view.worker is None and view.diff is not None, timeout=30_000)
    return view


def click_sample(qtbot, view: DiffView, stem: str) -> None:
    model = view.sample_model
    row = next(r for r in range(model.rowCount()) if model.index(r, 1).data() == stem)
    rect = view.samples.visualRect(model.index(row, 1))
    qtbot.mouseClick(view.samples.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def rows_of_stem(index_path: Path, stem: str) -> list[int]:
    with read_taridx(index_path) as index:
        return np.flatnonzero(index.rows["keyhash"] == np.uint64(xxhash.xxh64_intdigest(stem.encode()))).tolist()


def test_compare_shows_counts_and_clicking_selects_rows(qtbot, window, folds, webds: Path, tmp_path: Path) -> None:
    old, new, injected = folds
    assert not window.actions_.compare.isEnabled()  # nothing open
    open_file(qtbot, window, Path(__file__).resolve().parents[1] / "data" / "kastore" / "example.trees")
    assert not window.actions_.compare.isEnabled()  # not a TARIDX index
    open_file(qtbot, window, new)
    assert window.actions_.compare.isEnabled()
    view = compare(qtbot, window, old)
    truth = expected_diff(samples_of(webds), samples_of(new.parent))
    assert view.summary.text().startswith("1 added · 2 removed · 2 changed (1 extension set, 1 size) · 1 moved")
    assert view.shard_model.rowCount() == 3
    assert [view.shard_model.index(r, 0).data() for r in range(3)] == list(SHARDS)
    diff = diff_indexes(old, new)
    for r in range(3):
        assert [view.shard_model.index(r, c).data() for c in range(1, 8)] == [
            f"{int(diff.shard_counts[c][r]):,}" for c in diff.shard_counts]
    listed = {view.sample_model.index(r, 1).data(): view.sample_model.index(r, 0).data()
              for r in range(view.sample_model.rowCount())}
    assert listed == {stem: kind for kind, stems in truth.items() for stem in stems}
    view.grab().save(str(tmp_path / "diff_light.png"))

    # a changed sample: its rows in the open (new) index are selected in the grid
    click_sample(qtbot, view, injected["size"])
    tab = window.current_tab()
    want = rows_of_stem(new, injected["size"])
    qtbot.waitUntil(lambda: tab.grid.selected_view_rows().tolist() == want, timeout=5_000)
    assert "json" in view.detail.toPlainText() and "*" in view.detail.toPlainText()
    click_sample(qtbot, view, "zz_added")
    want = rows_of_stem(new, "zz_added")
    qtbot.waitUntil(lambda: tab.grid.selected_view_rows().tolist() == want, timeout=5_000)
    # a removed sample is not in the open index: the selection stays, the status bar says why
    with qtbot.waitSignal(view.statusMessage, timeout=5_000) as said:
        click_sample(qtbot, view, "train000005")
    assert "not in the open index" in said.args[0]
    assert tab.grid.selected_view_rows().tolist() == want

    # two quick clicks: the second is not lost while the first lookup runs
    click_sample(qtbot, view, injected["extension"])
    click_sample(qtbot, view, injected["moved"])
    want = rows_of_stem(new, injected["moved"])
    qtbot.waitUntil(lambda: tab.grid.selected_view_rows().tolist() == want and view.worker is None, timeout=5_000)
    assert view.detail.toPlainText().startswith(injected["moved"])

    # the kind filter, then swapping old and new
    view.kind.setCurrentIndex(view.kind.findData(2))
    assert view.sample_model.rowCount() == 2
    view.swap()
    qtbot.waitUntil(lambda: view.worker is None and view.diff is not None, timeout=30_000)
    assert view.summary.text().startswith("2 added · 1 removed · 2 changed")
    assert view.sides.text().startswith("Old: new/train.taridx (open)")


def test_dark_palette_screenshot(qtbot, window, folds, tmp_path: Path) -> None:
    from app.style import apply_theme

    old, new, _ = folds
    app = QApplication.instance()
    before = app.palette()
    try:
        apply_theme(app, "dark")
        open_file(qtbot, window, new)
        view = compare(qtbot, window, old)
        QApplication.processEvents()
        image = view.grab().toImage()
        image.save(str(tmp_path / "diff_dark.png"))
        small = image.scaled(64, 40)
        lightness = np.mean([small.pixelColor(x, y).lightness() for x in range(64) for y in range(40)])
        assert lightness < 110  # the view follows the dark palette
    finally:
        app.setPalette(before)


def test_cancel_and_errors(qtbot, window, folds, tmp_path: Path, monkeypatch) -> None:
    old, new, _ = folds
    open_file(qtbot, window, new)
    started, release = threading.Event(), threading.Event()

    def held(*args, **kwargs):  # the real diff, started only once the test has pressed Cancel
        started.set()
        release.wait(10)
        return diff_indexes(*args, **kwargs)

    monkeypatch.setattr(diff_view, "diff_indexes", held)
    view = compare_with(window, str(old))
    assert started.wait(10)
    assert view.cancel_button.isVisible()
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    release.set()
    qtbot.waitUntil(lambda: view.worker is None, timeout=10_000)
    assert view.summary.text() == "Cancelled." and view.diff is None
    monkeypatch.undo()

    # an unreadable other index: a dialog names it, the window keeps running
    bad = tmp_path / "bad.taridx"
    bad.write_bytes(b"TARIDX\0\0" + b"\xff" * 20)
    view = compare_with(window, str(bad))
    qtbot.waitUntil(lambda: view.worker is None, timeout=10_000)
    boxes = [w for w in QApplication.topLevelWidgets() if w.objectName() == "errorDialog" and w.isVisible()]
    assert boxes and str(bad) in boxes[0].informativeText()
    assert view.diff is None and window.document is not None
