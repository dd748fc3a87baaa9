"""The Build index wizard's Source page: a folder, tar files, a single tar, or a URL (listed off the GUI thread)."""
from __future__ import annotations

import os
import shlex

from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
    QWizardPage,
)

from app.views.errors import describe_error
from app.views.formats.taridx.wizard_source import (
    SourcePlan,
    human_bytes,
    plan_files,
    plan_folder,
    plan_url,
    shard_name,
)
from app.workers import JobWorker
from itarcore.errors import ItarError
from itarcore.storage import display_name, is_url, parse_storage_options

MODES = ("folder", "files", "tar", "url")


class SourcePage(QWizardPage):
    def __init__(self) -> None:
        super().__init__()
        self.setTitle("Source")
        self.setSubTitle("Choose the shards to index: a folder of <fold>_<suffix>.tar files, a list of tar files, "
                         "a single tar, or a URL of a folder or fold in an object store or on a web server.")
        self.plan = SourcePlan()
        self.listing: JobWorker | None = None  # a URL being listed, off the GUI thread
        self.mode_group = QButtonGroup(self)
        modes = QHBoxLayout()
        for i, label in enumerate(("A folder of shards", "A list of tar files", "A single tar", "A URL")):
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
        self.browse_button = browse
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        self.options_edit = QLineEdit()
        self.options_edit.setPlaceholderText('KEY=VALUE …, e.g. client_kwargs=\'{"endpoint_url": "http://host:9000"}\'')
        self.options_edit.setToolTip("fsspec storage options, separated by spaces (VALUE is JSON when it parses). "
                                     "Credentials best come the fsspec way: environment variables or config files.")
        self.options_edit.editingFinished.connect(self.refresh)
        self.anon = QCheckBox("Anonymous")
        self.anon.setToolTip("Public buckets: no credentials")
        self.anon.toggled.connect(lambda _: self.refresh())
        self.url_row = QWidget()
        url_row = QHBoxLayout(self.url_row)
        url_row.setContentsMargins(0, 0, 0, 0)
        url_row.addWidget(QLabel("Storage options:"))
        url_row.addWidget(self.options_edit, 1)
        url_row.addWidget(self.anon)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Fold / shard", "Shards", "Size"])
        self.tree.setColumnWidth(0, 320)
        self.total = QLabel("Nothing chosen yet.")
        self.total.setWordWrap(True)  # a long text wraps; it never widens the window
        layout = QVBoxLayout(self)
        layout.addLayout(modes)
        layout.addLayout(row)
        layout.addWidget(self.url_row)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.total)
        self._mode_changed()
        self.mode_group.idToggled.connect(lambda _id, on: self._mode_changed() if on else None)

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

    def set_url(self, url: str, options: str = "", anon: bool = False) -> None:
        """List ``url`` (``options``: KEY=VALUE words, as typed in the page) on a worker thread."""
        self.mode_group.button(3).setChecked(True)
        self.path_edit.setText(url)
        self.options_edit.setText(options)
        self.options_edit.setCursorPosition(0)
        self.anon.blockSignals(True)
        self.anon.setChecked(anon)
        self.anon.blockSignals(False)
        self.refresh()

    def _mode_changed(self) -> None:
        url = self.mode == "url"
        self.url_row.setVisible(url)
        self.browse_button.setEnabled(not url)
        self.path_edit.setPlaceholderText("s3://bucket/dataset/, https://host/dataset/ or a fold: …/dataset/train"
                                          if url else "folder, or tar files separated by ';'")

    def storage_options(self) -> dict:
        options = parse_storage_options(shlex.split(self.options_edit.text()))
        if self.anon.isChecked():
            options["anon"] = True
        return options

    def refresh(self) -> None:
        text = self.path_edit.text().strip()
        self.plan = SourcePlan()
        if self.mode == "url":
            self._list_url(text)
            return
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

    def _list_url(self, url: str) -> None:
        self.stop_listing()
        self._fill_tree()
        self.completeChanged.emit()
        if not url:
            self.total.setText("Nothing chosen yet.")
            return
        if not is_url(url):
            self.total.setText(f"{url}: not a URL (e.g. s3://bucket/dataset/ or https://host/dataset/)")
            return
        try:
            options = self.storage_options()
        except (ValueError, ItarError) as exc:  # a word that is not KEY=VALUE; ValueError: unbalanced quotes
            self.total.setText(f"Storage options: {describe_error('', exc)}")
            return
        self.total.setText(f"Listing {display_name(url)} …")
        worker = self.listing = JobWorker(plan_url, url, options, pass_progress=False)
        worker.returned.connect(lambda plan: self._listed(worker, plan, url))
        worker.errored.connect(lambda exc: self._listing_failed(worker, exc, url))
        worker.start()

    def _listed(self, worker: JobWorker, plan: SourcePlan, url: str) -> None:
        if worker is not self.listing:
            return  # a listing the user has since replaced
        self.listing, self.plan = None, plan
        self._fill_tree()
        n_shards = sum(len(p) for p in plan.folds.values())
        self.total.setText(f"{display_name(url)}: {len(plan.folds)} fold(s), {n_shards} shard(s), "
                           f"{human_bytes(plan.total_bytes)} in total ({plan.total_bytes:,} bytes)")
        self.completeChanged.emit()

    def _listing_failed(self, worker: JobWorker, exc: BaseException, url: str) -> None:
        if worker is self.listing:
            self.listing = None
            self.total.setText(f"{display_name(url)}: {describe_error(display_name(url), exc)}")

    def stop_listing(self) -> None:
        """Forget a listing in flight: it finishes on its thread and is never shown."""
        if self.listing is not None:
            self.listing.detach()
            self.listing = None

    def _fill_tree(self) -> None:
        self.tree.clear()
        for fold, paths in self.plan.folds.items():
            item = QTreeWidgetItem([fold, str(len(paths)), human_bytes(self.plan.fold_bytes(fold))])
            for path in paths:
                note = f"  ({self.plan.unreadable[path]})" if path in self.plan.unreadable else ""
                item.addChild(QTreeWidgetItem([shard_name(path) + note, "", human_bytes(self.plan.sizes[path])]))
            self.tree.addTopLevelItem(item)
        if self.plan.folds and len(self.plan.folds) <= 3:
            self.tree.expandAll()

    def isComplete(self) -> bool:
        return bool(self.plan.folds)
