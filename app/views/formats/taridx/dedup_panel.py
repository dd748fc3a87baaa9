"""Duplicates (TARIDX): ``itarcore.content.find_duplicates`` over this fold and any others the user adds.

A group is one payload found more than once (same extension, size and xxh3-128); a
group spanning folds is a leak (the same image in train and val). Clicking a group
selects its rows of this fold in the row grid; a member of another fold is named in
the status bar.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QListWidget,
    QPushButton,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.views.job_panel import JobPanel
from app.views.panels import FixedHintPanel
from app.workers import JobWorker
from itarcore.content.dedup import DuplicateGroup, DuplicateReport, find_duplicates
from itarcore.document import Document

MAX_GROUPS_SHOWN = 20_000  # tree items are widgets' rows: the JSON export of the CLI has them all


class DuplicatesPanel(JobPanel, FixedHintPanel):
    title = "Duplicates"
    job_title = "Duplicates"
    failed_text = "The duplicate search could not run: see the message."

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.dataset = document.source
        self.report: DuplicateReport | None = None
        self.others = QListWidget(toolTip="Other folds to compare with (e.g. val beside train): a payload found "
                                  "in two folds is a leak")
        self.others.setMaximumHeight(70)
        add = QPushButton("Add index…")
        add.clicked.connect(self._add_dialog)
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: [self.others.takeItem(self.others.row(i)) for i in self.others.selectedItems()])
        self.near = QCheckBox("near duplicates", toolTip="Also group near-duplicate images (perceptual hash)")
        if importlib.util.find_spec("imagehash") is None:
            self.near.setEnabled(False)
            self.near.setToolTip("Needs the imagehash package: pip install 'itar-browser[content]'")
        self.run_button = QPushButton("Find duplicates")
        self.run_button.clicked.connect(self.start)
        buttons = QVBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        top = QHBoxLayout()
        top.addWidget(self.others, 1)
        top.addLayout(buttons)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Group", "Extension", "Size", "Members", "Folds"])
        self.tree.setUniformRowHeights(True)
        self.tree.setColumnWidth(0, 240)
        self.tree.itemClicked.connect(self._on_clicked)
        self.tree.itemActivated.connect(self._on_clicked)
        self.summary.setText(f"Find payloads stored more than once in {self.dataset.fold}, and in any other fold "
                             "added above (the same payload in two folds is a leak).")
        self._lay_out(top, self.job_bar(self.near, self.run_button), body=self.tree)

    # -- inputs -----------------------------------------------------------------------------------
    def _add_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Compare with", os.path.dirname(self.document.path),
                                                "TARIDX indexes (*.taridx);;All files (*)")
        for p in paths:
            self.add_other(p)

    def add_other(self, path: str | os.PathLike[str]) -> None:
        path = os.path.abspath(os.fspath(path))
        if path != os.path.abspath(self.document.path) and path not in self.other_paths():
            self.others.addItem(path)

    def other_paths(self) -> list[str]:
        return [self.others.item(i).text() for i in range(self.others.count())]

    # -- running ------------------------------------------------------------------------------------
    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        super()._set_running(running)

    def start(self) -> None:
        if not self._begin("Hashing payloads…"):
            return
        worker = JobWorker(find_duplicates, [self.dataset, *self.other_paths()], near=self.near.isChecked())
        self._run(worker, self.show_report)

    # -- results ------------------------------------------------------------------------------------
    def show_report(self, report: DuplicateReport) -> None:
        self.report = report
        self.tree.clear()
        groups = sorted(report.groups, key=lambda g: (not g.cross_fold, g.ext, -len(g.members)))
        groups += list(report.near_groups or [])
        style = self.style()
        for n, group in enumerate(groups[:MAX_GROUPS_SHOWN]):
            leak = group.cross_fold
            what = ("near-duplicate " if group.kind == "near" else "") + ("leak" if leak else "duplicate")
            item = QTreeWidgetItem([f"{what} · {group.digest[:12]}", group.ext or "(none)",
                                    f"{group.size:,}" if group.size else "—", f"{len(group.members):,}",
                                    ", ".join(sorted(report.folds[f] for f in group.folds))])
            icon = QStyle.StandardPixmap.SP_MessageBoxCritical if leak else QStyle.StandardPixmap.SP_MessageBoxWarning
            item.setIcon(0, style.standardIcon(icon))
            item.setData(0, Qt.ItemDataRole.UserRole, (n, -1))
            for m, member in enumerate(group.members):
                child = QTreeWidgetItem([f"{report.folds[member.fold]} row {member.row:,} · {member.stem}", "", "", "",
                                         f"{member.stem}  ({member.shard})"])
                child.setData(0, Qt.ItemDataRole.UserRole, (n, m))
                item.addChild(child)
            self.tree.addTopLevelItem(item)
        self._groups = groups
        leaks = len(report.cross_fold_groups)
        extra = sum(len(g.members) - 1 for g in report.groups)
        text = (f"{report.rows_hashed:,} payloads ({report.bytes_hashed:,} bytes) compared in {len(report.folds)} "
                f"fold(s): {len(report.groups):,} group(s) of identical payloads, {extra:,} redundant member(s), "
                f"{leaks:,} leak(s) across folds")
        if report.near_groups is not None:
            text += f", {len(report.near_groups):,} near-duplicate image group(s)"
        if len(groups) > MAX_GROUPS_SHOWN:
            text += f" (the first {MAX_GROUPS_SHOWN:,} are listed)"
        if report.missing_shards:
            text += f". Not compared (missing): {', '.join(report.missing_shards[:3])}"
        self.summary.setText(text + ".")
        self.statusMessage.emit(text)

    def rows_here(self, group: DuplicateGroup) -> np.ndarray:
        """The group's rows in this fold (fold 0 of the report)."""
        return np.array([m.row for m in group.members if m.fold == 0], dtype=np.int64)

    def _on_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        n, m = item.data(0, Qt.ItemDataRole.UserRole)
        group = self._groups[n]
        if m >= 0:
            member = group.members[m]
            if member.fold == 0:
                self.selectRows.emit("rows", np.array([member.row], np.int64))
            else:
                fold = self.report.folds[member.fold] if self.report else "?"
                self.statusMessage.emit(f"in {fold}: row {member.row:,} · {member.stem} · {member.shard}")
            return
        rows = self.rows_here(group)
        if len(rows):
            self.selectRows.emit("rows", rows)


PANELS = [DuplicatesPanel]
