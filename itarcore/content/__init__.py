"""What is inside a fold's payloads: statistics, duplicates and leaks, subset export.

``stats`` (extensions, shards, labels, image sizes as a job with partial results),
``labels`` (label sources: label members or a JSON field), ``imagedims`` (sizes from
image headers), ``dedup`` (exact duplicates and split leaks, xxh3-128), ``near``
(near-duplicate images, perceptual hash), ``selection`` (which members a subset
holds) and ``export`` (a subset as new shards and index, or a stem list), ``payloads``
(batched sequential payload reads shared by the passes).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dedup import DuplicateReport as DuplicateReport
    from .dedup import find_duplicates as find_duplicates
    from .export import export_list as export_list
    from .export import export_subset as export_subset
    from .selection import Selection as Selection
    from .selection import select_rows as select_rows
    from .stats import FoldStats as FoldStats
    from .stats import compute_stats as compute_stats

_WHERE = {"FoldStats": ".stats", "compute_stats": ".stats", "DuplicateReport": ".dedup",
          "find_duplicates": ".dedup", "export_subset": ".export", "export_list": ".export",
          "Selection": ".selection", "select_rows": ".selection"}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
