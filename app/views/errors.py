"""Error dialogs that name the file and the problem; never a traceback."""
from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from itarcore.errors import FormatError, ItarError


def _plain(value: object) -> str:
    """A value as a person reads it: raw bytes as a few hex pairs, not Python's b'...' escapes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return raw[:8].hex(" ") + (" …" if len(raw) > 8 else "") if raw else "nothing"
    return str(value)


def describe_format_error(exc: FormatError) -> str:
    """What is wrong, then where: "tar header checksum mismatch (expected 64762, found 0e 69 …), in
    field 'chksum' at byte 148"; the file is named by the caller."""
    what = exc.problem or f"unexpected {exc.field}"
    if exc.expected is not None and exc.found is not None:
        what += f" (expected {_plain(exc.expected)}, found {_plain(exc.found)})"
    elif exc.found is not None:
        what += f" (found {_plain(exc.found)})"
    where = f"field '{exc.field}'" + (f" at byte {exc.offset:,}" if exc.offset is not None else "")
    return f"{what}, in {where}"


def error_path(path: str, exc: BaseException) -> str:
    """The file the error is about: the one the exception names, else ``path``."""
    named = getattr(exc, "path", None) or getattr(exc, "filename", None)
    return str(named) if named and named != "<memory>" else path


def describe_error(path: str, exc: BaseException) -> str:
    """A one-paragraph reading of ``exc`` for a person; the file is named once."""
    if isinstance(exc, FormatError):
        return describe_format_error(exc)
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
    if not isinstance(exc, str):
        path = error_path(path, exc)
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
