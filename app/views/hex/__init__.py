"""The hex viewer: a whole file scrolled lazily, go to offset, selection and copy, a value inspector."""
from app.views.hex.pane import HexPane

__all__ = ["HexPane"]
