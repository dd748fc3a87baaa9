"""The window fits its screen: long messages wrap, saved layouts that do not fit are dropped, Reset Layout."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import laptop_window, make_window, open_file, settle
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QPushButton

from app.views.settings import SETTINGS_ENV

DATA = Path(__file__).resolve().parents[1] / "data"
TREES = DATA / "kastore" / "example.trees"
WEBDS_INDEX = DATA / "taridx" / "webds"
# the message: a long path (no spaces to break at) inside "could not read the payload"
LONG_PATH = "/data/" + "/".join(f"very_long_directory_name_{i:02d}" for i in range(9)) + "/train_000042.tar"
LONG_MESSAGE = f"Could not read the payload: {LONG_PATH}: member 'sample_000123.jpg', field 'size', offset 1,234,567: " \
               "the tar header says 18,446,744,073,709,551,615 bytes but the shard ends at 52,428,800"


def test_long_preview_message_never_widens_the_window(qtbot, tmp_path):
    window = make_window(qtbot)
    open_file(qtbot, window, TREES)
    settle()
    before = window.size()
    screen = window.screen().availableGeometry()
    assert len(LONG_MESSAGE) > 300
    window.preview.show_unavailable("items row 3", LONG_MESSAGE)
    settle()
    window.grab().save(str(tmp_path / "long_message.png"))
    assert window.size() == before
    assert window.frameGeometry().width() <= screen.width()
    # and the message is all there, wrapped over several lines rather than cut
    assert window.preview.placeholder.text() == LONG_MESSAGE
    assert window.preview.placeholder.height() > 2 * window.preview.placeholder.fontMetrics().height()
    window.shutdown()


def test_a_saved_layout_larger_than_the_screen_is_not_restored(qtbot, monkeypatch):
    from app.views import dock_layout

    big = QRect(0, 0, 4000, 2500)
    monkeypatch.setattr(dock_layout, "screen_area", lambda _w: big)  # saved on a bigger monitor
    first = make_window(qtbot)
    first.resize(3600, 2200)
    settle()
    assert first.width() == 3600
    first.shutdown()  # saves the layout
    monkeypatch.undo()
    monkeypatch.setenv(SETTINGS_ENV, first.settings.fileName())
    again = make_window(qtbot)
    screen = again.screen().availableGeometry()
    assert again.frameGeometry().width() <= screen.width() and again.frameGeometry().height() <= screen.height()
    assert (again.width(), again.height()) == (1440, 900)  # the default size, not squeezed edge to edge
    again.shutdown()


def test_a_saved_layout_that_fits_is_restored(qtbot):
    first = make_window(qtbot)
    first.resize(1200, 760)
    first.hex_dock.hide()
    settle()
    first.shutdown()
    again = make_window(qtbot)
    assert (again.width(), again.height()) == (1200, 760)
    assert again.hex_dock.isHidden()
    again.shutdown()


def test_reset_layout_brings_back_every_dock_and_fits_a_laptop(qtbot, monkeypatch, tmp_path):
    window = laptop_window(qtbot, monkeypatch)
    open_file(qtbot, window, WEBDS_INDEX / "train.taridx")
    window.header_dock.hide()
    window.preview_dock.setFloating(True)
    reset = next(a for a in window.menuBar().actions() if a.text() == "&View").menu()
    action = next(a for a in reset.actions() if a.text() == "&Reset Layout")
    action.trigger()
    settle()
    window.grab().save(str(tmp_path / "reset_1366.png"))
    assert window.header_dock.isVisible() and not window.preview_dock.isFloating()
    assert window.frameGeometry().width() <= 1366
    # the hex pane shows its ASCII column whole, after the reset too
    hex_view = window.hex_pane.hex
    last = hex_view.byte_rect(hex_view.top * 16 + 15, ascii=True)
    assert 0 < last.right() <= hex_view.viewport().width()
    assert window.hex_pane.visibleRegion().boundingRect().width() >= window.hex_pane.minimum_width_hint()
    window.shutdown()


def test_header_value_follows_field_and_shows_the_magic_whole_on_a_laptop(qtbot, monkeypatch, tmp_path):
    window = laptop_window(qtbot, monkeypatch)
    open_file(qtbot, window, WEBDS_INDEX / "train.taridx")
    settle()
    panel = window.header_panel
    titles = panel.model.titles
    assert titles[titles.index("Field") + 1] == "Value"
    value_col = titles.index("Value")
    row = next(i for i, f in enumerate(panel.model.fields) if f.name == "magic")
    assert (WEBDS_INDEX / "train.taridx").read_bytes()[:6] == b"TARIDX"
    text = panel.model.data(panel.model.index(row, value_col))
    assert text == "TARIDX"
    rect = panel.view.visualRect(panel.model.index(row, value_col))
    window.grab().save(str(tmp_path / "header_1366.png"))
    # the whole value fits in its cell, and the cell is on screen
    assert rect.width() >= panel.view.fontMetrics().horizontalAdvance(text) + 8
    assert rect.right() <= panel.view.viewport().width()
    widest = max(panel.view.fontMetrics().horizontalAdvance(f.text) for f in panel.model.fields)
    assert rect.width() >= min(widest + 8, 300)  # wide enough for the longest value, or a good part of it
    window.shutdown()


def test_start_page_offers_every_way_in_and_opens_a_recent_file(qtbot, tmp_path):
    from app.views.settings import add_recent_file

    window = make_window(qtbot)
    add_recent_file(window.settings, str(TREES))
    window.close_document()
    window._show_start_page()
    settle()
    page = window.start_page
    window.grab().save(str(tmp_path / "start.png"))
    assert page.isVisible()
    # no empty panes: the page lies over the grids and every dock, from the menu bar to the status bar
    assert page.geometry().contains(window.centralWidget().geometry())
    for dock in (window.preview_dock, window.hex_dock, window.header_dock):
        assert page.geometry().contains(dock.geometry())
    names = sorted(b.objectName() for b in page.findChildren(QPushButton))
    expected = ["start:Build Index…", "start:Open Demo Dataset", "start:Open…"]
    if hasattr(window.actions_, "open_url"):
        expected.append("start:Open URL…")
    assert names == sorted(expected)
    assert "drop" in page.drop_hint.text().lower()
    assert [page.recent.item(i).data(Qt.ItemDataRole.UserRole) for i in range(page.recent.count())] == [str(TREES)]
    with qtbot.waitSignal(window.documentOpened, timeout=15_000):
        page.recent.itemActivated.emit(page.recent.item(0))
    assert not page.isVisible()
    assert window.preview_dock.isVisible() and window.hex_dock.isVisible()
    window.close_document()
    assert page.isVisible()
    window.shutdown()


def test_a_closed_files_panels_leave_no_tab_behind(qtbot):
    from PySide6.QtWidgets import QTabBar

    window = make_window(qtbot)
    open_file(qtbot, window, DATA / "tbl" / "v2_lz4_meta.tbl")
    settle()
    window.close_document()  # saves a layout whose tab group names the TBL panel's dock
    open_file(qtbot, window, WEBDS_INDEX / "train.taridx")
    settle()
    bars = [b for b in window.findChildren(QTabBar) if b.parent() is window and b.isVisible()]
    tabs = [[b.tabText(i) for i in range(b.count())] for b in bars]
    assert tabs == [["Preview", *[p.title for p in window.panels]]], tabs
    assert "TBL sample" not in str(tabs)
    window.shutdown()


@pytest.mark.parametrize("reset", [False, True])
def test_dock_tabs_keep_their_whole_titles_on_a_laptop(qtbot, monkeypatch, tmp_path, reset):
    """Seven panels beside the preview in a 340-px dock: whole titles and scroll arrows, not "P…", "Sa…"."""
    from PySide6.QtWidgets import QTabBar

    window = laptop_window(qtbot, monkeypatch)
    open_file(qtbot, window, WEBDS_INDEX / "train.taridx")
    if reset:  # Reset Layout builds the tab group again, with new tab bars
        view = next(a for a in window.menuBar().actions() if a.text() == "&View").menu()
        next(a for a in view.actions() if a.text() == "&Reset Layout").trigger()
    settle()
    window.grab().save(str(tmp_path / "dock_tabs_1366.png"))
    bar = next(b for b in window.findChildren(QTabBar) if b.parent() is window and b.isVisible())
    titles = [bar.tabText(i) for i in range(bar.count())]
    assert titles == ["Preview", *[p.title for p in window.panels]] and len(titles) >= 6
    assert sum(bar.tabRect(i).width() for i in range(bar.count())) > bar.width()  # too many to fit: they scroll
    for i, title in enumerate(titles):
        assert bar.tabRect(i).width() >= bar.fontMetrics().horizontalAdvance(title), title
    window.shutdown()


def test_the_status_bar_shows_the_file_name_whole_on_a_laptop(qtbot, monkeypatch):
    window = laptop_window(qtbot, monkeypatch)
    open_file(qtbot, window, WEBDS_INDEX / "train.taridx")
    window.status.show_message("Opened " + str(WEBDS_INDEX / "train.taridx"))  # a passing message takes room too
    settle()
    label = window.status.file_label
    assert label.text() == "train.taridx" and label.isVisible()
    margins = label.contentsMargins()
    assert label.width() - margins.left() - margins.right() >= label.fontMetrics().horizontalAdvance("train.taridx")
    window.shutdown()


def test_a_very_long_file_name_never_widens_the_window(qtbot, tmp_path):
    long_name = tmp_path / ("a_very_long_file_name_" * 10 + ".trees")  # 226 characters
    long_name.write_bytes(TREES.read_bytes())
    window = make_window(qtbot)
    before = window.size()
    open_file(qtbot, window, long_name)
    settle()
    assert window.size() == before
    assert window.status.file_label.text() == long_name.name  # all of it, elided only on screen
    assert window.status.file_label.width() <= 320
    window.shutdown()
