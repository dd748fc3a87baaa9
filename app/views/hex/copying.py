"""Putting the hex view's selection on the clipboard: as hex, as text, or its offset.

A slow source's bytes are read in a worker, so a copy never holds the GUI thread on a round trip.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QGuiApplication

from app.views.hex.model import COPY_LIMIT, selection_as_hex, selection_as_text
from app.workers import JobWorker
from itarcore.errors import ItarError

if TYPE_CHECKING:
    from app.views.hex.widget import HexWidget


class SelectionCopier(QObject):
    def __init__(self, view: HexWidget) -> None:
        super().__init__(view)
        self.view = view
        self.worker: JobWorker | None = None

    def copy_as(self, kind: str) -> None:
        view = self.view
        start, end = view.selection()
        if view.cache is None or end <= start:
            return
        if kind == "offset":
            self._put(f"0x{start:x}", f"Copied offset 0x{start:x}")
            return
        if end - start > COPY_LIMIT:
            view.message.emit(f"Not copied: {end - start:,} bytes selected; a copy holds at most 1 MiB")
            return
        read_cached = getattr(view.cache.source, "read_cached", None)
        if view.loader is None or read_cached is not None:
            try:  # a local file's bytes in RAM are copied at once; only a disk or network read goes to a worker
                data = view.cache.source.read(start, end - start) if view.loader is None else \
                    read_cached(start, end - start)
            except (OSError, ItarError) as exc:
                self._failed(start, exc)
                return
            if data is not None:
                self._deliver(kind, start, data)
                return
        self.shutdown()
        view.message.emit(f"Reading {end - start:,} byte(s) to copy…")
        worker = JobWorker(view.cache.source.read, start, end - start, pass_progress=False)
        worker.returned.connect(lambda data, k=kind, s=start: self._deliver(k, s, data))
        worker.errored.connect(lambda exc, s=start: self._failed(s, exc))
        worker.finished.connect(lambda w=worker: self._finished(w))
        self.worker = worker
        worker.start()

    def _deliver(self, kind: str, start: int, data: bytes) -> None:
        text = selection_as_hex(data) if kind == "hex" else selection_as_text(data)
        self._put(text, f"Copied {len(data):,} byte(s) as {kind}")

    def _put(self, text: str, note: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.view.message.emit(note)

    def _failed(self, start: int, exc: BaseException) -> None:
        self.view.message.emit(f"Not copied: could not read bytes at 0x{start:x}: {exc}")

    def _finished(self, worker: JobWorker) -> None:
        if self.worker is worker:
            self.worker = None

    def shutdown(self) -> None:
        """Drop a copy in flight (a new copy or a new file replaces it)."""
        if self.worker is not None:
            self.worker.detach()
            self.worker = None
