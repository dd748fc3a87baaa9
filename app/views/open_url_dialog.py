"""File → Open URL…: a URL (with history), fsspec storage options, anonymous access, the cache size.

Storage options are KEY=VALUE rows handed to fsspec (``endpoint_url``, ``key``, ``secret``,
``token`` …); values that parse as JSON are decoded, as ``--storage-option`` does. They
live for this session only: the URL history keeps display names (secrets stripped) and
options are never written to the settings file. Values of secret-looking keys are masked.
"""
from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.views.settings import CACHE_MB_KEY, add_url_history, cache_megabytes, url_history
from itarcore.storage import StorageError, is_url, parse_storage_options

EXAMPLE_URL = "s3://bucket/dataset/train.taridx"
# option keys whose values are credentials: typed into a masked field
SECRET_KEY = re.compile(r"(secret|token|password|passwd|key|credential|auth|session|sig)", re.IGNORECASE)


class OptionRow(QWidget):
    """One KEY = VALUE storage option; the value is masked when the key names a secret."""

    def __init__(self, key: str = "", value: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = QLineEdit(key, self)
        self.key.setPlaceholderText("key, e.g. endpoint_url")
        self.value = QLineEdit(value, self)
        self.value.setPlaceholderText("value (JSON or text)")
        self.remove = QToolButton(self, text="Remove")
        self.remove.setToolTip("Remove this option")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.key, 2)
        lay.addWidget(QLabel("=", self))
        lay.addWidget(self.value, 3)
        lay.addWidget(self.remove)
        self.key.textChanged.connect(self._mask)
        self._mask(key)

    def _mask(self, key: str) -> None:
        secret = bool(SECRET_KEY.search(key))
        self.value.setEchoMode(QLineEdit.EchoMode.Password if secret else QLineEdit.EchoMode.Normal)

    def pair(self) -> str | None:
        key = self.key.text().strip()
        return f"{key}={self.value.text()}" if key or self.value.text() else None


class OpenUrlDialog(QDialog):
    def __init__(self, settings: QSettings, parent: QWidget | None = None, url: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("openUrlDialog")
        self.setWindowTitle("Open URL")
        self.settings = settings
        self.url_box = QComboBox(self)
        self.url_box.setEditable(True)
        self.url_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.url_box.addItems(url_history(settings))
        self.url_box.setCurrentText(url)
        self.url_box.lineEdit().setPlaceholderText(EXAMPLE_URL)
        self.url_box.setMinimumWidth(520)
        self.anonymous = QCheckBox("Anonymous access (no credentials: public buckets)", self)
        self.rows_box = QVBoxLayout()
        self.rows_box.setSpacing(4)
        self.option_rows: list[OptionRow] = []
        add = QPushButton("Add option", self)
        add.clicked.connect(lambda: self.add_option())
        self.cache_mb = QSpinBox(self)
        self.cache_mb.setRange(0, 65_536)
        self.cache_mb.setSuffix(" MB")
        self.cache_mb.setValue(cache_megabytes(settings))
        self.cache_mb.setToolTip("Fetched payloads kept in memory, least recently used "
                                 "dropped first; 0 turns the cache off")
        self.problem = QLabel(self)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b3261e;")
        self.problem.hide()
        note = QLabel("Credentials also come the fsspec way: environment variables (AWS_PROFILE, "
                      "AWS_ACCESS_KEY_ID …) and fsspec/cloud config files. Options typed here are used "
                      "for this session only and are never saved.", self)
        note.setWordWrap(True)
        note.setEnabled(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel,
                                   self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.open_button = buttons.button(QDialogButtonBox.StandardButton.Open)

        form = QFormLayout()
        form.addRow("URL:", self.url_box)
        form.addRow("", self.anonymous)
        options = QVBoxLayout()
        options.addLayout(self.rows_box)
        options.addWidget(add, 0, Qt.AlignmentFlag.AlignLeft)
        form.addRow("Storage options:", options)
        form.addRow("Cache:", self.cache_mb)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addWidget(self.problem)
        lay.addWidget(buttons)
        self.add_option()
        self.url_box.setFocus()

    def add_option(self, key: str = "", value: str = "") -> OptionRow:
        row = OptionRow(key, value, self)
        row.remove.clicked.connect(lambda _=False, r=row: self._remove_option(r))
        self.option_rows.append(row)
        self.rows_box.addWidget(row)
        if self.isVisible():  # grow with the rows: a dialog that keeps its size squeezes every row's fields
            row.show()  # the layout would show it later, after this size is taken
            self.layout().activate()
            hint = self.sizeHint()
            self.resize(max(self.width(), hint.width()), max(self.height(), hint.height()))
        return row

    def _remove_option(self, row: OptionRow) -> None:
        self.option_rows.remove(row)
        row.deleteLater()

    @property
    def url(self) -> str:
        return self.url_box.currentText().strip()

    def storage_options(self) -> dict[str, Any]:
        """The options as fsspec takes them; StorageError names a row that is not KEY=VALUE."""
        options = parse_storage_options([p for r in self.option_rows if (p := r.pair()) is not None])
        if self.anonymous.isChecked():
            options["anon"] = True
        return options

    def accept(self) -> None:
        if not is_url(self.url):
            return self._refuse(f"“{self.url or '(empty)'}” is not a URL: expected scheme://…, "
                                f"e.g. {EXAMPLE_URL} (local files: File → Open…)")
        try:
            self.storage_options()
        except StorageError as exc:
            return self._refuse(str(exc))
        add_url_history(self.settings, self.url)
        self.settings.setValue(CACHE_MB_KEY, self.cache_mb.value())
        self.settings.sync()
        super().accept()

    def _refuse(self, problem: str) -> None:
        self.problem.setText(problem)
        self.problem.show()
