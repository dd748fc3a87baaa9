"""The main window driven as a user would: open, select, filter, sort, drill, copy, errors, CLI."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from app.views.settings import SETTINGS_ENV  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
TREES = DATA / "kastore" / "example.trees"
TACO = DATA / "taco" / "taco_3entries.tacozip"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _private_settings(tmp_path, monkeypatch):
    """Never touch the user's real settings."""
    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "settings.ini"))


@pytest.fixture
def window(qtbot):
    from app.views.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    yield w
    w.shutdown()
    for box in QApplication.topLevelWidgets():
        if isinstance(box, QMessageBox):
            box.close()


def open_file(qtbot, window, path: Path) -> None:
    with qtbot.waitSignal(window.previewSettled, timeout=15_000):
        with qtbot.waitSignal(window.documentOpened, timeout=15_000):
            window.open_path(str(path))


def test_open_kastore_select_rows_status_and_preview_bytes(qtbot, window):
    kastore = pytest.importorskip("kastore")
    truth = kastore.load(str(TREES))
    open_file(qtbot, window, TREES)
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == ["items (62)", "stores (1)"]
    assert window.status.file_label.text() == "example.trees"
    assert "kastore" in window.status.format_label.text()
    tab = window.current_tab()
    assert tab.grid.current_source_row() == 0  # the first row is shown on open
    view = tab.grid.view
    view.setFocus()
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        for _ in range(5):
            qtbot.keyClick(view, Qt.Key.Key_Down)
    assert window.status.selection_label.text() == "items row 5"
    key = tab.model.text(5, 0)
    assert bytes(window.preview.payload.data) == truth[key].tobytes()
    # the hex pane highlights the row's array bytes in the file
    start, end = window.hex_pane.model.highlight
    raw = TREES.read_bytes()[start:end]
    assert raw == truth[key].tobytes()


def test_header_field_and_hex_byte_select_each_other(qtbot, window):
    open_file(qtbot, window, TREES)
    panel = window.header_panel
    row = next(i for i, f in enumerate(panel.model.fields) if f.name == "file size")
    panel.view.selectRow(row)
    assert window.hex_pane.model.highlight == (16, 24)
    assert window.hex_pane.model.base == 0
    # clicking byte 13 (inside "number of items", bytes 12..15) selects that field
    hex_view = window.hex_pane.view
    idx = window.hex_pane.model.index(0, 13)
    qtbot.mouseClick(hex_view.viewport(), Qt.MouseButton.LeftButton, pos=hex_view.visualRect(idx).center())
    assert panel.current_field().name == "number of items"
    assert window.hex_pane.model.highlight == (12, 16)


