"""The values of a table's lazy columns read so far: a bounded cache that the grid paints from.

Qt-free, like the other models' helpers: the windowed model fills it from its reading thread's
answers (on the GUI thread) and from synchronous reads for copy and export.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from itarcore.document import Column

LAZY_CACHE_LIMIT = 500_000  # resolved lazy values kept (and searchable by the substring filter)


class LazyValues:
    """{source row: value} per lazy column, the oldest dropped past ``limit``; and the rows being read.

    ``col in values`` says whether column ``col`` is lazy; ``values[col]`` is its cache.
    """

    def __init__(self, columns: list[Column], limit: int = LAZY_CACHE_LIMIT) -> None:
        self._caches: dict[int, OrderedDict[int, Any]] = {i: OrderedDict() for i, c in enumerate(columns) if c.lazy}
        self.reading: dict[int, set[int]] = {i: set() for i in self._caches}  # source rows a worker is reading
        self.limit = limit

    def __contains__(self, col: int) -> bool:
        return col in self._caches

    def __getitem__(self, col: int) -> OrderedDict[int, Any]:
        return self._caches[col]

    def store(self, col: int, rows: np.ndarray, values: list[Any]) -> None:
        cache = self._caches[col]
        for r, v in zip(rows.tolist(), values):
            cache[r] = v
        while len(cache) > self.limit:
            cache.popitem(last=False)

    def unasked(self, col: int, rows: np.ndarray) -> np.ndarray:
        """Those of ``rows`` neither cached nor being read."""
        cache, reading = self._caches[col], self.reading[col]
        return np.asarray([r for r in rows.tolist() if r not in cache and r not in reading], dtype=np.int64)
