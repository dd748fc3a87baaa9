"""JSON as a collapsible tree: key, value (scalars) or size (containers), and type."""
from __future__ import annotations

import json
from typing import Any

from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

MAX_CHILDREN = 500  # per container; the rest is summarised in one "… more" item
MAX_NODES = 20_000  # a huge document stops growing the tree here (the hex view still has it all)


def _summary(value: Any) -> str:
    if isinstance(value, dict):
        return f"{{{len(value)} key{'s' if len(value) != 1 else ''}}}"
    if isinstance(value, list):
        return f"[{len(value)} item{'s' if len(value) != 1 else ''}]"
    if isinstance(value, str):  # as JSON writes it: "double quotes", \" and \n escapes
        return json.dumps(value, ensure_ascii=False) if len(value) < 300 else json.dumps(value[:300],
                                                                                         ensure_ascii=False) + "…"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _type_name(value: Any) -> str:
    for t, name in ((bool, "bool"), (dict, "object"), (list, "array"), (str, "string"), (int, "int"),
                    (float, "float")):
        if isinstance(value, t):
            return name
    return "null" if value is None else type(value).__name__


class JsonTree(QTreeWidget):
    def __init__(self, parent: QWidget | None = None, expand_depth: int = 2) -> None:
        super().__init__(parent)
        self.expand_depth = expand_depth
        self.setHeaderLabels(["Key", "Value", "Type"])
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self._nodes = 0

    def set_value(self, value: Any) -> None:
        self.clear()
        self._nodes = 0
        if isinstance(value, (dict, list)):
            self._fill(self.invisibleRootItem(), value)
        else:
            self._add(self.invisibleRootItem(), "(value)", value)
        self.expandToDepth(self.expand_depth - 1)
        self.resizeColumnToContents(0)
        self.resizeColumnToContents(2)

    def top_keys(self) -> list[str]:
        root = self.invisibleRootItem()
        return [root.child(i).text(0) for i in range(root.childCount())]

    def _fill(self, parent: QTreeWidgetItem, value: dict | list) -> None:
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for n, (key, child) in enumerate(pairs):
            if n >= MAX_CHILDREN or self._nodes >= MAX_NODES:
                QTreeWidgetItem(parent, [f"… {len(value) - n:,} more", "", ""])
                return
            self._add(parent, f"[{key}]" if isinstance(value, list) else str(key), child)

    def _add(self, parent: QTreeWidgetItem, key: str, value: Any) -> None:
        self._nodes += 1
        item = QTreeWidgetItem(parent, [key, _summary(value), _type_name(value)])
        if isinstance(value, str) and len(value) > 80:
            item.setToolTip(1, value[:2000])
        if isinstance(value, (dict, list)):
            self._fill(item, value)
