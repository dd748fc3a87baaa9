"""The payload preview: decodes one row's bytes off the GUI thread and shows them.

Selections that move fast (holding the Down key in the grid) only decode the
payload the user stops on: requests are debounced by a short single-shot timer,
and a result that arrives after the selection moved on is dropped.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.workers import JobWorker
from itarcore.document import Payload

from .preview_widgets import HexView, ImagePane, make_view

DEBOUNCE_MS = 80
# Workers in flight, held here rather than by a widget: a QRunnable that Python frees while the
# pool still runs it crashes, and a preview can be closed while its decode finishes.
_LIVE_WORKERS: set[JobWorker] = set()


def safe_file_name(name: str, fallback: str = "payload.bin") -> str:
    """A file name that is safe on every OS: base name only, no control or reserved characters."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = re.sub(r'[\x00-\x1f<>:"|?*]', "_", base).strip().strip(".")
    base = re.sub(r"\s+", " ", base)
    if not base or base.upper().split(".")[0] in {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)),
                                                  *(f"LPT{i}" for i in range(10))}:
        base = "_" + base if base else fallback
    return base[:200]


def describe_size(n: int) -> str:
    return f"{n:,} byte{'s' if n != 1 else ''}"


def _decode(payload: Payload) -> Any:
    from itarcore.decoders import decode  # imported late: the decoders pull in optional extras

    return decode(bytes(payload.data), payload.ext, payload.meta or None)


