"""Progress reports and cancel tokens shared by every long task.

A long task takes ``progress`` (a callable receiving :class:`Progress`) and
``cancel`` (a :class:`CancelToken`). The CLI draws a text bar from the reports; the
GUI forwards them as Qt signals from a worker thread.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import Cancelled


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    unit: str = "items"
    current: str = ""  # e.g. the shard being read
    rate: float = 0.0  # units per second since the task began
    message: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def eta_seconds(self) -> float | None:
        if self.rate <= 0 or self.total <= 0:
            return None
        return max(0.0, (self.total - self.done) / self.rate)


ProgressCallback = Callable[[Progress], None]


class CancelToken:
    """Thread-safe flag that long tasks poll between chunks of work."""

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self._parent = parent

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled("cancelled by user")

    def child(self) -> CancelToken:
        """A token cancelled with this one, that can also be cancelled alone (e.g. to stop sibling workers)."""
        return CancelToken(self)


@dataclass
class ProgressReporter:
    """Rate-limited helper: tasks call ``update`` freely; callbacks fire ~20×/s at most."""

    callback: ProgressCallback | None
    total: int
    unit: str = "items"
    cancel: CancelToken | None = None
    min_interval: float = 0.05
    _start: float = field(default_factory=time.perf_counter)
    _last: float = 0.0
    _last_note: float = float("-inf")
    done: int = 0

    def announce(self, current: str = "", message: str = "", force: bool = False) -> None:
        """Say what is being done before (or between) counted steps, e.g. cache look-ups.

        Rate-limited on its own clock, so it never delays the next ``update``.
        """
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        now = time.perf_counter()
        if self.callback is None or (not force and now - self._last_note < self.min_interval):
            return
        self._last_note = now
        self.callback(Progress(self.done, self.total, self.unit, current, 0.0, message))

    def update(self, done: int, current: str = "", message: str = "", force: bool = False) -> None:
        self.done = done
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        if self.callback is None:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.min_interval and done < self.total:
            return
        self._last = now
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        self.callback(Progress(done, self.total, self.unit, current, rate, message))

    def advance(self, n: int = 1, current: str = "") -> None:
        self.update(self.done + n, current)

    def finish(self, message: str = "") -> None:
        self.update(self.total, message=message, force=True)
