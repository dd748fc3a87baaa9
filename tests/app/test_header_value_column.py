"""The header's Value column on a laptop: it keeps a good share of the width, and a value too long for it is
cut in the middle (both ends shown), whole in the tooltip and in Copy Value."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import laptop_window, open_file, settle
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.views.header_view import VALUE_SHARE, fit_columns

TBL = Path(__file__).resolve().parents[1] / "data" / "tbl" / "v2_lz4_meta.tbl"
NATURAL = {"Group": 125, "Field": 140, "Value": 600, "Offset": 60, "Size": 50, "Type": 80}


def test_fit_columns_on_a_laptop_dock_gives_value_the_room_names_leave():
    widths = fit_columns(NATURAL, 405)
    # Value's promise: 45% of 405 = 182; Field keeps its 140 (223 - 56 for Group); Group gets 223 - 140 = 83;
    # Value then grows to the view's edge (its 600 px do not fit): 405 - 83 - 140 = 182
    assert widths == {"Group": 83, "Field": 140, "Value": 182, "Offset": 60, "Size": 50, "Type": 80}
    # a short value keeps its own width, and the columns after it come into view
    short = fit_columns(dict(NATURAL, Value=150), 405)
    assert short == {"Group": 115, "Field": 140, "Value": 150, "Offset": 60, "Size": 50, "Type": 80}


def test_fit_columns_on_a_wide_view_shows_every_column_at_its_natural_width():
    assert fit_columns(NATURAL, 1200) == {"Group": 125, "Field": 140, "Value": 600, "Offset": 60, "Size": 50,
                                          "Type": 80}
    # a long value in a mid-size view: the trailing columns do not fit, Value takes what the names leave
    assert fit_columns(NATURAL, 700)["Value"] == 700 - 125 - 140


@pytest.mark.parametrize("available", range(200, 1500, 37))
def test_field_never_starves_value(available):
    for field in (60, 170, 900):
        natural = dict(NATURAL, Field=field, Group=400)
        widths = fit_columns(natural, available)
        assert widths["Value"] >= min(natural["Value"], int(available * VALUE_SHARE))
        assert widths["Group"] + widths["Field"] + widths["Value"] <= max(available, 2 * 56 + widths["Value"])


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_long_values_on_a_laptop_are_cut_in_the_middle_and_whole_in_tooltip_and_copy(qtbot, monkeypatch,
                                                                                      tmp_path, size):
    window = laptop_window(qtbot, monkeypatch, *size)
    open_file(qtbot, window, TBL)
    settle()
    panel = window.header_panel
    view, model = panel.view, panel.model
    window.grab().save(str(tmp_path / f"header-{size[0]}.png"))
    value_col = model.titles.index("Value")
    viewport = view.viewport().width()
    assert view.columnWidth(value_col) >= max(180, int(VALUE_SHARE * viewport))
    assert view.columnWidth(model.titles.index("Field")) <= viewport - view.columnWidth(value_col)
    fm = view.fontMetrics()
    long_rows = [r for r, f in enumerate(model.fields)
                 if fm.horizontalAdvance(f.text) > view.columnWidth(value_col) - 8]
    assert long_rows, "the TBL header has values longer than the cell (flags, reserved)"
    for row in long_rows:
        full = model.fields[row].text
        index = model.index(row, value_col)
        shown = panel.elide_delegate.shown_text(view, index)
        head, sep, tail = shown.partition("…")
        assert sep and head and tail, shown  # cut once, in the middle, both ends kept
        assert full.startswith(head) and full.endswith(tail) and len(head) + len(tail) < len(full)
        assert fm.horizontalAdvance(shown) <= view.visualRect(index).width()
        assert "".join(full.split()) in "".join(model.data(index, Qt.ItemDataRole.ToolTipRole).split())
        view.selectRow(row)
        menu = panel.field_actions.build_menu(row)
        next(a for a in menu.actions() if a.text() == "Copy Value").trigger()
        assert QGuiApplication.clipboard().text() == full
    # a value that fits is shown whole
    short = next(r for r, f in enumerate(model.fields) if f.name == "version")
    assert panel.elide_delegate.shown_text(view, model.index(short, value_col)) == model.fields[short].text
    window.shutdown()


def test_a_column_the_user_sized_keeps_its_width_when_the_dock_resizes(qtbot, monkeypatch):
    window = laptop_window(qtbot, monkeypatch)
    open_file(qtbot, window, TBL)
    panel = window.header_panel
    field = panel.model.titles.index("Field")
    before = panel.view.viewport().width()
    window.resizeDocks([window.header_dock], [window.header_dock.width() - 80], Qt.Orientation.Horizontal)
    settle()
    narrower = panel.view.viewport().width()
    assert narrower < before  # the columns were fitted again
    refitted = panel.view.columnWidth(panel.model.titles.index("Value"))
    panel.view.horizontalHeader().resizeSection(field, 61)  # as a drag of the section's edge
    window.resizeDocks([window.header_dock], [window.header_dock.width() + 80], Qt.Orientation.Horizontal)
    settle()
    assert panel.view.viewport().width() > narrower
    assert panel.view.columnWidth(field) == 61
    assert panel.view.columnWidth(panel.model.titles.index("Value")) == refitted
    window.shutdown()