class PayloadPreview(QWidget):
    """Shows a :class:`Payload` by its decoded kind, or as hex on request."""

    previewReady = Signal()  # the current payload is on screen (decoded view or inline error)
    fetchCancelled = Signal()  # the user cancelled the remote fetch on screen

    def __init__(self, parent: QWidget | None = None, debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__(parent)
        self.payload: Payload | None = None
        self.decoded: Any = None
        self.error: str = ""
        self._pending: Payload | None = None
        self._generation = 0
        self._content: QWidget | None = None

        self.title = QLabel()
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.description = QLabel()  # its own line under the name: never clipped by the buttons
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.description.setWordWrap(True)
        self.hex_button = QToolButton(text="Hex", checkable=True)
        self.hex_button.setToolTip("Show the raw bytes as hex (Ctrl+H)")
        self.hex_button.setShortcut(QKeySequence("Ctrl+H"))
        self.hex_button.toggled.connect(self._show_page)
        self.save_button = QToolButton(text="Save payload as…")
        self.save_button.setToolTip("Write the raw bytes of this payload to a file")
        self.save_button.clicked.connect(self.save_as)

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()

        self.placeholder = QLabel("Select a row to preview its payload.")
        self.placeholder.setWordWrap(True)  # a long text wraps; it never widens the window
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setEnabled(False)
        self.hex_view = HexView()
        self.fetch_page = self._fetch_page()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.hex_view)
        self.stack.addWidget(self.fetch_page)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.title, 1)
        bar.addWidget(self.hex_button)
        bar.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.description)
        layout.addWidget(self.error_label)
        layout.addWidget(self.stack, 1)

        self._timer = QTimer(self, singleShot=True, interval=debounce_ms)
        self._timer.timeout.connect(self._start_decode)
        self._set_actions_enabled(False)

    # -- public API -------------------------------------------------------
    def show_payload(self, payload: Payload | None) -> None:
        """Preview ``payload`` once the selection rests for a moment; None clears."""
        if payload is None:
            self.clear()
            return
        self._generation += 1
        self._pending = payload
        self.title.setText(payload.name)
        self.description.setText(f"{describe_size(len(payload.data))} · decoding…")
        self._timer.start()

    def show_fetching(self, name: str, what: str) -> None:
        """A remote payload is on its way: a busy bar, ``what`` (e.g. "fetching 1.2 MiB…") and Cancel."""
        self.clear()
        self.title.setText(name)
        self.set_fetch_text(what)
        self.stack.setCurrentWidget(self.fetch_page)

    def set_fetch_text(self, what: str) -> None:
        self.fetch_label.setText(what)

    @property
    def fetching(self) -> bool:
        return self.stack.currentWidget() is self.fetch_page

    def show_unavailable(self, name: str, reason: str) -> None:
        """No bytes to show (e.g. the shard is missing): say so instead of a preview."""
        self.clear()
        self.title.setText(name)
        self.placeholder.setText(reason)

    def clear(self) -> None:
        self._timer.stop()
        self._generation += 1
        self._pending = None
        self.payload, self.decoded, self.error = None, None, ""
        self.title.clear()
        self.description.clear()
        self.error_label.hide()
        self._set_content(None)
        self.placeholder.setText("Select a row to preview its payload.")
        self.stack.setCurrentWidget(self.placeholder)
        self._set_actions_enabled(False)

    def shutdown(self) -> None:
        """Stop the debounce timer; decodes in flight finish on their own and are ignored."""
        self._timer.stop()
        self._generation += 1
        self._pending = None

    @property
    def busy(self) -> bool:
        return self._timer.isActive() or self._pending is not None

    @property
    def content(self) -> QWidget | None:
        """The widget showing the decoded payload (None for hex-only or errors)."""
        return self._content

    def save_as(self) -> None:
        if self.payload is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save payload as", safe_file_name(self.payload.name))
        if path:
            self.save_to(Path(path))

    def save_to(self, path: Path) -> bool:
        assert self.payload is not None
        try:
            Path(path).write_bytes(bytes(self.payload.data))
        except OSError as exc:
            QMessageBox.critical(self, "Save payload", f"Could not write {path}:\n{exc.strerror or exc}")
            return False
        return True

    # -- decoding -----------------------------------------------------------
    def _start_decode(self) -> None:
        payload, generation = self._pending, self._generation
        if payload is None:
            return
        worker = JobWorker(_decode, payload, pass_progress=False)
        worker.returned.connect(lambda result, g=generation, p=payload: self._on_decoded(g, p, result, ""))
        worker.errored.connect(lambda exc, g=generation, p=payload: self._on_decoded(g, p, None, _problem(exc)))
        worker.finished.connect(lambda w=worker: _LIVE_WORKERS.discard(w))
        _LIVE_WORKERS.add(worker)
        worker.start()

    def _on_decoded(self, generation: int, payload: Payload, decoded: Any, error: str) -> None:
        if generation != self._generation:
            return  # the selection moved on while this one decoded
        self._pending = None
        self.payload, self.decoded, self.error = payload, decoded, error
        self.hex_view.set_data(payload.data)
        size = describe_size(len(payload.data))
        if error:
            self.description.setText(f"{payload.ext or 'no extension'} · {size}")
            self.error_label.setText(f"Cannot decode {payload.name}: {error}")
            self.error_label.setStyleSheet(f"color: {_error_colour(self)};")
            self.error_label.show()
            self._set_content(None)
        else:
            desc = decoded.description
            self.description.setText(desc if desc.endswith(size) else f"{desc} · {size}")
            self.error_label.hide()
            if decoded.kind == "image" and isinstance(self._content, ImagePane):
                self._content.set_image(decoded.value)  # the next image reuses the pane: no new scene
            else:
                self._set_content(None if decoded.kind == "bytes" else make_view(decoded, payload.data))
        self._set_actions_enabled(True)
        self._show_page(self.hex_button.isChecked())
        self.previewReady.emit()

    # -- layout ---------------------------------------------------------------
    def _fetch_page(self) -> QWidget:
        page = QWidget()
        self.fetch_label = QLabel(page)
        self.fetch_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.fetch_label.setWordWrap(True)
        self.fetch_bar = QProgressBar(page)
        self.fetch_bar.setRange(0, 0)  # busy: a remote read reports no progress until it is done
        self.fetch_bar.setTextVisible(False)
        self.fetch_bar.setMaximumWidth(240)
        self.cancel_fetch = QPushButton("Cancel", page)
        self.cancel_fetch.setToolTip("Stop waiting for this payload (select the row again to retry)")
        self.cancel_fetch.clicked.connect(self.fetchCancelled)
        lay = QVBoxLayout(page)
        lay.addStretch(1)
        lay.addWidget(self.fetch_label)
        lay.addWidget(self.fetch_bar, 0, Qt.AlignmentFlag.AlignHCenter)
        lay.addWidget(self.cancel_fetch, 0, Qt.AlignmentFlag.AlignHCenter)
        lay.addStretch(1)
        return page

    def _set_content(self, widget: QWidget | None) -> None:
        if self._content is not None:
            self.stack.removeWidget(self._content)
            self._content.deleteLater()
        self._content = widget
        if widget is not None:
            self.stack.addWidget(widget)

    def _show_page(self, hex_on: bool) -> None:
        if self.payload is None:
            self.stack.setCurrentWidget(self.placeholder)
        elif hex_on or self._content is None:
            self.stack.setCurrentWidget(self.hex_view)
        else:
            self.stack.setCurrentWidget(self._content)

    def _set_actions_enabled(self, on: bool) -> None:
        self.hex_button.setEnabled(on)
        self.save_button.setEnabled(on)


def _problem(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if exc.__class__.__module__.startswith("itarcore") else f"{type(exc).__name__}: {text}"


def _error_colour(widget: QWidget) -> str:
    # a red that stays readable on the palette's window colour, light or dark
    dark = widget.palette().color(QPalette.ColorRole.Window).lightness() < 128
    return "#ff7b72" if dark else "#b3261e"
