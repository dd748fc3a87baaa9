"""Long-running tasks, written once: each takes ``progress=None, cancel=None`` keywords.

The CLI drives them with a text progress bar, the GUI with ``app.workers.JobWorker``.
Imported lazily by name, so running one job (``itarcore index``) loads only its own modules.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..audit import audit_index as audit_index
    from ..audit import quick_check as quick_check
    from ..content.dedup import find_duplicates as find_duplicates
    from ..content.export import export_subset as export_subset
    from ..content.stats import compute_stats as compute_stats
    from ..diff import diff_indexes as diff_indexes
    from .convert_tbl import convert_tar_to_tbl as convert_tar_to_tbl
    from .index import IndexResult as IndexResult
    from .index import index_fold as index_fold
    from .index import index_folds as index_folds
    from .index import update_index as update_index

_WHERE = {
    "audit_index": "..audit", "quick_check": "..audit", "convert_tar_to_tbl": ".convert_tbl",
    "IndexResult": ".index", "index_fold": ".index", "index_folds": ".index", "update_index": ".index",
    "diff_indexes": "..diff", "compute_stats": "..content.stats",
    "find_duplicates": "..content.dedup", "export_subset": "..content.export",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
