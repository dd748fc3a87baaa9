"""Which shards make up which fold: ``<fold>_<suffix>.tar``, fid = position of the sorted suffix.

Without numpy, so the CLI finds a fold's shards before deciding whether anything needs it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

SHARD_PATTERN = re.compile(r"^(?P<fold>.+)_(?P<suffix>[^_/]+)\.tar$")
MAX_SHARDS = 1 << 16  # fid is u16


def discover_folds(root: str | os.PathLike[str]) -> dict[str, list[Path]]:
    """Folds in ``root``: ``<fold>_<suffix>.tar`` grouped by fold, each list sorted by suffix (= fid order)."""
    folds: dict[str, list[tuple[str, Path]]] = {}
    for entry in os.scandir(root):
        match = SHARD_PATTERN.match(entry.name)
        if match and entry.is_file():
            folds.setdefault(match["fold"], []).append((match["suffix"], Path(entry.path)))
    return {fold: [p for _, p in sorted(items)] for fold, items in sorted(folds.items())}


__all__ = ["MAX_SHARDS", "SHARD_PATTERN", "discover_folds"]
