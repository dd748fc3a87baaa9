"""The browser's side of remote files: opening URLs, fetching bytes off the GUI thread, the LRU cache.

A URL's document is opened in a worker; a remote TARIDX keeps its bytes remote (other
formats are fetched whole into a local copy by ``open_document``). Payloads of a remote document are read by workers on a private thread pool (the hex pane
reads its pages in its own worker) (a slow or dead server holds a pool thread, never the GUI thread); while a payload is
on its way the preview shows what is being fetched and a Cancel button. Fetched payloads
go through one byte-bounded LRU cache, so flipping back to a row is instant.
Storage options (credentials) are kept in memory for the session, never in settings.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QObject, QThreadPool

from app.byte_cache import ByteCache
from app.views.errors import describe_error
from app.views.formats.taridx.wizard_source import human_bytes
from app.views.settings import cache_megabytes
from app.workers import JobWorker
from itarcore.document import Document, Payload, Table, open_document
from itarcore.errors import ItarError
from itarcore.progress import Progress
from itarcore.storage import RangedSource, display_name, is_url

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

FETCH_THREADS = 4  # fetches in flight at once; one stuck on a dead server leaves the others free


class PayloadUnavailable(ItarError):
    """The row's payload cannot be fetched (its shard is missing)."""


def open_for_browsing(path: str, storage_options: dict | None = None) -> Document:
    """Open a file or URL as a Document (a worker's job); URLs take fsspec ``storage_options``."""
    return open_document(path, storage_options=storage_options) if is_url(path) else open_document(path)


def remote_source(doc: Document) -> RangedSource | None:
    """The document's bytes when they are remote (a TARIDX URL); None for local files and local copies."""
    source = doc.byte_source
    return source if source is not None and source.is_remote else None


def dropped_target(mime: Any) -> str | None:
    """What a drop should open: a local file, a remote link (s3://, https:// …), or a URL dropped as text."""
    for url in mime.urls() if mime.hasUrls() else []:
        if url.isLocalFile():
            return url.toLocalFile()
        if is_url(url.toString()):
            return url.toString()
    text = mime.text().strip() if mime.hasText() else ""
    first = text.splitlines()[0].strip() if text else ""
    return first if first and is_url(first) else None


def fetch_payload(table: Table, row: int, progress: Callable[[Progress], None] | None = None,
                  cancel: Any = None, verb: str = "fetching") -> Payload:
    """A row's payload, saying first how many bytes are coming (a worker's job)."""
    size = row_size(table, row)
    if progress is not None:
        what = f"{verb} {human_bytes(size)}…" if size is not None else f"{verb}…"
        progress(Progress(0, size or 0, "bytes", message=what))
    if table.payload_available is not None and not table.payload_available(row):
        raise PayloadUnavailable("the shard holding this row's payload is missing (see the warning above)")
    return table.payload(row)  # type: ignore[misc]


def row_size(table: Table, row: int) -> int | None:
    """The payload size the table's "Size" column gives for ``row`` (None when it has none)."""
    for column in table.columns:
        if column.kind == "size" and column.title == "Size":
            return int(column.get(np.array([row], dtype=np.int64))[0])
    return None


class RemoteSession(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self.cache = ByteCache(cache_megabytes(window.settings) << 20)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(FETCH_THREADS)
        self.source: RangedSource | None = None
        self._options: dict[str, dict] = {}  # display name -> storage options, this session only
        self._generation = 0  # of the preview fetch on screen
        self._preview_worker: JobWorker | None = None
        self._preview_name = ""
        self._openings = 0  # documents attached so far
        window.preview.fetchCancelled.connect(self.cancel_preview)

    # -- opening ---------------------------------------------------------------------------
    def remember(self, url: str, storage_options: dict | None) -> None:
        if storage_options is not None:
            self._options[display_name(url)] = dict(storage_options)

    def options_for(self, url: str) -> dict | None:
        return self._options.get(display_name(url)) if is_url(url) else None

    @property
    def active(self) -> bool:
        return self.source is not None

    def attach(self, doc: Document) -> bool:
        """A newly opened document; True when its bytes are remote (its views then read them in workers)."""
        self.source = remote_source(doc)
        self._openings += 1
        self.cache.set_limit(cache_megabytes(self.w.settings) << 20)
        return self.source is not None

    def detach(self) -> None:
        self.cancel_preview(quiet=True)
        self.source = None

    # -- preview ---------------------------------------------------------------------------
    def feed_preview(self, table: Table, row: int, name: str) -> None:
        """Preview ``row``: from the cache at once, else fetched by a worker while the preview says so.

        A local file's payload whose pages are not in RAM comes this way too (read from disk by the
        worker, with the same Cancel), so the GUI thread never waits for the disk."""
        self.cancel_preview(quiet=True)
        # a local file's payloads are kept for this opening only: its shards may change before the next
        key = ("payload", self.source.identity if self.source else ("opened", self._openings), table.name, row)
        cached = self.cache.get(key)
        if cached is not None:
            self.w.preview.show_payload(cached)
            return
        generation, self._preview_name = self._generation, name
        verb = "fetching" if self.source is not None else "reading from disk:"
        self.w.preview.show_fetching(name, f"{verb.rstrip(':')}…")  # "reading from disk…" until the size is known
        worker = JobWorker(fetch_payload, table, row, verb=verb)
        worker.progressed.connect(lambda p, g=generation: self._fetch_said(g, p))
        worker.returned.connect(lambda payload, g=generation, k=key: self._fetched(g, k, payload))
        worker.errored.connect(lambda exc, g=generation: self._fetch_failed(g, exc))
        self._preview_worker = worker
        worker.start(self.pool)

    def cancel_preview(self, quiet: bool = False) -> None:
        """Stop waiting for the payload on screen; its read ends on its own and is dropped."""
        self._generation += 1
        worker, self._preview_worker = self._preview_worker, None
        if worker is None:
            return
        worker.quit()
        if not quiet:
            self.w.preview.show_unavailable(self._preview_name,
                                            "Fetch cancelled. Select the row again to fetch it.")
            self.w.previewSettled.emit()

    def _fetch_said(self, generation: int, p: Progress) -> None:
        if generation == self._generation and p.message:
            self.w.preview.set_fetch_text(p.message)

    def _fetched(self, generation: int, key: tuple, payload: Payload) -> None:
        self.cache.put(key, payload, len(payload.data))  # kept even if the selection moved on
        if generation != self._generation:
            return
        self._preview_worker = None
        self.w.preview.show_payload(payload)

    def _fetch_failed(self, generation: int, exc: BaseException) -> None:
        if generation != self._generation:
            return
        self._preview_worker = None
        self.w.preview.show_unavailable(self._preview_name,
                                        f"Could not fetch the payload: {describe_error(self.w.path, exc)}")
        self.w.previewSettled.emit()

    @property
    def fetching(self) -> bool:
        return self._preview_worker is not None
