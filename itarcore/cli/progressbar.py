"""A text progress bar for long CLI commands, fed by itarcore.progress reports."""
from __future__ import annotations

import shutil
import sys
from typing import TextIO

from ..progress import Progress


def _human_rate(rate: float, unit: str) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.1f}{suffix} {unit}/s"
    return f"{rate:.0f} {unit}/s"


class TextProgressBar:
    """Callable progress sink drawing one updating line on a terminal (silent otherwise)."""

    def __init__(self, label: str = "", stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._drawn = False

    def __call__(self, p: Progress) -> None:
        if not self.enabled:
            return
        width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 60))
        filled = int(width * min(1.0, p.fraction))
        eta = p.eta_seconds
        eta_text = f" ETA {eta:4.0f}s" if eta is not None and p.done < p.total else ""
        line = (
            f"\r{self.label}[{'#' * filled}{'.' * (width - filled)}] {p.done:,}/{p.total:,} {p.unit} "
            f"{_human_rate(p.rate, p.unit)}{eta_text} {p.current[-24:]}"
        )
        self.stream.write(line.ljust(self._last_len if self._drawn else 0))
        self._last_len = len(line)
        self.stream.flush()
        self._drawn = True

    _last_len = 0

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
