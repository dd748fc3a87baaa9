"""Audit panel (TARIDX): run the quick check or full audit in a worker, list findings, jump to their rows."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.views.errors import show_error
from app.views.job_panel import JobPanel
from app.workers import JobWorker
from itarcore.audit import AuditReport, audit_index, quick_check
from itarcore.audit.fold import MTIME_SLACK
from itarcore.dataset import find_shards, fold_name
from itarcore.document import Document
from itarcore.jobs import IndexResult, index_fold
from itarcore.storage import is_url

_ICONS = {"error": QStyle.StandardPixmap.SP_MessageBoxCritical,
          "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
          "info": QStyle.StandardPixmap.SP_MessageBoxInformation}


def shards_newer_than_index(index_path: str) -> list[Path]:
    """Shards of the fold modified after the index (a stat each: cheap at open).

    The same slack as the audit's: a checkout or copy writes index and shards in one instant, in any order."""
    try:
        written = os.stat(index_path).st_mtime_ns + int(MTIME_SLACK * 1e9)
    except OSError:
        return []
    shards = find_shards(Path(index_path).resolve().parent, fold_name(index_path))
    newer = []
    for fid in sorted(shards):
        try:
            if os.stat(shards[fid]).st_mtime_ns > written:
                newer.append(shards[fid])
        except OSError:
            continue
    return newer


