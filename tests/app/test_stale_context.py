"""On the extensions and crash-stems tabs the hex pane and preview show that tab's record, never the rows tab's."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import open_file
from PySide6.QtWidgets import QApplication

INDEX = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds" / "train.taridx"


@pytest.fixture
def window(window, qtbot):
    open_file(qtbot, window, INDEX)
    return window


def highlighted(window) -> bytes:
    start, end = window.hex_pane.highlight
    return INDEX.read_bytes()[start:end]


def switch_to(qtbot, window, name: str) -> None:
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        window.tabs.setCurrentWidget(window.tabs_by_name[name])


def test_hex_and_preview_follow_the_tab_in_front(qtbot, window, tmp_path):
    rows = window.tabs_by_name["rows"]
    assert window.preview.title.text() == "train000000.jpg"
    record = highlighted(window)
    assert len(record) == 32  # the rows tab's record: one 32-byte row
    names = INDEX.read_bytes()[64:].split(b"\n")  # the extension block: names joined by \n, after the header
    switch_to(qtbot, window, "extensions")
    exts = window.tabs_by_name["extensions"]
    assert exts.grid.current_source_row() == 0
    assert highlighted(window) == names[0] != record
    assert window.preview.title.text() == "extensions row 0"  # not train000000.jpg
    assert "no payload" in window.preview.placeholder.text()
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        exts.grid.go_to_view_row(3)
    assert highlighted(window) == names[3] and window.preview.title.text() == "extensions row 3"
    switch_to(qtbot, window, "crash stems")
    crash = window.tabs_by_name["crash stems"]
    stems = [str(s) for s in crash.table.column("Stem").values]
    assert highlighted(window) == stems[0].encode() and window.preview.title.text() == "crash stems row 0"
    QApplication.processEvents()
    window.grab().save(str(tmp_path / "crash_tab.png"))
    switch_to(qtbot, window, "rows")  # and back: the rows tab's own record again
    assert rows.grid.current_source_row() == 0
    assert highlighted(window) == record and window.preview.title.text() == "train000000.jpg"
