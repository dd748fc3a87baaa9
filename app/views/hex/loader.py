"""Fetching a slow source's pages off the GUI thread (a remote file: each read is a round trip).

The view asks for the pages it lacks and paints what it holds; when a fetch lands it repaints.
One fetch runs at a time; pages asked for meanwhile go in the next one.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.views.hex.model import PageCache, read_pages
from app.workers import JobWorker
from itarcore.errors import ItarError


class PageLoader(QObject):
    loaded = Signal()  # pages arrived in the cache
    failed = Signal(str)  # why a fetch did not arrive

    def __init__(self, cache: PageCache, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cache = cache
        self.worker: JobWorker | None = None
        self.failed_pages: set[int] = set()  # not asked again: each ask would fail the same way
        self._wanted: list[int] = []
        self._inflight: list[int] = []

    @property
    def busy(self) -> bool:
        return self.worker is not None

    def request(self, pages: list[int]) -> None:
        fresh = [p for p in pages if p not in self.failed_pages and p not in self._inflight]
        self._wanted = fresh + [p for p in self._wanted if p not in fresh]
        if self.worker is None and self._wanted:
            self._start()

    def _start(self) -> None:
        pages, self._wanted = self._wanted[:64], []  # the newest asks first; older ones are asked again if needed
        self._inflight = pages
        worker = JobWorker(read_pages, self.cache.source, pages, pass_progress=False)
        worker.returned.connect(self._on_pages)
        worker.errored.connect(self._on_error)
        worker.finished.connect(lambda w=worker: self._on_finished(w))
        self.worker = worker
        worker.start()

    def _on_pages(self, pages: dict[int, bytes]) -> None:
        self.cache.store(pages)
        self.loaded.emit()

    def _on_error(self, exc: BaseException) -> None:
        self.failed_pages.update(self._inflight)
        if isinstance(exc, (OSError, ItarError)):
            self.failed.emit(str(exc))
        else:
            self.failed.emit(f"{type(exc).__name__}: {exc}")

    def _on_finished(self, worker: JobWorker) -> None:
        if self.worker is worker:
            self.worker, self._inflight = None, []
            if self._wanted:
                self._start()

    def shutdown(self) -> None:
        """Stop asking; a fetch in flight finishes on its own but is not delivered."""
        self._wanted = []
        if self.worker is not None:
            self.worker.detach()
            self.worker = None
