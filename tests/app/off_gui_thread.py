"""Deterministic checks that long work runs off the GUI thread, and that the GUI never waits for it.

``OffGuiThread.watch`` wraps a function wherever it was imported (every loaded ``itarcore``/``app``
module that holds it), records on which thread each call ran and can *hold* calls made on
other threads until ``release()``. While a pass is held the test drives the window: an event loop
that still answers proves the GUI thread does not wait for the pass; a call on the GUI thread is
recorded, never held (that would deadlock the test), and fails ``assert_none_on_gui_thread``.
No clock is read: a freeze shows as a held call the GUI thread waited for (``gui_waited``).
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any

HOLD_LIMIT_S = 60  # a held call lets go by itself after this, so a wrong GUI wait fails instead of hanging


class OffGuiThread:
    def __init__(self, monkeypatch) -> None:
        self.monkeypatch = monkeypatch
        self.calls: list[tuple[str, bool]] = []  # (function name, ran on the GUI thread)
        self.gate = threading.Event()
        self.holding: set[str] = set()
        self.held = threading.Semaphore(0)  # one token per call that reached the gate
        self.gui_waited: list[str] = []  # held calls that timed out: something waited for them

    def watch(self, module: Any, name: str, hold: bool = False) -> None:
        original = getattr(module, name)
        if hold:
            self.holding.add(name)
        wrapper = self._wrap(name, original)
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").split(".")[0] in ("itarcore", "app") and \
                    getattr(mod, name, None) is original:
                self.monkeypatch.setattr(mod, name, wrapper)

    def watch_method(self, cls: type, name: str, hold: bool = False) -> None:
        """As :meth:`watch`, for a method of ``cls`` (every instance's calls)."""
        if hold:
            self.holding.add(name)
        self.monkeypatch.setattr(cls, name, self._wrap(name, getattr(cls, name)))

    def _enter(self, name: str) -> None:
        on_gui = threading.current_thread() is threading.main_thread()
        self.calls.append((name, on_gui))
        if name in self.holding and not on_gui and not self.gate.is_set():
            self.held.release()
            if not self.gate.wait(HOLD_LIMIT_S):
                self.gui_waited.append(name)

    def _wrap(self, name: str, original: Callable) -> Callable:
        if inspect.isgeneratorfunction(original):
            @functools.wraps(original)
            def generator(*args: Any, **kwargs: Any) -> Any:
                self._enter(name)
                yield from original(*args, **kwargs)
            return generator

        @functools.wraps(original)
        def plain(*args: Any, **kwargs: Any) -> Any:
            self._enter(name)
            return original(*args, **kwargs)
        return plain

    def wait_held(self, qtbot, timeout_ms: int = 60_000) -> None:
        """Wait (running the event loop) until a held call has reached its gate."""
        qtbot.waitUntil(lambda: self.held.acquire(blocking=False) or any(gui for _, gui in self.calls),
                        timeout=timeout_ms)
        self.assert_none_on_gui_thread()

    def release(self) -> None:
        self.gate.set()

    def hold_again(self) -> None:
        """Hold the next calls too (after a release)."""
        self.gate.clear()

    def ran(self, name: str) -> bool:
        return any(n == name for n, _ in self.calls)

    def assert_none_on_gui_thread(self) -> None:
        on_gui = sorted({n for n, gui in self.calls if gui})
        assert not on_gui, f"ran on the GUI thread: {on_gui}"
        assert not self.gui_waited, f"the GUI thread waited for held work: {self.gui_waited}"


def event_loop_answers(qtbot) -> bool:
    """True once a zero-delay timer posted now has fired: the GUI thread is back in its event loop."""
    from PySide6.QtCore import QTimer

    fired: list[bool] = []
    QTimer.singleShot(0, lambda: fired.append(True))
    qtbot.waitUntil(lambda: bool(fired), timeout=10_000)
    return bool(fired)
