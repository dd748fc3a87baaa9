"""The TACO "Header entries" panel: each entry, the member it points into, its status, and the edit dialog."""
from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.views.formats.taco.edit_dialog import TacoEditDialog
from app.views.panels import FormatPanel
from itarcore.document import Document
from itarcore.formats.taco import BAD_STATUSES, MAX_ENTRIES, TacoArchive

COLUMNS = ["#", "offset", "length", "points at", "status", "end"]  # the target first: docks are narrow
BAD_BRUSH = QBrush(QColor(255, 215, 205))


class TacoEntriesPanel(FormatPanel):
    title = "TACO header"

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(document, parent)
        self.taco: TacoArchive = document.source
        self.dialog: TacoEditDialog | None = None
        h, z = self.taco.header, self.taco.zip
        self.summary = QLabel(
            f"{h.count} of {MAX_ENTRIES} entries · header CRC-32 0x{h.payload_crc:08x} (local and central agree) · "
            f"{len(z.members)} members" + (" · ZIP64" if z.zip64 else ""))
        self.summary.setWordWrap(True)

        self.table = QTableWidget(h.count, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        for col, width in enumerate((28, 80, 70, 190, 100)):
            self.table.horizontalHeader().resizeSection(col, width)
        self.table.horizontalHeader().setStretchLastSection(True)
        self._fill()
        self.table.currentCellChanged.connect(lambda row, *_: self._on_current(row))

        self.empty_note = QLabel("This header has no entries. Use “Edit header entries…” to point some at members.")
        self.empty_note.setVisible(h.count == 0)
        self.empty_note.setWordWrap(True)
        self.edit_button = QPushButton("Edit header entries…")
        self.edit_button.setToolTip("Change the (offset, length) entries; written in place after confirmation")
        self.edit_button.clicked.connect(self.open_editor)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.edit_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty_note)
        layout.addLayout(buttons)

    def _fill(self) -> None:
        for row, t in enumerate(self.taco.targets):
            end = t.offset + t.length
            cells = [str(row), f"{t.offset:,}", f"{t.length:,}", t.member.name if t.member else "—", t.status,
                     f"{end:,}"]
            bad = t.status in BAD_STATUSES
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col in (0, 1, 2, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if bad:
                    item.setBackground(BAD_BRUSH)
                    item.setToolTip("this range is not the stored bytes of any member")
                self.table.setItem(row, col, item)

    def _on_current(self, row: int) -> None:
        if not 0 <= row < len(self.taco.targets):
            return
        t = self.taco.targets[row]
        size = max(0, min(t.length, self.taco.zip.file_size - t.offset))
        self.followBytes.emit(t.offset, size)
        if t.member is not None:
            member_row = self.taco.zip.members.index(t.member)
            self.selectRows.emit("members", np.array([member_row], dtype=np.int64))
        self.statusMessage.emit(f"entry {row}: {t.offset:,} + {t.length:,} → {t.status}"
                                + (f" ({t.member.name})" if t.member else ""))

    def on_row_selected(self, table_name: str, row: int) -> None:
        if table_name == "entries" and 0 <= row < self.table.rowCount():
            self.table.blockSignals(True)
            self.table.selectRow(row)
            self.table.blockSignals(False)
        elif table_name == "members" and 0 <= row < len(self.taco.zip.members):
            member = self.taco.zip.members[row]
            for r, t in enumerate(self.taco.targets):
                if t.member is member:
                    self.table.blockSignals(True)
                    self.table.selectRow(r)
                    self.table.blockSignals(False)
                    return

    def open_editor(self) -> TacoEditDialog:
        """Open the edit dialog (non-blocking); on a successful write the main window reopens the file."""
        self.dialog = TacoEditDialog(self.taco, self)
        self.dialog.updated.connect(self._on_updated)
        self.dialog.setWindowModality(Qt.WindowModality.WindowModal)
        self.dialog.show()
        return self.dialog

    def _on_updated(self, archive: TacoArchive) -> None:
        name = os.path.basename(archive.path)
        self.statusMessage.emit(f"Wrote {archive.header.count} header entries to {name}")
        self.reloadRequested.emit()

    def shutdown(self) -> None:
        if self.dialog is not None and self.dialog.worker is not None:
            self.dialog.worker.quit()


PANELS = [TacoEntriesPanel]
