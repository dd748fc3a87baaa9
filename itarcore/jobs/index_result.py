"""What an index job reports for one fold (without numpy: the cached-fold route builds it too)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..indexing.cache import ShardCounts
from ..storage import FetchStats


@dataclass
class IndexResult:
    fold: str
    path: Path | str  # a URL when the index was written to a store
    shards: list[Path | str]  # URLs (credentials stripped) for remote shards
    n_rows: int
    n_stems: int
    extensions: list[tuple[str, int]]  # (name, row count) in id order
    crash_stems: list[str]
    contiguous: bool
    seconds: float
    total_bytes: int
    backup: Path | None = None
    warnings: list[str] = field(default_factory=list)
    counts: ShardCounts = field(default_factory=ShardCounts)  # shards reused from the cache, scanned, failed
    route: str = "numpy"  # the tar scan that ran: "compiled" (numba), "numpy", or "cache" (no scan)
    route_reason: str = ""
    fetched: FetchStats | None = None  # remote shards: bytes downloaded, requests, seconds waiting

    @property
    def members_per_second(self) -> float:
        return self.n_rows / self.seconds if self.seconds > 0 else 0.0

    def fetch_summary(self) -> dict[str, float | int] | None:
        """What indexing remote shards cost, for ``--json`` (None for local shards)."""
        if self.fetched is None:
            return None
        wall = self.seconds if self.seconds > 0 else float("inf")
        return {"bytes_fetched": self.fetched.bytes_fetched, "requests": self.fetched.requests,
                "fold_bytes": self.total_bytes,
                "fraction_fetched": round(self.fetched.bytes_fetched / self.total_bytes, 6) if self.total_bytes else 0,
                "fetch_bytes_per_second": round(self.fetched.bytes_fetched / wall),
                "indexed_bytes_per_second": round(self.total_bytes / wall),
                "seconds_waiting": round(self.fetched.seconds, 3)}

    def fetch_text(self) -> str:
        """One line for the summary, e.g. ``fetched 4.1 MB of 1.2 GB (0.3%) in 40 requests, 12 MB/s``."""
        f = self.fetch_summary()
        if f is None:
            return ""
        return (f"fetched {_size(f['bytes_fetched'])} of {_size(f['fold_bytes'])} "
                f"({100 * f['fraction_fetched']:.1f}%) in {f['requests']:,} requests, "
                f"{_size(f['fetch_bytes_per_second'])}/s fetched, {_size(f['indexed_bytes_per_second'])}/s indexed")


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


__all__ = ["IndexResult"]
