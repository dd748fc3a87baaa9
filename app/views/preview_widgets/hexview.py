"""A classic hex dump (offset, 16 bytes, ASCII) of a payload's first bytes.

The dump is built only when the view is shown: most payloads are never looked at
as hex, and a 64 KiB dump costs milliseconds the image preview should not pay.
"""
from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

HEX_LIMIT = 64 * 1024  # past this the dump is cut: 4096 lines is plenty to eyeball


_PRINTABLE = bytes(b if 32 <= b < 127 else ord(".") for b in range(256))


def hex_dump(data: bytes | memoryview, limit: int = HEX_LIMIT) -> str:
    view = bytes(data[:limit])
    text = view.translate(_PRINTABLE).decode("ascii")
    lines = []
    for start in range(0, len(view), 16):
        hexes = view[start:start + 8].hex(" ") + "  " + view[start + 8:start + 16].hex(" ")
        lines.append(f"{start:08x}  {hexes:<48}  |{text[start:start + 16]}|")
    return "\n".join(lines)


class HexView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = QPlainTextEdit(readOnly=True)
        self.edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.note = QLabel()
        self.note.setWordWrap(True)  # a long text wraps; it never widens the window
        self.note.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit)
        layout.addWidget(self.note)

        self._data: bytes | memoryview = b""
        self._stale = False

    def set_data(self, data: bytes | memoryview) -> None:
        self._data, self._stale = data, True
        cut = len(data) > HEX_LIMIT
        self.note.setText(f"Showing the first {HEX_LIMIT:,} of {len(data):,} bytes." if cut else "")
        self.note.setVisible(cut)
        if self.isVisible():
            self._render()

    def _render(self) -> None:
        if self._stale:
            self._stale = False
            data = self._data
            self.edit.setPlainText(hex_dump(data) if len(data) else "(empty payload: 0 bytes)")

    def showEvent(self, event) -> None:
        self._render()
        super().showEvent(event)

    def text(self) -> str:
        self._render()
        return self.edit.toPlainText()
