"""The main window driven as a user would: open, select, filter, sort, drill, copy, errors, CLI."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from gui_helpers import open_file
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QApplication

from app.views.settings import SETTINGS_ENV

DATA = Path(__file__).resolve().parents[1] / "data"
TREES = DATA / "kastore" / "example.trees"
TACO = DATA / "taco" / "taco_3entries.tacozip"
ROOT = Path(__file__).resolve().parents[2]


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
    start, end = window.hex_pane.highlight
    raw = TREES.read_bytes()[start:end]
    assert raw == truth[key].tobytes()


def test_header_field_and_hex_byte_select_each_other(qtbot, window):
    open_file(qtbot, window, TREES)
    panel = window.header_panel
    row = next(i for i, f in enumerate(panel.model.fields) if f.name == "file size")
    panel.view.selectRow(row)
    hex_view = window.hex_pane.hex
    assert window.hex_pane.highlight == (16, 24)
    assert hex_view.top == 0  # the field's line is on screen
    # clicking byte 13 (inside "number of items", bytes 12..15) selects that field
    pos = hex_view.byte_rect(13).center().toPoint()
    qtbot.mouseClick(hex_view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert panel.current_field().name == "number of items"
    assert window.hex_pane.highlight == (12, 16)
    assert hex_view.selection() == (13, 14)  # the clicked byte stays the cursor inside its field


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


def test_drill_from_entries_filters_to_the_member_row(qtbot, window):
    open_file(qtbot, window, TACO)
    entries = window.tabs_by_name["entries"]
    window.tabs.setCurrentWidget(entries)
    target, rows = entries.table.drill(2)
    view = entries.grid.view
    rect = view.visualRect(entries.model.index(2, 0))
    members = window.tabs_by_name[target]
    # a single click only selects (issue 16, item 7); a double-click drills down
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.current_tab() is entries and entries.grid.current_source_row() == 2
    with qtbot.waitSignal(members.viewApplied, timeout=10_000):
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.current_tab() is members
    assert members.model.n_view == 1 and members.grid.current_source_row() == int(rows[0])
    assert window.status.selection_label.text() == f"{target} row {int(rows[0])}"
    assert members.filter_bar.drill_label.isVisible()
    with qtbot.waitSignal(members.viewApplied, timeout=10_000):
        members.filter_bar.drill_clear.click()
    assert members.model.n_view == members.table.n_rows


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
        grid = window.current_tab().grid.view.viewport()
        grid_dark = grid.grab().toImage()
        apply_theme(app, "light")
        QApplication.processEvents()
        grid_light = grid.grab().toImage()
        # the whole window follows the palette, and so do the grid's cells (base colours + text)
        assert _mean_lightness(light) > 170 and _mean_lightness(dark) < 110
        assert _mean_lightness(grid_light) > 200 and _mean_lightness(grid_dark) < 80
    finally:
        app.setPalette(old)


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "app.main", *args], cwd=ROOT, env=env, check=False,
                          capture_output=True, text=True, timeout=120)


def test_screenshot_option_writes_png_and_exits_0(tmp_path):
    out = tmp_path / "shot.png"
    done = _cli(str(TREES), "--screenshot", str(out), "--goto-row", "7", "--size", "1200x800",
                env_extra={SETTINGS_ENV: str(tmp_path / "s.ini")})
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1200, 800)


def test_screenshot_without_a_display_uses_offscreen_quietly(tmp_path):
    """No DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM: --screenshot must not try xcb, and must not spam stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env[SETTINGS_ENV] = str(tmp_path / "s.ini")
    out = tmp_path / "shot.png"
    done = subprocess.run([sys.executable, "-m", "app.main", str(TREES), "--screenshot", str(out), "--size", "1200x800"],
                          cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert QImage(str(out)).size().toTuple() == (1200, 800)
    assert "propagateSizeHints" not in done.stderr and "xcb" not in done.stderr


def test_without_a_display_the_window_command_says_so_instead_of_aborting(tmp_path):
    """No DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM: Qt would abort (SIGABRT) on xcb; one line and exit 2 instead."""
    if not sys.platform.startswith("linux"):
        pytest.skip("X and Wayland displays are a Linux matter")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env[SETTINGS_ENV] = str(tmp_path / "s.ini")
    done = subprocess.run([sys.executable, "-m", "app.main", "--demo"], cwd=ROOT, env=env, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("itar-browser: no display")
    assert "--screenshot" in done.stderr


def test_has_display_on_linux():
    from app.main import has_display

    if not sys.platform.startswith("linux"):
        pytest.skip("X and Wayland displays are a Linux matter")
    assert not has_display({})
    for given in ({"DISPLAY": ":0"}, {"WAYLAND_DISPLAY": "wayland-0"}, {"QT_QPA_PLATFORM": "offscreen"}):
        assert has_display(given)


def test_headless_platform_choice_respects_an_explicit_setting():
    from app.main import use_offscreen_if_headless

    env: dict[str, str] = {}
    assert use_offscreen_if_headless(env) and env["QT_QPA_PLATFORM"] == "offscreen"
    for given in ({"DISPLAY": ":0"}, {"WAYLAND_DISPLAY": "wayland-0"}, {"QT_QPA_PLATFORM": "xcb"}):
        env = dict(given)
        assert not use_offscreen_if_headless(env) and env == given


def test_window_and_about_box_show_the_app_icon(qtbot, window):
    from app.style import ICON_PATH

    assert ICON_PATH.exists() and not window.windowIcon().isNull()
    sharp = window.windowIcon().pixmap(16, 16).toImage()
    assert len({sharp.pixel(x, y) for x in range(16) for y in range(16)}) > 4  # drawn, not a blank square
    window.about()
    box = next(w for w in QApplication.topLevelWidgets() if w.objectName() == "aboutBox")
    assert not box.iconPixmap().isNull()
    box.close()


def test_screenshot_of_unreadable_input_exits_2_with_the_error(tmp_path):
    bad = tmp_path / "nonsense.bin"
    bad.write_bytes(b"not an index at all" * 10)
    done = _cli(str(bad), "--screenshot", str(tmp_path / "x.png"), env_extra={SETTINGS_ENV: str(tmp_path / "s.ini")})
    assert done.returncode == 2
    assert "nonsense.bin" in done.stderr and "not a TARIDX, TACO, kastore or TBL file" in done.stderr
    assert not (tmp_path / "x.png").exists()


# ---- TARIDX: the fixture fold, checked against Python's tarfile -------------------------------
WEBDS = DATA / "taridx" / "webds"


def tar_members() -> list[tuple[int, tarfile.TarInfo, bytes]]:
    """(fid, member, payload) for every regular file of the train fold, in shard order."""
    out = []
    for fid, shard in enumerate(sorted(WEBDS.glob("train_*.tar"))):
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    out.append((fid, m, tf.extractfile(m).read()))
    return out


def stem_ext(name: str) -> tuple[str, str]:
    base = name.rsplit("/", 1)[-1]
    stem, _, ext = base.partition(".")
    return stem, ext.lower()


def test_taridx_rows_preview_bytes_equal_tarfile(qtbot, window):
    members = tar_members()
    open_file(qtbot, window, WEBDS / "train.taridx")
    tab = window.tabs_by_name["rows"]
    assert tab.table.n_rows == len(members)
    assert not window.banner.isVisible()  # every shard is there
    for row in (3, len(members) - 1):
        with qtbot.waitSignal(window.previewSettled, timeout=10_000):
            assert window.go_to_row(row)
        fid, member, data = members[row]
        assert bytes(window.preview.payload.data) == data
        col = {c.title: i for i, c in enumerate(tab.table.columns)}
        assert "Row" not in col  # the row header shows the file's row index; no second copy as a column
        header = tab.model.headerData(row - tab.model.window_start, Qt.Orientation.Vertical)
        assert header == str(row)
        assert tab.model.text(row, col["Shard"]).startswith(f"{fid}: ")
        assert tab.model.text(row, col["Offset"]) == str(member.offset)
        assert tab.model.text(row, col["Stem"]) == stem_ext(member.name)[0]  # lazy: read for the visible rows
        assert window.status.selection_label.text() == f"rows row {row:,}"


def test_taridx_panels_wait_until_their_tab_is_in_front(qtbot, window):
    open_file(qtbot, window, WEBDS / "train.taridx")
    for _ in range(5):
        QApplication.processEvents()
    samples = next(p for p in window.panels if p.title == "Samples")
    plots = next(p for p in window.panels if p.title == "Plots")
    assert samples.groups is None and samples._worker is None  # behind the Preview tab: nothing ran
    assert plots.stats is None and plots._worker is None
    with qtbot.waitSignal(samples.samplesReady, timeout=10_000):
        samples.parent().raise_()  # the user clicks the Samples tab
    assert plots.stats is None and plots._worker is None


def test_taridx_extension_drill_and_crash_stem_search(qtbot, window):
    members = tar_members()
    open_file(qtbot, window, WEBDS / "train.taridx")
    exts = window.tabs_by_name["extensions"]
    rows_tab = window.tabs_by_name["rows"]
    window.tabs.setCurrentWidget(exts)
    name = exts.model.text(0, 1)
    view = exts.grid.view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(exts.model.index(0, 1)).center())
    assert window.current_tab() is exts  # a single click only selects (issue 16, item 7)
    with qtbot.waitSignal(rows_tab.viewApplied, timeout=10_000):
        qtbot.keyClick(view, Qt.Key.Key_Return)  # Enter drills down
    truth = [i for i, (_, m, _) in enumerate(members) if stem_ext(m.name)[1] == name]
    assert window.current_tab() is rows_tab
    assert [rows_tab.model.source_row(i) for i in range(rows_tab.model.n_view)] == truth
    assert rows_tab.filter_bar.drill_label.text() == f"Only extensions: {name}"
    rows_tab.filter_bar.clear()
    qtbot.waitUntil(lambda: rows_tab.model.n_view == len(members))
    # a crash stem (same xxh64 as an earlier stem) found exactly through the key box
    crash = window.tabs_by_name["crash stems"]
    stem = str(crash.table.column("Stem").values[0])
    key = rows_tab.filter_bar.key
    with qtbot.waitSignal(rows_tab.viewApplied, timeout=10_000):
        qtbot.keyClicks(key, stem)
        qtbot.keyClick(key, Qt.Key.Key_Return)
    truth = [i for i, (_, m, _) in enumerate(members) if stem_ext(m.name)[0] == stem]
    assert truth and [rows_tab.model.source_row(i) for i in range(rows_tab.model.n_view)] == truth
    stem_col = [c.title for c in rows_tab.table.columns].index("Stem")
    assert {rows_tab.model.text(i, stem_col) for i in range(rows_tab.model.n_view)} == {stem}


def test_taridx_missing_shard_banner_and_disabled_preview(qtbot, window, webds):
    (webds / "train_0001.tar").unlink()
    open_file(qtbot, window, webds / "train.taridx")
    assert window.banner.isVisible()
    assert "train_0001.tar" in " ".join(window.banner.warnings)
    tab = window.tabs_by_name["rows"]
    fids = tab.table.column("Shard").values
    row = int(np.flatnonzero(fids == 1)[0])
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        window.go_to_row(row)
    assert window.preview.payload is None
    assert "missing" in window.preview.placeholder.text()
    ok = int(np.flatnonzero(fids == 2)[0])
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        window.go_to_row(ok)
    assert window.preview.payload is not None


@pytest.mark.parametrize(("sig", "while_opening"), [("SIGINT", False), ("SIGTERM", False), ("SIGTERM", True)])
def test_ctrl_c_or_sigterm_closes_the_window_and_the_app_exits_cleanly(tmp_path, sig, while_opening):
    """Qt's event loop never hands a pending Ctrl+C to Python by itself: the window must still close,
    also when the signal comes while the window is opening its file, before the event loop runs."""
    import signal

    raise_now = f"    os.kill(os.getpid(), signal.{sig})\n" if while_opening else ""
    child = ("import os, signal, sys\n"
             "from app.views.main_window import MainWindow\n"
             "opened = MainWindow.open_demo\n"
             "def open_demo(self):\n"
             "    opened(self)\n"
             f"{raise_now}"
             "    print('ready', flush=True)\n"
             "MainWindow.open_demo = open_demo\n"
             "from app.main import main\n"
             "sys.exit(main(['--demo']))\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", SETTINGS_ENV: str(tmp_path / "s.ini"),
           "ITARCORE_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        if not while_opening:
            proc.send_signal(getattr(signal, sig))
        _out, err = proc.communicate(timeout=60)  # a window that ignored it would still be open
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert err == ""
