"""The hex pane driven as a user drives it: keys, mouse, go to offset, copy, the value inspector."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from app.views.hex import HexPane
from app.views.hex.model import BYTES_PER_LINE, BufferSource, format_line

TREES = Path(__file__).resolve().parents[1] / "data" / "kastore" / "example.trees"
KEY = Qt.Key
SHIFT, CTRL = Qt.KeyboardModifier.ShiftModifier, Qt.KeyboardModifier.ControlModifier


@pytest.fixture
def data() -> bytes:
    return TREES.read_bytes()


@pytest.fixture
def pane(qtbot, data):
    p = HexPane()
    qtbot.addWidget(p)
    p.resize(640, 320)
    p.show()
    p.set_byte_source(BufferSource(data))
    qtbot.waitExposed(p)
    p.hex.setFocus()
    return p


def clipboard() -> str:
    return QApplication.clipboard().text()


def test_keyboard_moves_the_cursor_and_shift_selects_then_ctrl_c_copies_hex(qtbot, pane, data):
    view = pane.hex
    for key in (KEY.Key_Right, KEY.Key_Right, KEY.Key_Right, KEY.Key_Down):
        qtbot.keyClick(view, key)
    assert view.selection() == (19, 20)
    for _ in range(3):
        qtbot.keyClick(view, KEY.Key_Right, SHIFT)
    assert view.selection() == (19, 23)
    qtbot.keyClick(view, KEY.Key_C, CTRL)
    assert clipboard() == data[19:23].hex(" ")
    assert pane.caption.text() == "Copied 4 byte(s) as hex"
    qtbot.keyClick(view, KEY.Key_Up, SHIFT)  # the cursor (22) moves back over the anchor (19): 6..19
    assert view.selection() == (6, 20)
    qtbot.keyClick(view, KEY.Key_End, CTRL)
    assert view.selection() == (len(data) - 1, len(data))
    last_line = (len(data) - 1) // BYTES_PER_LINE
    assert view.top <= last_line < view.top + view.visible_lines()  # scrolled to the end
    qtbot.keyClick(view, KEY.Key_Home, CTRL | SHIFT)
    assert view.selection() == (0, len(data)) and view.top == 0


def test_go_to_offset_in_hex_and_decimal(qtbot, pane, data):
    view = pane.hex
    qtbot.keyClick(view, KEY.Key_G, CTRL)
    assert pane.goto.hasFocus()
    qtbot.keyClicks(pane.goto, "0xd000")
    qtbot.keyClick(pane.goto, KEY.Key_Return)
    assert view.selection() == (0xD000, 0xD001)
    assert view.hasFocus()  # back in the bytes, ready for the arrow keys
    line = 0xD000 // BYTES_PER_LINE
    assert view.top <= line < view.top + view.visible_lines()
    pane.focus_go_to()
    qtbot.keyClicks(pane.goto, "4,096")
    qtbot.keyClick(pane.goto, KEY.Key_Return)
    assert view.selection() == (4096, 4097)
    pane.focus_go_to()
    qtbot.keyClicks(pane.goto, str(len(data)))
    qtbot.keyClick(pane.goto, KEY.Key_Return)
    assert view.selection() == (4096, 4097)  # nowhere to go: the cursor stays and the pane says why
    last = len(data) - 1
    assert pane.caption.text() == f"Offset {len(data):,} (0x{len(data):x}) is past the end: the last byte is " \
                                  f"{last:,} (0x{last:x})"


def test_mouse_drag_selects_and_copy_as_text_through_the_context_menu(qtbot, pane, data):
    view = pane.hex
    vp = view.viewport()
    start = view.byte_rect(0, ascii=True).center().toPoint()
    end = view.byte_rect(3, ascii=True).center().toPoint()
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=start)
    qtbot.mouseMove(vp, end)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=end)
    assert view.selection() == (0, 4)
    assert data[:4] == b"\x89KAS"

    chosen: list[str] = []

    def pick(text: str) -> None:
        menu = QApplication.activePopupWidget()
        action = next(a for a in menu.actions() if a.text().startswith(text))
        chosen.append(action.text())
        menu.close()
        action.trigger()

    for what, truth in (("Copy as Text", "\ufffdKAS"), ("Copy as Hex", "89 4b 41 53"), ("Copy Offset", "0x0")):
        QTimer.singleShot(0, lambda w=what: pick(w))
        pos = view.byte_rect(1).center().toPoint()  # inside the selection: it is kept
        QApplication.sendEvent(vp, QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, vp.mapToGlobal(pos)))
        assert clipboard() == truth
    assert chosen == ["Copy as Text", "Copy as Hex", "Copy Offset (0x0)"]


def test_inspector_reads_the_kastore_file_size_field(qtbot, pane, data):
    # kastore's header holds the file size as a little-endian u64 at byte 16
    pane.show_range(16, 8)
    assert pane.hex.selection() == (16, 24) and pane.highlight == (16, 24)
    inspector = pane.inspector
    assert inspector.value_text("u64") == str(len(data))
    for name, code in (("u8", "B"), ("i8", "b"), ("u16", "H"), ("i16", "h"), ("u32", "I"), ("i32", "i"),
                       ("i64", "q")):
        width = struct.calcsize(code)
        assert inspector.value_text(name) == str(struct.unpack("<" + code, data[16:16 + width])[0])
    qtbot.mouseClick(pane.endian, Qt.MouseButton.LeftButton)
    assert pane.endian.text() == "Big-endian"
    assert inspector.value_text("u64") == str(struct.unpack(">Q", data[16:24])[0])
    assert inspector.value_text("f64") == repr(struct.unpack(">d", data[16:24])[0])
    assert inspector.value_text("f32") == f"{struct.unpack('>f', data[16:20])[0]:.9g}"


def test_a_click_inside_the_highlighted_field_keeps_its_byte(qtbot, pane):
    view = pane.hex
    clicked: list[int] = []
    view.byteClicked.connect(clicked.append)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.byte_rect(13).center().toPoint())
    assert clicked == [13]
    pane.show_range(12, 4)  # what the header does when the click selects the field of bytes 12..15
    assert view.selection() == (13, 14) and pane.highlight == (12, 16)
    pane.show_range(0, 0)  # no record: nothing highlighted, the cursor stays
    assert pane.highlight == (0, 0) and view.selection() == (13, 14)


def test_a_copy_over_the_limit_is_refused_with_a_reason(qtbot, pane):
    QApplication.clipboard().setText("before")
    big = bytes(3 << 20)
    pane.set_byte_source(BufferSource(big))
    qtbot.keyClick(pane.hex, KEY.Key_A, CTRL)
    assert pane.hex.selection() == (0, len(big))
    qtbot.keyClick(pane.hex, KEY.Key_C, CTRL)
    assert clipboard() == "before"
    assert pane.caption.text() == f"Not copied: {len(big):,} bytes selected; a copy holds at most 1 MiB"


class PatternSource:
    """A 1 TiB file that is never stored: byte i is (i * 7 + i // 4096) % 256."""

    size = 1 << 40

    def read(self, offset: int, length: int) -> bytes:
        end = min(self.size, offset + length)
        return bytes((i * 7 + i // 4096) % 256 for i in range(offset, end))


def test_a_terabyte_scrolls_to_its_last_line_past_the_int_scrollbar(qtbot, pane):
    source = PatternSource()
    pane.set_byte_source(source)
    view = pane.hex
    assert view.digits == 10  # offsets up to 0xffffffffff
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    assert view.top == view.max_top()
    last_line = source.size // BYTES_PER_LINE - 1
    assert view.top + view.visible_lines() - 1 == last_line
    first = last_line * BYTES_PER_LINE
    # byte 2**40-16 is (-112 + 2**28 - 1) % 256 = 0x8f by the pattern, and each next one 7 more
    assert format_line(first, view.read(first, 16), view.digits) == \
        "fffffffff0  8f 96 9d a4 ab b2 b9 c0  c7 ce d5 dc e3 ea f1 f8  ................"
    bar.setValue(bar.maximum() // 2)
    assert abs(view.top - view.max_top() // 2) <= view.max_top() // bar.maximum() + 1
    view.grab()  # paints without reading more than the screen (PatternSource would take minutes)


def test_empty_and_absent_files_say_so(qtbot, pane):
    pane.set_byte_source(BufferSource(b""))
    assert pane.caption.text() == "The file is empty (0 bytes)"
    assert pane.inspector.value_text("u8") == "—"
    qtbot.keyClick(pane.hex, KEY.Key_Right)  # nothing to move over: no error
    assert pane.hex.selection() == (0, 0)
    pane.set_source(None, 0)
    assert pane.caption.text() == "No file"


def test_edit_copy_in_the_inspector_copies_the_value(qtbot, pane, data):
    pane.show_range(16, 8)
    inspector = pane.inspector
    inspector.setCurrentCell(3, 0)  # the "u64" name cell beneath the bytes (two pairs a row)
    inspector.copy()
    assert clipboard() == str(struct.unpack("<Q", data[16:24])[0])


def wheel(view, dy: int) -> None:
    vp = view.viewport()
    QApplication.sendEvent(vp, QWheelEvent(QPointF(20, 40), QPointF(vp.mapToGlobal(QPoint(20, 40))), QPoint(0, 0),
                                           QPoint(0, dy), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                                           Qt.ScrollPhase.NoScrollPhase, False))


def test_the_wheel_scrolls_three_lines_a_notch_and_small_deltas_add_up(qtbot, pane):
    view = pane.hex
    wheel(view, -120)
    assert view.top == 3
    for _ in range(4):
        wheel(view, -10)  # a touchpad: 40 units make a line, in either direction alike
    assert view.top == 4
    for _ in range(4):
        wheel(view, 10)
    assert view.top == 3
    wheel(view, 240)
    assert view.top == 0
