"""Passes over every row of a TARIDX index, in chunks of bounded size.

Each chunk is a zero-copy view of the mapped rows. After the caller is done with it,
its pages are released from this process (``madvise(MADV_DONTNEED)``; the page cache
keeps them), cancel is checked and progress reported, so a pass over a 32 GB index
keeps resident memory at about one chunk and stops within one chunk of a cancel.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .formats.taridx import TaridxIndex
from .progress import CancelToken, ProgressCallback, ProgressReporter

DEFAULT_CHUNK_ROWS = 1 << 21  # 64 MiB of rows: a few ms of numpy work, so cancel answers at once


def iter_row_chunks(index: TaridxIndex, chunk_rows: int = DEFAULT_CHUNK_ROWS, start: int = 0,
                    stop: int | None = None, reporter: ProgressReporter | None = None,
                    progress: ProgressCallback | None = None,
                    cancel: CancelToken | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` for consecutive chunks of ``index.rows[start:stop]``.

    Progress goes to ``reporter`` (its ``done`` advances by the rows passed) or, without
    one, to a new reporter over ``progress`` counting rows. Raises ``Cancelled`` between chunks.
    """
    stop = index.n_rows if stop is None else min(stop, index.n_rows)
    chunk_rows = max(1, int(chunk_rows))
    if reporter is None:
        reporter = ProgressReporter(progress, stop - start, "rows", cancel)
    base = reporter.done - start
    if cancel is not None:
        cancel.raise_if_cancelled()
    for first in range(start, stop, chunk_rows):
        last = min(stop, first + chunk_rows)
        yield first, index.rows[first:last]
        index.release_rows(first, last)
        if cancel is not None:
            cancel.raise_if_cancelled()
        reporter.update(base + last)
