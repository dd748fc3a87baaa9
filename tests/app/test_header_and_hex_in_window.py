"""The header pane's Ctrl+C and context menu, and the hex pane beside it, in the main window."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import open_file
from PySide6.QtCore import QItemSelectionModel, Qt, QTimer
from PySide6.QtWidgets import QApplication

from app.views.header_copy import fields_as_text

TREES = Path(__file__).resolve().parents[1] / "data" / "kastore" / "example.trees"
WEBDS = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds" / "train.taridx"


def test_fields_as_text_is_one_tab_separated_line_per_field():
    assert fields_as_text([("magic", 0, "TARIDX"), ("file size", 16, "53,820 bytes")]) == \
        "magic\t0\tTARIDX\nfile size\t16\t53,820 bytes"


def select_fields(panel, names: list[str]) -> None:
    sm = panel.view.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    for name in names:
        row = next(i for i, f in enumerate(panel.model.fields) if f.name == name)
        sm.setCurrentIndex(panel.model.index(row, 0), flags)


def test_ctrl_c_in_the_header_copies_the_selected_fields(qtbot, window):
    open_file(qtbot, window, TREES)
    panel = window.header_panel
    select_fields(panel, ["number of items", "file size"])
    panel.view.setFocus()
    QApplication.clipboard().setText("")
    qtbot.keyClick(panel.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    size = TREES.stat().st_size  # kastore's "file size" field holds the file's length
    assert QApplication.clipboard().text() == f"number of items\t12\t62\nfile size\t16\t{size:,} bytes"
    # the rows grid still copies its own rows: the header's Ctrl+C only applies while it has the focus
    grid = window.current_tab().grid
    grid.view.setFocus()
    window.actions_.copy.trigger()
    assert QApplication.clipboard().text() == grid.selection_tsv()


def run_menu_action(qtbot, panel, row: int, text: str) -> None:
    """Open the header's context menu on ``row`` and choose the action that starts with ``text``."""
    def pick() -> None:
        menu = QApplication.activePopupWidget()
        action = next(a for a in menu.actions() if a.text().startswith(text))
        menu.close()
        action.trigger()

    QTimer.singleShot(0, pick)
    view = panel.view
    view.customContextMenuRequested.emit(view.visualRect(panel.model.index(row, 0)).center())


def test_header_context_menu_copies_value_and_offset_and_shows_bytes_in_hex(qtbot, window):
    open_file(qtbot, window, TREES)
    panel = window.header_panel
    row = next(i for i, f in enumerate(panel.model.fields) if f.name == "file size")
    size = TREES.stat().st_size
    run_menu_action(qtbot, panel, row, "Copy Value")
    assert QApplication.clipboard().text() == f"{size:,} bytes"
    assert panel.current_field().name == "file size"  # the right click selected the row it was on
    run_menu_action(qtbot, panel, row, "Copy Offset")
    assert QApplication.clipboard().text() == "16"
    window.hex_dock.hide()
    window.hex_pane.show_range(0, 0)
    run_menu_action(qtbot, panel, row, "Show in Hex")
    assert window.hex_dock.isVisible()
    assert window.hex_pane.highlight == (16, 24)
    assert window.hex_pane.inspector.value_text("u64") == str(size)


def test_in_the_window_ctrl_c_and_ctrl_g_in_the_hex_pane_mean_its_bytes(qtbot, window):
    open_file(qtbot, window, TREES)
    hex_view = window.hex_pane.hex
    hex_view.setFocus()
    qtbot.keyClick(hex_view, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)  # not the window's Go to Row
    assert window.hex_pane.goto.hasFocus()
    qtbot.keyClicks(window.hex_pane.goto, "0x10")
    qtbot.keyClick(window.hex_pane.goto, Qt.Key.Key_Return)
    for _ in range(7):
        qtbot.keyClick(hex_view, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(hex_view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.clipboard().text() == TREES.read_bytes()[16:24].hex(" ")


@pytest.mark.parametrize("theme, size", [("light", (1366, 768)), ("dark", (1920, 1080))])
def test_the_ascii_column_is_whole_at_laptop_and_desktop_sizes(qtbot, window, tmp_path, theme, size):
    from app.style import apply_theme

    app = QApplication.instance()
    before = app.palette()
    apply_theme(app, theme)
    try:
        window.resize(*size)
        open_file(qtbot, window, WEBDS)
        assert window.go_to_row(5)
        qtbot.waitUntil(lambda: window.hex_pane.highlight[1] > 0)
        hex_view = window.hex_pane.hex
        window.hex_dock.grab().save(str(tmp_path / f"hex-{theme}.png"))
        # the last ASCII character of a line ends inside the viewport: nothing of the ASCII column is cut
        last = hex_view.byte_rect(hex_view.top * 16 + 15, ascii=True)
        assert 0 < last.right() <= hex_view.viewport().width()
        assert hex_view.horizontalScrollBar().maximum() == 0
        assert hex_view.visible_lines() >= 5
        start, end = window.hex_pane.highlight  # row 5's 32-byte record, selected and on screen
        assert (end - start, hex_view.selection()) == (32, (start, end))
        # the whole record is on screen (it fits: 3 lines)
        assert hex_view.top <= start // 16 and (end - 1) // 16 < hex_view.top + hex_view.visible_lines()
        # the inspector's values are whole: each fits its cell
        inspector = window.hex_pane.inspector
        for row in range(inspector.rowCount()):
            for col in range(inspector.columnCount()):
                item = inspector.item(row, col)
                if item is not None:
                    width = inspector.fontMetrics().horizontalAdvance(item.text())
                    assert width < inspector.columnWidth(col), item.text()
    finally:
        app.setPalette(before)


def test_a_hex_dock_the_user_hid_stays_hidden_while_a_selection_follows_bytes(qtbot, window):
    """Selecting an array follows its bytes in the hex pane; only an explicit "show bytes" brings the dock back."""
    open_file(qtbot, window, TREES)
    window.hex_dock.hide()
    panel = next(p for p in window.panels if p.title == "Array")
    row = [it.key for it in panel.store.items_list].index("edges/child")
    panel.on_row_selected("items", row)  # as a click in the items grid does
    assert window.hex_dock.isHidden()
    assert window.hex_pane.highlight == (5184, 5184 + 213 * 4)  # the array's bytes, per example.trees.keys.txt
    panel.key_button.click()  # the user asks to see the key's bytes
    assert window.hex_dock.isVisible() and window.hex_pane.highlight == (4032, 4032 + 11)
