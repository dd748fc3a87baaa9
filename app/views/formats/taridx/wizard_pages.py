"""Pages of the Build index wizard: Folds and options (Source is in wizard_source_page, Run in wizard_run)."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWizardPage,
)

from app.views.formats.taridx.wizard_source import human_bytes
from app.views.formats.taridx.wizard_source_page import SourcePage
from itarcore.formats.read_plan import REMOTE_JOBS
from itarcore.indexing.cache import default_cache_dir
from itarcore.storage import display_name, is_url, join

IF_EXISTS_CHOICES = [("Replace it", "replace"), ("Keep a backup, then replace", "backup"), ("Stop", "stop")]
EXECUTOR_CHOICES = [("Threads in this process", "threads"), ("Local processes", "processes"),
                    ("A Dask cluster", "dask")]


class OptionsPage(QWizardPage):
    def __init__(self, source: SourcePage) -> None:
        super().__init__()
        self.source = source
        self.setTitle("Folds and options")
        self.setSubTitle("Each fold becomes <fold>.taridx in the output folder, or under the output URL (uploaded "
                         "whole when the fold is done).")
        self.folds = QListWidget()
        self.folds.itemChanged.connect(lambda _: self.completeChanged.emit())
        self.folds.itemChanged.connect(lambda _: self._update_warnings())
        self.output = QLineEdit()
        self.output.textChanged.connect(lambda _: (self.completeChanged.emit(), self._update_warnings()))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        out_row = QHBoxLayout()
        out_row.addWidget(self.output, 1)
        out_row.addWidget(browse)
        self.contiguous = QCheckBox("Enforce contiguous order (group each sample's rows together)")
        self.jobs = QSpinBox()
        self.jobs.setRange(1, max(1, os.cpu_count() or 1))
        self.jobs.setSuffix(" at a time")
        self.jobs.setValue(min(4, self.jobs.maximum()))  # threads: output bytes are the same for any count
        self.executor = QComboBox()
        for label, value in EXECUTOR_CHOICES:
            self.executor.addItem(label, value)
        self.executor.currentIndexChanged.connect(lambda _: self._executor_changed())
        self.dask_address = QLineEdit()
        self.dask_address.setPlaceholderText("tcp://scheduler:8786 (empty: a local cluster of this machine's cores)")
        self.dask_address.setToolTip("The address `dask scheduler` printed; the workers must see the shards at "
                                     "the same paths")
        self.use_cache = QCheckBox("Reuse the tables of unchanged shards (cache)")
        self.use_cache.setChecked(True)
        self.use_cache.setToolTip(f"Shard tables are kept in {default_cache_dir()}: a rerun or an update scans "
                                  "only new or changed shards")
        self.if_exists = QComboBox()
        for label, value in IF_EXISTS_CHOICES:
            self.if_exists.addItem(label, value)
        self.set_if_exists("backup")  # the safe default: an existing index is never lost by one click
        self.if_exists.currentIndexChanged.connect(lambda _: self._update_warnings())
        self.warnings = QLabel()
        self.warnings.setWordWrap(True)
        self.warnings.setTextFormat(Qt.TextFormat.PlainText)
        form = QFormLayout()
        form.addRow("Folds to index:", self.folds)
        form.addRow("Output folder or URL:", out_row)
        form.addRow("", self.contiguous)
        form.addRow("Run scans in:", self.executor)
        form.addRow("Scan shards:", self.jobs)
        form.addRow("Dask scheduler:", self.dask_address)
        form.addRow("", self.use_cache)
        form.addRow("If an index exists:", self.if_exists)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.warnings)
        layout.addStretch(1)
        self.form = form
        self._executor_changed()

    def _executor_changed(self) -> None:
        kind = self.executor.currentData()
        self.jobs.setEnabled(kind != "dask")
        self.jobs.setSuffix(" processes" if kind == "processes" else " at a time")
        self.dask_address.setEnabled(kind == "dask")

    def set_executor(self, kind: str, address: str = "") -> None:
        self.executor.setCurrentIndex([v for _, v in EXECUTOR_CHOICES].index(kind))
        self.dask_address.setText(address)

    def executor_spec(self) -> str:
        """The executor as itarcore spells it (``--executor``): threads, processes:N, dask[:ADDRESS]."""
        kind = self.executor.currentData()
        if kind == "processes":
            return f"processes:{self.jobs.value()}"
        if kind == "dask":
            address = self.dask_address.text().strip()
            return f"dask:{address}" if address else "dask"
        return "threads"

    def initializePage(self) -> None:
        plan = self.source.plan
        # remote scans wait on the network, not on a core: more of them than cores keep the link busy
        remote = plan.remote is not None
        self.jobs.setRange(1, 4 * REMOTE_JOBS if remote else max(1, os.cpu_count() or 1))
        self.jobs.setValue(REMOTE_JOBS if remote else min(4, self.jobs.maximum()))
        self.folds.blockSignals(True)
        self.folds.clear()
        for fold, paths in plan.folds.items():
            noun = "shard" if len(paths) == 1 else "shards"
            item = QListWidgetItem(f"{fold}  ({len(paths)} {noun}, {human_bytes(plan.fold_bytes(fold))})")
            item.setData(Qt.ItemDataRole.UserRole, fold)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.folds.addItem(item)
        self.folds.blockSignals(False)
        self.output.setText(os.fspath(plan.folder) if plan.folder else "")
        self._update_warnings()

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Output folder", self.output.text())
        if folder:
            self.output.setText(folder)

    def chosen_folds(self) -> list[str]:
        return [self.folds.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.folds.count())
                if self.folds.item(i).checkState() == Qt.CheckState.Checked]

    def set_folds(self, folds: list[str]) -> None:
        for i in range(self.folds.count()):
            item = self.folds.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.data(Qt.ItemDataRole.UserRole) in folds
                               else Qt.CheckState.Unchecked)

    def set_if_exists(self, value: str) -> None:
        self.if_exists.setCurrentIndex([v for _, v in IF_EXISTS_CHOICES].index(value))

    def output_for(self, fold: str) -> Path | str:
        out = self.output.text().strip()
        return join(out, f"{fold}.taridx") if is_url(out) else Path(out) / f"{fold}.taridx"

    def existing(self) -> list[Path]:
        """Indexes already in a local output folder (a store is asked when the run starts, not here)."""
        if is_url(self.output.text().strip()):
            return []
        return [p for p in map(self.output_for, self.chosen_folds()) if p.exists()]

    def _update_warnings(self) -> None:
        lines = self.source.plan.warnings()
        existing = self.existing()
        if existing:
            what = {"replace": "will be replaced", "backup": "will be backed up, then replaced",
                    "stop": "exist: choose replace or backup to continue"}[self.if_exists.currentData()]
            lines.append(f"{', '.join(p.name for p in existing)} {what}")
        out = self.output.text().strip()
        notes = []
        if is_url(out):
            notes.append(f"Each index is written locally first, then uploaded to {display_name(out)} in one "
                         "piece; an index already there is handled as chosen above when the run starts.")
        elif out and not os.path.isdir(out):
            lines.append(f"{out} is not a folder")
        self.warnings.setText("\n".join([f"⚠ {line}" for line in lines] + notes))
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        out = self.output.text().strip()
        blocked = self.if_exists.currentData() == "stop" and self.existing()
        writable = is_url(out) or (os.path.isdir(out) and os.access(out, os.W_OK))
        return bool(self.chosen_folds()) and bool(out) and writable and not blocked
