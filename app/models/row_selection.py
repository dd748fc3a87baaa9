"""Which rows of a Table a grid shows, and in what order: numpy masks and a permutation.

Pure numpy (no Qt), so it runs in a worker and is tested without a view. A
:class:`RowFilter` says which source rows pass; a :class:`SortKey` orders them.
``compute_view_rows`` returns the view → source row mapping, or ``None`` for the
identity (no filter, no sort), so a 200M-row table costs no index array at all.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from itarcore.document import Table
from itarcore.progress import CancelToken, Progress

CHUNK = 4_000_000  # rows per masking step: bounded temporaries, regular cancel/progress points


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


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False


def _numpy_column(table: Table, title: str) -> np.ndarray:
    values = table.column(title).values
    if not isinstance(values, np.ndarray):
        raise TypeError(f"column '{title}' is computed on demand and cannot be sorted or masked as a whole")
    return values


def filter_rows(table: Table, flt: RowFilter, resolved: Callable[[str], dict[int, Any]] | None = None,
                progress: Callable[[Progress], None] | None = None,
                cancel: CancelToken | None = None) -> np.ndarray | None:
    """Source rows passing ``flt`` in ascending order, or None when nothing filters.

    ``resolved(title)`` gives the values of a lazy column already fetched for display
    ({source row: value}); a substring filter on a lazy column searches only those.
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
    if flt.substring is not None and flt.substring[1]:
        title, text = flt.substring
        hits = _substring_rows(table, title, text.lower(), resolved)
        base = hits if base is None else np.intersect1d(base, hits, assume_unique=True)
    conditions = [(title, "enum", codes) for title, codes in flt.enums.items()]
    conditions += [(title, "range", lohi) for title, lohi in flt.ranges.items()]
    if not conditions:
        return base if base is not None else np.arange(n, dtype=np.int64)
    if base is not None:  # few candidates: test just them
        keep = np.ones(len(base), dtype=bool)
        for title, how, arg in conditions:
            keep &= _condition(_numpy_column(table, title)[base], how, arg)
        return base[keep]
    parts: list[np.ndarray] = []
    for start in range(0, n, CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        stop = min(n, start + CHUNK)
        keep = np.ones(stop - start, dtype=bool)
        for title, how, arg in conditions:
            keep &= _condition(_numpy_column(table, title)[start:stop], how, arg)
        parts.append(np.flatnonzero(keep) + start)
        if progress is not None:
            progress(Progress(stop, n, "rows", message="filtering"))
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


def _substring_rows(table: Table, title: str, needle: str,
                    resolved: Callable[[str], dict[int, Any]] | None) -> np.ndarray:
    col = table.column(title)
    if col.lazy:
        known = resolved(title) if resolved is not None else {}
        rows = [row for row, value in known.items() if needle in str(value).lower()]
        return np.unique(np.asarray(rows, dtype=np.int64))
    values = col.values
    if col.kind == "enum" and col.labels is not None:
        codes = [i for i, label in enumerate(col.labels) if needle in str(label).lower()]
        return np.flatnonzero(np.isin(values, codes)).astype(np.int64)
    text = np.char.lower(values.astype(str))
    return np.flatnonzero(np.char.find(text, needle) >= 0).astype(np.int64)


def sort_rows(table: Table, key: SortKey, rows: np.ndarray | None,
              cancel: CancelToken | None = None) -> np.ndarray:
    """``rows`` (None = all) reordered by ``key``; ties keep their order (stable) both ways."""
    col = table.column(key.column)
    values = _numpy_column(table, key.column)
    subset = values if rows is None else values[rows]
    if col.kind == "enum" and col.labels is not None:
        # order enums by their label, not their code: rank each code by its label
        rank = np.empty(len(col.labels), dtype=np.int64)
        rank[np.argsort(np.asarray([str(s) for s in col.labels]), kind="stable")] = np.arange(len(col.labels))
        subset = rank[np.clip(subset, 0, len(col.labels) - 1)]
    if cancel is not None:
        cancel.raise_if_cancelled()
    if key.descending:
        # stable descending: sort the reversed array, then map back and reverse
        n = len(subset)
        order = (n - 1) - np.argsort(subset[::-1], kind="stable")[::-1]
    else:
        order = np.argsort(subset, kind="stable")
    if cancel is not None:
        cancel.raise_if_cancelled()
    order = order.astype(np.int64, copy=False)
    return order if rows is None else rows[order]


def compute_view_rows(table: Table, flt: RowFilter, key: SortKey | None,
                      resolved: Callable[[str], dict[int, Any]] | None = None,
                      progress: Callable[[Progress], None] | None = None,
                      cancel: CancelToken | None = None) -> np.ndarray | None:
    """View → source mapping for ``flt`` then ``key``; None means the identity."""
    rows = filter_rows(table, flt, resolved, progress, cancel)
    if key is not None:
        if progress is not None:
            progress(Progress(0, 1, "steps", message=f"sorting by {key.column}"))
        rows = sort_rows(table, key, rows, cancel)
    return rows
