"""Thumbnails for the gallery: decoded on worker threads, only for the rows on screen, kept in memory (LRU).

The gallery says which rows it shows (``want``); the newest request replaces the
older ones, so scrolling fast through a million samples decodes only what stops on
screen. Each worker drains the shared queue as a generator (``JobWorker`` emits one
``yielded`` per thumbnail and checks cancel between them). Images become ``QImage``
on the worker thread (QImage, unlike QPixmap, may be made off the GUI thread).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal
from PySide6.QtGui import QImage

from app.workers import JobWorker
from itarcore.content.names import stem_names
from itarcore.decoders import DecodeError, decode
from itarcore.errors import ItarError
from itarcore.thumbnails import Thumbnail, ThumbnailCache, row_thumbnail

MEMORY_ITEMS = 3000
NAME_BATCH = 8  # cells a worker takes at once: their stems are read together
SKIP_SCAN_ROWS = 4_000_000  # cells kept in memory: a few screens at the smallest size
LABEL_CHARS = 40


@dataclass(frozen=True)
class GalleryCell:
    """What one gallery cell shows."""

    image: QImage | None  # None: a placeholder of ``kind``
    kind: str
    summary: str
    stem: str
    label: str


def to_qimage(thumb: Thumbnail) -> QImage | None:
    img = thumb.image
    if img is None:
        return None
    fmt = QImage.Format.Format_RGBA8888 if img.mode == "RGBA" else QImage.Format.Format_RGB888
    data = img.tobytes()
    return QImage(data, img.width, img.height, img.width * len(img.mode), fmt).copy()  # own its pixels


def label_text(dataset: Any, row: int) -> str:
    if row < 0:
        return ""
    try:
        value = decode(dataset.read_payload(row), dataset.ext_of(row)).value
    except (ItarError, OSError, DecodeError):
        return "?"
    text = " ".join(str(value).split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


class ThumbnailLoader(QObject):
    """``want(keys)`` -> ``ready(key)`` once ``cell(key)`` has an answer. A key is (row, size, label_row)."""

    ready = Signal(object)

    def __init__(self, dataset: Any, cache: ThumbnailCache | None, threads: int = 2,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.dataset, self.cache = dataset, cache
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._threads = threads
        self._lock = threading.Lock()
        # wanted and not yet decoded, next last; with the cell of the same picture under another label, if known
        self._queue: list[tuple[tuple[int, int, int], GalleryCell | None]] = []
        self._pictures: dict[tuple[int, int], GalleryCell] = {}  # (row, size) -> a cell: a new label reuses it
        self._in_flight: set[tuple[int, int, int]] = set()  # being decoded: never queued twice
        self._cells: OrderedDict[tuple[int, int, int], GalleryCell] = OrderedDict()
        self._workers: list[JobWorker] = []
        self._closed = False

    def cell(self, key: tuple[int, int, int]) -> GalleryCell | None:
        cell = self._cells.get(key)
        if cell is not None:
            self._cells.move_to_end(key)
        return cell

    def want(self, keys: list[tuple[int, int, int]]) -> None:
        """Decode these (the cells on screen, most important first); earlier requests are dropped."""
        with self._lock:
            todo = [(k, self._pictures.get(k[:2])) for k in keys if k not in self._cells and k not in self._in_flight]
            self._queue = todo[::-1]
        while todo and len(self._workers) < self._threads and not self._closed:
            worker = JobWorker(self._drain)
            worker.yielded.connect(self._on_cell)
            worker.finished.connect(lambda w=worker: self._on_finished(w))
            self._workers.append(worker)
            worker.start(self.pool)
            todo = todo[1:]

    def _drain(self, progress: Any = None, cancel: Any = None):  # worker thread
        while True:
            with self._lock:
                if not self._queue:
                    return
                batch = [self._queue.pop() for _ in range(min(NAME_BATCH, len(self._queue)))]
                self._in_flight.update(key for key, _ in batch)
            stems = self._stems([key[0] for key, known in batch if known is None])
            for key, known in batch:
                try:
                    yield key, self._make_cell(*key, known, stems)
                except Exception as exc:  # noqa: BLE001 - one bad payload shows as damaged, the rest load
                    yield key, GalleryCell(None, "error", f"{type(exc).__name__}: {exc}", "", "")

    def _stems(self, rows: list[int]) -> dict[int, str]:
        """Stems of a batch at once. Up to ``SKIP_SCAN_ROWS`` rows, long names are looked for only where they can
        exist (a pass over the shard's rows instead of a scan of the shard); beyond, the scan costs less."""
        try:
            if self.dataset.n_rows <= SKIP_SCAN_ROWS:
                return dict(zip(rows, stem_names(self.dataset, rows)))
            return dict(zip(rows, self.dataset.stem_names(rows)))
        except (ItarError, OSError):
            return {}

    def _make_cell(self, row: int, size: int, label_row: int, known: GalleryCell | None,
                   stems: dict[int, str]) -> GalleryCell:
        """The cell of ``row`` (worker thread): its picture decoded, or ``known``'s picture with this label."""
        if known is not None:
            return GalleryCell(known.image, known.kind, known.summary, known.stem, label_text(self.dataset, label_row))
        thumb = row_thumbnail(self.dataset, row, size, self.cache)
        return GalleryCell(to_qimage(thumb), thumb.kind, thumb.summary, stems.get(row, ""),
                           label_text(self.dataset, label_row))

    def _on_cell(self, item: tuple[tuple[int, int, int], GalleryCell]) -> None:
        key, cell = item
        with self._lock:
            self._in_flight.discard(key)
        self._cells[key] = cell
        self._pictures[key[:2]] = cell
        while len(self._cells) > MEMORY_ITEMS:
            old, _ = self._cells.popitem(last=False)
            self._pictures.pop(old[:2], None)
        self.ready.emit(key)

    def _on_finished(self, worker: JobWorker) -> None:
        if worker in self._workers:
            self._workers.remove(worker)
        with self._lock:
            more = bool(self._queue)
        if more and not self._closed:  # a request came in as this worker left
            with self._lock:
                keys = [k for k, _ in self._queue[::-1]]
            self.want(keys)

    @property
    def busy(self) -> bool:
        return bool(self._workers)

    def forget(self) -> None:
        """Drop what is in memory (e.g. the label choice changed)."""
        self._cells.clear()
        self._pictures.clear()

    def shutdown(self) -> None:
        self._closed = True
        with self._lock:
            self._queue = []
        for w in self._workers:
            w.detach()
        self.pool.waitForDone()
