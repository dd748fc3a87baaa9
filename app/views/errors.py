"""Error dialogs that name the file and the problem; never a traceback."""
from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from itarcore.errors import FormatError, ItarError


def describe_error(path: str, exc: BaseException) -> str:
    """A one-paragraph reading of ``exc`` for a person; the file is named once."""
    if isinstance(exc, FormatError):
        text = str(exc)
        prefix = f"{exc.path}: "
        return text.removeprefix(prefix)
    if isinstance(exc, ItarError):
        return str(exc).replace(f"{path}: ", "")
    if isinstance(exc, FileNotFoundError):
        return "the file does not exist"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "this is a folder, not a file"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    # unexpected: still one readable line, with the kind of failure
    return f"{type(exc).__name__}: {exc}"


def show_error(parent: QWidget | None, title: str, path: str, exc: BaseException | str) -> QMessageBox:
    """A non-modal warning box naming ``path``; returned so callers (and tests) can find it."""
    problem = exc if isinstance(exc, str) else describe_error(path, exc)
    box = QMessageBox(QMessageBox.Icon.Warning, title, "", QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("errorDialog")
    box.setTextFormat(Qt.TextFormat.PlainText)
    name = os.path.basename(path) if path else ""
    box.setText(f"Could not read {name}" if name else title)
    box.setInformativeText(f"{path}\n\n{problem}" if path else problem)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.show()
    return box
