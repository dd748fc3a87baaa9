"""A 100M-row index (sparse: costs no disk) browses, and its last row can be reached."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import Qt

N_ROWS = 100_000_000


def write_sparse_taridx(path: Path, n_rows: int, exts: tuple[str, ...] = ("jpg",)) -> None:
    """A valid TARIDX header + extension block; the rows are a hole of zeros (fid 0, extid 0, one stem)."""
    ext_block = "\n".join(exts).encode()
    off_crash = 64 + len(ext_block)
    off_arr = off_crash
    header = struct.pack("<8sHHHHQQIIQQB7x", b"TARIDX\0\0", 1, 0, 32, 64, 1, n_rows, len(exts), 0,
                         off_crash, off_arr, 1)
    assert len(header) == 64
    with open(path, "wb") as fh:
        fh.write(header + ext_block)
        fh.truncate(off_arr + 32 * n_rows)


def test_jump_to_last_row_of_100m_rows(qtbot, tmp_path):
    from app.views.main_window import MainWindow

    path = tmp_path / "huge.taridx"
    write_sparse_taridx(path, N_ROWS)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    try:
        with qtbot.waitSignal(w.previewSettled, timeout=30_000), \
                qtbot.waitSignal(w.documentOpened, timeout=30_000):
            w.open_path(str(path))
        assert w.banner.isVisible() and "huge_*.tar" in " ".join(w.banner.warnings)
        tab = w.tabs_by_name["rows"]
        grid = tab.grid
        assert tab.model.n_view == N_ROWS
        assert tab.model.rowCount() <= 100_000  # Qt never sees more than the window
        assert grid.scrollbar.maximum() == N_ROWS - grid.page_rows
        grid.view.setFocus()
        with qtbot.waitSignal(w.previewSettled, timeout=10_000):
            qtbot.keyClick(grid.view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
        assert grid.current_source_row() == N_ROWS - 1
        assert grid.scrollbar.value() == grid.scrollbar.maximum()
        assert w.status.selection_label.text() == f"rows row {N_ROWS - 1:,}"
        # the last row is painted: the header of the last visible section names it
        last_visible = grid.view.rowAt(grid.view.viewport().height() - 2)
        if last_visible < 0:
            last_visible = tab.model.rowCount() - 1
        assert tab.model.headerData(last_visible, Qt.Orientation.Vertical) == str(N_ROWS - 1)
        # the hex pane shows that row's 32-byte record, at the end of the file
        start, end = w.hex_pane.highlight
        assert (start, end) == (path.stat().st_size - 32, path.stat().st_size)
        # no shard: the preview says why instead of showing bytes
        assert w.preview.payload is None
        # go back up through the scrollbar's full range
        grid.scrollbar.setValue(N_ROWS // 2)
        assert tab.model.window_start <= N_ROWS // 2 < tab.model.window_start + tab.model.rowCount()
        assert tab.model.headerData(grid.view.rowAt(1), Qt.Orientation.Vertical) == str(N_ROWS // 2)
        assert w.go_to_row(12_345_678)
        assert grid.current_source_row() == 12_345_678
        with qtbot.waitSignal(w.previewSettled, timeout=10_000):
            qtbot.keyClick(grid.view, Qt.Key.Key_Down)
        assert grid.current_source_row() == 12_345_679
    finally:
        w.shutdown()
