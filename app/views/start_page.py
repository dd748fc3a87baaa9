"""What the window shows before a file is open: the ways to start, recent files, a drop hint."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.style import app_icon
from app.views.settings import recent_files

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

PAGE_WIDTH = 620
DROP_HINT = "Or drop an index file (.taridx, .tacozip, .kas/.trees, .tbl) or a URL anywhere on this window."


class StartPage(QWidget):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("startPage")
        self.setAutoFillBackground(True)  # it lies over the empty docks
        self.w = window
        mark = QLabel(self)
        mark.setPixmap(app_icon().pixmap(QSize(56, 56)))
        title = QLabel("iTar Browser", self)
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.9)
        font.setBold(True)
        title.setFont(font)
        tagline = QLabel("Look inside TARIDX indexes and their tar shards, TACO, kastore/tskit and TBL files.", self)
        tagline.setWordWrap(True)
        head = QHBoxLayout()
        head.setSpacing(14)
        head.addWidget(mark, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(title, 1, Qt.AlignmentFlag.AlignVCenter)

        # one button per way in, each the same action as its menu item (shortcut shown beside it)
        self.buttons = QGridLayout()
        self.buttons.setHorizontalSpacing(12)
        actions = window.actions_
        choices: list[tuple[QAction, str]] = [(actions.open, "an index file on this computer")]
        open_url = getattr(actions, "open_url", None)  # File → Open URL…, where remote reading exists
        if isinstance(open_url, QAction):
            choices.append((open_url, "an index on a web server or in object storage"))
        choices += [(actions.demo, "a small generated fold to explore"),
                    (actions.build, "index a folder of tar shards")]
        for i, (action, what) in enumerate(choices):
            button = QPushButton(action.text().replace("&", ""), self)
            button.setObjectName(f"start:{action.text().replace('&', '')}")
            button.setMinimumWidth(180)
            button.clicked.connect(action.trigger)
            shortcut = action.shortcut().toString(action.shortcut().SequenceFormat.NativeText)
            note = QLabel(what + (f"  ({shortcut})" if shortcut else ""), self)
            note.setWordWrap(True)
            self.buttons.addWidget(button, i, 0)
            self.buttons.addWidget(note, i, 1)
        self.buttons.setColumnStretch(1, 1)

        recent_title = QLabel("Recent files", self)
        bold = recent_title.font()
        bold.setBold(True)
        recent_title.setFont(bold)
        self.recent = QListWidget(self)
        self.recent.setObjectName("startRecent")
        self.recent.setFrameShape(QFrame.Shape.StyledPanel)
        self.recent.itemActivated.connect(self._open_item)
        self.recent.itemClicked.connect(self._open_item)
        self.no_recent = QLabel("No files opened yet.", self)
        self.no_recent.setEnabled(False)
        self.drop_hint = QLabel(DROP_HINT, self)
        self.drop_hint.setObjectName("dropHint")
        self.drop_hint.setWordWrap(True)
        self.drop_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._style_drop_hint()

        column = QWidget(self)
        column.setMaximumWidth(PAGE_WIDTH)
        lay = QVBoxLayout(column)
        lay.setSpacing(8)
        lay.addStretch(1)  # the content sits compact in the middle; the space goes around it
        lay.addLayout(head)
        lay.addWidget(tagline)
        lay.addSpacing(14)
        lay.addLayout(self.buttons)
        lay.addSpacing(14)
        lay.addWidget(recent_title)
        lay.addWidget(self.recent)
        lay.addWidget(self.no_recent)
        lay.addSpacing(14)
        lay.addWidget(self.drop_hint)
        lay.addStretch(2)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(24, 12, 24, 12)
        outer.addStretch(1)
        outer.addWidget(column, 4)
        outer.addStretch(1)
        self.refresh()

    def _style_drop_hint(self) -> None:
        pal = self.palette()
        text, line = pal.color(QPalette.ColorRole.WindowText).name(), pal.color(QPalette.ColorRole.PlaceholderText).name()
        sheet = f"#dropHint {{ border: 2px dashed {line}; border-radius: 8px; padding: 14px; color: {text}; }}"
        if self.drop_hint.styleSheet() != sheet:  # setting it changes the palette again: avoid the loop
            self.drop_hint.setStyleSheet(sheet)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:  # the theme changed: colours from the new palette
            self._style_drop_hint()

    def refresh(self) -> None:
        """Re-read the recent files (the list changes each time a file opens)."""
        self.recent.clear()
        for path in recent_files(self.w.settings):
            exists = os.path.exists(path)
            item = QListWidgetItem(f"{os.path.basename(path)}    {os.path.dirname(path)}"
                                   + ("" if exists else "    (missing)"))
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            if not exists:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
            self.recent.addItem(item)
        has_any = self.recent.count() > 0
        self.recent.setVisible(has_any)
        self.no_recent.setVisible(not has_any)
        rows = min(max(self.recent.count(), 1), 6)
        row_height = self.recent.sizeHintForRow(0) if self.recent.count() else self.recent.fontMetrics().height() + 4
        self.recent.setFixedHeight(rows * row_height + 2 * self.recent.frameWidth() + 4)

    def _open_item(self, item: QListWidgetItem) -> None:
        path = item.data(Qt.ItemDataRole.UserRole)
        if path and item.flags() & Qt.ItemFlag.ItemIsEnabled:
            self.w.open_path(str(path))
