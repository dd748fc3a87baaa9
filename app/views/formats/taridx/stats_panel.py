"""Statistics (TARIDX): ``itarcore.content.compute_stats`` as a job, drawn as its partial results stream in.

Per extension (count, bytes, size percentiles), per shard (a shard × extension heatmap
and a table), labels (bars and a table, per shard on demand) and image sizes (a 2-D
histogram from image headers). The numbers are the core's, exactly as
``itarcore stats --json`` prints them.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.views.formats.taridx.stats_plots import DimsHistogram2D, LabelBars, ShardExtHeatmap
from app.views.job_panel import JobPanel
from app.views.panels import FixedHintPanel
from app.workers import JobWorker
from itarcore.content.sizehist import PERCENTILES
from itarcore.content.stats import compute_stats
from itarcore.document import Document

AUTO_LABELS = "cls / cls2 members"
PHASES = {"rows": "counting rows", "samples": "grouping samples", "payloads": "reading labels and image headers",
          "done": "done"}


def fill_table(table: QTableWidget, headers: list[str], rows: list[list[Any]]) -> None:
    """Numbers right-aligned with thousands separators; None shows as an empty cell."""
    table.setSortingEnabled(False)
    table.clear()
    table.setColumnCount(len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setRowCount(len(rows))
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            item = QTableWidgetItem(f"{value:,}" if number else "" if value is None else str(value))
            if number:
                item.setData(Qt.ItemDataRole.UserRole, value)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)
    table.resizeColumnsToContents()


def _table() -> QTableWidget:
    t = QTableWidget()
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    t.verticalHeader().setVisible(False)
    t.setAlternatingRowColors(True)
    return t


class StatsPanel(JobPanel, FixedHintPanel):
    title = "Statistics"
    job_title = "Statistics"
    failed_text = "The statistics could not be computed: see the message."
    statsShown = Signal(object)  # the FoldStats on screen (partial or final)

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.dataset = document.source
        self.stats: Any = None
        self.label_combo = QComboBox(editable=True, toolTip="Where labels come from: cls/cls2 members, another "
                                     "member, or a JSON field such as label.class")
        self.label_combo.addItem(AUTO_LABELS, None)
        for ext in self.dataset.extensions:
            self.label_combo.addItem(f"{ext} members", ext)
        self.label_combo.lineEdit().setPlaceholderText("a JSON field, e.g. label.class")
        self.run_button = QPushButton("Compute statistics")
        self.run_button.clicked.connect(self.start)
        source = QHBoxLayout()  # the run row apart: in one row the combo is cut in a dock beside the grid
        source.addWidget(QLabel("Labels from"))
        source.addWidget(self.label_combo, 1)

        self.ext_table = _table()
        self.shard_table = _table()
        self.label_table = _table()
        self.per_shard = QCheckBox("per shard")
        self.per_shard.toggled.connect(lambda _on: self._fill_labels())
        self.dims_table = _table()
        self.tabs = QTabWidget()
        self.heatmap: ShardExtHeatmap | None = None  # plots are built when first shown: pyqtgraph views cost the
        self.label_bars: LabelBars | None = None  # GUI thread work at creation and after, even behind another tab
        self.dims_plot: DimsHistogram2D | None = None
        self.summary.setText(f"Compute the statistics of {self.dataset.n_rows:,} rows: extensions, shards, labels "
                             "and image sizes (one pass over the rows, then label and image-header reads).")
        self._lay_out(source, self.job_bar(self.run_button), body=self.tabs)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        # a dock is shown for a moment while it is added and tabified: decide once events settle
        QTimer.singleShot(0, self, self._build_if_visible)

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        if self.heatmap is None:  # drawn: its tab is in front
            QTimer.singleShot(0, self, self._build_if_visible)

    def _build_if_visible(self) -> None:
        if self.heatmap is None and not self.visibleRegion().isEmpty():
            self._build_plots()

    def _build_plots(self) -> None:
        if self.heatmap is not None:
            return
        self.heatmap, self.label_bars, self.dims_plot = ShardExtHeatmap(), LabelBars(), DimsHistogram2D()
        self.tabs.addTab(self.ext_table, "Extensions")
        self.tabs.addTab(self._split(self.heatmap, self.shard_table), "Shards")
        labels = QWidget()
        lay = QVBoxLayout(labels)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._split(self.label_bars, self.label_table), 1)
        lay.addWidget(self.per_shard)
        self.tabs.addTab(labels, "Labels")
        self.tabs.addTab(self._split(self.dims_plot, self.dims_table), "Image sizes")

    @staticmethod
    def _split(plot: QWidget, table: QWidget) -> QSplitter:
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(plot)
        split.addWidget(table)
        split.setSizes([300, 200])
        return split

    def label_field(self) -> str | None:
        text = self.label_combo.currentText().strip()
        index = self.label_combo.findText(text)
        if index >= 0:
            return self.label_combo.itemData(index)
        return text or None

    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.label_combo.setEnabled(not running)
        super()._set_running(running)

    def start(self) -> None:
        if not self._begin("Computing statistics…"):
            return
        worker = JobWorker(compute_stats, self.dataset, label_field=self.label_field())
        worker.kwargs["on_partial"] = worker.report  # snapshots reach the GUI thread as `yielded`
        worker.yielded.connect(self.show_stats)
        self._run(worker, self.show_stats)

    # -- drawing ----------------------------------------------------------------------------------
    def show_stats(self, stats: Any) -> None:
        self._build_plots()
        self.stats = stats
        fill_table(self.ext_table, ["Extension", "Members", "Bytes", "Min", *(f"p{q}" for q in PERCENTILES),
                                    "Max", "Mean"],
                   [[r["ext"] or "(none)", r["count"], r["bytes"], r["min"], *(r[f"p{q}"] for q in PERCENTILES), r["max"],
                     r["mean"]] for r in stats.extension_rows()])
        self.heatmap.show_stats(stats)
        shard_rows = stats.shard_rows()
        fill_table(self.shard_table, ["Shard", "Rows", "Bytes", "Samples", *(e or "(none)" for e in stats.extensions)],
                   [[r["shard"], r["rows"], r["bytes"], r["samples"],
                     *(r["extensions"].get(e, 0) for e in stats.extensions)] for r in shard_rows])
        self._fill_labels()
        self.dims_plot.show_dims(stats.dims)
        top = sorted(stats.dims.exact.items(), key=lambda kv: (-kv[1], kv[0]))
        fill_table(self.dims_table, ["Width", "Height", "Images"], [[w, h, c] for (w, h), c in top[:200]])
        self.summary.setText(self._summary(stats))
        self.statsShown.emit(stats)

    def _fill_labels(self) -> None:
        stats = self.stats
        if stats is None:
            return
        totals = stats.label_totals()
        self.label_bars.show_totals(totals, stats.label_source)
        n = max(1, sum(totals.values()))
        if self.per_shard.isChecked():
            rows = [[shard, label, count] for shard, per in stats.label_per_shard().items()
                    for label, count in per.items()]
            fill_table(self.label_table, ["Shard", "Label", "Members"], rows)
        else:
            fill_table(self.label_table, ["Label", "Members", "Share"],
                       [[label, count, f"{100 * count / n:.1f} %"] for label, count in totals.items()])

    @staticmethod
    def _summary(stats: Any) -> str:
        parts = [f"{stats.n_rows:,} rows", f"{int(stats.ext_bytes.sum()):,} bytes", f"{len(stats.fids)} shard(s)"]
        if stats.n_samples is not None:
            parts.insert(1, f"{stats.n_samples:,} samples")
        if stats.label_source:
            parts.append(f"{stats.label_members:,} label members ({len(stats.label_totals()):,} labels"
                         + (f", {stats.label_missing:,} without the field" if stats.label_missing else "") + ")")
        if stats.dims.images:
            parts.append(f"{stats.dims.images:,} images" + (f" ({stats.dims.unreadable:,} unreadable)"
                                                            if stats.dims.unreadable else ""))
        if stats.missing_shards:
            parts.append(f"missing shards: {', '.join(stats.missing_shards[:3])}")
        state = "" if stats.complete else f" — {PHASES.get(stats.phase, stats.phase)}…"
        return " · ".join(parts) + state


PANELS = [StatsPanel]
