"""Open any supported file as a format-neutral :class:`Document`."""
from __future__ import annotations

import importlib
import os

from ..errors import FormatError
from ..formats import detect_format, unsupported_reason
from .base import Column, Document, HeaderField, Payload, Table

__all__ = ["Column", "Document", "HeaderField", "Payload", "Table", "open_document"]

# format name -> module under itarcore.document providing open_document(path, **options)
DOCUMENT_MODULES = {
    "taridx": "taridx",
    "kastore": "kastore",
    "tbl": "tbl",
    "taco": "taco",
}


def open_document(path: str | os.PathLike[str], **options: object) -> Document:
    """Detect the format by magic bytes and open ``path`` as a Document."""
    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt not in DOCUMENT_MODULES:
        raise FormatError(path, "magic", 0, unsupported_reason(path, fmt))
    module = importlib.import_module(f".{DOCUMENT_MODULES[fmt]}", __name__)
    return module.open_document(path, **options)
