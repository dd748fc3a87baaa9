"""Gallery (TARIDX): one thumbnail per sample of the row grid's current view, decoded on worker threads.

The items (each sample's representative row, in the grid's filter and sort order) are
computed in a worker (:mod:`app.models.gallery_items`); the grid paints only the cells
on screen and asks the loader for exactly those. Clicking a thumbnail selects its
sample's rows in the grid, which the samples panel and the preview follow.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xxhash
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSlider, QVBoxLayout, QWidget

from app.models.gallery_items import AUTO, gallery_rows, image_ext_ids, marked_items, member_rows
from app.views.errors import show_error
from app.views.formats.taridx.gallery_grid import GalleryGrid
from app.views.formats.taridx.thumbnail_loader import GalleryCell, ThumbnailLoader
from app.views.panels import FixedHintPanel
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.thumbnails import ThumbnailCache

EARLY_ROWS = 20_000  # views longer than this show the items of their first rows first
SIZES = (48, 64, 96, 128, 160, 200, 256)
LABEL_EXTS = ("cls", "cls2", "label", "class", "txt", "json")
ERROR_COLOR = QColor(220, 50, 47)


def _items_job(dataset: Any, view_rows: np.ndarray | None, ext: str, label_ext: str, flagged: np.ndarray,
               report: Any = None, progress: Any = None, cancel: Any = None) -> tuple[np.ndarray, ...]:
    rows, exts = dataset.rows, dataset.extensions
    n = len(rows) if view_rows is None else len(view_rows)
    if report is not None and n > EARLY_ROWS:
        # the samples first seen in the view's first rows are the first items of the full answer: a screen early
        head = np.arange(EARLY_ROWS, dtype=np.int64) if view_rows is None else view_rows[:EARLY_ROWS]
        early = gallery_rows(rows, exts, head, ext, cancel)
        report((early, np.full(len(early), -1, np.int64), marked_items(rows, early, flagged), True))
    items = gallery_rows(rows, exts, view_rows, ext, cancel)
    label_id = exts.index(label_ext) if label_ext in exts else -1
    return items, member_rows(rows, items, label_id, cancel), marked_items(rows, items, flagged), False


def _rows_of_sample_in_view(dataset: Any, row: int, view_rows: np.ndarray | None,
                            progress: Any = None, cancel: Any = None) -> np.ndarray:
    rows = np.asarray(dataset.rows_of_sample(row), dtype=np.int64)
    if view_rows is not None:
        rows = rows[np.isin(rows, view_rows)]  # members the filter hides stay hidden
    return rows if len(rows) else np.array([row], np.int64)


class GalleryPanel(FixedHintPanel):
    title = "Gallery"
    itemsReady = Signal()  # the items of the current view are known

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.dataset = document.source
        self.items = np.zeros(0, np.int64)
        self.label_rows = np.zeros(0, np.int64)
        self.marked = np.zeros(0, bool)
        self.view_rows: np.ndarray | None = None
        self.flagged = np.zeros(0, np.int64)
        self._started = False
        self._items_worker: JobWorker | None = None
        self._select_worker: JobWorker | None = None
        self._pending = False
        self._early_shown = False
        try:
            cache: ThumbnailCache | None = ThumbnailCache(self.dataset.index, self.dataset.cache_dir)
        except OSError:
            cache = None
        self.loader = ThumbnailLoader(self.dataset, cache, parent=self)
        self.loader.ready.connect(self._on_ready)

        exts = list(self.dataset.extensions)
        images = image_ext_ids(exts)
        self.ext_combo = QComboBox(toolTip="Which member of each sample the gallery shows")
        self.ext_combo.addItem("first image", AUTO)
        for i, e in sorted(enumerate(exts), key=lambda ie: (not images[ie[0]], ie[1])):
            self.ext_combo.addItem(e, e)
        self.label_combo = QComboBox(toolTip="A member shown as a label under each thumbnail")
        self.label_combo.addItem("no label", "")
        for e in [e for e in LABEL_EXTS if e in exts] + [e for e in exts if e not in LABEL_EXTS and not
                                                         images[exts.index(e)]]:
            self.label_combo.addItem(e, e)
        self.colour_combo = QComboBox(toolTip="Colour each thumbnail's frame")
        self.colour_combo.addItems(["no colour", "colour by label", "mark audit errors"])
        self.size_slider = QSlider(Qt.Orientation.Horizontal, toolTip="Thumbnail size (Ctrl+wheel, Ctrl +/−)")
        self.size_slider.setRange(0, len(SIZES) - 1)
        self.size_slider.setValue(SIZES.index(128))
        self.size_slider.setFixedWidth(110)
        self.count = QLabel(wordWrap=True)
        self.grid = GalleryGrid(self)
        self.grid.set_thumb_size(128)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        # two rows: one row of four combos and a slider is cut in a dock beside the grid on a laptop
        for row in ((QLabel("Show"), self.ext_combo, self.label_combo), (self.colour_combo, self.size_slider)):
            bar = QHBoxLayout()
            for w in row:
                bar.addWidget(w)
            bar.addStretch(1)
            layout.addLayout(bar)
        layout.addWidget(self.count)
        layout.addWidget(self.grid, 1)
        self.count.setText(f"Open this view to show one thumbnail per sample of {self.dataset.n_rows:,} rows.")

        self.ext_combo.currentIndexChanged.connect(lambda _i: self.recompute())
        self.label_combo.currentIndexChanged.connect(lambda _i: self.recompute())
        self.colour_combo.currentIndexChanged.connect(lambda _i: (self._show_count(), self.grid.viewport().update()))
        self.size_slider.valueChanged.connect(lambda i: self.grid.set_thumb_size(SIZES[i]))
        self.grid.zoomRequested.connect(lambda d: self.size_slider.setValue(self.size_slider.value() + d))
        self.grid.visibleChanged.connect(self._request_visible)
        self.grid.currentChanged.connect(self._on_current)
        self.grid.activated.connect(self._on_activated)

    # -- the grid's source ---------------------------------------------------------------------
    def n_items(self) -> int:
        return len(self.items)

    def key(self, item: int) -> tuple[int, int, int]:
        label = int(self.label_rows[item]) if item < len(self.label_rows) else -1
        return int(self.items[item]), self.grid.thumb, label

    def cell(self, item: int) -> GalleryCell | None:
        return self.loader.cell(self.key(item))

    def badge(self, item: int) -> QColor | None:
        mode = self.colour_combo.currentIndex()
        if mode == 2 and item < len(self.marked) and self.marked[item]:
            return ERROR_COLOR
        if mode == 1:
            cell = self.cell(item)
            if cell is not None and cell.label:
                hue = xxhash.xxh32(cell.label.encode()).intdigest() % 360
                return QColor.fromHsv(hue, 200, 230)
        return None

    # -- items ------------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        # a dock is shown for a moment while it is added and tabified: decide once events settle
        QTimer.singleShot(0, self, self._start_if_visible)

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        if not self._started:  # drawn: its tab is in front
            QTimer.singleShot(0, self, self._start_if_visible)

    def _start_if_visible(self) -> None:
        if not self._started and not self.visibleRegion().isEmpty():
            self._started = True
            self.recompute()

    def on_view_changed(self, table_name: str, view_rows: np.ndarray | None) -> None:
        if table_name != "rows":
            return
        self.view_rows = view_rows
        if self._started:
            self.recompute()

    def on_audit_report(self, report: Any) -> None:
        rows = [r for f in report.findings if f.severity == "error" for r in (f.rows or [])]
        self.flagged = np.asarray(rows, dtype=np.int64)
        if self._started:
            self.recompute()

    def recompute(self) -> None:
        """Find the items of the current view in a worker (a newer request waits for the running one)."""
        if self._items_worker is not None:
            self._pending = True
            self._items_worker.quit()
            return
        self._pending = False
        self._early_shown = False
        self.count.setText("Finding the samples of the current view…")
        worker = JobWorker(_items_job, self.dataset, self.view_rows, self.ext_combo.currentData(),
                           self.label_combo.currentData(), self.flagged)
        worker.kwargs["report"] = worker.report  # the early answer arrives as `yielded`
        worker.yielded.connect(self._on_items)
        worker.returned.connect(self._on_items)
        worker.errored.connect(lambda exc: show_error(self, "Gallery", self.document.path, exc))
        worker.finished.connect(self._on_items_finished)
        self._items_worker = worker
        worker.start(self.loader.pool)

    def _on_items_finished(self) -> None:
        self._items_worker = None
        if self._pending:
            self.recompute()

    def _on_items(self, result: tuple[np.ndarray, np.ndarray, np.ndarray, bool]) -> None:
        if self._pending:
            return  # a newer view is coming
        items, label_rows, marked, early = result
        old = int(self.items[self.grid.current]) if 0 <= self.grid.current < len(self.items) else -1
        continuing = self._early_shown and not early  # the full answer extends the early one: nothing moves
        self.items, self.label_rows, self.marked = items, label_rows, marked
        self._early_shown = early
        self._show_count()
        if not continuing:
            self.grid.current = -1
            self.grid.verticalScrollBar().setValue(0)
        self.grid.relayout()
        kept = np.flatnonzero(self.items == old) if old >= 0 and not continuing else []
        if len(kept):  # the same sample stays current (e.g. a label was added), and in sight
            self.grid.set_current(int(kept[0]), emit=False)
        if not early:
            self.itemsReady.emit()

    def _show_count(self) -> None:
        text = (f"{len(self.items):,} sample(s) in the current view · showing their "
                f"{self.ext_combo.currentText()} member")
        if self.colour_combo.currentIndex() == 2:
            text += f" · {int(self.marked.sum()):,} marked by audit errors" if len(self.flagged) else \
                " · run the full audit to mark samples with errors"
        self.count.setText(text)

    def _request_visible(self, first: int, stop: int) -> None:
        current = [self.grid.current] if first <= self.grid.current < stop else []
        self.loader.want([self.key(i) for i in current + list(range(first, stop))])

    def _on_ready(self, key: tuple[int, int, int]) -> None:
        first, stop = self.grid.visible_range()
        if first < stop and key[1] == self.grid.thumb:
            self.grid.viewport().update()

    # -- selection ----------------------------------------------------------------------------------
    def item_of_row(self, row: int) -> int:
        """The item whose sample holds ``row`` (-1 if none)."""
        if not len(self.items) or not 0 <= row < self.dataset.n_rows:
            return -1
        hits = np.flatnonzero(marked_items(self.dataset.rows, self.items, np.array([row])))
        return int(hits[0]) if len(hits) else -1

    def on_row_selected(self, table_name: str, row: int) -> None:
        if table_name == "rows" and row >= 0 and self._started and self.isVisible():
            item = self.item_of_row(row)
            if item >= 0:
                self.grid.set_current(item, emit=False)

    def _on_current(self, item: int) -> None:
        if self._select_worker is not None:
            self._select_worker.quit()
        worker = JobWorker(_rows_of_sample_in_view, self.dataset, int(self.items[item]), self.view_rows)
        worker.returned.connect(lambda rows: self.selectRows.emit("rows", rows))
        worker.finished.connect(lambda w=worker: setattr(self, "_select_worker", None)
                                if self._select_worker is w else None)
        self._select_worker = worker
        worker.start(self.loader.pool)

    def _on_activated(self, item: int) -> None:
        self._on_current(item)
        self.previewRequested.emit()

    def shutdown(self) -> None:
        for w in (self._items_worker, self._select_worker):
            if w is not None:
                w.detach()
        self.loader.shutdown()


PANELS = [GalleryPanel]
