"""Thin Qt models over an IndexDiff's numpy arrays: the per-shard counts and the differing samples."""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from itarcore.diff import KIND_NAMES, SHARD_COLUMNS, IndexDiff, flag_names

Index = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class ShardCountsModel(QAbstractTableModel):
    """One row per shard (both folds, matched by suffix): old and new samples, and what changed."""

    HEADERS = ("Shard", "Old", "New", "Added", "Removed", "Changed", "Moved in", "Moved out")

    def __init__(self, diff: IndexDiff | None = None) -> None:
        super().__init__()
        self.diff = diff

    def set_diff(self, diff: IndexDiff | None) -> None:
        self.beginResetModel()
        self.diff = diff
        self.endResetModel()

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() or self.diff is None else len(self.diff.shard_names)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self.diff is None or not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col else None
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if col == 0:
            return self.diff.shard_names[row]
        return f"{int(self.diff.shard_counts[SHARD_COLUMNS[col - 1]][row]):,}"

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None


class DiffSamplesModel(QAbstractTableModel):
    """The kept differing samples, optionally of one kind; rows map to positions in ``diff.samples``."""

    HEADERS = ("Kind", "Stem", "Changes", "Old shard", "New shard", "Members (old → new)")

    def __init__(self, diff: IndexDiff | None = None) -> None:
        super().__init__()
        self.diff = diff
        self.positions = np.zeros(0, np.int64)
        self.set_diff(diff)

    def set_diff(self, diff: IndexDiff | None, kind: int = 0) -> None:
        self.beginResetModel()
        self.diff = diff
        if diff is None:
            self.positions = np.zeros(0, np.int64)
        else:
            self.positions = np.arange(len(diff.samples)) if not kind else diff.of_kind(kind)
        self.endResetModel()

    def position(self, row: int) -> int:
        return int(self.positions[row])

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.positions)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self.diff is None or not index.isValid():
            return None
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        pos, col = self.position(index.row()), index.column()
        rec = self.diff.samples[pos]
        if col == 0:
            return KIND_NAMES[int(rec["kind"])]
        if col == 1:
            return self.diff.stem_label(pos)
        if col == 2:
            return ", ".join(flag_names(int(rec["flags"])))
        if col in (3, 4):
            side = "old" if col == 3 else "new"
            return self.diff.shard_label(int(rec[f"{side}_shard"]), side) or "—"
        old, new = int(rec["old_members"]), int(rec["new_members"])
        return f"{old if rec['old_row'] >= 0 else '—'} → {new if rec['new_row'] >= 0 else '—'}"

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None
