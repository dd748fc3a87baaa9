"""The samples panel's list: a window of the fold's samples, their stems read from tar headers as shown.

A QListView lays out every entry of its model on the GUI thread, so the model holds a
window of samples around the current one. Stems are read for visible entries only; a
remote fold's stems, and a local fold's whose pages are not in RAM, are read by a worker
(entries say "…" until they arrive); names in RAM are read at once.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt

from app.workers import JobWorker
from itarcore.errors import ItarError

# list entries shown at once: QListView lays out every entry of its model on the GUI thread
# (~6 us each), so the window stays small and re-bases around the current sample
WINDOW = 5_000
NAME_BATCH = 64  # names resolved per tar-header read burst
NAME_CACHE_LIMIT = 200_000


class SampleListModel(QAbstractListModel):
    """Samples ``base .. base + WINDOW`` of the fold; names resolved lazily and cached."""

    def __init__(self, dataset: Any, groups: Any, parent: Any = None) -> None:
        super().__init__(parent)
        self.dataset, self.groups = dataset, groups
        self.n_samples = int(groups.n_samples)
        self.base = 0
        self.names: dict[int, str] = {}  # sample -> stem, filled as entries become visible
        # a remote fold's names are tar headers on a server: read by a worker, "…" meanwhile
        self.background = bool(getattr(dataset.index, "is_remote", False))
        self._pending: set[int] = set()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else min(WINDOW, self.n_samples - self.base)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole) or not index.isValid():
            return None
        sample = self.base + index.row()
        cold = sample not in self.names and (self.background or sample in self._pending or
                                             not self.dataset.rows_in_ram(self._first_rows(self._batch(sample))))
        name = self._fetch_names(sample) if cold else self.stem(sample)
        if role == Qt.ItemDataRole.ToolTipRole:
            rows = self.groups.rows_of(sample)
            return f"sample {sample:,} · {len(rows)} member(s) · first row {int(rows[0]):,}"
        return f"{sample:,}  {name}"

    def _batch(self, sample: int) -> range:
        return range(sample, min(sample + NAME_BATCH, self.n_samples))

    def _first_rows(self, samples: range | list[int]) -> np.ndarray:
        return np.array([int(self.groups.rows_of(s)[0]) for s in samples], dtype=np.int64)

    def stem(self, sample: int) -> str:
        name = self.names.get(sample)
        if name is None:
            self.resolve(self._batch(sample))
            name = self.names.get(sample, "?")
        return name

    def resolve(self, samples: range | list[int]) -> None:
        todo = [s for s in samples if s not in self.names]
        if todo:
            self._store(self._names_of(todo))

    def _names_of(self, todo: list[int]) -> dict[int, str]:
        try:
            stems = self.dataset.stem_names(self._first_rows(todo))
        except (ItarError, OSError):  # a missing or damaged shard: show the hash instead
            stems = [""] * len(todo)
        # '' means the shard is missing: the hash still tells samples apart
        return {s: str(stem) or f"(keyhash {int(self.groups.keyhash[s]):016x})" for s, stem in zip(todo, stems)}

    def _store(self, names: dict[int, str]) -> None:
        if len(self.names) > NAME_CACHE_LIMIT:
            self.names.clear()
        self.names.update(names)

    def _fetch_names(self, sample: int) -> str:
        if sample not in self._pending:
            todo = [s for s in self._batch(sample) if s not in self.names and s not in self._pending]
            self._pending.update(todo)
            worker = JobWorker(self._names_of, todo, pass_progress=False)
            worker.returned.connect(self._names_arrived)  # a bound slot: dropped if this model is deleted
            worker.start()
        return "…"

    def _names_arrived(self, names: dict[int, str]) -> None:
        self._store(names)
        self._pending.difference_update(names)
        if self.rowCount():
            self.dataChanged.emit(self.index(0), self.index(self.rowCount() - 1))

    def stop(self) -> None:
        """The fold is closing: list nothing more (a paint after this reads no name)."""
        self.beginResetModel()
        self.n_samples = self.base = 0
        self.endResetModel()

    def ensure_visible(self, sample: int) -> int:
        """Re-base the window so ``sample`` is in it; returns its list row."""
        if not (self.base <= sample < self.base + WINDOW):
            self.beginResetModel()
            self.base = max(0, min(sample - WINDOW // 2, self.n_samples - WINDOW))
            self.endResetModel()
        return sample - self.base
