"""A bounded in-memory LRU of fetched remote bytes (payloads), shared by the browser's views.

Keys are tuples naming what the bytes are (the document, a table row, a byte range); the
budget counts the bytes held, least recently used dropped first. One item larger than the
whole budget is not kept. Thread-safe: workers store, the GUI thread looks up.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class ByteCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self.bytes_held = 0
        self.hits = self.misses = 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes_held -= old[1]
            if nbytes > self.max_bytes:
                return
            self._items[key] = (value, nbytes)
            self.bytes_held += nbytes
            self._trim()

    def set_limit(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = max(0, int(max_bytes))
            self._trim()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes_held = 0

    def __len__(self) -> int:
        return len(self._items)

    def _trim(self) -> None:
        while self.bytes_held > self.max_bytes and self._items:
            _, (_, nbytes) = self._items.popitem(last=False)
            self.bytes_held -= nbytes
