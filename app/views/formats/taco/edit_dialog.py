"""The "Edit header entries…" dialog: up to 7 (offset, length) rows, checked, confirmed, written in a worker."""
from __future__ import annotations

import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.views.errors import show_error
from app.workers import JobWorker
from itarcore.formats.taco import BAD_STATUSES, MAX_ENTRIES, U64_MAX, TacoArchive, classify_entry, update_entries

COL_OFFSET, COL_LENGTH, COL_MEMBER, COL_STATUS = range(4)
BAD_BRUSH = QBrush(QColor(255, 215, 205))


def parse_u64(text: str) -> int:
    """A u64 typed by a person: decimal (commas and underscores allowed) or 0x hex.

    ValueError's message says what is wrong in plain words, never Python's "invalid literal for int()".
    """
    cleaned = text.strip().replace(",", "").replace("_", "")
    if not cleaned:
        raise ValueError("is empty: type a byte count such as 4096 or 0x1000")
    is_hex = cleaned.lower().startswith("0x")
    digits = cleaned[2:] if is_hex else cleaned.removeprefix("-")
    allowed = "0123456789abcdefABCDEF" if is_hex else "0123456789"
    if not digits or any(c not in allowed for c in digits):
        kind = "0x then hexadecimal digits 0–9 and a–f" if is_hex else "digits only, e.g. 4096 or 0x1000"
        raise ValueError(f"“{text.strip()}” is not a whole number ({kind})")
    value = int(digits, 16) if is_hex else int(cleaned, 10)
    if value < 0:
        raise ValueError(f"“{text.strip()}” is negative; byte offsets and lengths start at 0")
    if value > U64_MAX:
        raise ValueError(f"“{text.strip()}” is larger than the largest 64-bit value, {U64_MAX:,}")
    return value


