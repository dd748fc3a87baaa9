"""The plots panel's row picker: a searchable shard box and a payload-size range, then "Show these rows".

Both act on the statistics already computed (so the counts they show cost nothing);
finding the rows themselves is one more chunked pass in a worker, which the user asks
for with the button. A fold may hold thousands of shards, hence a box that filters its
list as the user types (superqt's QSearchableComboBox); sizes are chosen in the
histogram's own log₂ bins with a two-handled slider (superqt's QRangeSlider).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget
from superqt import QElidingLabel, QRangeSlider, QSearchableComboBox

from app.views.formats.taridx.plots_axes import human_size
from itarcore.progress import CancelToken, ProgressCallback, ProgressReporter

ALL_SHARDS = "All shards"


MAX_SIZE = (1 << 64) - 1


def size_range_of_bins(lo_bin: int, hi_bin: int) -> tuple[int, int]:
    """Sizes low..high (both inclusive) covered by histogram bins lo_bin..hi_bin.

    Bin 0 holds size 0 and bin k sizes 2^(k-1) .. 2^k - 1, as ``plots_panel.size_bin`` counts them.
    """
    low = 0 if lo_bin == 0 else 1 << (lo_bin - 1)
    high = 0 if hi_bin == 0 else min(MAX_SIZE, (1 << hi_bin) - 1)
    return low, high


def select_rows(source: Any, size_low: int, size_high: int, fid: int | None,
                progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                chunk_rows: int = 1 << 21) -> np.ndarray:
    """Rows with ``size_low <= size <= size_high`` (and in shard ``fid`` unless None), ascending.

    ``source`` is a TaridxIndex (chunks come from ``itarcore.rowpass``, pages released
    behind the pass) or a rows array (tests).
    """
    from itarcore.rowpass import iter_row_chunks

    if hasattr(source, "release_rows"):
        chunks = iter_row_chunks(source, chunk_rows, progress=progress, cancel=cancel)
    else:
        reporter = ProgressReporter(progress, len(source), "rows", cancel)
        chunks = _array_chunks(source, chunk_rows, reporter)
    found = []
    lo, hi = np.uint64(size_low), np.uint64(size_high)
    for first, part in chunks:
        size = part["size"]
        keep = (size >= lo) & (size <= hi)
        if fid is not None:
            keep &= part["fid"] == fid
        found.append(np.flatnonzero(keep) + first)
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


def _array_chunks(rows: np.ndarray, chunk_rows: int, reporter: ProgressReporter):
    for first in range(0, len(rows), chunk_rows):
        yield first, rows[first:first + chunk_rows]
        reporter.update(min(len(rows), first + chunk_rows))


class RowPicker(QWidget):
    """Shard box + size range + button; ``pickRequested(size_low, size_high, fid or -1, label)``, sizes inclusive."""

    pickRequested = Signal(object, object, int, str)  # sizes may pass 2^31: Python ints, not Qt's int
    rangeChanged = Signal(int, int)  # histogram bins lo, hi (inclusive)
    shardChanged = Signal(int)  # fid, -1 for all

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.shards = QSearchableComboBox(self)
        self.shards.setObjectName("shardPicker")
        self.shards.setToolTip("Type to search the shards by number or name")
        self.shards.setMinimumContentsLength(12)
        self.shards.setSizeAdjustPolicy(QSearchableComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.shards.currentIndexChanged.connect(self._on_shard)
        self.sizes = QRangeSlider(Qt.Orientation.Horizontal, self)
        self.sizes.setObjectName("sizeRange")
        self.sizes.setToolTip("Payload sizes, in the histogram's bins")
        self.sizes.setMinimumWidth(100)
        self.sizes.valueChanged.connect(self._on_range)
        self.summary = QElidingLabel(self)
        self.summary.setObjectName("pickSummary")
        self.summary.setMinimumWidth(60)
        self.show_button = QPushButton("Show these rows", self)
        self.show_button.setToolTip("Filter the rows tab to these rows (one pass over the rows)")
        self.show_button.clicked.connect(self._request)
        # two short lines rather than one long one: the panel stays narrow enough for a laptop's dock
        pick = QHBoxLayout()
        pick.setContentsMargins(0, 0, 0, 0)
        pick.addWidget(QLabel("Shard:", self))
        pick.addWidget(self.shards, 1)
        pick.addWidget(self.show_button)
        sizes = QHBoxLayout()
        sizes.setContentsMargins(0, 0, 0, 0)
        sizes.addWidget(QLabel("Size:", self))
        sizes.addWidget(self.sizes, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(pick)
        lay.addLayout(sizes)
        lay.addWidget(self.summary)
        self._hist: np.ndarray | None = None  # rows per size bin, all extensions
        self._rows_per_shard: np.ndarray | None = None
        self.setEnabled(False)

    def set_stats(self, size_counts: np.ndarray, rows_per_shard: np.ndarray, shard_names: list[str]) -> None:
        """``size_counts[k]`` rows in size bin k; one entry per shard (fid order)."""
        self._hist = np.asarray(size_counts, dtype=np.int64)
        self._rows_per_shard = np.asarray(rows_per_shard, dtype=np.int64)
        used = np.flatnonzero(self._hist)
        lo, hi = (int(used[0]), int(used[-1])) if len(used) else (0, 0)
        self.shards.blockSignals(True)
        self.shards.clear()
        # one addItems call: the searchable box rebuilds its completer on every add
        self.shards.addItems([ALL_SHARDS] + [f"{fid}: {name} ({int(n):,} rows)"
                                             for fid, (name, n) in enumerate(zip(shard_names, rows_per_shard))])
        self.shards.setCurrentIndex(0)
        self.shards.blockSignals(False)
        self.sizes.blockSignals(True)
        self.sizes.setRange(lo, hi)
        self.sizes.setValue((lo, hi))
        self.sizes.blockSignals(False)
        self.setEnabled(True)
        self._update_summary()

    @property
    def fid(self) -> int:
        return self.shards.currentIndex() - 1  # item 0 is "All shards"

    def bins(self) -> tuple[int, int]:
        lo, hi = self.sizes.value()
        return int(lo), int(hi)

    def label(self) -> str:
        low, high = size_range_of_bins(*self.bins())
        text = f"sizes {human_size(low)} to < {human_size(high + 1)}"
        return f"shard {self.fid}, {text}" if self.fid >= 0 else text

    def _on_shard(self, _index: int) -> None:
        self.shardChanged.emit(self.fid)
        self._update_summary()

    def _on_range(self, _value: Any) -> None:
        self.rangeChanged.emit(*self.bins())
        self._update_summary()

    def _update_summary(self) -> None:
        if self._hist is None:
            return
        lo, hi = self.bins()
        in_range = int(self._hist[lo:hi + 1].sum())
        # the histogram spans every shard: with one shard picked, its count is known once shown
        text = f"{self.label()}" + (f" · {in_range:,} rows" if self.fid < 0 else "")
        self.summary.setText(text)
        self.summary.setToolTip(text)

    def _request(self) -> None:
        low, high = size_range_of_bins(*self.bins())
        self.pickRequested.emit(low, high, self.fid, self.label())
