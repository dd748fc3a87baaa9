"""Painting the hex view: a header row, then per line the offset, the hex pairs and the ASCII.

Each line is two text runs (hex, ASCII) plus one run per coloured span, so a screen of
60 lines costs a few hundred draw calls, not one per byte.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette

from app.views.hex.model import BYTES_PER_LINE, ascii_text, dim_split, hex_column, hex_text

PAD = 6  # pixels left of the offsets column and right of the ASCII column

if TYPE_CHECKING:
    from app.views.hex.widget import HexWidget


def paint_view(view: HexWidget) -> None:
    p = QPainter(view.viewport())
    pal = view.palette()
    p.fillRect(view.viewport().rect(), pal.color(QPalette.ColorRole.Base))
    p.setFont(view.font())
    dim = pal.color(QPalette.ColorRole.PlaceholderText)
    text = pal.color(QPalette.ColorRole.Text)
    _paint_header(view, p, pal, dim)
    n = view.visible_lines() + 1  # the last, partly shown line too
    first = view.top * BYTES_PER_LINE
    data = view.read(first, n * BYTES_PER_LINE)
    if data is None or view.read_error:
        p.setPen(text if view.read_error else dim)
        note = view.read_error or f"Reading bytes 0x{first:x}–0x{first + n * BYTES_PER_LINE - 1:x}…"
        p.drawText(QRectF(PAD, view.lh, view.viewport().width() - 2 * PAD, view.viewport().height() - view.lh),
                   Qt.TextFlag.TextWordWrap, note)
        return
    mark = pal.color(QPalette.ColorRole.Highlight)
    mark.setAlpha(70)
    spans = [(view.highlight, mark, None), (view.selection(), pal.color(QPalette.ColorRole.Highlight),
                                            pal.color(QPalette.ColorRole.HighlightedText))]
    x0 = view._col_x(0)
    for k in range(0, len(data), BYTES_PER_LINE):
        offset = first + k
        y = view.lh + (k // BYTES_PER_LINE) * view.lh
        baseline = y + view.ascent + 1
        p.setPen(dim)
        p.drawText(QPointF(x0, baseline), f"{offset:0{view.digits}x}")
        _paint_bytes(view, p, x0, offset, data[k:k + BYTES_PER_LINE], y, (text, dim), spans)
    _paint_cursor(view, p, pal)


def _paint_header(view: HexWidget, p: QPainter, pal: QPalette, dim: QColor) -> None:
    p.fillRect(QRectF(0, 0, view.viewport().width(), view.lh), pal.color(QPalette.ColorRole.AlternateBase))
    p.setPen(dim)
    y = view.ascent + 1
    p.drawText(QPointF(view._col_x(0), y), "Offset")
    p.drawText(QPointF(view._col_x(view.hex_col), y), hex_text(bytes(range(BYTES_PER_LINE))))
    p.drawText(QPointF(view._col_x(view.ascii_col), y), "ASCII")
    p.setPen(pal.color(QPalette.ColorRole.Mid))
    p.drawLine(0, view.lh - 1, view.viewport().width(), view.lh - 1)


def _draw_run(p: QPainter, x0: float, cw: float, baseline: float, run: str) -> None:
    # text costs per character, spaces included: draw only from the first to the last glyph
    body = run.strip()
    if body:
        p.drawText(QPointF(x0 + (len(run) - len(run.lstrip())) * cw, baseline), body)


def _paint_bytes(view: HexWidget, p: QPainter, x0: float, offset: int, chunk: bytes, y: float,
                 pens: tuple[QColor, QColor], spans) -> None:
    cw, lead = view.cw, " " * view.hex_col
    hex_bright, hex_dim, ascii_bright, ascii_dim = dim_split(chunk)
    runs = [lead + hex_bright + "  " + ascii_bright, lead + hex_dim + "  " + ascii_dim]  # same columns
    selected = []
    for (start, end), fill, pen in spans:
        a, b = max(start, offset) - offset, min(end, offset + len(chunk)) - offset
        if a >= b:
            continue
        hx0, hx1 = view.hex_col + hex_column(a), view.hex_col + hex_column(b - 1) + 2
        for c0, c1 in ((hx0, hx1), (view.ascii_col + a, view.ascii_col + b)):
            p.fillRect(QRectF(x0 + c0 * cw, y, (c1 - c0) * cw, view.lh), fill)
            if pen is not None:
                selected.append((c0, c1, pen))
                runs = [r[:c0] + " " * (c1 - c0) + r[c1:] for r in runs]  # drawn once, in the selection's pen
    baseline = y + view.ascent + 1
    for pen, run in zip(pens, runs):
        p.setPen(pen)
        _draw_run(p, x0, cw, baseline, run)
    if selected:
        line = lead + hex_text(chunk) + "  " + ascii_text(chunk)
        for c0, c1, pen in selected:
            p.setPen(pen)
            _draw_run(p, x0, cw, baseline, " " * c0 + line[c0:c1])


def _paint_cursor(view: HexWidget, p: QPainter, pal: QPalette) -> None:
    if view.file_size == 0:
        return
    color = pal.color(QPalette.ColorRole.Text if view.hasFocus() else QPalette.ColorRole.Mid)
    p.setPen(color)
    for ascii in (False, True):
        rect = view.byte_rect(view.caret, ascii)
        if rect.bottom() > view.lh and rect.top() < view.viewport().height():
            p.drawRect(rect.adjusted(0, 0, -1, -1))
