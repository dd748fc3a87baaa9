"""What the grid model's worker thread runs: a block of mapped rows, a batch of lazy values.

Neither raises: a failed read leaves placeholders, a bad row shows its error in the cell. No Qt here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from app.models.row_block import RowBlock, read_block
from itarcore.document import Column


def read_block_job(serial: int, columns: list[Column], cols: list[int], first: int,
                   src: np.ndarray) -> tuple[int, RowBlock | None]:
    """Rows ``src`` (view rows from ``first``) of columns ``cols``, tagged with the request's serial; None if the read failed."""
    try:
        return serial, read_block(columns, cols, first, src)
    except Exception:  # noqa: BLE001 - a failed read leaves placeholders, never a broken paint
        return serial, None


def resolve_job(serial: int, col: int, column: Column, rows: np.ndarray) -> tuple[int, int, np.ndarray, list[Any]]:
    """Values of lazy column ``col`` for ``rows``, tagged with the request's serial."""
    return serial, col, rows, resolve(column, rows)


def resolve(column: Column, rows: np.ndarray) -> list[Any]:
    """``column``'s values of ``rows``; each cell an error text instead if the read fails."""
    try:
        return list(column.get(rows))
    except Exception as exc:  # noqa: BLE001 - a bad row must not break painting
        return [f"⚠ {exc}"] * len(rows)
