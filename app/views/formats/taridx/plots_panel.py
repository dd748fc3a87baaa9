"""Plots of a fold: payload sizes per extension (log-size histogram) and rows/bytes per shard.

The numbers come from one chunked pass of ``np.bincount`` over the rows array in a
worker, so a 100M-row index never blocks the GUI. The pass starts the first time
the panel is shown.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.views.formats.taridx.plots_axes import ByteCountAxis, ShardAxis, SizeAxis, human_size
from app.views.formats.taridx.plots_controls import RowPicker, select_rows
from app.views.panels import FormatPanel
from app.views.preview_widgets.theme import series_colour, style_plot
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.progress import CancelToken, ProgressCallback, ProgressReporter
from itarcore.rowpass import iter_row_chunks

N_SIZE_BINS = 66  # bin 0: empty payloads; bin k >= 1: sizes in [2**(k-1), 2**k)
CHUNK = 1 << 18  # rows per bincount pass: bincount holds the GIL, so keep each call short (and cancel quick)


@dataclass
class FoldStats:
    size_hist: np.ndarray  # (n_ext, N_SIZE_BINS) row counts
    rows_per_shard: np.ndarray  # (n_shards,) int64
    bytes_per_shard: np.ndarray  # (n_shards,) int64
    n_rows: int


def size_bin(sizes: np.ndarray) -> np.ndarray:
    """Histogram bin of each size: 0 for 0, else bit length (1 → 1, 2..3 → 2, 4..7 → 3, …)."""
    sizes = sizes.astype(np.uint64, copy=False)
    bins = np.zeros(sizes.shape, dtype=np.int64)
    nz = sizes > 0
    # frexp gives the exponent e with size = m·2**e, m in [0.5, 1): exactly the bit length
    bins[nz] = np.frexp(sizes[nz].astype(np.float64))[1]
    return bins


def bin_edges(k: int) -> tuple[int, int]:
    """[low, high) sizes of bin k."""
    return (0, 1) if k == 0 else (1 << (k - 1), 1 << k)


def _row_chunks(source: Any, progress: ProgressCallback | None, cancel: CancelToken | None):
    """Chunks of an index (pages released behind the pass, ``itarcore.rowpass``) or of a rows array."""
    if hasattr(source, "release_rows"):
        yield from (part for _, part in iter_row_chunks(source, CHUNK, progress=progress, cancel=cancel))
        return
    reporter = ProgressReporter(progress, len(source), unit="rows", cancel=cancel)
    for start in range(0, len(source), CHUNK):
        yield source[start:start + CHUNK]
        reporter.update(min(len(source), start + CHUNK))


def compute_fold_stats(source: Any, n_ext: int, progress: ProgressCallback | None = None,
                       cancel: CancelToken | None = None) -> FoldStats:
    """Per-extension size histogram and per-shard totals from rows with fields extid, fid, size.

    ``source`` is a TaridxIndex (the GUI: chunked, cancel checked and pages released
    between chunks) or a rows array. Shards are counted up to the highest fid seen
    (fid is u16, so at most 65,536 bins).
    """
    n = int(source.n_rows) if hasattr(source, "release_rows") else len(source)
    hist = np.zeros(max(n_ext, 1) * N_SIZE_BINS, dtype=np.int64)
    per_rows = np.zeros(1 << 16, dtype=np.int64)
    per_bytes = np.zeros(1 << 16, dtype=np.int64)
    for chunk in _row_chunks(source, progress, cancel):
        ext = np.clip(chunk["extid"].astype(np.int64), 0, max(n_ext, 1) - 1)
        fid = chunk["fid"].astype(np.int64)
        size = chunk["size"]
        hist += np.bincount(ext * N_SIZE_BINS + size_bin(size), minlength=hist.size)
        per_rows += np.bincount(fid, minlength=per_rows.size)
        # split the byte sum by magnitude so float64 weights stay exact at any realistic total
        low = (size.astype(np.uint64) & np.uint64(0xFFFFFF)).astype(np.float64)
        high = (size.astype(np.uint64) >> np.uint64(24)).astype(np.float64)
        per_bytes += np.bincount(fid, weights=low, minlength=per_bytes.size).astype(np.int64)
        per_bytes += np.bincount(fid, weights=high, minlength=per_bytes.size).astype(np.int64) << 24
    used = np.flatnonzero(per_rows)
    n_shards = int(used[-1]) + 1 if len(used) else 0
    return FoldStats(hist.reshape(max(n_ext, 1), N_SIZE_BINS)[:n_ext], per_rows[:n_shards], per_bytes[:n_shards], n)


NARROW_WIDTH = 560  # below this the plots stack (a laptop's dock is ~360 px)
# Shortest a plot gets: its title, axis and tick labels and a readable band of bars. Past that the plots
# scroll (a laptop's dock is ~600 px tall; three plots squeezed into it were 70 px each).
HIST_MIN_HEIGHT = 240
SHARD_MIN_HEIGHT = 170
QWIDGETSIZE_MAX = 16777215
# Each plot is built in its own turn of the event loop. A 0 ms single shot is a posted event, and Qt
# delivers every posted event before it looks at input and timers again, so the steps would run back to
# back; a 1 ms timer lets input, paints and timers in between.
NEXT_TURN_MS = 1


class PlotsPanel(FormatPanel):
    title = "Plots"
    computed = Signal()  # the plots show the finished statistics

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.dataset = document.source
        index = self.dataset.index
        self.extensions = [e or "(none)" for e in index.extensions]
        self.stats: FoldStats | None = None
        self._worker: JobWorker | None = None

        n_rows = int(self.dataset.n_rows)
        self.status = QLabel(f"Open this panel to count the sizes of {n_rows:,} rows per extension and shard.")
        self.status.setWordWrap(True)
        self.log_counts = QCheckBox("Log count axis")
        self.log_counts.toggled.connect(self._set_log_counts)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.log_counts)
        self.picker = RowPicker(self)
        self.picker.pickRequested.connect(self._pick_rows)
        self.picker.rangeChanged.connect(self._show_size_region)
        self.picker.shardChanged.connect(self._show_shard)
        self._pick_worker: JobWorker | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.addLayout(top)
        self._layout.addWidget(self.picker)
        self.hist_plot: pg.PlotWidget | None = None  # built on first show: three plots cost ~30 ms at open
        self.rows_plot: pg.PlotWidget | None = None
        self.bytes_plot: pg.PlotWidget | None = None
        self._pending: FoldStats | None = None  # counts that arrived before the plots were all built
        self._closed = False
        self._narrow: bool | None = None  # the layout last fitted: narrow (stacked) or wide
        self._legend_entries: list[str] = []  # one HTML entry per extension drawn

    def _build_plots(self) -> None:
        """The frame now; each plot in its own event-loop turn (a PlotWidget costs 20-40 ms to create)."""
        self.hist_plot = pg.PlotWidget(axisItems={"bottom": SizeAxis("bottom")})
        self.hist_plot.setTitle("Payload sizes per extension")
        self.hist_plot.setLabel("left", "rows")
        self.hist_plot.setLabel("bottom", "payload size (log₂ bins)")
        self.size_region = pg.LinearRegionItem(movable=False)  # the picker's size range
        self.size_region.setZValue(-10)
        self._style(self.hist_plot)
        # the legend sits beside the plot, never over the bars
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.legend.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        legend_scroll = QScrollArea()
        legend_scroll.setWidget(self.legend)
        legend_scroll.setWidgetResizable(True)
        legend_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._legend_scroll = legend_scroll
        self._bottom = QSplitter(Qt.Orientation.Horizontal)
        hist_box = QWidget()
        hist_layout = self._hist_layout = QHBoxLayout(hist_box)
        hist_layout.setContentsMargins(0, 0, 0, 0)
        hist_layout.addWidget(self.hist_plot, 1)
        hist_layout.addWidget(legend_scroll)
        self.hist_plot.setMinimumHeight(HIST_MIN_HEIGHT)
        self._bottom.setChildrenCollapsible(False)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(hist_box)
        split.addWidget(self._bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        # the plots keep their minimum heights and scroll when the dock is shorter than that
        self.plots_scroll = QScrollArea()
        self.plots_scroll.setWidget(split)
        self.plots_scroll.setWidgetResizable(True)
        self.plots_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.plots_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._layout.addWidget(self.plots_scroll, 1)
        self._wheel_scrolls_panel(self.hist_plot)
        self._fit_width()
        self._set_log_counts(self.log_counts.isChecked())
        QTimer.singleShot(NEXT_TURN_MS, self, self._build_shard_plots)

    def _build_shard_plots(self) -> None:
        if self.rows_plot is None:
            self.rows_plot = pg.PlotWidget(axisItems={"bottom": ShardAxis("bottom")})
            self.rows_plot.setTitle("Rows per shard")
            self.rows_plot.setLabel("bottom", "shard (fid)")
            self.rows_plot.setMinimumHeight(SHARD_MIN_HEIGHT)
            self._style(self.rows_plot)
            self._bottom.addWidget(self.rows_plot)
            self._wheel_scrolls_panel(self.rows_plot)
            QTimer.singleShot(NEXT_TURN_MS, self, self._build_shard_plots)
            return
        self.bytes_plot = pg.PlotWidget(axisItems={"bottom": ShardAxis("bottom"), "left": ByteCountAxis("left")})
        self.bytes_plot.setTitle("Payload bytes per shard")
        self.bytes_plot.setLabel("bottom", "shard (fid)")
        self.bytes_plot.setMinimumHeight(SHARD_MIN_HEIGHT)
        self._style(self.bytes_plot)
        self._bottom.addWidget(self.bytes_plot)
        self._wheel_scrolls_panel(self.bytes_plot)
        if self._pending is not None:  # the counts came first: drawn in the next turns
            stats, self._pending = self._pending, None
            self._show_stats(stats)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_width()

    def _wheel_scrolls_panel(self, plot: pg.PlotWidget) -> None:
        plot.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # when the plots scroll, the wheel scrolls them (a plot under the mouse would otherwise trap it);
        # Ctrl+wheel zooms the plot, as it zooms the gallery
        if event.type() == QEvent.Type.Wheel and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            bar = self.plots_scroll.verticalScrollBar()
            if bar.maximum() > 0:
                QApplication.sendEvent(bar, event)
                return True
        return super().eventFilter(watched, event)

    def _fit_width(self) -> None:
        """In a narrow dock (a laptop) the legend goes under the histogram and the shard plots one above the
        other, so no plot is narrower than its title."""
        if self.hist_plot is None:
            return
        narrow = self.width() < NARROW_WIDTH
        if narrow == self._narrow:
            return
        self._narrow = narrow
        box = QHBoxLayout.Direction
        self._hist_layout.setDirection(box.TopToBottom if narrow else box.LeftToRight)
        self._legend_scroll.setMinimumWidth(0 if narrow else 150)
        self._legend_scroll.setMaximumWidth(QWIDGETSIZE_MAX if narrow else 240)
        self._legend_scroll.setMaximumHeight(self.fontMetrics().height() * 3 + 8 if narrow else QWIDGETSIZE_MAX)
        self.legend.setWordWrap(narrow)
        self._bottom.setOrientation(Qt.Orientation.Vertical if narrow else Qt.Orientation.Horizontal)
        self._render_legend()

    def _render_legend(self) -> None:
        entries = self._legend_entries
        if not entries:
            self.legend.clear()
        elif self._narrow:  # one flowing paragraph under the plot
            self.legend.setText("<b>Extension (rows):</b> " + " &nbsp; ".join(entries))
        else:
            self.legend.setText("<b>Extension (rows)</b><br>" + "<br>".join(entries))

    def _style(self, plot: pg.PlotWidget) -> None:
        style_plot(plot, self)
        plot.showGrid(x=False, y=True, alpha=0.15)
        plot.setMouseEnabled(x=True, y=False)
        plot.setMenuEnabled(False)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        # a dock is shown for a moment while it is added and tabified: decide once events settle
        QTimer.singleShot(0, self, self._start_if_visible)  # dropped if deleted

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self.stats is None and self._worker is None and not self._closed:  # drawn: its tab is in front
            QTimer.singleShot(0, self, self._start_if_visible)  # dropped if deleted

    def _start_if_visible(self) -> None:
        if not self.visibleRegion().isEmpty() and self.stats is None and self._worker is None and not self._closed:
            self.refresh()

    def refresh(self) -> None:
        """(Re)compute the statistics in a worker."""
        if self._worker is not None:
            return
        index = self.dataset.index
        self.status.setText(f"Counting {index.n_rows:,} rows…")
        worker = JobWorker(compute_fold_stats, index, len(self.extensions))
        worker.progressed.connect(self._on_progress)  # bound slots: dropped by Qt if this panel is deleted
        worker.returned.connect(self._show_stats)
        worker.errored.connect(self._on_error)
        worker.finished.connect(self._worker_finished)
        self._worker = worker.start()
        if self.hist_plot is None:
            self._build_plots()  # while the worker counts

    def _on_progress(self, p) -> None:
        self.status.setText(f"Counting rows… {p.fraction:.0%}")

    def _on_error(self, exc: BaseException) -> None:
        self.status.setText(f"Could not compute the plots: {exc}")

    def shutdown(self) -> None:
        """Cancel without waiting: the pass stops at its next chunk, closing never waits for it."""
        self._closed = True
        for worker in (self._worker, self._pick_worker):
            if worker is not None:
                worker.detach()  # never emits into this closing panel
        self._worker = self._pick_worker = None

    def _worker_finished(self) -> None:
        self._worker = None

    def _show_stats(self, stats: FoldStats) -> None:
        if self._closed:
            return
        if self.bytes_plot is None:
            self._pending = stats
            return
        self.stats = stats
        QTimer.singleShot(NEXT_TURN_MS, self, lambda: self._draw_histogram_turn(stats))

    def _draw_histogram_turn(self, stats: FoldStats) -> None:
        if self._closed or stats is not self.stats:
            return
        self._draw_histogram(stats)
        QTimer.singleShot(NEXT_TURN_MS, self, lambda: self._finish_stats(stats))

    def _finish_stats(self, stats: FoldStats) -> None:
        """The shard plots and the picker, a turn after the histogram (each plot's first draw is 10-30 ms)."""
        if self._closed or stats is not self.stats:
            return
        self._draw_shards(stats)
        self.picker.set_stats(stats.size_hist.sum(axis=0), stats.rows_per_shard,
                              [self.dataset.shard_name(i) for i in range(len(stats.rows_per_shard))])
        total = int(stats.bytes_per_shard.sum())
        self.status.setText(f"{stats.n_rows:,} rows · {len(self.extensions)} extensions · "
                            f"{len(stats.rows_per_shard)} shards · {human_size(total)} of payloads")
        self.computed.emit()

    def _draw_histogram(self, stats: FoldStats) -> None:
        self.hist_plot.clear()
        self.hist_plot.addItem(self.size_region)
        self._legend_entries = []
        self._render_legend()
        entries = self._legend_entries
        used = np.nonzero(stats.size_hist.sum(axis=0))[0]
        if used.size == 0:
            return
        lo, hi = int(used.min()), int(used.max()) + 1
        # x in log2 units: bin k spans [k-1, k); the empty-payload bin sits just left of 1 byte
        edges = np.arange(lo - 1, hi, dtype=np.float64)
        order = np.argsort(-stats.size_hist.sum(axis=1), kind="stable")  # biggest first, drawn behind
        for ext_id in order:
            counts = stats.size_hist[ext_id, lo:hi]
            if not counts.any():
                continue
            colour = series_colour(int(ext_id))
            fill = pg.mkColor(colour)
            fill.setAlpha(70)
            self.hist_plot.plot(edges, counts.astype(np.float64), stepMode="center", fillLevel=0,
                                pen=pg.mkPen(colour, width=2), brush=fill)
            entries.append(f'<span style="color:{colour.name()}">&#9632;</span>&nbsp;'
                           f"{html.escape(self.extensions[ext_id])} <small>({int(counts.sum()):,})</small>")
        self._render_legend()
        self.hist_plot.setXRange(lo - 1, hi - 1, padding=0.02)

    def _draw_shards(self, stats: FoldStats) -> None:
        x = np.arange(len(stats.rows_per_shard))
        for plot, values in ((self.rows_plot, stats.rows_per_shard), (self.bytes_plot, stats.bytes_per_shard)):
            plot.clear()
            bars = pg.BarGraphItem(x=x, height=values.astype(np.float64), width=0.8,
                                   brush=series_colour(0), pen=pg.mkPen(None))
            plot.addItem(bars)
            plot.setXRange(-0.6, max(len(x) - 0.4, 0.6), padding=0)
        names = "\n".join(f"{i}: {self.dataset.shard_name(i)}" for i in range(min(len(x), 40)))
        if len(x) > 40:
            names += f"\n… {len(x) - 40:,} more"
        self.rows_plot.setToolTip(names)
        self.bytes_plot.setToolTip(names)

    # -- picking rows ---------------------------------------------------------------------------
    def _pick_rows(self, size_low: int, size_high: int, fid: int, label: str) -> None:
        if self._pick_worker is not None:
            return
        self.picker.show_button.setEnabled(False)
        worker = JobWorker(select_rows, self.dataset.index, size_low, size_high, None if fid < 0 else fid)
        worker.progressed.connect(lambda p: self.status.setText(f"Finding rows with {label}… {p.fraction:.0%}"))
        worker.returned.connect(lambda rows: self._picked(rows, label))
        worker.errored.connect(self._on_error)
        worker.finished.connect(self._pick_finished)
        self._pick_worker = worker.start()

    def _picked(self, rows: np.ndarray, label: str) -> None:
        self.status.setText(f"{len(rows):,} rows with {label}")
        self.filterRows.emit("rows", rows, label)

    def _pick_finished(self) -> None:
        self._pick_worker = None
        self.picker.show_button.setEnabled(True)

    def _show_size_region(self, lo_bin: int, hi_bin: int) -> None:
        if self.hist_plot is not None:
            self.size_region.setRegion((lo_bin - 1, hi_bin))  # bin k spans [k-1, k) on the x axis

    def _show_shard(self, fid: int) -> None:
        if self.hist_plot is None or self.stats is None:
            return
        for plot in (self.rows_plot, self.bytes_plot):
            for item in plot.getPlotItem().items:
                if isinstance(item, pg.BarGraphItem):
                    brushes = [pg.mkBrush(series_colour(1) if i == fid else series_colour(0))
                               for i in range(len(self.stats.rows_per_shard))]
                    item.setOpts(brushes=brushes)

    def _set_log_counts(self, on: bool) -> None:
        if self.hist_plot is not None:
            self.hist_plot.setLogMode(x=False, y=on)


PANELS = [PlotsPanel]