class AuditPanel(JobPanel):
    title = "Audit"
    job_title = "Audit"
    failed_text = "The check could not run: see the message."

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.index_path = os.fspath(document.path)
        self.report: AuditReport | None = None
        self.quick_button = QPushButton("Run quick check")
        self.quick_button.setToolTip("Index structure, stem count, contiguity flag, missing or extra shards "
                                     "(reads no shard contents)")
        self.quick_button.clicked.connect(lambda: self.start(full=False))
        self.full_button = QPushButton("Run full audit")
        self.full_button.setToolTip("Every row against its tar header, a re-scan of every shard, sample checks")
        self.full_button.clicked.connect(lambda: self.start(full=True))
        self.progress.setFormat("%v / %m rows")
        for b in (self.quick_button, self.full_button, self.cancel_button):
            b.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        top = self.job_bar(self.quick_button, self.full_button)
        top.addStretch(0)
        self.summary.setText("Run a check to list what is wrong with this index and its shards.")
        self.findings = QTreeWidget()
        self.findings.setHeaderLabels(["Finding", "Message", "Rows"])
        self.findings.setRootIsDecorated(False)
        self.findings.setUniformRowHeights(True)
        self.findings.setColumnWidth(0, 170)
        header = self.findings.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(1, header.ResizeMode.Stretch)
        header.setSectionResizeMode(2, header.ResizeMode.ResizeToContents)
        self.findings.itemClicked.connect(self._on_clicked)
        self.findings.itemActivated.connect(self._on_clicked)
        self.findings.currentItemChanged.connect(self._show_detail)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText("Select a finding to read it in full; clicking it selects its rows.")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.findings)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([260, 150])
        self.export_button = QPushButton("Export report as JSON…")
        self.export_button.clicked.connect(self._export_dialog)
        self.rebuild_button = QPushButton("Rebuild index…")
        self.rebuild_button.setToolTip("Re-index this fold in place; the current index is kept as a backup")
        self.rebuild_button.clicked.connect(self._confirm_rebuild)
        bottom = QHBoxLayout()
        bottom.addWidget(self.export_button)
        bottom.addStretch(1)
        bottom.addWidget(self.rebuild_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addLayout(bottom)
        self._set_running(False)

    # -- suggestion at open ------------------------------------------------------------------------
    def suggestion(self) -> tuple[str, str] | None:
        newer = shards_newer_than_index(self.index_path)
        if not newer:
            return None
        names = ", ".join(p.name for p in newer[:3]) + (" …" if len(newer) > 3 else "")
        warning = (f"{len(newer)} shard(s) changed after this index was written ({names}): the index may be "
                   "stale. The full audit re-reads the shards and lists what no longer matches.")
        return warning, "Run the audit"

    def act_on_suggestion(self) -> None:
        self.start(full=True)

    # -- running ------------------------------------------------------------------------------------
    def _set_running(self, running: bool) -> None:
        self.quick_button.setEnabled(not running)
        self.full_button.setEnabled(not running)
        super()._set_running(running)
        self.export_button.setEnabled(not running and self.report is not None)
        self.rebuild_button.setVisible(not running and self.report is not None and self.report.stale
                                       and not is_url(self.index_path))  # rebuilding in place is for local folds

    def start(self, full: bool = True) -> None:
        if self.worker is not None:
            return
        self.progress.setRange(0, 0)
        self.summary.setText("Running the full audit…" if full else "Running the quick check…")
        # a remote fold is audited with the options it was opened with (they stay in memory, never saved)
        options = getattr(getattr(self.document.source, "shard_set", None), "storage_options", None)
        self._run(JobWorker(audit_index if full else quick_check, self.index_path, storage_options=options),
                  self._on_report)

    # -- findings -----------------------------------------------------------------------------------
    def _on_report(self, report: AuditReport) -> None:
        self.report = report
        self.findings.clear()
        self.detail.clear()
        rank = {"error": 0, "warning": 1, "info": 2}
        order = sorted(range(len(report.findings)), key=lambda i: rank.get(report.findings[i].severity, 3))
        for i in order:
            f = report.findings[i]
            item = QTreeWidgetItem([f.kind.replace("_", " "), f.message, f"{len(f.rows):,}" if f.rows else "—"])
            item.setIcon(0, self.style().standardIcon(_ICONS.get(f.severity, _ICONS["info"])))
            item.setToolTip(0, f.severity)
            item.setToolTip(1, f.message + (f"\nShards: {', '.join(f.shards)}" if f.shards else ""))
            item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setData(0, Qt.ItemDataRole.UserRole, i)
            self.findings.addTopLevelItem(item)
        counts = ", ".join(f"{report.count(s)} {s}{'s' if report.count(s) != 1 and s != 'info' else ''}"
                           for s in ("error", "warning", "info"))
        what = "Full audit" if report.full else "Quick check"
        text = f"{what} of {report.n_rows:,} rows in {report.n_shards} shard(s): {counts}."
        if not report.findings:
            text += " No problems found."
        if report.stale:
            text += " The index no longer matches its shards: rebuilding it would help."
        self.summary.setText(text)
        self.statusMessage.emit(text)
        self.auditReport.emit(report)

    def _show_detail(self, item: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None = None) -> None:
        if item is None or self.report is None:
            self.detail.clear()
            return
        f = self.report.findings[int(item.data(0, Qt.ItemDataRole.UserRole))]
        lines = [f"{f.severity.upper()} · {f.kind}", "", f.message]
        if f.shards:
            lines += ["", "Shards: " + ", ".join(f.shards)]
        if f.rows:
            lines += ["", f"{len(f.rows):,} row(s); click the finding to select them in the row grid."]
        self.detail.setPlainText("\n".join(lines))

    def _on_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        if self.report is None:
            return
        finding = self.report.findings[int(item.data(0, Qt.ItemDataRole.UserRole))]
        if finding.rows:
            self.selectRows.emit("rows", np.array(finding.rows, dtype=np.int64))
        if finding.shards:
            self.statusMessage.emit(f"{finding.kind}: {', '.join(finding.shards)}")

    def export_row_sources(self) -> dict[str, tuple[int, np.ndarray]]:
        """For File → Export Subset…: the rows of the findings selected in this panel."""
        if self.report is None:
            return {}
        picked = [self.report.findings[int(i.data(0, Qt.ItemDataRole.UserRole))] for i in self.findings.selectedItems()]
        rows = np.unique(np.array([r for f in picked for r in (f.rows or [])], dtype=np.int64))
        return {"rows of the selected audit findings": (len(rows), rows)}

    # -- export and rebuild -------------------------------------------------------------------------
    def _export_dialog(self) -> None:
        default = str(Path(self.index_path).with_suffix(".audit.json"))
        path, _ = QFileDialog.getSaveFileName(self, "Export audit report", default, "JSON (*.json)")
        if path:
            self.export_json(path)

    def export_json(self, path: str | os.PathLike[str]) -> None:
        if self.report is None:
            return
        try:
            Path(path).write_text(self.report.dumps() + "\n", encoding="utf-8")
        except OSError as exc:
            show_error(self, "Export audit report", os.fspath(path), exc)
            return
        self.statusMessage.emit(f"audit report written to {path}")

    def _confirm_rebuild(self) -> None:
        answer = QMessageBox.question(self, "Rebuild index",
                                      f"Re-index the shards of {os.path.basename(self.index_path)} in place?\n"
                                      "The current index is kept as a .bak file beside it.")
        if answer == QMessageBox.StandardButton.Yes:
            self.rebuild()

    def rebuild(self) -> None:
        if self.worker is not None:
            return
        folder = Path(self.index_path).resolve().parent
        shards = find_shards(folder, fold_name(self.index_path))
        if not shards:
            show_error(self, "Rebuild index", self.index_path, "no shards beside the index to rebuild it from")
            return
        self.progress.setRange(0, 0)
        self.summary.setText("Rebuilding the index…")
        worker = JobWorker(index_fold, [shards[f] for f in sorted(shards)], self.index_path, if_exists="backup")
        self._run(worker, self._on_rebuilt)

    def _on_rebuilt(self, result: IndexResult) -> None:
        backup = f" (old index kept as {result.backup.name})" if result.backup else ""
        self.report = None
        self.findings.clear()
        self.summary.setText(f"Rebuilt: {result.n_rows:,} rows, {result.n_stems:,} stems{backup}. Reloading…")
        self.statusMessage.emit(f"index rebuilt{backup}")
        self.reloadRequested.emit()


PANELS = [AuditPanel]
