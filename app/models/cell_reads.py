"""What the grid model's worker thread runs (a block of mapped rows, a batch of lazy values), and cell text.

Neither raises: a failed read or a bad row shows its error in the cells. No Qt here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from app.models.row_block import RowBlock, read_block
from itarcore.document import Column


def read_block_job(serial: int, columns: list[Column], cols: list[int], first: int,
                   src: np.ndarray) -> tuple[int, RowBlock | str]:
    """Rows ``src`` (view rows from ``first``) of columns ``cols``, tagged with the request's serial; the
    error's text instead if the read failed (the cells show it)."""
    try:
        return serial, read_block(columns, cols, first, src)
    except Exception as exc:  # noqa: BLE001 - a failed read is shown in its cells, never a broken paint
        return serial, f"could not read these rows: {exc}"


def resolve_job(serial: int, col: int, column: Column, rows: np.ndarray) -> tuple[int, int, np.ndarray, list[Any]]:
    """Values of lazy column ``col`` for ``rows``, tagged with the request's serial."""
    return serial, col, rows, resolve(column, rows)


def resolve(column: Column, rows: np.ndarray) -> list[Any]:
    """``column``'s values of ``rows``; each cell an error text instead if the read fails."""
    try:
        return list(column.get(rows))
    except Exception as exc:  # noqa: BLE001 - a bad row must not break painting
        return [f"⚠ {exc}"] * len(rows)


def cell_formatter(col: Column) -> Callable[[Any], str]:
    """How a value of ``col`` is painted: enum labels, 16 hex digits, sizes with thousands separators."""
    if col.kind == "enum" and col.labels is not None:
        labels = list(col.labels)
        n = len(labels)
        return lambda v: labels[int(v)] if 0 <= int(v) < n else str(int(v))
    if col.kind == "hex":
        return lambda v: f"{int(v):016x}"
    if col.kind == "size":
        return lambda v: f"{int(v):,}"
    if col.kind == "int":
        return lambda v: str(int(v))
    return col.format
