"""Which rows of a Table a grid shows, and in what order: numpy masks and a permutation.

Pure numpy (no Qt), so it runs in a worker and is tested without a view. A
:class:`RowFilter` says which source rows pass; a :class:`SortKey` orders them.
``compute_view_rows`` returns the view → source row mapping, or ``None`` for the
identity (no filter, no sort), so a 200M-row table costs no index array at all.

Both steps answer early, as DB Browser for SQLite does: a filter reports its first
matches while it goes on counting, and a sort reports its first window (see
:mod:`app.models.sorting`) before the full order. ``compute_view`` passes these early
answers to ``partial``; its return value is always the complete answer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.models.sorting import KeysRead, SortKey, first_window, full_order
from itarcore.document import Table
from itarcore.progress import CancelToken, Progress

CHUNK = 4_000_000  # rows per masking step: bounded temporaries, regular cancel/progress points
NAME_CHUNK = 4096  # lazy values (e.g. stems read from tar headers) fetched per step of a substring search
FIRST = 1000  # rows an early answer holds: several screens
TWO_STEP_ROWS = 1_000_000  # sorts of fewer rows answer in one step (the full sort is quick)

# partial(kind, rows, n_total): "matches" = the first matches so far (count unknown);
# "head" = the first window of a sort of n_total rows
Partial = Callable[[str, np.ndarray, "int | None"], None]

__all__ = ["RowFilter", "SortKey", "compute_view", "compute_view_rows", "filter_rows", "sort_rows"]


@dataclass
class RowFilter:
    """Every condition is ANDed; an empty filter passes every row."""

    enums: dict[str, set[int]] = field(default_factory=dict)  # column title -> allowed codes
    ranges: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # title -> [lo, hi]
    substring: tuple[str, str] | None = None  # (column title, text), case-insensitive
    rows: np.ndarray | None = None  # explicit source rows (a drill-down or an exact key lookup)
    rows_label: str = ""  # says where ``rows`` came from, e.g. "extension jpg"
    key: str = ""  # exact key through Table.lookup (e.g. a stem via xxh64 + crash table)

    @property
    def active(self) -> bool:
        return bool(self.enums or self.ranges or self.substring or self.rows is not None or self.key)


def _numpy_column(table: Table, title: str) -> np.ndarray:
    values = table.column(title).values
    if not isinstance(values, np.ndarray):
        raise TypeError(f"column '{title}' is computed on demand and cannot be sorted or masked as a whole")
    return values


def filter_rows(table: Table, flt: RowFilter,
                progress: Callable[[Progress], None] | None = None,
                cancel: CancelToken | None = None,
                on_first: Callable[[np.ndarray], None] | None = None, first: int = FIRST) -> np.ndarray | None:
    """Source rows passing ``flt`` in ascending order, or None when nothing filters.

    A substring of a lazy column (stems read from tar headers) reads the values of every
    candidate row, in chunks, so no match is missed. ``on_first`` gets the first ``first``
    matches as soon as they are known, while the rest are still being counted.
    """
    if not flt.active:
        return None
    n = table.n_rows
    base: np.ndarray | None = None  # candidate rows when some condition already narrowed them
    if flt.rows is not None:
        base = np.unique(np.asarray(flt.rows, dtype=np.int64))
        base = base[(base >= 0) & (base < n)]
    if flt.key:
        if table.lookup is None:
            raise ValueError(f"table '{table.name}' has no key lookup")
        hits = np.unique(np.asarray(table.lookup(flt.key), dtype=np.int64))
        base = hits if base is None else np.intersect1d(base, hits, assume_unique=True)
    lazy_text: tuple[str, str] | None = None
    if flt.substring is not None and flt.substring[1]:
        title, text = flt.substring
        if table.column(title).lazy:
            lazy_text = (title, text.lower())  # searched last, over the rows the cheap conditions leave
        else:
            hits = _substring_rows(table, title, text.lower())
            base = hits if base is None else np.intersect1d(base, hits, assume_unique=True)
    conditions = [(title, "enum", codes) for title, codes in flt.enums.items()]
    conditions += [(title, "range", lohi) for title, lohi in flt.ranges.items()]
    early = on_first if lazy_text is None else None
    if not conditions:
        rows = base
    elif base is not None:  # few candidates: test just them
        keep = np.ones(len(base), dtype=bool)
        for title, how, arg in conditions:
            keep &= _condition(_numpy_column(table, title)[base], how, arg)
        rows = base[keep]
    else:
        rows = _mask_chunks(table, conditions, progress, cancel, early, first)
    if lazy_text is not None:
        rows = _lazy_substring_rows(table, lazy_text[0], lazy_text[1], rows, progress, cancel, on_first, first)
    return rows if rows is not None else np.arange(n, dtype=np.int64)


def _mask_chunks(table: Table, conditions: list, progress: Callable[[Progress], None] | None,
                 cancel: CancelToken | None, on_first: Callable[[np.ndarray], None] | None,
                 first: int) -> np.ndarray:
    n = table.n_rows
    parts: list[np.ndarray] = []
    found = 0
    for start in range(0, n, CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        stop = min(n, start + CHUNK)
        keep = np.ones(stop - start, dtype=bool)
        for title, how, arg in conditions:
            keep &= _condition(_numpy_column(table, title)[start:stop], how, arg)
        parts.append(np.flatnonzero(keep) + start)
        if on_first is not None and found < first <= found + len(parts[-1]) and stop < n:
            on_first(np.concatenate(parts)[:first])
        found += len(parts[-1])
        if progress is not None:
            progress(Progress(stop, n, "rows", message="counting matches"))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _condition(values: np.ndarray, how: str, arg: Any) -> np.ndarray:
    if how == "enum":
        return np.isin(values, np.fromiter(arg, dtype=np.int64, count=len(arg)))
    lo, hi = arg
    keep = np.ones(len(values), dtype=bool)
    if lo is not None:
        keep &= values >= lo
    if hi is not None:
        keep &= values <= hi
    return keep


def _substring_rows(table: Table, title: str, needle: str) -> np.ndarray:
    col = table.column(title)
    values = col.values
    if col.kind == "enum" and col.labels is not None:
        codes = [i for i, label in enumerate(col.labels) if needle in str(label).lower()]
        return np.flatnonzero(np.isin(values, codes)).astype(np.int64)
    text = np.char.lower(values.astype(str))
    return np.flatnonzero(np.char.find(text, needle) >= 0).astype(np.int64)


def _lazy_substring_rows(table: Table, title: str, needle: str, candidates: np.ndarray | None,
                         progress: Callable[[Progress], None] | None, cancel: CancelToken | None,
                         on_first: Callable[[np.ndarray], None] | None, first: int) -> np.ndarray:
    """Rows among ``candidates`` (None = all) whose lazy value contains ``needle``: every value is read."""
    resolve = table.column(title).values
    total = table.n_rows if candidates is None else len(candidates)
    hits: list[int] = []
    reported = False
    for start in range(0, total, NAME_CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        stop = min(total, start + NAME_CHUNK)
        rows = np.arange(start, stop, dtype=np.int64) if candidates is None else candidates[start:stop]
        values = resolve(rows)  # type: ignore[operator]
        hits.extend(r for r, v in zip(rows.tolist(), values) if v is not None and needle in str(v).lower())
        if on_first is not None and not reported and len(hits) >= first and stop < total:
            on_first(np.asarray(hits[:first], dtype=np.int64))
            reported = True
        if progress is not None:
            progress(Progress(stop, total, "names", message=f"reading {title.lower()} names"))
    return np.asarray(hits, dtype=np.int64)


def sort_rows(table: Table, key: SortKey, rows: np.ndarray | None,
              cancel: CancelToken | None = None) -> np.ndarray:
    """``rows`` (None = all) reordered by ``key``; ties keep their order (stable) both ways."""
    return full_order(table, key, rows, cancel=cancel)


def compute_view_rows(table: Table, flt: RowFilter, key: SortKey | None,
                      progress: Callable[[Progress], None] | None = None,
                      cancel: CancelToken | None = None) -> np.ndarray | None:
    """View → source mapping for ``flt`` then ``key``; None means the identity."""
    return compute_view(table, flt, key, progress=progress, cancel=cancel)


def compute_view(table: Table, flt: RowFilter, key: SortKey | None, partial: Partial | None = None,
                 first: int = FIRST, two_step_rows: int = TWO_STEP_ROWS,
                 progress: Callable[[Progress], None] | None = None,
                 cancel: CancelToken | None = None) -> np.ndarray | None:
    """The view rows for ``flt`` then ``key`` (None = identity), with early answers to ``partial``.

    Without a sort, the first ``first`` matches go to ``partial("matches", ...)`` while counting
    goes on. With one, the filter finishes first, then (from ``two_step_rows`` rows up) the
    sort's first window goes to ``partial("head", rows, n_total)`` before the full order.
    """
    on_first = None
    if partial is not None and key is None:
        def on_first(rows: np.ndarray) -> None:
            partial("matches", rows, None)
    rows = filter_rows(table, flt, progress, cancel, on_first, first)
    if key is None:
        return rows
    n_sorted = table.n_rows if rows is None else len(rows)
    if partial is not None and n_sorted >= two_step_rows:
        read: list[KeysRead] = []  # the first window's pass keeps the keys: the full order reads nothing again
        partial("head", first_window(table, key, rows, first, cancel, keep=read), n_sorted)
        return full_order(table, key, rows, progress=progress, cancel=cancel, read=read[0] if read else None)
    return full_order(table, key, rows, progress=progress, cancel=cancel)
