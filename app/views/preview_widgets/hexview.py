"""A classic hex dump (offset, 16 bytes, ASCII) of a payload's first bytes."""
from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

HEX_LIMIT = 64 * 1024  # past this the dump is cut: 4096 lines is plenty to eyeball


def hex_dump(data: bytes | memoryview, limit: int = HEX_LIMIT) -> str:
    view = bytes(data[:limit])
    lines = []
    for start in range(0, len(view), 16):
        chunk = view[start:start + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk[:8]) + "  " + " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{start:08x}  {hexes:<48}  |{text}|")
    return "\n".join(lines)


class HexView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = QPlainTextEdit(readOnly=True)
        self.edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.note = QLabel()
        self.note.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit)
        layout.addWidget(self.note)

    def set_data(self, data: bytes | memoryview) -> None:
        self.edit.setPlainText(hex_dump(data) if len(data) else "(empty payload: 0 bytes)")
        cut = len(data) > HEX_LIMIT
        self.note.setText(f"Showing the first {HEX_LIMIT:,} of {len(data):,} bytes." if cut else "")
        self.note.setVisible(cut)

    def text(self) -> str:
        return self.edit.toPlainText()