def test_sort_and_filter_match_numpy_truth(qtbot, window):
    open_file(qtbot, window, TREES)
    tab = window.current_tab()
    table = tab.table
    header = tab.grid.view.horizontalHeader()
    col = [c.title for c in table.columns].index("bytes")
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(header.sectionViewportPosition(col) + 5, header.height() // 2))
    values = table.column("bytes").values
    truth = np.argsort(values, kind="stable")
    shown = [tab.model.source_row(i) for i in range(tab.model.n_view)]
    assert shown == truth.tolist()
    assert tab.model.text(0, col) == f"{int(values.min()):,}"
    # filter by type: only float64 items, still sorted by bytes
    box = tab.filter_bar.enum_boxes["type"]
    labels = list(table.column("type").labels)
    code = labels.index("float64")
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        box.setCurrentIndex(box.findData(code))
    codes = table.column("type").values
    keep = np.flatnonzero(codes == code)
    expect = keep[np.argsort(values[keep], kind="stable")]
    assert [tab.model.source_row(i) for i in range(tab.model.n_view)] == expect.tolist()
    assert tab.filter_bar.count_label.text() == f"{len(expect)} of 62 rows"
    assert window.status.rows_label.text() == f"{len(expect)} of 62 rows"
    # exact key lookup
    key_edit = tab.filter_bar.key
    box.setCurrentIndex(0)
    qtbot.waitUntil(lambda: not tab.is_busy)
    with qtbot.waitSignal(tab.viewApplied, timeout=10_000):
        qtbot.keyClicks(key_edit, "edges/parent")
        qtbot.keyClick(key_edit, Qt.Key.Key_Return)
    assert tab.model.n_view == 1
    assert tab.model.text(0, 0) == "edges/parent"


def test_go_to_row_and_copy_rows_as_tsv(qtbot, window):
    open_file(qtbot, window, TREES)
    tab = window.current_tab()
    assert window.go_to_row(40)
    assert tab.grid.current_source_row() == 40
    assert not window.go_to_row(62)  # one past the end
    tab.grid.view.selectRow(tab.model.view_row_of(40))
    tab.grid.view.setFocus()
    window.actions_.copy_selection()
    lines = QGuiApplication.clipboard().text().split("\n")
    assert lines[0].split("\t") == ["row"] + [c.title for c in tab.table.columns]
    assert lines[1].split("\t")[:2] == ["40", str(tab.table.column("key").values[40])]


def test_drill_from_entries_selects_the_member_row(qtbot, window):
    open_file(qtbot, window, TACO)
    entries = window.tabs_by_name["entries"]
    window.tabs.setCurrentWidget(entries)
    target, rows = entries.table.drill(2)
    view = entries.grid.view
    rect = view.visualRect(entries.model.index(2, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    members = window.tabs_by_name[target]
    qtbot.waitUntil(lambda: window.current_tab() is members and members.grid.current_source_row() == int(rows[0]))
    assert window.status.selection_label.text() == f"{target} row {int(rows[0])}"


def test_corrupted_file_shows_an_error_dialog_and_the_app_keeps_running(qtbot, window, tmp_path):
    bad = tmp_path / "broken.kas"
    good = TREES.read_bytes()
    bad.write_bytes(good[:64] + b"\xff" * 40)  # a header that claims 62 items, then garbage
    with qtbot.waitSignal(window.openFailed, timeout=10_000) as blocker:
        window.open_path(str(bad))
    path, problem = blocker.args
    assert path == str(bad) and problem
    boxes = [w for w in QApplication.topLevelWidgets() if w.objectName() == "errorDialog" and w.isVisible()]
    assert len(boxes) == 1
    assert "broken.kas" in boxes[0].text() and str(bad) in boxes[0].informativeText()
    assert "Traceback" not in boxes[0].informativeText()
    boxes[0].close()
    assert window.document is None
    open_file(qtbot, window, TREES)  # still alive
    assert window.document is not None


def test_recent_files_and_dock_layout_are_remembered(qtbot, window):
    from app.views.main_window import MainWindow

    open_file(qtbot, window, TREES)
    window.hex_dock.hide()
    window.shutdown()
    again = MainWindow()
    qtbot.addWidget(again)
    again.show()
    recent = [a.toolTip() for a in again.actions_.recent_menu.actions()]
    assert recent == [str(TREES)]
    assert again.hex_dock.isHidden() and not again.header_dock.isHidden()
    again.shutdown()


def _mean_lightness(image: QImage) -> float:
    small = image.scaled(64, 40)
    return float(np.mean([small.pixelColor(x, y).lightness() for x in range(64) for y in range(40)]))


def test_light_and_dark_palettes(qtbot, window, tmp_path):
    from app.style import apply_theme

    app = QApplication.instance()
    old = app.palette()
    try:
        open_file(qtbot, window, TREES)
        apply_theme(app, "light")
        QApplication.processEvents()  # deliver the palette change to every widget
        light = window.grab().toImage()
        light.save(str(tmp_path / "light.png"))
        apply_theme(app, "dark")
        QApplication.processEvents()
        dark = window.grab().toImage()
        dark.save(str(tmp_path / "dark.png"))
        assert _mean_lightness(light) > 170 and _mean_lightness(dark) < 90
    finally:
        app.setPalette(old)


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "app.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_screenshot_option_writes_png_and_exits_0(tmp_path):
    out = tmp_path / "shot.png"
    done = _cli(str(TREES), "--screenshot", str(out), "--goto-row", "7", "--size", "1200x800",
                env_extra={SETTINGS_ENV: str(tmp_path / "s.ini")})
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1200, 800)


def test_screenshot_of_unreadable_input_exits_2_with_the_error(tmp_path):
    bad = tmp_path / "nonsense.bin"
    bad.write_bytes(b"not an index at all" * 10)
    done = _cli(str(bad), "--screenshot", str(tmp_path / "x.png"), env_extra={SETTINGS_ENV: str(tmp_path / "s.ini")})
    assert done.returncode == 2
    assert "nonsense.bin" in done.stderr and "not a TARIDX, TACO, kastore or TBL file" in done.stderr
    assert not (tmp_path / "x.png").exists()
