"""Export a subset of a fold: new tar shards with a fresh index, or a stem list / CSV (File → Export Subset…).

The samples come from the row grid's current filter, the selected audit findings, a
label, or a stem list file; ``itarcore.content.export_subset`` (or ``export_list``)
does the work as a job with progress and cancel, and its output appears whole or not
at all. "Open result" opens the new index in the browser.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.views.errors import show_error
from app.workers import JobWorker
from itarcore.content.export import export_list, export_subset
from itarcore.content.selection import Selection, read_stem_list

FORMATS = [("tar shards and a fresh .taridx", "tar"), ("stem list (one stem a line)", "stems"),
           ("CSV of the members", "csv")]


class ExportDialog(QDialog):
    """``row_sources``: name -> (members, rows or a Selection), e.g. the grid's current view."""

    openRequested = Signal(str)  # the exported index

    def __init__(self, dataset: Any, row_sources: dict[str, tuple[int, Any]], labels: list[str] | None = None,
                 label_field: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Export a subset of {dataset.fold}")
        self.dataset, self.row_sources, self.label_field = dataset, row_sources, label_field
        self.worker: JobWorker | None = None
        self.result_index: Path | None = None
        self.choice = QButtonGroup(self)
        form = QFormLayout()
        self.source_buttons: dict[str, QRadioButton] = {}
        for name, (count, _rows) in row_sources.items():
            self._source(name, f"{name} ({count:,} members)", enabled=count > 0)
        self.label_box = QComboBox(editable=True)
        self.label_box.addItems(labels or [])
        self.label_box.lineEdit().setPlaceholderText("a label value, e.g. 3")
        label_row = QHBoxLayout()
        label_row.addWidget(self._source("label", "samples with the label"))
        label_row.addWidget(self.label_box, 1)
        self.stems_edit = QLineEdit(placeholderText="a text file with one stem a line")
        browse_stems = QPushButton("Browse…")
        browse_stems.clicked.connect(self._pick_stems)
        stems_row = QHBoxLayout()
        stems_row.addWidget(self._source("stems", "samples listed in"))
        stems_row.addWidget(self.stems_edit, 1)
        stems_row.addWidget(browse_stems)
        sources = QVBoxLayout()
        for name in row_sources:
            sources.addWidget(self.source_buttons[name])
        sources.addLayout(label_row)
        sources.addLayout(stems_row)
        next(b for b in self.source_buttons.values() if b.isEnabled()).setChecked(True)

        self.format_box = QComboBox()
        for text, key in FORMATS:
            self.format_box.addItem(text, key)
        self.format_box.currentIndexChanged.connect(self._format_changed)
        self.output_edit = QLineEdit(str(Path(dataset.path).resolve().parent / f"{dataset.fold}-subset"))
        browse_out = QPushButton("Browse…")
        browse_out.clicked.connect(self._pick_output)
        out_row = QHBoxLayout()
        out_row.addWidget(self.output_edit, 1)
        out_row.addWidget(browse_out)
        self.fold_edit = QLineEdit(dataset.fold)
        self.shard_mb = QSpinBox(minimum=1, maximum=1 << 20, value=1024, suffix=" MB")
        form.addRow("Samples", sources)
        form.addRow("Write", self.format_box)
        form.addRow("Output", out_row)
        form.addRow("Fold name", self.fold_edit)
        form.addRow("Shard size", self.shard_mb)
        self.progress = QProgressBar()
        self.progress.hide()
        self.status = QLabel("Shards are named <fold>_NNNN.tar; members are copied byte for byte.")
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox()
        self.export_button = self.buttons.addButton("Export", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = self.buttons.addButton("Close", QDialogButtonBox.ButtonRole.RejectRole)
        self.open_button = self.buttons.addButton("Open result", QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.hide()
        self.export_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self._cancel_or_close)
        self.open_button.clicked.connect(self._open_result)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.resize(720, self.sizeHint().height())

    def _source(self, key: str, text: str, enabled: bool = True) -> QRadioButton:
        button = QRadioButton(text)
        button.setEnabled(enabled)
        self.choice.addButton(button)
        self.source_buttons[key] = button
        return button

    def _pick_stems(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Stem list", os.path.dirname(self.dataset.path))
        if path:
            self.stems_edit.setText(path)
            self.source_buttons["stems"].setChecked(True)

    def _pick_output(self) -> None:
        if self.format_box.currentData() == "tar":
            path = QFileDialog.getExistingDirectory(self, "Output folder (a new, empty one)")
        else:
            path, _ = QFileDialog.getSaveFileName(self, "Output file", self.output_edit.text())
        if path:
            self.output_edit.setText(path)

    def _format_changed(self) -> None:
        key = self.format_box.currentData()
        base = Path(self.output_edit.text())
        stem = base.name.split(".")[0] if base.name else f"{self.dataset.fold}-subset"
        self.output_edit.setText(str(base.with_name(stem + {"tar": "", "stems": ".txt", "csv": ".csv"}[key])))
        for w in (self.fold_edit, self.shard_mb):
            w.setEnabled(key == "tar")

    # -- the selection ----------------------------------------------------------------------------
    def selection(self) -> Selection | np.ndarray:
        """The chosen samples: explicit rows, or a core Selection. Raises ValueError when incomplete."""
        chosen = next(k for k, b in self.source_buttons.items() if b.isChecked())
        if chosen in self.row_sources:
            rows = self.row_sources[chosen][1]
            return rows if isinstance(rows, Selection) else np.sort(np.asarray(rows, dtype=np.int64))
        if chosen == "label":
            label = self.label_box.currentText().strip()
            if not label:
                raise ValueError("type or pick a label")
            return Selection(labels=[label], label_field=self.label_field, whole_samples=True)
        path = self.stems_edit.text().strip()
        if not path:
            raise ValueError("choose a stem list file")
        return Selection(stems=read_stem_list(path), whole_samples=True)

    # -- running ----------------------------------------------------------------------------------
    def start(self) -> None:
        if self.worker is not None:
            return
        try:
            selection = self.selection()
        except (ValueError, OSError) as exc:
            show_error(self, "Export subset", self.stems_edit.text(), exc)
            return
        key, output = self.format_box.currentData(), self.output_edit.text().strip()
        if key == "tar":
            worker = JobWorker(export_subset, self.dataset, selection, output, shard_size=self.shard_mb.value() << 20,
                               fold=self.fold_edit.text().strip() or None)
        else:
            worker = JobWorker(export_list, self.dataset, selection, output, as_csv=key == "csv")
        worker.progressed.connect(self._on_progress)
        worker.returned.connect(self._on_done)
        worker.errored.connect(lambda exc: (self.status.setText("The export failed: see the message."),
                                            show_error(self, "Export subset", output, exc)))
        worker.cancelled.connect(lambda: self.status.setText("Cancelled: nothing was written."))
        worker.finished.connect(self._on_finished)
        self.worker = worker
        self.export_button.setEnabled(False)
        self.cancel_button.setText("Cancel")
        self.open_button.hide()
        self.progress.setRange(0, 0)
        self.progress.show()
        self.status.setText("Exporting…")
        worker.start()

    def _on_progress(self, p: Any) -> None:
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(min(p.done, p.total))
        self.progress.setFormat(f"%p%  ({p.done:,} of {p.total:,} {p.unit})")

    def _on_done(self, result: Any) -> None:
        self.result_index = result.index
        where = result.index if result.index is not None else result.output
        shards = f" in {len(result.shards)} shard(s)" if result.shards else ""
        self.status.setText(f"Wrote {result.n_samples:,} samples ({result.n_rows:,} members){shards}: {where}")
        self.open_button.setVisible(result.index is not None)

    def _on_finished(self) -> None:
        self.worker = None
        self.progress.hide()
        self.export_button.setEnabled(True)
        self.cancel_button.setText("Close")

    def _cancel_or_close(self) -> None:
        if self.worker is not None:
            self.worker.quit()
        else:
            self.reject()

    def _open_result(self) -> None:
        if self.result_index is not None:
            self.openRequested.emit(str(self.result_index))
            self.accept()

    def done(self, code: int) -> None:
        if self.worker is not None:  # closing the window cancels the export; it leaves nothing behind
            self.worker.quit()
            self.worker.done_event.wait(30)
        super().done(code)


def open_export_dialog(window: Any) -> ExportDialog | None:
    """File → Export Subset…: row sources from the grid and the panels, labels from the statistics."""
    doc = window.document
    if doc is None or doc.format != "taridx":
        return None
    sources: dict[str, tuple[int, Any]] = {}
    tab = window.tabs_by_name.get("rows")
    if tab is not None:
        view = tab.model.view_rows  # None: no filter, every row (an empty Selection, no row array)
        sources["rows in the grid's current view"] = ((tab.table.n_rows, Selection()) if view is None
                                                      else (len(view), np.asarray(view)))
    labels, label_field = None, None
    for panel in window.panels:
        sources.update(getattr(panel, "export_row_sources", dict)())
        stats = getattr(panel, "stats", None)
        if stats is not None and getattr(stats, "label_source", None):
            labels, label_field = list(stats.label_totals()), panel.label_field()
    dialog = ExportDialog(doc.source, sources, labels, label_field, window)
    dialog.openRequested.connect(window.open_path)
    dialog.open()
    return dialog
