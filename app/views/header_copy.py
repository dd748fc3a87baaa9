"""Copying header fields: Ctrl+C and a context menu (copy value, copy offset, show in hex)."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, Signal
from PySide6.QtGui import QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QMenu, QTableView

from itarcore.document import HeaderField


def fields_as_text(rows: list[tuple[str, int, str]]) -> str:
    """Tab-separated name, offset, value, one field a line (pastes into a spreadsheet as columns)."""
    return "\n".join(f"{name}\t{offset}\t{value}" for name, offset, value in rows)


class HeaderFieldActions(QObject):
    """Ctrl+C and a context menu on the header table; ``showInHex`` asks for a field's bytes."""

    showInHex = Signal(int, int)  # offset, size

    def __init__(self, view: QTableView) -> None:
        super().__init__(view)
        self.view = view
        view.installEventFilter(self)
        view.setContextMenuPolicy(view.contextMenuPolicy().CustomContextMenu)
        view.customContextMenuRequested.connect(self._menu)

    def _fields(self) -> list[HeaderField]:
        return list(getattr(self.view.model(), "fields", []))

    def selected_rows(self) -> list[int]:
        rows = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        current = self.view.currentIndex()
        return rows or ([current.row()] if current.isValid() else [])

    def value_text(self, row: int) -> str:
        """The Value column as shown (the model decides how a value reads)."""
        model = self.view.model()
        column = model.titles.index("Value")
        return str(model.data(model.index(row, column)))

    def selection_text(self) -> str:
        fields = self._fields()
        return fields_as_text([(fields[r].name, fields[r].offset, self.value_text(r)) for r in self.selected_rows()])

    def copy(self, text: str | None = None) -> None:
        text = self.selection_text() if text is None else text
        if text:
            QGuiApplication.clipboard().setText(text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Ctrl+C here means the selected fields, not the rows grid the window's Copy serves
        if isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Copy):
            if event.type() == QEvent.Type.ShortcutOverride:
                event.accept()
                return True
            if event.type() == QEvent.Type.KeyPress:
                self.copy()
                return True
        return False

    def _menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        if index.row() not in self.selected_rows():
            self.view.selectRow(index.row())
        menu = self.build_menu(index.row())
        menu.exec(self.view.viewport().mapToGlobal(pos))

    def build_menu(self, row: int) -> QMenu:
        f = self._fields()[row]
        menu = QMenu(self.view)
        n = len(self.selected_rows())
        menu.addAction(f"Copy {n} Fields" if n > 1 else "Copy Field", QKeySequence.StandardKey.Copy, self.copy)
        menu.addAction("Copy Value", lambda: self.copy(self.value_text(row)))
        menu.addAction(f"Copy Offset ({f.offset})", lambda: self.copy(str(f.offset)))
        menu.addSeparator()
        menu.addAction("Show in Hex", lambda: self.showInHex.emit(f.offset, f.size))
        return menu
