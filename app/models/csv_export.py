"""Write a grid's rows (filtered and sorted) to CSV, as a worker job with progress and cancel."""
from __future__ import annotations

import csv
import os
from collections.abc import Callable

import numpy as np

from itarcore.document import Table
from itarcore.progress import CancelToken, ProgressReporter

EXPORT_CHUNK = 50_000


def export_csv(table: Table, view_rows: np.ndarray | None, path: str | os.PathLike[str],
               progress: Callable | None = None, cancel: CancelToken | None = None) -> int:
    """Write ``view_rows`` (None = every row) of ``table`` to ``path``; returns the row count.

    Values are written as the grid shows them (enum labels, hex keys); lazy columns
    are resolved chunk by chunk. A cancelled export removes its partial file.
    """
    n = table.n_rows if view_rows is None else len(view_rows)
    report = ProgressReporter(progress, n, "rows", cancel)
    formatters = [c.format for c in table.columns]
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["row"] + [c.title for c in table.columns])
            for start in range(0, n, EXPORT_CHUNK):
                stop = min(n, start + EXPORT_CHUNK)
                rows = np.arange(start, stop, dtype=np.int64) if view_rows is None else view_rows[start:stop]
                columns = [c.get(rows) for c in table.columns]
                for i, row in enumerate(rows.tolist()):
                    writer.writerow([row] + [fmt(col[i]) for fmt, col in zip(formatters, columns)])
                report.update(stop)
    except BaseException:
        if os.path.exists(path):
            os.remove(path)
        raise
    report.finish()
    return n
