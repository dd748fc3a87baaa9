"""Views for decoded payloads, shared by the payload preview and the sample cards.

``make_view`` picks the widget for an ``itarcore.decoders.Decoded`` by its kind.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from .array import ArrayView
from .hexview import HexView
from .image import ImagePane
from .simple import LabelView, TableView, TextView
from .tree import JsonTree

__all__ = ["ArrayView", "HexView", "ImagePane", "JsonTree", "LabelView", "TableView", "TextView", "make_view"]


def make_view(decoded: Any, data: bytes | memoryview, compact: bool = False) -> QWidget:
    """The widget showing ``decoded`` (``data`` are the raw bytes, for the hex fallback)."""
    kind, value = decoded.kind, decoded.value
    if kind == "image":
        pane = ImagePane(readout=not compact)
        pane.set_image(value)
        return pane
    if kind == "json":
        tree = JsonTree(expand_depth=1 if compact else 2)
        tree.set_value(value)
        return tree
    if kind == "text":
        return TextView(value)
    if kind == "pickle":
        return TextView(value, monospace=True)
    if kind == "array":
        return ArrayView(value, compact=compact, labels=getattr(decoded, "role", "") == "labels")
    if kind == "label":
        return LabelView(value, compact=compact)
    if kind == "table":
        return TableView(value)
    hexview = HexView()
    hexview.set_data(data)
    return hexview
