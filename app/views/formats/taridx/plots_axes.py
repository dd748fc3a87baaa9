"""The Plots panel's axes: log2 payload sizes, byte totals and shard ids, labelled for people."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" or n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


class SizeAxis(pg.AxisItem):
    """x axis in log2 units labelled as sizes (1 B, 1 KiB, …)."""

    def tickValues(self, minVal, maxVal, size):
        lo, hi = int(np.floor(minVal)), int(np.ceil(maxVal))
        step = max(1, (hi - lo) // 8 + 1)
        major = [v for v in range(lo, hi + 1) if v % step == 0 and v >= 0]
        return [(step, major)]

    def tickStrings(self, values, scale, spacing):
        return [human_size(2 ** int(v)) for v in values]


class ByteCountAxis(pg.AxisItem):
    """Linear axis of byte totals, labelled 12 KiB, 3.5 GiB, …"""

    def tickStrings(self, values, scale, spacing):
        return [human_size(max(float(v), 0.0)) for v in values]


class ShardAxis(pg.AxisItem):
    def tickStrings(self, values, scale, spacing):
        return [str(int(v)) if float(v).is_integer() else "" for v in values]
