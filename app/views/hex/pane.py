"""The hex pane: a go-to-offset box, the selection's place, the hex view and the value inspector."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.views.hex.inspector import ValueInspector
from app.views.hex.model import ByteSource, CallableSource, describe_range, parse_offset
from app.views.hex.values import MAX_WIDTH
from app.views.hex.widget import HexWidget

MESSAGE_MS = 5000


class HexPane(QWidget):
    byteClicked = Signal(int)  # absolute file offset of a clicked byte

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hex = HexWidget(self)
        self.inspector = ValueInspector(self)
        self.goto = QLineEdit(self)
        self.goto.setObjectName("hexGoTo")
        self.goto.setPlaceholderText("Go to offset")
        self.goto.setToolTip("Go to a byte (Ctrl+G): decimal such as 1234, or hex such as 0x4d2")
        self.goto.setClearButtonEnabled(True)
        self.goto.setFixedWidth(self.goto.fontMetrics().horizontalAdvance("0x000000000000") + 36)
        self.caption = QLabel(self)
        self.caption.setObjectName("hexCaption")
        self.caption.setWordWrap(True)  # a long message wraps; it never widens the dock
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.endian = QToolButton(self)
        self.endian.setCheckable(True)
        self.endian.setToolTip("Byte order of the inspector's values")
        self.endian.setText("Little-endian")
        self.endian.toggled.connect(self._on_endian)
        self.show_inspector = QToolButton(self)
        self.show_inspector.setText("Inspector")
        self.show_inspector.setCheckable(True)
        self.show_inspector.setChecked(True)
        self.show_inspector.setToolTip("Show the selection's first bytes as integers and floats")
        self.show_inspector.toggled.connect(self.inspector.setVisible)

        bar = QHBoxLayout()
        bar.setContentsMargins(2, 0, 2, 0)
        bar.addWidget(self.goto)
        bar.addWidget(self.caption, 1)
        bar.addWidget(self.endian)
        bar.addWidget(self.show_inspector)
        self.body = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self.body.setSpacing(2)
        self.body.addWidget(self.hex, 1, Qt.AlignmentFlag.AlignLeft)
        self.body.addWidget(self.inspector)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addLayout(self.body, 1)

        self._message = ""
        self._message_timer = QTimer(self, singleShot=True, interval=MESSAGE_MS)
        self._message_timer.timeout.connect(self._clear_message)
        self.hex.selectionChanged.connect(self._on_selection)
        self.hex.byteClicked.connect(self.byteClicked)
        self.hex.goToRequested.connect(self.focus_go_to)
        self.hex.message.connect(self.show_message)
        self.goto.returnPressed.connect(self._go_to_typed)
        self._fit_hex_width()
        self._on_selection()

    # ---- the API the main window uses --------------------------------------------------------
    @property
    def highlight(self) -> tuple[int, int]:
        return self.hex.highlight

    def minimum_width_hint(self) -> int:
        """Width that shows offsets, hex and ASCII in full (the dock never needs to cut the ASCII column)."""
        return self.hex.content_width() + self.hex.verticalScrollBar().sizeHint().width() + 2 * self.hex.frameWidth()

    def set_source(self, read: Callable[[int, int], bytes] | None, file_size: int, background: bool = False,
                   read_cached: Callable[[int, int], bytes | None] | None = None) -> None:
        """Show a file read through ``read(offset, length)`` (e.g. ``Document.read_bytes``); ``read_cached``
        gives pages in RAM at once while ``background`` reads the others in a worker."""
        self.set_byte_source(CallableSource(read, file_size, read_cached) if read is not None else None, background)

    def set_byte_source(self, source: ByteSource | None, background: bool = False) -> None:
        """Show any source with ``size`` and ``read(offset, length)``: a memoryview, an mmap, a remote range.

        ``background`` reads its pages in a worker: for a source whose reads are round trips.
        """
        self.hex.set_source(source, background)
        self._fit_hex_width()  # more offset digits past 4 GiB

    def _fit_hex_width(self) -> None:
        # never narrower than its ASCII column's end, never wider: spare width goes to the inspector
        self.hex.setFixedWidth(self.minimum_width_hint())

    def show_range(self, offset: int, size: int) -> None:
        """Highlight file bytes [offset, offset+size), select them and scroll to them; size 0 clears."""
        if size <= 0 or self.hex.file_size == 0:
            self.hex.set_highlight(0, 0)
            return
        end = min(offset + size, self.hex.file_size)
        self.hex.set_highlight(offset, end)
        start, stop = self.hex.selection()
        if not (offset <= start and stop <= end):  # a click inside the range keeps its byte
            self.hex.select(offset, end)
        self.hex.ensure_visible(offset, end, center=True)

    # ---- go to, messages, inspector ----------------------------------------------------------
    def focus_go_to(self) -> None:
        self.goto.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.goto.selectAll()

    def _go_to_typed(self) -> None:
        if self.hex.file_size == 0:
            return
        try:
            offset = parse_offset(self.goto.text(), self.hex.file_size)
        except ValueError as exc:
            self.show_message(str(exc))
            return
        self.hex.go_to(offset)
        self.hex.setFocus(Qt.FocusReason.OtherFocusReason)

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape and self.goto.hasFocus():
            self.hex.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        super().keyPressEvent(event)

    def show_message(self, text: str) -> None:
        self._message = text
        self._message_timer.start()
        self._on_selection()

    def _clear_message(self) -> None:
        self._message = ""
        self._on_selection()

    def _on_endian(self, big: bool) -> None:
        self.endian.setText("Big-endian" if big else "Little-endian")
        self._on_selection()

    def _on_selection(self) -> None:
        hex_ = self.hex
        start, end = hex_.selection()
        if self._message:
            self.caption.setText(self._message)
        elif hex_.cache is None:
            self.caption.setText("No file")
        elif hex_.file_size == 0:
            self.caption.setText("The file is empty (0 bytes)")
        else:
            self.caption.setText(f"{describe_range(start, end)} of {hex_.file_size:,}")
        self.caption.setToolTip(self.caption.text())
        self.inspector.show_values(hex_.read(start, MAX_WIDTH) if hex_.file_size else b"", start,
                                   not self.endian.isChecked())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        side = self.width() >= self.minimum_width_hint() + self.body.spacing() + self.inspector.side_width()
        self.body.setDirection(QBoxLayout.Direction.LeftToRight if side else QBoxLayout.Direction.TopToBottom)
        self.inspector.set_pairs(1 if side else 2)
        # beside the bytes it keeps its own width at the top; beneath them it spans the pane
        top_left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        self.body.setAlignment(self.inspector, top_left if side else Qt.AlignmentFlag(0))
