"""TBL panel: the selected sample's index entry, CRC status and metadata, and a full checksum verify."""
from __future__ import annotations

from PySide6.QtCore import QThread
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.views.errors import show_error
from app.views.panels import FormatPanel
from app.views.preview_widgets.tree import JsonTree
from app.workers import JobWorker
from itarcore.document import Document
from itarcore.document.tbl import CRC_LABELS, CRC_MISMATCH, CRC_OK, apply_verify_report
from itarcore.errors import ItarError
from itarcore.formats.tbl import TblFile, entry_flag_names, format_name
from itarcore.progress import Progress


class TblSamplePanel(FormatPanel):
    title = "TBL sample"

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.tbl: TblFile = document.source
        self.row = -1
        self.worker: JobWorker | None = None
        self.crc_status = document.table("samples").column("CRC status").values
        self.caption = QLabel("Select a sample in the samples table.")
        self.caption.setWordWrap(True)
        self.crc_label = QLabel("")
        self.crc_label.setWordWrap(True)  # a long text wraps; it never widens the window
        # short words: the three fit a laptop's dock (the tooltips say the rest)
        self.verify_one = QPushButton("Verify")
        self.verify_one.setToolTip("Check this sample's stored CRC-16 against its bytes")
        self.verify_one.clicked.connect(self.verify_selected)
        self.show_bytes = QPushButton("Stored bytes")
        self.show_bytes.setToolTip("Show this sample's stored bytes in the hex pane")
        self.show_bytes.clicked.connect(self._highlight_sample)
        self.show_entry = QPushButton("Index entry")
        self.show_entry.setToolTip("Show this sample's 24-byte index entry in the hex pane")
        self.show_entry.clicked.connect(self._highlight_entry)
        buttons = QHBoxLayout()
        for b in (self.verify_one, self.show_bytes, self.show_entry):
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.meta_caption = QLabel("")
        self.meta_caption.setWordWrap(True)  # a long text wraps; it never widens the window
        self.tree = JsonTree(self)
        self.verify_all = QPushButton("Verify all checksums")
        self.verify_all.clicked.connect(self.start_verify_all)
        self.cancel = QPushButton("Cancel")
        self.cancel.clicked.connect(self.cancel_verify)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m samples")
        self.verify_result = QLabel(self._summary_text())
        self.verify_result.setWordWrap(True)
        bottom = QHBoxLayout()
        bottom.addWidget(self.verify_all)
        bottom.addWidget(self.progress, 1)
        bottom.addWidget(self.cancel)
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.crc_label)
        layout.addLayout(buttons)
        layout.addWidget(self.meta_caption)
        layout.addWidget(self.tree, 1)
        layout.addLayout(bottom)
        layout.addWidget(self.verify_result)
        self._set_running(False)
        has_crc = self.tbl.has_checksums
        self.verify_all.setEnabled(has_crc and self.tbl.num_samples > 0)
        if not has_crc:
            self.verify_all.setToolTip("TBL v1 (or a v2 file without the checksum flag) stores no CRCs")
        self._show_nothing()

    # -- main window hooks --------------------------------------------------------------------
    def on_row_selected(self, table_name: str, row: int) -> None:
        if table_name == "samples" and 0 <= row < self.tbl.num_samples:
            self.show_sample(row)
        elif table_name == "metadata" and 0 <= row < len(self.tbl.metadata):
            self.show_sample(self.tbl.metadata[row].sample_index)

    def shutdown(self) -> None:
        worker = self.worker
        if worker is not None:
            worker.quit()
            for _ in range(1000):  # a verify batch ends quickly once cancelled
                if not worker.is_running:
                    break
                QThread.msleep(5)
        self.tree.clear()

    # -- one sample ---------------------------------------------------------------------------
    def _show_nothing(self) -> None:
        for b in (self.verify_one, self.show_bytes, self.show_entry):
            b.setEnabled(False)
        self.meta_caption.setText("")
        self.tree.clear()

    def show_sample(self, row: int) -> None:
        self.row = row
        t, e = self.tbl, self.tbl.entries[row]
        text = (f"<b>Sample {row:,}</b> — {format_name(int(e['format']))}, stored {int(e['size']):,} bytes "
                f"at offset {int(e['offset']):,}")
        if t.version == 2:
            flags = ", ".join(entry_flag_names(int(e["flags"]))) or "no flags"
            text += (f"; {int(e['uncompressed_size']):,} bytes uncompressed; {int(e['width'])} × {int(e['height'])}"
                     f"; {flags}")
        self.caption.setText(text)
        self.show_bytes.setEnabled(True)
        self.show_entry.setEnabled(True)
        self.verify_one.setEnabled(t.has_checksums)
        self._show_crc()
        self._show_metadata(row)

    def _show_crc(self) -> None:
        if self.row < 0:
            return
        status = CRC_LABELS[int(self.crc_status[self.row])]
        if not self.tbl.has_checksums:
            self.crc_label.setText("CRC-16: none (this file stores no checksums)")
            return
        stored = int(self.tbl.entries["crc16"][self.row])
        self.crc_label.setText(f"CRC-16/MODBUS: stored 0x{stored:04x} — <b>{status}</b>")

    def _show_metadata(self, row: int) -> None:
        blocks = self.tbl.metadata_for(row)
        if not blocks:
            self.meta_caption.setText("No metadata for this sample." if self.tbl.version == 2 else
                                      "TBL v1 has no metadata section.")
            self.tree.clear()
            return
        values = {}
        for k, block in enumerate(blocks):
            try:
                value = self.tbl.decode_metadata(block)
            except ItarError as exc:
                value = f"unreadable: {exc}"
            if isinstance(value, bytes):
                value = value.hex(" ") if len(value) <= 256 else value[:256].hex(" ") + " …"
            values[f"{block.type_name} block {k}"] = value
        self.meta_caption.setText(", ".join(f"{b.type_name} ({b.length:,} bytes at {b.offset:,})" for b in blocks))
        self.tree.set_value(values[next(iter(values))] if len(values) == 1 else values)

    def verify_selected(self) -> None:
        if self.row < 0:
            return
        try:
            ok = self.tbl.crc_ok(self.row)
        except ItarError as exc:
            ok = False
            show_error(self, "Sample cannot be decoded", self.tbl.path, exc)
        self.crc_status[self.row] = CRC_OK if ok else CRC_MISMATCH
        self._show_crc()
        self.statusMessage.emit(f"sample {self.row}: CRC {'ok' if ok else 'MISMATCH'}")

    def _highlight_sample(self) -> None:
        if self.row >= 0:
            e = self.tbl.entries[self.row]
            self.highlightBytes.emit(int(e["offset"]), int(e["size"]))

    def _highlight_entry(self) -> None:
        if self.row >= 0:
            self.highlightBytes.emit(self.tbl.entry_offset(self.row), self.tbl.entries.dtype.itemsize)

    # -- verify all ---------------------------------------------------------------------------
    def _summary_text(self) -> str:
        if not self.tbl.has_checksums:
            return f"This file stores no checksums (TBL v{self.tbl.version}); nothing to verify."
        counts = {label: int((self.crc_status == code).sum()) for code, label in enumerate(CRC_LABELS)}
        return "Checksums: " + ", ".join(f"{n:,} {label}" for label, n in counts.items() if n) if len(
            self.crc_status) else "No samples."

    def _set_running(self, running: bool) -> None:
        self.verify_all.setEnabled(not running and self.tbl.has_checksums)
        self.cancel.setVisible(running)
        self.progress.setVisible(running)

    def start_verify_all(self) -> None:
        if self.worker is not None:
            return
        self.progress.setRange(0, max(1, self.tbl.num_samples))
        self.progress.setValue(0)
        self._set_running(True)
        worker = JobWorker(self.tbl.verify)
        worker.progressed.connect(self._on_progress)
        worker.returned.connect(self._on_verified)
        worker.errored.connect(lambda exc: show_error(self, "Verify failed", self.tbl.path, exc))
        worker.cancelled.connect(lambda: self.verify_result.setText("Verify cancelled."))
        worker.finished.connect(self._on_finished)
        self.worker = worker
        worker.start()

    def cancel_verify(self) -> None:
        if self.worker is not None:
            self.worker.quit()

    def _on_progress(self, p: Progress) -> None:
        self.progress.setValue(p.done)

    def _on_verified(self, report: object) -> None:
        apply_verify_report(self.crc_status, report)
        bad = list(getattr(report, "bad_samples", []))
        header = getattr(report, "header_crc_ok", None)
        text = self._summary_text() + ("" if header is not False else "; header CRC-32 MISMATCH")
        self.verify_result.setText(text)
        self.statusMessage.emit(f"verified {getattr(report, 'checked', 0):,} samples: {len(bad):,} bad")
        if bad:
            import numpy as np

            self.selectRows.emit("samples", np.array(bad, dtype=np.int64))
        self._show_crc()

    def _on_finished(self) -> None:
        self.worker = None
        self._set_running(False)


PANELS = [TblSamplePanel]
