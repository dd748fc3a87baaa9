"""A virtual grid of thumbnail cells: paints only the cells on screen, so 10⁸ items cost nothing to lay out.

QListView's icon mode lays out every item on the GUI thread (microseconds each: seconds
at a million). This view knows only the item count and the cell size; the scroll bar
counts grid rows, and a cell's picture comes from ``source`` (the gallery panel).
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent, QMouseEvent, QPainter, QPalette, QPen, QWheelEvent
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

PAD = 6
TEXT_LINES = 2  # stem, then label


class GalleryGrid(QAbstractScrollArea):
    currentChanged = Signal(int)  # item index
    activated = Signal(int)  # Enter or double-click
    zoomRequested = Signal(int)  # +1 / -1 (Ctrl+wheel)
    visibleChanged = Signal(int, int)  # first item, stop

    def __init__(self, source: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = source  # n_items(), cell(i) -> GalleryCell | None, badge(i) -> QColor | None
        self.thumb = 128
        self.current = -1
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.verticalScrollBar().valueChanged.connect(self._scrolled)
        self._last_visible = (-1, -1)
        self.line_h = self.fontMetrics().height()

    # -- geometry ------------------------------------------------------------------------
    def cell_size(self) -> QSize:
        return QSize(self.thumb + 2 * PAD, self.thumb + 2 * PAD + TEXT_LINES * self.line_h + 2)

    def columns(self) -> int:
        return max(1, self.viewport().width() // self.cell_size().width())

    def visible_grid_rows(self) -> int:
        return max(1, self.viewport().height() // self.cell_size().height())

    def visible_range(self) -> tuple[int, int]:
        cols = self.columns()
        first = self.verticalScrollBar().value() * cols
        rows = -(-self.viewport().height() // self.cell_size().height())
        return first, min(self.source.n_items(), first + rows * cols)

    def cell_rect(self, item: int, layout: tuple[int, int, int, int, int] | None = None) -> QRect:
        cols, w, h, x0, top = layout or self._layout()
        return QRect(x0 + (item % cols) * w, (item // cols - top) * h, w, h)

    def _layout(self) -> tuple[int, int, int, int, int]:
        """(columns, cell width, cell height, left margin, top grid row): computed once per paint."""
        cols, size = self.columns(), self.cell_size()
        x0 = (self.viewport().width() - cols * size.width()) // 2
        return cols, size.width(), size.height(), x0, self.verticalScrollBar().value()

    def item_at(self, x: int, y: int) -> int:
        cols, size = self.columns(), self.cell_size()
        x0 = (self.viewport().width() - cols * size.width()) // 2
        col = (x - x0) // size.width()
        if not 0 <= col < cols or x < x0:
            return -1
        item = (self.verticalScrollBar().value() + y // size.height()) * cols + col
        return item if 0 <= item < self.source.n_items() else -1

    def relayout(self) -> None:
        """The item count, the cell size or the width changed."""
        cols = self.columns()
        grid_rows = -(-self.source.n_items() // cols)
        bar = self.verticalScrollBar()
        bar.setRange(0, max(0, grid_rows - self.visible_grid_rows()))
        bar.setPageStep(self.visible_grid_rows())
        bar.setSingleStep(1)
        self._last_visible = (-1, -1)
        self.viewport().update()

    def set_thumb_size(self, size: int) -> None:
        keep = self.current if self.current >= 0 else self.visible_range()[0]
        self.thumb = size
        self.relayout()
        self.scroll_to(keep)

    def scroll_to(self, item: int) -> None:
        if item < 0:
            return
        row, bar = item // self.columns(), self.verticalScrollBar()
        if row < bar.value():
            bar.setValue(row)
        elif row >= bar.value() + self.visible_grid_rows():
            bar.setValue(row - self.visible_grid_rows() + 1)

    def set_current(self, item: int, emit: bool = True) -> None:
        n = self.source.n_items()
        if not n:
            return
        item = max(0, min(item, n - 1))
        changed = item != self.current
        self.current = item
        self.scroll_to(item)
        self.viewport().update()
        if changed and emit:
            self.currentChanged.emit(item)

    # -- events ----------------------------------------------------------------------------
    def _scrolled(self, _value: int) -> None:
        self.viewport().update()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.relayout()

    def paintEvent(self, _event: Any) -> None:
        p = QPainter(self.viewport())
        pal = self.palette()
        p.fillRect(self.viewport().rect(), pal.color(QPalette.ColorRole.Base))
        first, stop = self.visible_range()
        layout = self._layout()
        colors = (pal.color(QPalette.ColorRole.Highlight), pal.color(QPalette.ColorRole.AlternateBase),
                  pal.color(QPalette.ColorRole.HighlightedText), pal.color(QPalette.ColorRole.Text))
        for item in range(first, stop):
            self._paint_cell(p, item, pal, self.cell_rect(item, layout), colors)
        p.end()
        if (first, stop) != self._last_visible:
            self._last_visible = (first, stop)
            self.visibleChanged.emit(first, stop)

    def _paint_cell(self, p: QPainter, item: int, pal: QPalette, rect: QRect, colors: tuple) -> None:
        highlight, empty, highlighted_text, text = colors
        if item == self.current:
            p.fillRect(rect.adjusted(PAD // 2, PAD // 2, -PAD // 2, -PAD // 2), highlight)
        box = QRect(rect.x() + PAD, rect.y() + PAD, self.thumb, self.thumb)
        cell = self.source.cell(item)
        frame = box
        text_color = highlighted_text if item == self.current else text
        if cell is None:
            p.fillRect(box.adjusted(8, 8, -8, -8), empty)
        elif cell.image is not None:
            img = cell.image
            scaled = img.size().scaled(box.size(), Qt.AspectRatioMode.KeepAspectRatio)
            if scaled.width() > img.width() and img.width() >= box.width() // 2:
                scaled = img.size()  # never blow up a thumbnail that nearly fits: it only blurs
            target = QRect(0, 0, scaled.width(), scaled.height())
            target.moveCenter(box.center())
            p.drawImage(target, img)
            frame = target.adjusted(-3, -3, 3, 3)
        else:
            self._paint_placeholder(p, box, cell, pal)
        badge = self.source.badge(item)
        if badge is not None:
            p.setPen(QPen(badge, 4))
            p.drawRect(frame.adjusted(1, 1, -1, -1))
        if cell is not None:
            p.setPen(text_color)
            line = QRect(rect.x() + 2, box.bottom() + 3, rect.width() - 4, self.line_h)
            fm = self.fontMetrics()
            p.drawText(line, Qt.AlignmentFlag.AlignHCenter, fm.elidedText(cell.stem, Qt.TextElideMode.ElideMiddle,
                                                                           line.width()))
            if cell.label:
                p.drawText(line.translated(0, self.line_h), Qt.AlignmentFlag.AlignHCenter,
                           fm.elidedText(cell.label, Qt.TextElideMode.ElideRight, line.width()))

    def _paint_placeholder(self, p: QPainter, box: QRect, cell: Any, pal: QPalette) -> None:
        error = cell.kind == "error"
        p.fillRect(box, QColor(200, 60, 60, 60) if error else pal.color(QPalette.ColorRole.AlternateBase))
        p.setPen(pal.color(QPalette.ColorRole.Mid))
        p.drawRect(box.adjusted(0, 0, -1, -1))
        p.setPen(pal.color(QPalette.ColorRole.Text))
        font = QFont(self.font())
        font.setBold(True)
        p.setFont(font)
        head = QRect(box.x(), box.y() + 4, box.width(), self.line_h)
        p.drawText(head, Qt.AlignmentFlag.AlignHCenter, "damaged" if error else cell.kind)
        p.setFont(self.font())
        if self.thumb >= 64:
            body = box.adjusted(6, self.line_h + 8, -6, -4)
            p.drawText(body, Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap, cell.summary)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, cols = event.key(), self.columns()
        page = cols * self.visible_grid_rows()
        step = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1, Qt.Key.Key_Up: -cols, Qt.Key.Key_Down: cols,
                Qt.Key.Key_PageUp: -page, Qt.Key.Key_PageDown: page}.get(Qt.Key(key))
        if step is not None:
            self.set_current(max(0, self.current) + step if self.current >= 0 else 0)
        elif key == Qt.Key.Key_Home:
            self.set_current(0)
        elif key == Qt.Key.Key_End:
            self.set_current(self.source.n_items() - 1)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.current >= 0:
            self.activated.emit(self.current)
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal, Qt.Key.Key_Minus) and \
                event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoomRequested.emit(-1 if key == Qt.Key.Key_Minus else 1)
        else:
            super().keyPressEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        item = self.item_at(int(event.position().x()), int(event.position().y()))
        if item >= 0:
            self.set_current(item)
        self.setFocus()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        item = self.item_at(int(event.position().x()), int(event.position().y()))
        if item >= 0:
            self.activated.emit(item)

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoomRequested.emit(1 if event.angleDelta().y() > 0 else -1)
            event.accept()
        else:
            super().wheelEvent(event)
