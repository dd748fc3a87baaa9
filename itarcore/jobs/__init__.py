"""Long-running tasks, written once: each takes ``progress=None, cancel=None`` keywords.

The CLI drives them with a text progress bar, the GUI with ``app.workers.JobWorker``.
"""
from __future__ import annotations

from ..audit import audit_index as audit_index
from ..audit import quick_check as quick_check
from ..diff import diff_indexes as diff_indexes
from .convert_tbl import convert_tar_to_tbl as convert_tar_to_tbl
from .index import IndexResult as IndexResult
from .index import index_fold as index_fold
from .index import index_folds as index_folds
