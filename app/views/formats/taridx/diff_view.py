"""File → Compare with…: the open TARIDX index against another, sample by sample, in a docked view.

The diff runs in a worker (progress, cancel). The view shows the totals, a table per
shard and the differing samples; clicking a sample selects its rows in the open
index's grid when it is there (a removed sample is only in the other index).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QModelIndex, Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.models.diff_models import DiffSamplesModel, ShardCountsModel
from app.views.errors import show_error
from app.views.job_panel import JobPanel
from app.workers import JobWorker
from itarcore.diff import KIND_NAMES, IndexDiff, MemberSizes, diff_indexes, kept_rows, member_sizes
from itarcore.document import Document
from itarcore.formats.taridx import read_taridx
from itarcore.storage import absolute, is_url

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

KEEP_PER_KIND = 20_000  # samples listed per kind; the counts are always complete
ROW_HEIGHT = 22


def _table(model) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)  # fixed: never size rows to contents
    view.horizontalHeader().setStretchLastSection(True)
    return view


class DiffView(JobPanel):
    """The open index (``document``) compared with ``other``; the open one is the new side unless swapped."""

    title = "Compare"
    job_title = "Compare indexes"
    failed_text = "The comparison could not run: see the message."

    def __init__(self, document: Document, other: str, parent: QWidget | None = None,
                 storage_options: dict | None = None) -> None:
        super().__init__(document, parent)
        self.open_path = absolute(document.path)
        self.other_path = absolute(other)
        self.storage_options = storage_options  # the open URL's fsspec options (this session's only)
        self.open_is_new = True
        self.diff: IndexDiff | None = None
        self._pending_sample: int | None = None

        self.sides = QLabel()
        self.sides.setWordWrap(True)
        self.sides.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.swap_button = QPushButton("Swap old and new")
        self.swap_button.clicked.connect(self.swap)
        top = QHBoxLayout()
        top.addWidget(self.sides, 1)
        top.addWidget(self.swap_button)
        bar = self.job_bar()
        self.summary.setObjectName("diffSummary")
        self.warnings = QLabel()
        self.warnings.setWordWrap(True)
        self.warnings.setVisible(False)

        self.shard_model = ShardCountsModel()
        self.shards = _table(self.shard_model)
        number_width = self.fontMetrics().horizontalAdvance("Moved out") + 16
        self.shards.horizontalHeader().setDefaultSectionSize(number_width)
        self.sample_model = DiffSamplesModel()
        self.samples = _table(self.sample_model)
        self.samples.setColumnWidth(0, self.fontMetrics().horizontalAdvance("removed") + 16)
        self.samples.clicked.connect(self._on_sample_clicked)
        self.samples.activated.connect(self._on_sample_clicked)
        self.kind = QComboBox()
        self.kind.addItem("All kinds", 0)
        for kind, name in KIND_NAMES.items():
            self.kind.addItem(name.capitalize(), kind)
        self.kind.currentIndexChanged.connect(self._filter_kind)
        self.listed = QLabel()
        self.listed.setWordWrap(True)  # a long text wraps; it never widens the window
        kind_row = QHBoxLayout()
        kind_row.addWidget(QLabel("Samples:"))
        kind_row.addWidget(self.kind)
        kind_row.addWidget(self.listed, 1)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))  # size columns align
        self.detail.setPlaceholderText("Click a sample to see its members, old size beside new; its rows are "
                                       "selected in the grid when the open index has it.")
        lower = QWidget()
        lower_lay = QVBoxLayout(lower)
        lower_lay.setContentsMargins(0, 0, 0, 0)
        lower_lay.addLayout(kind_row)
        lower_lay.addWidget(self.samples, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.shards)
        split.addWidget(lower)
        split.addWidget(self.detail)
        split.setSizes([130, 330, 150])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.warnings)
        layout.addWidget(split, 1)
        self._show_sides()
        self._set_running(False)

    # -- running --------------------------------------------------------------------------------------
    @property
    def old_path(self) -> str:
        return self.other_path if self.open_is_new else self.open_path

    @property
    def new_path(self) -> str:
        return self.open_path if self.open_is_new else self.other_path

    def _show_sides(self) -> None:
        def short(path: str) -> str:
            parent = os.path.basename(os.path.dirname(path))
            return os.path.join(parent, os.path.basename(path)) + (" (open)" if path == self.open_path else "")

        self.sides.setText(f"Old: {short(self.old_path)}\nNew: {short(self.new_path)}")
        self.sides.setToolTip(f"Old: {self.old_path}\nNew: {self.new_path}")

    def _set_running(self, running: bool) -> None:
        self.swap_button.setEnabled(not running)
        super()._set_running(running)

    def start(self) -> None:
        if self.worker is not None:
            return
        self._pending_sample = None
        self.diff = None
        self.shard_model.set_diff(None)
        self.sample_model.set_diff(None)
        self.detail.clear()
        self.listed.clear()
        self.warnings.setVisible(False)
        self.progress.setRange(0, 0)
        self.summary.setText("Comparing…")
        self._run(JobWorker(diff_indexes, self.old_path, self.new_path, keep=KEEP_PER_KIND,
                            storage_options=self.storage_options), self._on_diff)

    def swap(self) -> None:
        if self.worker is not None:
            return
        self.open_is_new = not self.open_is_new
        self._show_sides()
        self.start()

    def error_path(self) -> str:
        return self.other_path

    def _on_finished(self) -> None:
        super()._on_finished()
        if self._pending_sample is not None:  # the last click made while a lookup ran
            pos, self._pending_sample = self._pending_sample, None
            self._look_up(pos)

    # -- results --------------------------------------------------------------------------------------
    def _on_diff(self, diff: IndexDiff) -> None:
        self.diff = diff
        t = diff.totals
        if diff.n_differences:
            text = (f"{t['added']:,} added · {t['removed']:,} removed · {t['changed']:,} changed "
                    f"({t['changed_extensions']:,} extension set, {t['changed_size']:,} size) · "
                    f"{t['moved']:,} moved · {t['unchanged']:,} unchanged")
        else:
            text = f"No differences: the {t['unchanged']:,} samples are the same."
        self.summary.setText(text)
        self.warnings.setText("\n".join(f"⚠ {w}" for w in diff.warnings))
        self.warnings.setVisible(bool(diff.warnings))
        self.shard_model.set_diff(diff)
        self.shards.resizeColumnToContents(0)
        self._filter_kind()
        self.statusMessage.emit(f"Compared with {os.path.basename(self.other_path)}: {text}")

    def _filter_kind(self) -> None:
        if self.diff is None:
            return
        kind = int(self.kind.currentData())
        self.sample_model.set_diff(self.diff, kind)
        self.samples.resizeColumnToContents(1)
        total = (self.diff.n_differences if not kind else self.diff.totals[KIND_NAMES[kind]])
        shown = self.sample_model.rowCount()
        self.listed.setText(f"{shown:,} listed" + (f" of {total:,} (the first {self.diff.keep:,} of each kind)"
                                                   if shown < total else ""))

    def _on_sample_clicked(self, index: QModelIndex) -> None:
        if self.diff is None or not index.isValid():
            return
        pos = self.sample_model.position(index.row())
        if self.worker is not None:
            self._pending_sample = pos
            return
        self._look_up(pos)

    def _look_up(self, pos: int) -> None:
        if self.diff is None:
            return
        side = "new" if self.open_is_new else "old"
        # finding a sample's rows scans an index that is not contiguous: off the GUI thread
        worker = JobWorker(_sample_lookup, self.diff, pos, self.open_path, side, pass_progress=False)
        worker.returned.connect(lambda found, p=pos, s=side: self._show_sample(p, s, *found))
        worker.errored.connect(lambda exc: show_error(self, "Compare indexes", self.open_path, exc))
        worker.finished.connect(self._on_finished)
        self.worker = worker
        worker.start(self.pool)

    def _show_sample(self, pos: int, side: str, rows: np.ndarray, members: list[MemberSizes]) -> None:
        assert self.diff is not None
        label = self.diff.stem_label(pos)
        lines = [label, "", f"{'extension':<16}{'old size':>14}{'new size':>14}"]
        for m in members:
            old = "—" if m.old_size is None else f"{m.old_size:,}"
            new = "—" if m.new_size is None else f"{m.new_size:,}"
            lines.append(f"{m.ext or '(none)':<16}{old:>14}{new:>14}" + ("   *" if m.differs else ""))
        self.detail.setPlainText("\n".join(lines))
        if self.diff.samples[pos][f"{side}_row"] < 0:
            self.statusMessage.emit(f"{label} is not in the open index ({os.path.basename(self.open_path)})")
            return
        self.selectRows.emit("rows", rows)
        self.statusMessage.emit(f"{label}: {len(rows)} row(s) selected")


def _sample_lookup(diff: IndexDiff, pos: int, open_path: str, side: str) -> tuple[np.ndarray, list[MemberSizes]]:
    """(rows of kept sample ``pos`` in the open index, its members old beside new)."""
    rows = np.zeros(0, np.int64)
    if diff.samples[pos][f"{side}_row"] >= 0:
        with read_taridx(open_path, check_rows=False, storage_options=diff.storage_options) as index:
            rows = kept_rows(index, diff, [pos], side)[0]
    return rows, member_sizes(diff, [pos])[0]


def compare_with(window: MainWindow, other: str | None = None) -> DiffView | None:
    """Compare the window's open TARIDX index with ``other`` (asked for when None) in a docked view."""
    doc = window.document
    if doc is None or doc.format != "taridx":
        window.status.show_message("Open a TARIDX index first, then compare it with another one")
        return None
    if other is None:
        start = "" if is_url(window.path) else os.path.dirname(window.path)
        other, _ = QFileDialog.getOpenFileName(window, "Compare with index", start,
                                               "TARIDX indexes (*.taridx);;All files (*)")
        if not other:
            return None
    view = DiffView(doc, other, window, storage_options=window.remote.options_for(window.path))
    dock = window.add_panel(view)
    dock.show()
    QTimer.singleShot(0, dock.raise_)  # a just-tabified dock comes forward once the tab bar exists
    view.start()
    return view
