"""File → Convert…: tar shards to a TBL file, run off the GUI thread with progress, rate and cancel."""
from __future__ import annotations

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.views.errors import show_error
from app.workers import JobWorker
from itarcore.jobs.convert_tbl import ConvertResult, convert_tar_to_tbl
from itarcore.progress import Progress


class ConvertDialog(QDialog):
    """Pick tars, an output file, v1/v2, LZ4 and metadata; convert with a progress bar."""

    conversionDone = Signal(object)  # ConvertResult, or the exception, or None when cancelled
    openResult = Signal(str)  # "Open result": the written TBL, to open in the browser

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Convert tar shards to TBL")
        self.worker: JobWorker | None = None
        self.result: ConvertResult | None = None
        self.message_box: QMessageBox | None = None
        self.inputs = QListWidget()
        self.inputs.setMinimumHeight(90)
        add, remove = QPushButton("Add tar files…"), QPushButton("Remove")
        add.clicked.connect(self._browse_inputs)
        remove.clicked.connect(lambda: [self.inputs.takeItem(self.inputs.row(i)) for i in self.inputs.selectedItems()])
        in_buttons = QVBoxLayout()
        in_buttons.addWidget(add)
        in_buttons.addWidget(remove)
        in_buttons.addStretch(1)
        in_row = QHBoxLayout()
        in_row.addWidget(self.inputs, 1)
        in_row.addLayout(in_buttons)
        self.output = QLineEdit()
        self.output.setPlaceholderText("output .tbl file")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_output)
        out_row = QHBoxLayout()
        out_row.addWidget(self.output, 1)
        out_row.addWidget(browse)
        self.v1, self.v2 = QRadioButton("v1 (TurboLoader 1.x: offsets and formats only)"), QRadioButton(
            "v2 (sizes, dimensions, CRCs, optional LZ4 and metadata)")
        self.v2.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.v1)
        group.addButton(self.v2)
        self.v2.toggled.connect(self._version_changed)
        self.lz4 = QCheckBox("LZ4-compress samples (kept only where smaller)")
        self.metadata = QCheckBox("Keep names and .json/.cls/.txt sidecars as JSON metadata")
        self.durable = QCheckBox("Finish only once the file is on disk (safe if the power fails right after)")
        self.durable.setChecked(True)
        self.durable.setToolTip("Unchecked, the conversion ends as soon as the file is complete in memory and the "
                                "system writes it to disk shortly after: faster on slow disks.")
        form = QFormLayout()
        form.addRow("Input tars:", in_row)
        form.addRow("Output:", out_row)
        form.addRow("Version:", self.v2)
        form.addRow("", self.v1)
        form.addRow("Options:", self.lz4)
        form.addRow("", self.metadata)
        form.addRow("", self.durable)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m samples")
        self.rate = QLabel("")
        self.rate.setWordWrap(True)  # a long text wraps; it never widens the window
        self.convert_button = QPushButton("Convert")
        self.convert_button.setDefault(True)
        self.convert_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Close")
        self.cancel_button.clicked.connect(self._cancel_or_close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.rate, 1)
        buttons.addWidget(self.convert_button)
        buttons.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addLayout(buttons)
        self.progress.setVisible(False)
        self.resize(620, 380)

    # -- inputs -------------------------------------------------------------------------------
    def add_inputs(self, paths: list[str]) -> None:
        present = {self.inputs.item(i).text() for i in range(self.inputs.count())}
        for p in paths:
            if p not in present:
                self.inputs.addItem(p)
        if paths and not self.output.text():
            first = paths[0]
            self.output.setText(os.path.splitext(first)[0] + ".tbl")

    def input_paths(self) -> list[str]:
        return [self.inputs.item(i).text() for i in range(self.inputs.count())]

    def _browse_inputs(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Tar shards", "", "Tar archives (*.tar);;All files (*)")
        self.add_inputs(paths)

    def _browse_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Output TBL", self.output.text(), "TBL files (*.tbl)")
        if path:
            self.output.setText(path)

    def _version_changed(self) -> None:
        v2 = self.v2.isChecked()
        for box in (self.lz4, self.metadata):
            box.setEnabled(v2)
            if not v2:
                box.setChecked(False)

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        inputs, output = self.input_paths(), self.output.text().strip()
        if not inputs or not output:
            show_error(self, "Nothing to convert", output, "Add at least one tar file and choose an output file.")
            return
        if os.path.exists(output) and not self.confirm_overwrite(output):
            return
        self.result = None
        self.progress.reset()  # nothing of the previous run shows
        self.progress.setFormat("")
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)  # busy until the header scan gives the total
        self.rate.setText("scanning tar headers…")
        self.convert_button.setEnabled(False)
        self.cancel_button.setText("Cancel")
        worker = JobWorker(convert_tar_to_tbl, inputs, output, version=2 if self.v2.isChecked() else 1,
                           lz4=self.lz4.isChecked(), metadata_from="json" if self.metadata.isChecked() else None,
                           durable=self.durable.isChecked())
        worker.progressed.connect(self._on_progress)
        worker.returned.connect(self._on_result)
        worker.errored.connect(self._on_error)
        worker.cancelled.connect(self._on_cancelled)
        worker.finished.connect(self._on_finished)
        self.worker = worker
        worker.start()

    def confirm_overwrite(self, output: str) -> bool:
        answer = QMessageBox.question(
            self, "Replace file?",
            f"{os.path.basename(output)} already exists in {os.path.dirname(os.path.abspath(output))}.\n"
            "Converting replaces it (only once the new file is complete).",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def _cancel_or_close(self) -> None:
        if self.worker is not None:
            self.worker.quit()
            self.rate.setText("cancelling…")
        else:
            self.reject()

    def _on_progress(self, p: Progress) -> None:
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(p.done)
        self.progress.setFormat(f"{p.done:,} / {p.total:,} samples")  # %v / %m has no thousands separators
        eta = p.eta_seconds
        shard = f"{os.path.basename(p.current)}: " if p.current and self.inputs.count() > 1 else ""
        self.rate.setText(f"{shard}{p.rate:,.0f} samples/s" + (f", about {eta:.0f} s left" if eta else ""))

    def _on_result(self, result: ConvertResult) -> None:
        self.result = result
        self.rate.setText(f"done: {result.rate:,.0f} samples/s")
        kinds = ", ".join(f"{n:,} {k}" for k, n in result.formats.items()) or "no samples"
        self.message_box = QMessageBox(QMessageBox.Icon.Information, "Conversion finished",
                                       f"Wrote {result.output}", QMessageBox.StandardButton.Ok, self)
        self.message_box.setObjectName("convertResult")
        self.message_box.setInformativeText(
            f"TBL v{result.version}: {result.num_samples:,} samples ({kinds}), {result.bytes_out:,} bytes"
            + (f", {result.compressed:,} stored as LZ4" if result.compressed else "")
            + (f"; {result.skipped:,} other members skipped" if result.skipped else "")
            + f".\n{result.seconds:.2f} s, {result.rate:,.0f} samples/s.")
        open_button = self.message_box.addButton("Open result", QMessageBox.ButtonRole.AcceptRole)
        open_button.setObjectName("openResult")
        open_button.clicked.connect(lambda _=False, p=str(result.output): self._open_result(p))
        self.message_box.show()
        self.conversionDone.emit(result)

    def _open_result(self, path: str) -> None:
        self.openResult.emit(path)
        self.accept()

    def _on_error(self, exc: BaseException) -> None:
        self.rate.setText("failed")
        # the file the error is about: an input tar (named by the error) or the output
        self.message_box = show_error(self, "Conversion failed", self.output.text(), exc)
        self.conversionDone.emit(exc)

    def _on_cancelled(self) -> None:
        self.rate.setText("cancelled; no output written")
        self.conversionDone.emit(None)

    def _on_finished(self) -> None:
        self.worker = None
        self.convert_button.setEnabled(True)
        self.cancel_button.setText("Close")
        self.progress.setRange(0, max(1, self.progress.maximum()))

    def reject(self) -> None:  # Esc / close while running cancels first
        if self.worker is not None:
            self.worker.quit()
            return
        super().reject()
