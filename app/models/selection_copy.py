"""Copying grid cells as tab-separated text: at once when the values are at hand, else in a worker.

A spreadsheet copies a screenful at once, and so does the grid when every selected value is in
RAM (the mapped rows' pages resident, lazy values such as stems already read). A larger selection
(up to the grid's window of rows) or one on an index not in RAM would read the disk row by row:
its text is made by a worker, with progress and Cancel, and reaches the clipboard when it is ready.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from itarcore.progress import CancelToken, ProgressCallback, ProgressReporter

if TYPE_CHECKING:
    from app.models.windowed_table_model import WindowedTableModel

COPY_AT_ONCE = 2_000  # lines copied on the GUI thread when their values are in RAM: a few screens
TEXT_CHUNK = 4_096  # lines formatted per step: cancel and progress points


@dataclass(frozen=True)
class CellSelection:
    """Selected cells of a grid, one line per selected view row."""

    rows: np.ndarray  # the source row of each line (-1: a sort has not placed it yet)
    cols: list[int]  # the columns any line has selected, in order
    mask: np.ndarray  # (lines, len(cols)) bool: the cells each line has selected
    titles: list[str] | None  # whole rows selected: the header line's column titles


def selection_text(model: WindowedTableModel, sel: CellSelection, progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> str:
    """The cells as tab-separated lines, as the grid shows them (any thread; reads no cache it fills)."""
    lines = [] if sel.titles is None else ["\t".join(["row", *sel.titles])]
    reporter = ProgressReporter(progress, len(sel.rows), "rows", cancel)
    for i0 in range(0, len(sel.rows), TEXT_CHUNK):
        part = sel.rows[i0 : i0 + TEXT_CHUNK]
        texts = [model.texts(part, c) for c in sel.cols]
        mask = sel.mask[i0 : i0 + TEXT_CHUNK].tolist()
        for j, row in enumerate(part.tolist()):
            values = [texts[k][j] if on else "" for k, on in enumerate(mask[j])]
            lines.append("\t".join(values if sel.titles is None else [str(row), *values]))
        reporter.update(i0 + len(part))
    return "\n".join(lines)
