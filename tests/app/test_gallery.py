"""Gallery: thumbnails of a generated JPEG fold against Pillow, selection to the grid, the grid's filter, no stall."""
from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PIL import Image
from PySide6.QtCore import QPoint, Qt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_gallery import FOLD, make_jpeg_fold
from off_gui_thread import OffGuiThread, event_loop_answers

N_SAMPLES = 60


@pytest.fixture(scope="module")
def fold(tmp_path_factory) -> Path:
    return make_jpeg_fold(tmp_path_factory.mktemp("photos"), N_SAMPLES, shards=3)


def tar_members(index: Path) -> dict[str, bytes]:
    out = {}
    for shard in sorted(index.parent.glob(f"{FOLD}_*.tar")):
        with tarfile.open(shard) as tf:
            out.update({m.name: tf.extractfile(m).read() for m in tf.getmembers()})
    return out


@pytest.fixture
def window(window):
    window.resize(1400, 900)
    return window


def open_gallery(qtbot, window, index: Path):
    with qtbot.waitSignal(window.documentOpened, timeout=30_000):
        window.open_path(str(index))
    gallery = next(p for p in window.panels if p.title == "Gallery")
    assert not gallery._started  # nothing is computed for a view nobody looks at
    dock = gallery.parent()
    with qtbot.waitSignal(gallery.itemsReady, timeout=30_000):
        dock.show()
        dock.raise_()
    return gallery


def wait_loaded(qtbot, gallery) -> None:
    def loaded() -> bool:
        first, stop = gallery.grid.visible_range()  # asked each time: a scroll bar appearing changes it
        return all(gallery.cell(i) is not None for i in range(first, stop))

    qtbot.waitUntil(loaded, timeout=30_000)


def reduced(jpeg: bytes) -> np.ndarray:
    """A full decode by Pillow, then a Lanczos reduction to the thumbnail's size."""
    img = Image.open(io.BytesIO(jpeg)).convert("RGB").resize((128, 96), Image.Resampling.LANCZOS)
    return np.asarray(img, np.int16)


def test_gallery_shows_each_sample_as_pillow_reduces_it(qtbot, window, fold):
    truth = tar_members(fold)
    gallery = open_gallery(qtbot, window, fold)
    assert gallery.n_items() == N_SAMPLES
    gallery.label_combo.setCurrentIndex(gallery.label_combo.findData("cls"))
    qtbot.waitUntil(lambda: len(gallery.label_rows) == N_SAMPLES and (gallery.label_rows >= 0).all(), timeout=30_000)
    wait_loaded(qtbot, gallery)
    first, stop = gallery.grid.visible_range()
    assert stop - first >= 4
    for i in range(first, stop):
        cell = gallery.cell(i)
        assert cell.stem == f"s{i:08d}"  # the file's order: sample i is item i
        assert cell.label == truth[f"{cell.stem}.cls"].decode()
        img = cell.image.convertToFormat(cell.image.Format.Format_RGB888)
        assert (img.width(), img.height()) == (128, 96)
        pixels = np.frombuffer(img.constBits(), np.uint8).reshape(96, img.bytesPerLine())[:, : 128 * 3]
        shown = pixels.reshape(96, 128, 3).astype(np.int16)
        # the bench fold's pictures are coloured noise, the hardest case for a reduction and for the cache's JPEG:
        # the thumbnail is within a few levels of its own payload reduced, and far from any other sample's
        own = np.abs(shown - reduced(truth[f"{cell.stem}.jpg"])).mean()
        other = np.abs(shown - reduced(truth[f"s{(i + 1) % N_SAMPLES:08d}.jpg"])).mean()
        assert own < 7 and other > 5 * own, (i, own, other)
    window.grab().save(str(fold.parent / "gallery.png"))


