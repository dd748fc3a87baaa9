"""All members of one sample side by side, as compact cards.

The members are read and decoded together in one worker; a result for a sample
the user has already left is dropped. Clicking a card's title selects that row.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.workers import JobWorker
from itarcore.errors import ItarError

from . import make_view

CARD_MIN_WIDTH, CARD_MAX_WIDTH = 230, 520
_LIVE_WORKERS: set[JobWorker] = set()  # see app.views.preview: the pool must not outlive its runnables
Describe = Callable[[np.ndarray], tuple[list[str], list[str], list[int]]]  # rows -> names, extensions, sizes


@dataclass
class MemberResult:
    row: int
    name: str
    ext: str
    size: int
    decoded: Any = None  # itarcore.decoders.Decoded
    data: bytes = b""
    error: str = ""


def load_members(rows: np.ndarray, names: list[str], exts: list[str], sizes: list[int],
                 read: Callable[[int], bytes], describe: Describe | None = None,
                 read_many: Callable[[np.ndarray], list[bytes]] | None = None) -> list[MemberResult]:
    """Read and decode each member (worker thread); a failing member carries its error instead.

    ``describe(rows)`` gives names, extensions and sizes here rather than on the GUI thread, and
    ``read_many(rows)`` reads every payload in one batch (a remote fold: one request per shard);
    if the batch fails, members are read one by one so each card shows its own error.
    """
    from itarcore.decoders import decode

    if describe is not None:
        names, exts, sizes = describe(rows)
    batch: list[bytes] | None = None
    if read_many is not None:
        try:
            batch = read_many(rows)
        except (ItarError, OSError):
            batch = None
    out = []
    for i, (row, name, ext, size) in enumerate(zip(rows.tolist(), names, exts, sizes)):
        result = MemberResult(int(row), name, ext, int(size))
        try:
            result.data = batch[i] if batch is not None else read(int(row))
            result.decoded = decode(result.data, ext)
        except ItarError as exc:
            result.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a third-party decoder's own error, shown on the card
            result.error = f"{type(exc).__name__}: {exc}"
        out.append(result)
    return out


class MemberCard(QFrame):
    clicked = Signal(int)  # the row

    def __init__(self, member: MemberResult, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.member = member
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumWidth(CARD_MIN_WIDTH)
        self.setMaximumWidth(CARD_MAX_WIDTH)
        self.title = QToolButton(text=member.ext or "(no extension)")
        self.title.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.title.setAutoRaise(True)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.title.setToolTip(f"{member.name}\nrow {member.row:,} · click to select it in the rows grid")
        self.title.clicked.connect(lambda: self.clicked.emit(self.member.row))
        what = member.decoded.description if member.decoded is not None else "not decoded"
        self.caption = QLabel(f"{what} · {member.size:,} byte{'s' if member.size != 1 else ''}")
        self.caption.setWordWrap(True)
        self.caption.setEnabled(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 6)
        layout.setSpacing(2)
        layout.addWidget(self.title, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.caption)
        if member.error:
            self.view: QWidget = QLabel(f"Cannot show {member.name}: {member.error}")
            self.view.setWordWrap(True)
            dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
            self.view.setStyleSheet(f"color: {'#ff7b72' if dark else '#b3261e'};")
            self.view.setAlignment(Qt.AlignmentFlag.AlignTop)
        else:
            self.view = make_view(member.decoded, member.data, compact=True)
        layout.addWidget(self.view, 1)


class SampleCards(QWidget):
    """Header line plus a horizontally scrolling row of member cards."""

    cardsReady = Signal()  # the current sample's cards are on screen
    rowClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None, debounce_ms: int = 60) -> None:
        super().__init__(parent)
        self.cards: list[MemberCard] = []
        self.members: list[MemberResult] = []
        self._generation = 0
        self._pending: tuple | None = None
        self.header = QLabel("No sample selected.")
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.header.setWordWrap(True)
        self._strip = QWidget()
        self._strip_layout = QHBoxLayout(self._strip)
        self._strip_layout.setContentsMargins(0, 0, 0, 0)
        self._strip_layout.addStretch(1)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self._strip)
        # sized by hand: word-wrapped labels make the layout height-for-width, and a resizable
        # scroll area would then grow the strip taller than the view
        self.scroll.setWidgetResizable(False)
        self.scroll.viewport().installEventFilter(self)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.scroll, 1)
        self._timer = QTimer(self, singleShot=True, interval=debounce_ms)
        self._timer.timeout.connect(self._start_load)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.scroll.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_strip()
        return super().eventFilter(watched, event)

    def _fit_strip(self) -> None:
        view = self.scroll.viewport().size()
        spacing = max(self._strip_layout.spacing(), 0)
        need = len(self.cards) * (CARD_MIN_WIDTH + spacing)
        self._strip.resize(max(need, view.width()), view.height())

    def show_sample(self, header: str, rows: np.ndarray, names: list[str], exts: list[str], sizes: list[int],
                    read: Callable[[int], bytes], describe: Describe | None = None,
                    read_many: Callable[[np.ndarray], list[bytes]] | None = None) -> None:
        self._generation += 1
        self.header.setText(header + " · loading…")
        self._pending = (rows, names, exts, sizes, read, describe, read_many)
        self._timer.start()

    def clear(self, message: str = "No sample selected.") -> None:
        self._timer.stop()
        self._generation += 1
        self._pending = None
        self._set_cards([])
        self.header.setText(message)

    def shutdown(self) -> None:
        self._timer.stop()
        self._generation += 1
        self._pending = None

    @property
    def busy(self) -> bool:
        return self._pending is not None

    def _start_load(self) -> None:
        if self._pending is None:
            return
        generation, args = self._generation, self._pending
        header = self.header.text().removesuffix(" · loading…")
        worker = JobWorker(load_members, *args, pass_progress=False)
        worker.returned.connect(lambda members, g=generation, h=header: self._on_loaded(g, h, members))
        worker.errored.connect(lambda exc, g=generation, h=header: self._on_failed(g, h, exc))
        worker.finished.connect(lambda w=worker: _LIVE_WORKERS.discard(w))
        _LIVE_WORKERS.add(worker)
        worker.start()

    def _on_loaded(self, generation: int, header: str, members: list[MemberResult]) -> None:
        if generation != self._generation:
            return
        self._pending = None
        self.header.setText(header)
        self._set_cards(members)
        self.cardsReady.emit()

    def _on_failed(self, generation: int, header: str, exc: BaseException) -> None:
        if generation != self._generation:
            return
        self._pending = None
        self._set_cards([])
        self.header.setText(f"{header} · could not read the members: {exc}")
        self.cardsReady.emit()

    def _set_cards(self, members: list[MemberResult]) -> None:
        for card in self.cards:
            self._strip_layout.removeWidget(card)
            card.deleteLater()
        self.members = members
        self.cards = []
        for member in members:
            card = MemberCard(member)
            card.clicked.connect(self.rowClicked)
            self._strip_layout.insertWidget(self._strip_layout.count() - 1, card, 1)
            self.cards.append(card)
        self._fit_strip()
