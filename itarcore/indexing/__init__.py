"""Tar shards to TARIDX rows.

``indexer`` scans shards into member tables and merges them into a fold's rows;
``hashing`` is the spec's padded xxh64 of stems; ``jit`` decides when the optional
compiled (numba) route pays off and ``kernels`` holds the indexer's compiled kernels.
"""
from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = ("SHARD_PATTERN", "FoldIndex", "ShardMembers", "discover_folds", "index_shards", "merge_shards",
           "shard_members")
__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    # Lazy: formats.tar imports indexing.jit, and the indexer imports formats.tar.
    if name in _PUBLIC:
        return getattr(importlib.import_module(".indexer", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
