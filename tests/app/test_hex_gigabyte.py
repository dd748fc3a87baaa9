"""Scrolling a 1 GiB file in the hex pane reads only what it shows: a few pages per step, never the file.

The work a step does on the GUI thread is bounded by what it reads; how long that takes is measured in
bench/bench_gui_stalls.py, not here (no test reads a clock)."""
from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from app.views.hex import HexPane
from app.views.hex.model import BYTES_PER_LINE, format_line

SIZE = 1 << 30
MARKS = {0: b"first line", SIZE // 2: b"the middle", SIZE - 16: b"the very last 16"}


def test_scrolling_a_sparse_gigabyte_reads_only_the_screen(qtbot, tmp_path):
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as fh:
        fh.truncate(SIZE)  # sparse: a gigabyte of zeros that costs no disk
        for offset, text in MARKS.items():
            fh.seek(offset)
            fh.write(text)
    read_log: list[int] = []

    def read(offset: int, length: int) -> bytes:  # as Document.read_bytes: open, seek, read
        read_log.append(length)
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    pane = HexPane()
    qtbot.addWidget(pane)
    pane.resize(700, 500)
    pane.show()
    qtbot.waitExposed(pane)
    view = pane.hex
    vp = view.viewport()
    view.setFocus()

    steps = 0

    def act(step) -> None:
        nonlocal steps
        before = len(read_log)
        step()
        vp.repaint()  # what the step shows is painted, and read, now
        QApplication.processEvents()
        steps += 1
        # each step reads at most a screen's worth of pages (two screens: the one left and the one shown)
        assert sum(read_log[before:]) <= 2 * (4096 + BYTES_PER_LINE * view.visible_lines())

    act(lambda: pane.set_source(read, SIZE))
    act(lambda: qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier))
    last = view.read(SIZE - 16, 16)
    for _ in range(30):
        act(lambda: qtbot.keyClick(view, Qt.Key.Key_PageUp))
    bar = view.verticalScrollBar()
    for k in range(1, 40):
        act(lambda k=k: bar.setValue(bar.maximum() * k // 40))
    for _ in range(20):
        act(lambda: QApplication.sendEvent(vp, QWheelEvent(
            QPointF(50, 50), QPointF(vp.mapToGlobal(QPoint(50, 50))), QPoint(0, 0), QPoint(0, -120),
            Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)))
    act(lambda: pane.focus_go_to())
    act(lambda: qtbot.keyClicks(pane.goto, hex(SIZE // 2)))
    act(lambda: qtbot.keyClick(pane.goto, Qt.Key.Key_Return))
    # the right bytes arrived where they were asked for
    assert last == MARKS[SIZE - 16]
    assert view.selection() == (SIZE // 2, SIZE // 2 + 1)
    assert format_line(SIZE // 2, view.read(SIZE // 2, 16)) == \
        "20000000  74 68 65 20 6d 69 64 64  6c 65 00 00 00 00 00 00  the middle......"
    assert pane.inspector.value_text("u32") == str(int.from_bytes(b"the ", "little"))
    # lazily: a few pages per screen, never the file (a gigabyte), not even a megabyte per step
    assert max(read_log) <= 4096
    assert sum(read_log) < steps * (4096 + BYTES_PER_LINE * view.visible_lines())
