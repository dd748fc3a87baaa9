"""Samples by stem: one entry per sample, a stem search, and every member side by side.

A sample is a group of rows with equal (keyhash, crashid); ``Dataset.compute_samples``
finds them in a worker. The list is virtual and windowed (a Qt view breaks past
~2³¹ pixels of rows), and stem names are read from tar headers for visible entries
only. Searching a stem goes through xxh64 plus the crash table (``lookup_stem``),
so it finds any stem exactly; a prefix is matched among names already read.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QPushButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.views.formats.taridx.sample_list import WINDOW, SampleListModel
from app.views.panels import FormatPanel
from app.views.preview_widgets.cards import SampleCards
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.errors import ItarError

# Up to this many rows a lookup without the key index scans on the GUI thread (8 MB of keys: a few ms);
# beyond, in a worker.
SYNC_SCAN_ROWS = 1_000_000


class SamplesPanel(FormatPanel):
    title = "Samples"
    samplesReady = Signal()  # samples are grouped and listed
    sampleShown = Signal(int)  # the cards of this sample are on screen
    sampleFound = Signal(int)  # a remote fold's stem search answered: the sample gone to, -1 if none

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.dataset = document.source
        self.groups: Any = None
        self.model: SampleListModel | None = None
        self.current = -1
        self._worker: JobWorker | None = None

        self.search = QLineEdit(placeholderText="Find a stem: exact (any stem), or a prefix of names already listed")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self.find)
        self.prev_button = QToolButton(text="◀ Previous", toolTip="Previous sample (Alt+Left or P)")
        self.next_button = QToolButton(text="Next ▶", toolTip="Next sample (Alt+Right or N)")
        self.prev_button.clicked.connect(self.previous_sample)
        self.next_button.clicked.connect(self.next_sample)
        self.position = QLabel()
        n_rows = int(self.dataset.n_rows)
        self.message = QLabel(f"Open this panel to group {n_rows:,} rows into samples.")
        self.message.setWordWrap(True)
        # grouping is a pass over every row: started when the panel is first shown, or again from here
        self.start_button = QPushButton("Start", toolTip=f"Group {n_rows:,} rows into samples now")
        self.start_button.clicked.connect(self._start_grouping)
        self.cancel_button = QPushButton("Cancel", toolTip="Stop grouping (Start resumes from the beginning)")
        self.cancel_button.clicked.connect(self.cancel_grouping)
        self.cancel_button.hide()
        note = QHBoxLayout()
        note.addWidget(self.message, 1)
        note.addWidget(self.start_button)
        note.addWidget(self.cancel_button)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.prev_button)
        top.addWidget(self.next_button)
        top.addWidget(self.position)

        self.list = QListView()
        self.list.setUniformItemSizes(True)  # only visible entries are asked for, at one fixed height
        self.list.setMinimumWidth(140)
        self.list.setMaximumWidth(260)  # the member cards, not the list, need the dock's width
        self.cards = SampleCards()
        self.cards.rowClicked.connect(lambda row: self.selectRows.emit("rows", np.array([row], dtype=np.int64)))
        self.cards.cardsReady.connect(self._on_cards_ready)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.list)
        split.addWidget(self.cards)
        split.setStretchFactor(1, 1)
        split.setSizes([170, 700])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(note)
        layout.addWidget(split, 1)

        # next/previous work wherever focus is in the window: stepping selects the sample's rows in the
        # grid, which takes focus, and the next N must still step (a line edit keeps its typed letters)
        self._step_shortcuts = []
        for keys, slot in (("Alt+Right", self.next_sample), ("N", self.next_sample),
                           ("Alt+Left", self.previous_sample), ("P", self.previous_sample)):
            shortcut = QShortcut(QKeySequence(keys), self, slot)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            self._step_shortcuts.append(shortcut)
        find = QShortcut(QKeySequence("Ctrl+F"), self, self.search.setFocus)
        find.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._set_navigation_enabled(False)
        self._closed = False
        self._asked = ""  # the latest query sent to a worker: an older answer arriving later is dropped
        self._opened = False  # the user has looked at this panel (grouping started once)

    # -- grouping --------------------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        # a dock is shown for a moment while it is added and tabified: decide once events settle
        QTimer.singleShot(0, self, self._start_if_visible)  # dropped if deleted

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if not self._opened and not self._closed:  # drawn: its tab is in front
            QTimer.singleShot(0, self, self._start_if_visible)  # dropped if deleted

    def _start_if_visible(self) -> None:
        # grouping passes over every row: only when the user first looks at this tab, never at open
        # (once: after a cancel, Start is the user's to press)
        if not self.visibleRegion().isEmpty() and not self._opened and not self._closed:
            self._opened = True
            self._start_grouping()

    def _start_grouping(self) -> None:
        if self._worker is not None or self.groups is not None or self._closed:
            return
        self.message.setText(f"Grouping {int(self.dataset.n_rows):,} rows into samples…")
        worker = JobWorker(_group_and_check_shards, self.dataset)
        worker.progressed.connect(self._on_progress)  # bound slots: dropped by Qt if this panel is deleted
        worker.returned.connect(self._on_groups)
        worker.errored.connect(self._on_error)
        worker.cancelled.connect(self._on_cancelled)
        worker.finished.connect(self._on_worker_finished)
        self._worker = worker.start()
        self._show_running(True)

    def cancel_grouping(self) -> None:
        if self._worker is not None:
            self._worker.quit()

    def _show_running(self, running: bool) -> None:
        self.start_button.setVisible(not running and self.groups is None)
        self.cancel_button.setVisible(running)

    def _on_progress(self, p: Any) -> None:
        building = getattr(self.dataset, "key_index_state", "none") == "building"
        what = "Building the key index" if building else "Grouping rows into samples"
        self.message.setText(f"{what}… {p.fraction:.0%}")
        self.statusNote.emit("Stem lookups use a scan while the key index builds" if building else "")

    def _on_error(self, exc: BaseException) -> None:
        self.message.setText(f"Could not group rows into samples: {exc}")

    def _on_cancelled(self) -> None:
        self.message.setText(f"Grouping cancelled. Start groups {int(self.dataset.n_rows):,} rows into samples.")

    def _on_worker_finished(self) -> None:
        self._worker = None
        self.statusNote.emit("")
        self._show_running(False)

    def _on_groups(self, result: tuple[Any, list[str]]) -> None:
        if self._closed:
            return
        groups, missing = result
        self.groups = groups
        self.model = SampleListModel(self.dataset, groups, self)
        self.list.setModel(self.model)
        self.list.selectionModel().currentChanged.connect(self._on_list_current)
        n_rows = int(self.dataset.n_rows)
        text = f"{groups.n_samples:,} samples over {n_rows:,} rows."
        if groups.n_samples > WINDOW:
            text += f" The list shows {WINDOW:,} at a time around the current sample."
        if missing:
            text += f" {len(missing)} shard(s) missing: their members cannot be shown."
        self.message.setText(text)
        self._set_navigation_enabled(groups.n_samples > 0)
        self.samplesReady.emit()
        if groups.n_samples:
            self.go_to_sample(0)

    def shutdown(self) -> None:
        """Cancel without waiting: closing a document never waits for a grouping pass."""
        self._closed = True
        self._set_navigation_enabled(False)
        if self.model is not None:
            self.model.stop()
        if self._worker is not None:
            self._worker.detach()  # never emits into this closing panel
            self._worker = None
        self.cards.shutdown()

    # -- navigation ----------------------------------------------------------------------
    def go_to_sample(self, sample: int, emit_rows: bool = True) -> None:
        if self.model is None or not (0 <= sample < self.model.n_samples):
            return
        if sample != self.current:
            self.current = sample
            self._show_cards(sample)
            if emit_rows:
                self.selectRows.emit("rows", np.asarray(self.groups.rows_of(sample), dtype=np.int64))
        row = self.model.ensure_visible(sample)
        index = self.model.index(row, 0)
        if self.list.currentIndex() != index:
            self.list.setCurrentIndex(index)
        self.list.scrollTo(index)
        self.position.setText(f"{sample + 1:,} / {self.model.n_samples:,}")

    def next_sample(self) -> None:
        if self.model is not None:
            self.go_to_sample(min(self.current + 1, self.model.n_samples - 1))

    def previous_sample(self) -> None:
        if self.model is not None:
            self.go_to_sample(max(self.current - 1, 0))

    def on_row_selected(self, table_name: str, row: int) -> None:
        if table_name != "rows" or self.groups is None or row < 0:
            return
        sample = int(self.groups.sample_of_row(row))
        if sample != self.current:
            self.go_to_sample(sample, emit_rows=False)  # the grid already shows this row

    def _on_list_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and self.model is not None:
            self.go_to_sample(self.model.base + current.row())

    # -- search ----------------------------------------------------------------------------
    def find(self, text: str | None = None) -> int:
        """Go to the sample of stem ``text`` (exact), else the next listed name with that prefix; -1 if none.

        A lookup that may take long (a remote fold's, or a scan of a large fold's keys while it
        has no key index: seconds at 1B rows) runs in a worker: this returns -1 at once and
        ``sampleFound`` follows with the answer. Through the key index it answers at once.
        """
        query = self.search.text() if text is None else text
        if not query or self.model is None:
            return -1
        self._asked = query
        scans_long = self.dataset.key_index is None and self.dataset.n_rows > SYNC_SCAN_ROWS
        if self.model.background or scans_long:
            worker = JobWorker(_lookup, self.dataset, query, pass_progress=False)
            worker.returned.connect(self._lookup_answered)  # a bound slot: dropped if this panel is deleted
            worker.start()
            self.statusMessage.emit(f"Looking up “{query}”…")
            return -1
        return self._go_to_found(*_lookup(self.dataset, query))

    def _lookup_answered(self, answer: tuple[str, np.ndarray | Exception]) -> None:
        if self.model is not None and not self._closed and answer[0] == self._asked:
            self.sampleFound.emit(self._go_to_found(*answer))

    def _go_to_found(self, query: str, rows: np.ndarray | Exception) -> int:
        if isinstance(rows, Exception):
            self.statusMessage.emit(f"Stem search failed: {rows}")
            rows = np.empty(0, np.int64)
        if len(rows):
            sample = int(self.groups.sample_of_row(int(rows[0])))
            self.go_to_sample(sample)
            self.statusMessage.emit(f"Stem “{query}”: sample {sample:,}, {len(rows)} member(s)")
            return sample
        sample = self._find_prefix(query)
        if sample >= 0:
            self.go_to_sample(sample)
            self.statusMessage.emit(f"“{query}…”: sample {sample:,} ({self.model.stem(sample)})")
        else:
            self.statusMessage.emit(f"No stem “{query}”, and no listed name starts with it")
        return sample

    def _find_prefix(self, prefix: str) -> int:
        names = self.model.names if self.model is not None else {}
        hits = sorted(s for s, name in names.items() if name.startswith(prefix))
        if not hits:
            return -1
        after = [s for s in hits if s > self.current]
        return after[0] if after else hits[0]  # repeated Enter walks through the matches

    # -- cards -----------------------------------------------------------------------------
    def _show_cards(self, sample: int) -> None:
        rows = np.asarray(self.groups.rows_of(sample), dtype=np.int64)
        # a remote fold, or local pages not in RAM: names, sizes and bytes all come from the worker
        if self.model is not None and (self.model.background or not self.dataset.rows_in_ram(rows)):
            stem = self.model.names.get(sample, f"sample {sample:,}")
            header = f"<b>{_escape(stem)}</b> · sample {sample:,} · {len(rows)} member(s) · rows {_row_span(rows)}"
            self.cards.show_sample(header, rows, [], [], [], self.dataset.read_payload, describe=self._describe,
                                   read_many=self.dataset.read_payloads)
            return
        if self.model is not None:
            self.model.resolve([sample])  # its first row is among ``rows``: in RAM (its neighbours may not be)
        stem = self.model.names.get(sample, "?") if self.model is not None else ""
        header = (f"<b>{_escape(stem)}</b> · sample {sample:,} · {len(rows)} member(s) · "
                  f"rows {_row_span(rows)}")
        try:
            names = list(self.dataset.member_names(rows))
        except (ItarError, OSError):
            names = [f"row {int(r):,}" for r in rows]
        exts = [self.dataset.ext_of(int(r)) for r in rows]
        sizes = [int(s) for s in self.dataset.index.rows["size"][rows]]
        self.cards.show_sample(header, rows, names, exts, sizes, self.dataset.read_payload)

    def _on_cards_ready(self) -> None:
        # cards read by a worker before the stem was known: the first member's name gives it (as split_name)
        unnamed = f"<b>sample {self.current:,}</b>"
        header, members = self.cards.header.text(), self.cards.members
        if header.startswith(unnamed) and members and members[0].name:
            stem = members[0].name.rsplit("/", 1)[-1].partition(".")[0]
            self.cards.header.setText(f"<b>{_escape(stem)}</b>" + header[len(unnamed):])
        self.sampleShown.emit(self.current)

    def _describe(self, rows: np.ndarray) -> tuple[list[str], list[str], list[int]]:
        """Names, extensions and sizes of a sample's rows (a worker's job for a remote or cold fold)."""
        try:
            names = list(self.dataset.member_names(rows))
        except (ItarError, OSError):
            names = [f"row {int(r):,}" for r in rows]
        exts = [self.dataset.ext_of(int(r)) for r in rows]
        return names, exts, [int(s) for s in self.dataset.index.rows["size"][rows]]

    def _set_navigation_enabled(self, on: bool) -> None:
        for w in (self.search, self.prev_button, self.next_button, *self._step_shortcuts):
            w.setEnabled(on)


def _group_and_check_shards(dataset: Any, progress: Any = None, cancel: Any = None) -> tuple[Any, list[str]]:
    """The worker's job: samples, then the missing shards they refer to (both passes over every row)."""
    groups = dataset.compute_samples(progress=progress, cancel=cancel)
    dataset.referenced_fids(cancel=cancel)  # chunked here, so the GUI thread's question below is free
    return groups, list(dataset.missing_shards)


def _lookup(dataset: Any, query: str) -> tuple[str, np.ndarray | Exception]:
    try:
        return query, np.asarray(dataset.lookup_stem(query))
    except (ItarError, OSError) as exc:
        return query, exc


def _row_span(rows: np.ndarray) -> str:
    if len(rows) and int(rows[-1]) - int(rows[0]) == len(rows) - 1:
        return f"{int(rows[0]):,}–{int(rows[-1]):,}"
    return ", ".join(f"{int(r):,}" for r in rows[:6]) + (" …" if len(rows) > 6 else "")


def _escape(text: str) -> str:
    import html

    return html.escape(text)


PANELS = [SamplesPanel]
