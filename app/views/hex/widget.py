"""A custom-painted hex view over a whole file: offsets, 16 bytes a line, ASCII, lazily read.

Only the lines on screen are read (through ``PageCache``), so a multi-GB file scrolls as fast
as a small one. The scrollbar maps onto the line range even past 2**31 lines.
"""
from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import (
    QFontDatabase,
    QFontMetricsF,
    QKeyEvent,
    QKeySequence,
)
from PySide6.QtWidgets import QAbstractScrollArea, QMenu, QWidget

from app.views.hex.copying import SelectionCopier
from app.views.hex.loader import PageLoader
from app.views.hex.model import (
    BYTES_PER_LINE,
    HEX_CHARS,
    ByteSource,
    PageCache,
    hex_column,
    line_count,
    offset_digits,
)
from app.views.hex.paint import PAD, paint_view
from itarcore.errors import ItarError

SCROLL_MAX = 1 << 30  # a QScrollBar holds an int: past this many lines it moves in proportion
_MOVES = {
    Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1, Qt.Key.Key_Up: -BYTES_PER_LINE, Qt.Key.Key_Down: BYTES_PER_LINE,
}


class HexWidget(QAbstractScrollArea):
    selectionChanged = Signal()  # the cursor or the selection moved
    byteClicked = Signal(int)  # a plain click on a byte: its file offset
    goToRequested = Signal()  # Ctrl+G
    message = Signal(str)  # what a copy did, or why it did not

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hexView")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.cache: PageCache | None = None
        self.file_size = 0
        self.top = 0  # first line on screen
        self.caret = 0  # the cursor's byte; the selection runs from it to the anchor
        self.anchor = 0
        self.highlight = (0, 0)  # [start, end) of the field or member shown elsewhere
        self.read_error = ""
        self.loader: PageLoader | None = None
        self.copier = SelectionCopier(self)
        self._dragging = False
        self._syncing = False
        self._wheel = 0  # angle delta not yet turned into whole lines
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.verticalScrollBar().valueChanged.connect(self._on_scrollbar)
        self.horizontalScrollBar().valueChanged.connect(lambda _v: self.viewport().update())
        self._measure()
        self.installEventFilter(self)

    # ---- geometry ------------------------------------------------------------------------
    def _measure(self) -> None:
        fm = QFontMetricsF(self.font())
        self.cw = fm.horizontalAdvance("0")
        self.lh = math.ceil(fm.height()) + 2
        self.ascent = fm.ascent()
        self.digits = offset_digits(self.file_size)

    def _col_x(self, col: int) -> float:
        """x of character column ``col`` of a line (offset, two spaces, hex, two spaces, ASCII)."""
        return PAD + col * self.cw - self.horizontalScrollBar().value()

    @property
    def hex_col(self) -> int:
        return self.digits + 2

    @property
    def ascii_col(self) -> int:
        return self.hex_col + HEX_CHARS + 2

    def content_width(self) -> int:
        return math.ceil(2 * PAD + (self.ascii_col + BYTES_PER_LINE) * self.cw)

    def visible_lines(self) -> int:
        return max(1, (self.viewport().height() - self.lh) // self.lh)

    def max_top(self) -> int:
        return max(0, line_count(self.file_size) - self.visible_lines())

    def byte_rect(self, offset: int, ascii: bool = False) -> QRectF:
        """Where byte ``offset`` is drawn in the viewport (off screen rects are outside it)."""
        line, i = divmod(offset, BYTES_PER_LINE)
        col = self.ascii_col + i if ascii else self.hex_col + hex_column(i)
        y = self.lh + (line - self.top) * self.lh
        return QRectF(self._col_x(col), y, self.cw * (1 if ascii else 2), self.lh)

    def offset_at(self, pos: QPoint) -> int:
        """The byte under viewport point ``pos``, clamped into the file (the offsets column means byte 0)."""
        line = self.top + max(0, (pos.y() - self.lh)) // self.lh
        col = (pos.x() - self._col_x(0)) / self.cw
        if col >= self.ascii_col - 1:
            i = int(col - self.ascii_col)
        else:
            rel = col - self.hex_col
            i = int((rel - (1 if rel >= hex_column(8) else 0) + 0.5) // 3)
        i = min(BYTES_PER_LINE - 1, max(0, i))
        return max(0, min(self.file_size - 1, line * BYTES_PER_LINE + i))

    # ---- state ---------------------------------------------------------------------------
    def set_source(self, source: ByteSource | None, background: bool = False) -> None:
        """Show ``source``; ``background`` fetches its pages off the GUI thread (a slow, remote source)."""
        if self.loader is not None:
            self.loader.shutdown()
            self.loader.deleteLater()
            self.loader = None
        self.copier.shutdown()
        self.cache = PageCache(source) if source is not None else None
        if background and self.cache is not None:
            self.loader = PageLoader(self.cache, self)
            self.loader.loaded.connect(self._on_loaded)
            self.loader.failed.connect(self._on_load_failed)
        self.file_size = source.size if source is not None else 0
        self.top = self.caret = self.anchor = 0
        self.highlight = (0, 0)
        self.read_error = ""
        self._measure()
        self._update_scrollbars()
        self.viewport().update()
        self.selectionChanged.emit()

    def selection(self) -> tuple[int, int]:
        """The selected bytes [start, end); at least the cursor's byte while the file has any."""
        if self.file_size == 0:
            return (0, 0)
        return (min(self.anchor, self.caret), max(self.anchor, self.caret) + 1)

    def select(self, start: int, end: int) -> None:
        """Select [start, end) with the cursor on ``start`` (where the inspector reads)."""
        if self.file_size == 0:
            return
        self.caret = max(0, min(self.file_size - 1, start))
        self.anchor = max(self.caret, min(self.file_size - 1, end - 1))
        self.viewport().update()
        self.selectionChanged.emit()

    def set_highlight(self, start: int, end: int) -> None:
        self.highlight = (start, max(start, end))
        self.viewport().update()

    def read(self, offset: int, length: int) -> bytes | None:
        """Bytes through the cache; b'' (and ``read_error`` set) when the source fails.

        With a background loader, None while pages are on their way (asked for here).
        """
        if self.cache is None:
            return b""
        if self.loader is not None:
            missing = self.cache.missing(offset, length)
            if missing:
                missing = self.cache.fill_from_memory(missing)  # in RAM: shown now, no flicker
            if missing:
                self.loader.request(missing)
                return b"" if self.loader.failed_pages.intersection(missing) else None
        try:
            data = self.cache.read(offset, length)
        except (OSError, ItarError) as exc:
            self.read_error = f"Could not read bytes at 0x{offset:x}: {exc}"
            return b""
        self.read_error = ""
        return data

    def _on_loaded(self) -> None:
        self.viewport().update()
        self.selectionChanged.emit()  # the inspector reads the bytes that just arrived

    def _on_load_failed(self, problem: str) -> None:
        self.read_error = f"Could not read bytes: {problem}"
        self.viewport().update()
        self.message.emit(self.read_error)

    def scroll_to_line(self, line: int) -> None:
        self.top = max(0, min(self.max_top(), line))
        self._update_scrollbars()
        self.viewport().update()

    def ensure_visible(self, offset: int, end: int | None = None, center: bool = False) -> None:
        """Scroll so byte ``offset`` (and the range up to ``end``, if it fits) is on screen."""
        first = offset // BYTES_PER_LINE
        last = first if end is None else max(first, (end - 1) // BYTES_PER_LINE)
        n = self.visible_lines()
        if self.top <= first and min(last, first + n - 1) < self.top + n:
            return
        span = last - first + 1
        if center:  # the range a third of the way down, or at the top if it does not fit
            self.scroll_to_line(first - max(0, n - span) // 3)
        else:
            self.scroll_to_line(first if first < self.top else first - n + 1)

    def go_to(self, offset: int) -> None:
        self.select(offset, offset + 1)
        self.ensure_visible(offset, center=True)

    # ---- scrollbars ----------------------------------------------------------------------
    def _update_scrollbars(self) -> None:
        self._syncing = True
        vbar, max_top = self.verticalScrollBar(), self.max_top()
        vbar.setRange(0, min(max_top, SCROLL_MAX))
        vbar.setPageStep(self.visible_lines())
        vbar.setSingleStep(1)
        self.top = min(self.top, max_top)
        vbar.setValue(self.top if max_top <= SCROLL_MAX else self.top * SCROLL_MAX // max_top)
        hbar = self.horizontalScrollBar()
        hbar.setRange(0, max(0, self.content_width() - self.viewport().width()))
        hbar.setPageStep(self.viewport().width())
        self._syncing = False

    def _on_scrollbar(self, value: int) -> None:
        if self._syncing:
            return
        max_top = self.max_top()
        self.top = value if max_top <= SCROLL_MAX else value * max_top // SCROLL_MAX
        self.viewport().update()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._update_scrollbars()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._measure()
            self._update_scrollbars()

    def wheelEvent(self, event) -> None:
        # three lines a notch, in exact lines even on a huge file; a touchpad's small deltas add up
        self._wheel += event.angleDelta().y()
        steps = int(self._wheel / 40)
        self._wheel -= steps * 40
        if steps:
            self.scroll_to_line(self.top - steps)
        event.accept()

    def paintEvent(self, _event) -> None:
        paint_view(self)

    # ---- keyboard and mouse --------------------------------------------------------------
    def _is_own_shortcut(self, event: QKeyEvent) -> bool:
        return (event.matches(QKeySequence.StandardKey.Copy) or event.matches(QKeySequence.StandardKey.SelectAll)
                or (event.key() == Qt.Key.Key_G and event.modifiers() == Qt.KeyboardModifier.ControlModifier))

    def eventFilter(self, watched, event: QEvent) -> bool:
        # Ctrl+C, Ctrl+A and Ctrl+G mean this view's bytes while it has the focus, not the window's grid
        if event.type() == QEvent.Type.ShortcutOverride and self._is_own_shortcut(event):
            event.accept()
            return True
        return False

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_as("hex")
            return
        if event.matches(QKeySequence.StandardKey.SelectAll):
            self.select(0, self.file_size)
            return
        if event.key() == Qt.Key.Key_G and event.modifiers() == Qt.KeyboardModifier.ControlModifier:
            self.goToRequested.emit()
            return
        target = self._key_target(event)
        if target is None or self.file_size == 0:
            super().keyPressEvent(event)
            return
        self.move_cursor(target, extend=bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier))

    def _key_target(self, event: QKeyEvent) -> int | None:
        key, ctrl = event.key(), bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        page = self.visible_lines() * BYTES_PER_LINE
        line_start = self.caret - self.caret % BYTES_PER_LINE
        if key in _MOVES:
            return self.caret + _MOVES[key]
        return {
            Qt.Key.Key_PageUp: self.caret - page, Qt.Key.Key_PageDown: self.caret + page,
            Qt.Key.Key_Home: 0 if ctrl else line_start,
            Qt.Key.Key_End: self.file_size - 1 if ctrl else line_start + BYTES_PER_LINE - 1,
        }.get(key)

    def move_cursor(self, offset: int, extend: bool = False) -> None:
        self.caret = max(0, min(self.file_size - 1, offset))
        if not extend:
            self.anchor = self.caret
        self.ensure_visible(self.caret)
        self.viewport().update()
        self.selectionChanged.emit()

    def mousePressEvent(self, event) -> None:
        if self.file_size == 0 or event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        offset = self.offset_at(event.position().toPoint())
        extend = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        self._dragging = True
        self.move_cursor(offset, extend)
        if not extend:
            self.byteClicked.emit(offset)

    def mouseMoveEvent(self, event) -> None:
        if self._dragging:
            self.move_cursor(self.offset_at(event.position().toPoint()), extend=True)

    def mouseReleaseEvent(self, event) -> None:
        self._dragging = False
        super().mouseReleaseEvent(event)

    def contextMenuEvent(self, event) -> None:
        if self.file_size == 0:
            return
        start, end = self.selection()
        clicked = self.offset_at(event.pos())
        if not start <= clicked < end:  # a right click outside the selection acts on that byte
            self.move_cursor(clicked)
            start, end = self.selection()
        menu = QMenu(self)
        menu.addAction("Copy as Hex", QKeySequence.StandardKey.Copy, lambda: self.copy_as("hex"))
        menu.addAction("Copy as Text", lambda: self.copy_as("text"))
        menu.addAction(f"Copy Offset (0x{start:x})", lambda: self.copy_as("offset"))
        menu.addSeparator()
        menu.addAction("Go to Offset…", QKeySequence("Ctrl+G"), self.goToRequested.emit)
        menu.addAction("Select All", QKeySequence.StandardKey.SelectAll, lambda: self.select(0, self.file_size))
        menu.exec(event.globalPos())

    # ---- copying -------------------------------------------------------------------------
    def copy_as(self, kind: str) -> None:
        """Put the selection on the clipboard as "hex", "text" or "offset" (see ``SelectionCopier``)."""
        self.copier.copy_as(kind)

    def copy(self) -> None:
        """Edit → Copy (the main window asks the focused widget)."""
        self.copy_as("hex")
