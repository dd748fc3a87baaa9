"""Pages of the Build index wizard: Source, Folds and options (the Run page is in wizard_run)."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
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
    QRadioButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWizardPage,
)

from app.views.errors import describe_error
from app.views.formats.taridx.wizard_source import (
    SourcePlan,
    human_bytes,
    plan_files,
    plan_folder,
)
from itarcore.indexing.cache import default_cache_dir

IF_EXISTS_CHOICES = [("Replace it", "replace"), ("Keep a backup, then replace", "backup"), ("Stop", "stop")]
EXECUTOR_CHOICES = [("Threads in this process", "threads"), ("Local processes", "processes"),
                    ("A Dask cluster", "dask")]
MODES = ("folder", "files", "tar")


class SourcePage(QWizardPage):
    def __init__(self) -> None:
        super().__init__()
        self.setTitle("Source")
        self.setSubTitle("Choose the shards to index: a folder of <fold>_<suffix>.tar files, a list of tar files, "
                         "or a single tar.")
        self.plan = SourcePlan()
        self.mode_group = QButtonGroup(self)
        modes = QHBoxLayout()
        for i, label in enumerate(("A folder of shards", "A list of tar files", "A single tar")):
            button = QRadioButton(label)
            self.mode_group.addButton(button, i)
            modes.addWidget(button)
        modes.addStretch(1)
        self.mode_group.button(0).setChecked(True)
        self.path_edit = QLineEdit()
        self.path_edit.setPlaceholderText("folder, or tar files separated by ';'")
        self.path_edit.editingFinished.connect(self.refresh)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.browse)
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Fold / shard", "Shards", "Size"])
        self.tree.setColumnWidth(0, 320)
        self.total = QLabel("Nothing chosen yet.")
        layout = QVBoxLayout(self)
        layout.addLayout(modes)
        layout.addLayout(row)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.total)

    @property
    def mode(self) -> str:
        return MODES[max(0, self.mode_group.checkedId())]

    def browse(self) -> None:
        if self.mode == "folder":
            folder = QFileDialog.getExistingDirectory(self, "Folder of shards")
            if folder:
                self.set_folder(folder)
        elif self.mode == "files":
            files, _ = QFileDialog.getOpenFileNames(self, "Tar files", "", "Tar files (*.tar);;All files (*)")
            if files:
                self.set_files(files)
        else:
            file, _ = QFileDialog.getOpenFileName(self, "Tar file", "", "Tar files (*.tar);;All files (*)")
            if file:
                self.set_files([file], single=True)

    def set_folder(self, folder: str | os.PathLike[str]) -> None:
        self.mode_group.button(0).setChecked(True)
        self.path_edit.setText(os.fspath(folder))
        self.refresh()

    def set_files(self, files: list[str | os.PathLike[str]], single: bool = False) -> None:
        self.mode_group.button(2 if single else 1).setChecked(True)
        self.path_edit.setText(";".join(os.fspath(f) for f in files))
        self.refresh()

    def refresh(self) -> None:
        text = self.path_edit.text().strip()
        self.plan = SourcePlan()
        try:
            if text and self.mode == "folder":
                self.plan = plan_folder(text)
            elif text:
                files = [f for f in text.split(";") if f.strip()]
                missing = [f for f in files if not os.path.isfile(f)]
                if missing:
                    raise FileNotFoundError(2, "no such file", missing[0])
                self.plan = plan_files(files)
        except OSError as exc:
            self.total.setText(f"{getattr(exc, 'filename', None) or text}: {describe_error(text, exc)}")
            self._fill_tree()
            self.completeChanged.emit()
            return
        self._fill_tree()
        n_shards = sum(len(p) for p in self.plan.folds.values())
        self.total.setText(f"{len(self.plan.folds)} fold(s), {n_shards} shard(s), "
                           f"{human_bytes(self.plan.total_bytes)} in total ({self.plan.total_bytes:,} bytes)"
                           if self.plan.folds else "No tar shards found here.")
        self.completeChanged.emit()

    def _fill_tree(self) -> None:
        self.tree.clear()
        for fold, paths in self.plan.folds.items():
            item = QTreeWidgetItem([fold, str(len(paths)), human_bytes(self.plan.fold_bytes(fold))])
            for path in paths:
                note = f"  ({self.plan.unreadable[path]})" if path in self.plan.unreadable else ""
                item.addChild(QTreeWidgetItem([path.name + note, "", human_bytes(self.plan.sizes[path])]))
            self.tree.addTopLevelItem(item)
        if self.plan.folds and len(self.plan.folds) <= 3:
            self.tree.expandAll()

    def isComplete(self) -> bool:
        return bool(self.plan.folds)


class OptionsPage(QWizardPage):
    def __init__(self, source: SourcePage) -> None:
        super().__init__()
        self.source = source
        self.setTitle("Folds and options")
        self.setSubTitle("Each fold becomes <fold>.taridx in the output folder.")
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
        self.if_exists.currentIndexChanged.connect(lambda _: self._update_warnings())
        self.warnings = QLabel()
        self.warnings.setWordWrap(True)
        self.warnings.setTextFormat(Qt.TextFormat.PlainText)
        form = QFormLayout()
        form.addRow("Folds to index:", self.folds)
        form.addRow("Output folder:", out_row)
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

    def existing(self) -> list[Path]:
        out = Path(self.output.text())
        return [out / f"{f}.taridx" for f in self.chosen_folds() if (out / f"{f}.taridx").exists()]

    def _update_warnings(self) -> None:
        lines = self.source.plan.warnings()
        existing = self.existing()
        if existing:
            what = {"replace": "will be replaced", "backup": "will be backed up, then replaced",
                    "stop": "exist: choose replace or backup to continue"}[self.if_exists.currentData()]
            lines.append(f"{', '.join(p.name for p in existing)} {what}")
        out = self.output.text()
        if out and not os.path.isdir(out):
            lines.append(f"{out} is not a folder")
        self.warnings.setText("\n".join(f"⚠ {line}" for line in lines))
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        out = self.output.text()
        blocked = self.if_exists.currentData() == "stop" and self.existing()
        return bool(self.chosen_folds()) and os.path.isdir(out) and os.access(out, os.W_OK) and not blocked