class TacoEditDialog(QDialog):
    """Edits a copy of the entries; writes them only after validation and confirmation."""

    updated = Signal(object)  # the re-read TacoArchive after a successful write
    failed = Signal(object)  # the exception

    def __init__(self, taco: TacoArchive, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.taco = taco
        self.worker: JobWorker | None = None
        self.result_archive: TacoArchive | None = None
        self.setWindowTitle(f"Edit header entries — {os.path.basename(taco.path)}")
        self.resize(760, 420)

        intro = QLabel(f"Up to {MAX_ENTRIES} byte ranges (absolute file offsets). Saving rewrites only the "
                       "116 header payload bytes and the two CRC-32 copies, in place.")
        intro.setWordWrap(True)

        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["offset", "length", "points at", "status"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        for col, width in ((COL_OFFSET, 150), (COL_LENGTH, 130), (COL_MEMBER, 230)):
            header.resizeSection(col, width)
        header.setStretchLastSection(True)
        self.table.itemChanged.connect(self._revalidate)

        self.member_combo = QComboBox()
        for m in taco.zip.members:
            self.member_combo.addItem(f"{m.name}  ({m.data_offset:,} + {m.compressed_size:,})", m.index)
        self.member_combo.setCurrentIndex(min(1, len(taco.zip.members) - 1))  # skip TACO_HEADER itself
        self.fill_button = QPushButton("Fill row from member")
        self.fill_button.setToolTip("Set the selected row (or a new row) to the member's stored bytes")
        self.fill_button.clicked.connect(self.fill_from_member)
        self.add_button = QPushButton("Add entry")
        self.add_button.clicked.connect(lambda: self.add_row(0, 0))
        self.remove_button = QPushButton("Remove entry")
        self.remove_button.clicked.connect(self.remove_selected)
        tools = QHBoxLayout()
        tools.addWidget(self.add_button)
        tools.addWidget(self.remove_button)
        tools.addSpacing(16)
        tools.addWidget(QLabel("Member:"))
        tools.addWidget(self.member_combo, 1)
        tools.addWidget(self.fill_button)

        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setTextFormat(Qt.TextFormat.PlainText)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setText("Write to file…")
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addLayout(tools)
        layout.addWidget(self.problems)
        layout.addWidget(self.buttons)

        for offset, length in taco.header.entries:
            self.add_row(offset, length)
        self._revalidate()

    # ---- editing ---------------------------------------------------------------------------
    def add_row(self, offset: int, length: int) -> int:
        if self.table.rowCount() >= MAX_ENTRIES:
            return -1
        row = self.table.rowCount()
        self.table.blockSignals(True)
        self.table.insertRow(row)
        for col, value in ((COL_OFFSET, offset), (COL_LENGTH, length)):
            item = QTableWidgetItem(str(value))
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, col, item)
        for col in (COL_MEMBER, COL_STATUS):
            item = QTableWidgetItem("")
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.table.setItem(row, col, item)
        self.table.blockSignals(False)
        self.table.selectRow(row)
        self._revalidate()
        return row

    def remove_selected(self) -> None:
        row = self.table.currentRow()
        if row >= 0:
            self.table.removeRow(row)
            self._revalidate()

    def fill_from_member(self) -> None:
        member = self.taco.zip.members[self.member_combo.currentIndex()]
        row = self.table.currentRow()
        if row < 0:
            row = self.add_row(0, 0)
            if row < 0:
                return
        self.table.item(row, COL_OFFSET).setText(str(member.data_offset))
        self.table.item(row, COL_LENGTH).setText(str(member.compressed_size))

    def set_entry(self, row: int, offset: str, length: str) -> None:
        """Type into a row as a person would (used by tests and scripting)."""
        self.table.item(row, COL_OFFSET).setText(offset)
        self.table.item(row, COL_LENGTH).setText(length)

    # ---- validation ------------------------------------------------------------------------
    def entries(self) -> tuple[list[tuple[int, int]], list[str], list[str]]:
        """(entries, errors, warnings) for the rows as they stand."""
        entries: list[tuple[int, int]] = []
        errors: list[str] = []
        warnings: list[str] = []
        for row in range(self.table.rowCount()):
            pair = []
            for col, what in ((COL_OFFSET, "offset"), (COL_LENGTH, "length")):
                text = self.table.item(row, col).text()
                try:
                    pair.append(parse_u64(text))
                except ValueError as exc:
                    errors.append(f"entry {row} {what}: {exc}.")
            if len(pair) == 2:
                entries.append((pair[0], pair[1]))
                target = classify_entry(self.taco.zip, row, pair[0], pair[1])
                if target.status in BAD_STATUSES:
                    warnings.append(f"entry {row} ({pair[0]:,} + {pair[1]:,}): {target.status}")
        if self.table.rowCount() > MAX_ENTRIES:
            errors.append(f"at most {MAX_ENTRIES} entries")
        return entries, errors, warnings

    def _revalidate(self, *_: object) -> None:
        self.table.blockSignals(True)
        for row in range(self.table.rowCount()):
            try:
                offset = parse_u64(self.table.item(row, COL_OFFSET).text())
                length = parse_u64(self.table.item(row, COL_LENGTH).text())
            except ValueError:
                member, status, bad = "", "not a valid number", True
            else:
                target = classify_entry(self.taco.zip, row, offset, length)
                member = target.member.name if target.member else "—"
                status, bad = target.status, target.status in BAD_STATUSES
            self.table.item(row, COL_MEMBER).setText(member)
            self.table.item(row, COL_STATUS).setText(status)
            for col in range(4):
                self.table.item(row, col).setBackground(BAD_BRUSH if bad else QBrush())
        self.table.setVerticalHeaderLabels([str(i) for i in range(self.table.rowCount())])  # entries count from 0
        self.table.blockSignals(False)
        _, errors, warnings = self.entries()
        n = self.table.rowCount()
        self.add_button.setEnabled(n < MAX_ENTRIES)
        self.remove_button.setEnabled(n > 0)
        lines = [f"{n} of {MAX_ENTRIES} entries."] + errors + [f"Warning: {w}." for w in warnings]
        self.problems.setText("  ".join(lines))
        self.problems.setStyleSheet("color: #b00020;" if errors else ("color: #8a5a00;" if warnings else ""))
        self.save_button.setEnabled(not errors and self.worker is None)

    # ---- writing ---------------------------------------------------------------------------
    def confirm(self, entries: list[tuple[int, int]], warnings: list[str]) -> bool:
        listing = "\n".join(f"  [{i}] offset {o:,}  length {n:,}" for i, (o, n) in enumerate(entries)) or "  (none)"
        text = (f"Rewrite the TACO header of\n{self.taco.path}\nwith {len(entries)} entries?\n\n{listing}")
        if warnings:
            text += "\n\n" + "\n".join(f"Warning: {w}" for w in warnings)
        answer = QMessageBox.question(self, "Write header entries", text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def save(self) -> None:
        entries, errors, warnings = self.entries()
        if errors or self.worker is not None:
            return
        if not self.confirm(entries, warnings):
            return
        self._set_busy(True)
        self.worker = JobWorker(update_entries, self.taco.path, entries)
        self.worker.returned.connect(self._on_written)
        self.worker.errored.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)
        self.worker.start()

    def _on_written(self, archive: TacoArchive) -> None:
        self.result_archive = archive
        self.updated.emit(archive)

    def _on_error(self, exc: BaseException) -> None:
        box = show_error(self, "Update failed", self.taco.path, exc)
        box.setText(f"Could not update {os.path.basename(self.taco.path)}; the file was not changed"
                    if not isinstance(exc, OSError) else f"Could not update {os.path.basename(self.taco.path)}")
        self.failed.emit(exc)

    def _on_finished(self) -> None:
        self.worker = None
        self._set_busy(False)
        if self.result_archive is not None:
            self.accept()

    def _set_busy(self, busy: bool) -> None:
        for w in (self.table, self.add_button, self.remove_button, self.fill_button, self.member_combo):
            w.setEnabled(not busy)
        self.save_button.setEnabled(not busy)
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setEnabled(not busy)
        if not busy:
            self._revalidate()

    def reject(self) -> None:
        if self.worker is None:  # never walk away from a write in progress
            super().reject()
