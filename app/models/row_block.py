"""The rows on and around the screen, copied out of a file mapping: the grid paints from this copy.

The rows a sorted view shows lie all over the file. Read through the mapping on the GUI
thread, every page not in the page cache is a disk read in the middle of a paint (a 1B-row
index, larger than RAM: 287 ms stalls, 406 µs a ``data()`` call). So the model paints from a
:class:`RowBlock`, a copy of a run of view rows (the screen and a margin of a few screens)
made by :func:`read_block`: in a worker, unless every page it needs is already in memory
(:func:`block_resident`), when copying it on the GUI thread costs less than a worker's round trip
and shows no placeholder. No Qt here.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from itarcore.document import Column
from itarcore.storage.residency import element_pages, in_file_mapping, pages_resident, populate


@dataclass(frozen=True)
class RowBlock:
    """Values of view rows ``first .. first + len(src)`` for some columns, as Python lists."""

    first: int
    src: np.ndarray  # the source row of each view row (-1: a sort has not placed it yet)
    values: dict[int, list[Any]]  # column number -> one value per view row (None where src is -1)

    @property
    def stop(self) -> int:
        return self.first + len(self.src)

    def covers(self, start: int, stop: int) -> bool:
        return self.first <= start and stop <= self.stop


def mapped_columns(columns: Sequence[Column]) -> list[int]:
    """Numbers of the columns whose values live in a file mapping (reading them may wait for the disk)."""
    return [i for i, c in enumerate(columns) if not c.lazy and in_file_mapping(c.values)]


def _pages(columns: Sequence[Column], cols: Sequence[int], src: np.ndarray) -> np.ndarray:
    known = src[src >= 0]
    return np.unique(np.concatenate([element_pages(columns[c].values, known) for c in cols]))  # type: ignore[arg-type]


def block_resident(columns: Sequence[Column], cols: Sequence[int], src: np.ndarray) -> bool:
    """Whether reading these rows of these columns touches only pages already in RAM."""
    return pages_resident(_pages(columns, cols, src))


def read_block(columns: Sequence[Column], cols: Sequence[int], first: int, src: np.ndarray,
               in_ram: bool = False) -> RowBlock:
    """Copy rows ``src`` of columns ``cols``; unless ``in_ram``, their pages are brought in first, without the GIL."""
    if not in_ram:
        populate(_pages(columns, cols, src))
    known = np.flatnonzero(src >= 0)
    order = np.argsort(src[known], kind="stable")  # read in file order
    values: dict[int, list[Any]] = {}
    for c in cols:
        got = np.empty(len(known), dtype=columns[c].values.dtype)  # type: ignore[union-attr]
        got[order] = columns[c].values[src[known][order]]  # type: ignore[index]
        if len(known) == len(src):
            values[c] = got.tolist()
            continue
        column: list[Any] = [None] * len(src)
        for i, v in zip(known.tolist(), got.tolist()):
            column[i] = v
        values[c] = column
    return RowBlock(first, src, values)
