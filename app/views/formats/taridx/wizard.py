"""File → Build index…: a QWizard over the index job (Source, Folds and options, Run, Summary)."""
from __future__ import annotations

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from app.views.formats.taridx.wizard_pages import OptionsPage, SourcePage
from app.views.formats.taridx.wizard_run import RunPage
from app.views.formats.taridx.wizard_source import human_bytes
from itarcore.jobs import IndexResult

SOURCE, OPTIONS, RUN, SUMMARY = range(4)


class SummaryPage(QWizardPage):
    def __init__(self, run: RunPage) -> None:
        super().__init__()
        self.run = run
        self.setTitle("Summary")
        self.fold_choice = QComboBox()
        self.fold_choice.currentIndexChanged.connect(self._show)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["", "Value"])
        self.tree.setColumnWidth(0, 220)
        self.open_button = QPushButton("Open in browser")
        self.audit_button = QPushButton("Run audit")
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Fold:"))
        buttons.addWidget(self.fold_choice, 1)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.audit_button)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.tree, 1)

    def initializePage(self) -> None:
        self.fold_choice.blockSignals(True)
        self.fold_choice.clear()
        for r in self.run.results:
            self.fold_choice.addItem(r.fold)
        self.fold_choice.blockSignals(False)
        self.fold_choice.setVisible(len(self.run.results) > 1)
        self._show()

    def current(self) -> IndexResult | None:
        i = self.fold_choice.currentIndex()
        return self.run.results[i] if 0 <= i < len(self.run.results) else None

    def _show(self) -> None:
        self.tree.clear()
        r = self.current()
        if r is None:
            return
        add = self._add
        add(None, "Index", str(r.path))
        add(None, "Rows", f"{r.n_rows:,}")
        add(None, "Stems", f"{r.n_stems:,}")
        add(None, "Shards", f"{len(r.shards)} ({human_bytes(r.total_bytes)})")
        add(None, "Shard tables", r.counts.text().replace("reused", "reused from the cache"))
        exts = add(None, "Extensions", f"{len(r.extensions)}")
        for name, count in r.extensions:
            add(exts, f".{name}" if name else "(none)", f"{count:,} rows")
        crash = add(None, "Crash stems", f"{len(r.crash_stems)}" + ("" if r.crash_stems else " (no hash collisions)"))
        for stem in r.crash_stems:
            add(crash, repr(stem), "told apart by crash id")
        add(None, "Contiguity", "each sample's rows are adjacent" if r.contiguous
            else "samples are split across the shards (not contiguous)")
        warn = add(None, "Warnings", f"{len(r.warnings)}" if r.warnings else "none")
        for w in r.warnings:
            add(warn, "⚠", w)
        if r.backup is not None:
            add(None, "Backup of the old index", str(r.backup))
        add(None, "Time taken", f"{r.seconds:.2f} s ({r.members_per_second:,.0f} members/s)")
        fetch = r.fetch_summary()
        if fetch is not None:
            add(None, "Fetched", f"{human_bytes(fetch['bytes_fetched'])} of {human_bytes(fetch['fold_bytes'])} "
                f"({fetch['fraction_fetched']:.1%}) in {fetch['requests']:,} requests")
            add(None, "Throughput", f"{human_bytes(fetch['indexed_bytes_per_second'])}/s of shards indexed, "
                f"{human_bytes(fetch['fetch_bytes_per_second'])}/s fetched")
        self.tree.expandAll()

    def _add(self, parent: QTreeWidgetItem | None, key: str, value: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem([key, value])
        item.setToolTip(1, value)
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)
        return item


class BuildIndexWizard(QWizard):
    indexBuilt = Signal(str)  # "Open in browser": the path of the new index
    auditRequested = Signal(str)  # "Run audit": the path of the new index

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Build index")
        self.setObjectName("buildIndexWizard")
        self.setWizardStyle(QWizard.WizardStyle.ClassicStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, False)
        self.resize(760, 560)
        self.source_page = SourcePage()
        self.options_page = OptionsPage(self.source_page)
        self.run_page = RunPage(self.source_page, self.options_page)
        self.summary_page = SummaryPage(self.run_page)
        for page_id, page in ((SOURCE, self.source_page), (OPTIONS, self.options_page), (RUN, self.run_page),
                              (SUMMARY, self.summary_page)):
            self.setPage(page_id, page)
        self.summary_page.open_button.clicked.connect(lambda: self._emit(self.indexBuilt))
        self.summary_page.audit_button.clicked.connect(lambda: self._emit(self.auditRequested))

    def _emit(self, signal: Signal) -> None:
        r = self.summary_page.current()
        if r is not None:
            signal.emit(os.fspath(r.path))
            self.accept()

    def reject(self) -> None:
        """Cancel (or Esc) while the index is being built stops the run and stays; otherwise it closes."""
        if self.currentId() == RUN and self.run_page.state == "running":
            self.run_page.cancel()
            return
        super().reject()

    def done(self, result: int) -> None:  # Cancel / close / Finish: never leave a run behind
        self.source_page.stop_listing()  # a URL being listed: forgotten, not waited for (a server may hang)
        self.run_page.stop_and_wait()
        super().done(result)