def test_clicking_a_thumbnail_selects_the_samples_rows(qtbot, window, fold):
    truth = tar_members(fold)
    gallery = open_gallery(qtbot, window, fold)
    wait_loaded(qtbot, gallery)
    rows_tab = window.tabs_by_name["rows"]
    center = gallery.grid.cell_rect(5).center()
    with qtbot.waitSignal(rows_tab.grid.currentRowChanged, timeout=10_000):
        qtbot.mouseClick(gallery.grid.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(center.x(), center.y()))
    selected = rows_tab.model.source_rows(rows_tab.grid.selected_view_rows())
    names = sorted(gallery.dataset.member_names(selected))
    assert names == sorted(n for n in truth if n.startswith("s00000005."))
    # the keyboard moves the same way a photo browser does; the grid follows
    with qtbot.waitSignal(rows_tab.grid.currentRowChanged, timeout=10_000):
        qtbot.keyClick(gallery.grid, Qt.Key.Key_Right)
    assert gallery.grid.current == 6
    assert gallery.dataset.member_names([rows_tab.grid.current_source_row()])[0].startswith("s00000006.")
    # the samples panel follows the grid: it shows the same sample
    assert gallery.item_of_row(rows_tab.grid.current_source_row()) == 6


def test_a_filter_in_the_grid_filters_the_gallery(qtbot, window, fold):
    gallery = open_gallery(qtbot, window, fold)
    rows_tab = window.tabs_by_name["rows"]
    with qtbot.waitSignal(gallery.itemsReady, timeout=30_000), qtbot.waitSignal(rows_tab.viewApplied, timeout=30_000):
        qtbot.keyClicks(rows_tab.filter_bar.substring, "s0000002")  # samples 20-29
    assert gallery.n_items() == 10
    gallery.raise_()
    gallery.parent().raise_()
    wait_loaded(qtbot, gallery)
    stems = [gallery.cell(i).stem for i in range(*gallery.grid.visible_range())]
    assert stems == [f"s{i:08d}" for i in range(20, 20 + len(stems))] and len(stems) >= 4
    assert all(gallery.dataset.ext_of(int(r)) == "jpg" for r in gallery.items)
    # a sort of the grid orders the gallery: largest cls... by size, descending
    with qtbot.waitSignal(gallery.itemsReady, timeout=30_000):
        rows_tab.sort_by("Size", descending=True)
    sizes = gallery.dataset.rows["size"]
    view = rows_tab.model.view_rows
    order_of_samples = [gallery.item_of_row(int(r)) for r in view]
    expected_first = gallery.dataset.member_names([int(view[0])])[0].split(".")[0]
    assert gallery.dataset.stem_names([int(gallery.items[0])])[0] == expected_first
    assert len(order_of_samples) == len(view) and sizes[view[0]] == sizes[view].max()


def test_thumbnails_decode_off_the_gui_thread_while_the_grid_answers(qtbot, window, tmp_path, monkeypatch):
    from itarcore import thumbnails

    index = make_jpeg_fold(tmp_path / "many", 400, shards=2, size=(640, 480))
    gallery = open_gallery(qtbot, window, index)
    wait_loaded(qtbot, gallery)
    spy = OffGuiThread(monkeypatch)
    spy.watch(thumbnails, "row_thumbnail", hold=True)  # read, decode (draft) and cache one thumbnail
    for name in ("make_thumbnail", "image_thumbnail"):
        spy.watch(thumbnails, name)
    bar = gallery.grid.verticalScrollBar()
    gallery.size_slider.setValue(2)  # 96 px: nothing of it is in memory yet
    spy.wait_held(qtbot)
    first, stop = gallery.grid.visible_range()
    assert all(gallery.cell(i) is None for i in range(first, stop))  # placeholders while decoding
    bar.setValue(bar.value() + bar.pageStep())  # the grid scrolls while its thumbnails are held
    assert bar.value() > 0 and event_loop_answers(qtbot)
    spy.release()
    wait_loaded(qtbot, gallery)
    assert spy.ran("image_thumbnail")
    spy.assert_none_on_gui_thread()
    # what arrived is each cell's own sample, at the new size (640x480 fitted into 96 px)
    first, stop = gallery.grid.visible_range()
    assert first > 0
    for i in range(first, stop):
        cell = gallery.cell(i)
        assert cell.stem == f"s{i:08d}" and (cell.image.width(), cell.image.height()) == (96, 72)
