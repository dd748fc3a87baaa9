"""The indexer's compiled kernels (numba; imported only when ``itarcore.indexing.jit.worthwhile``).

Each matches a numpy route in ``indexer.py`` exactly; the tests run both.
"""
from __future__ import annotations

from . import jit


@jit.compile_kernel
def split_rows(fields, bounds):
    """The NOTES.md split of ``indexer._split_name_fields``, row by row: bounds rows are start, dot, end."""
    if bounds.shape[0] < 3:
        return
    for row in range(min(fields.shape[0], bounds.shape[1])):
        end = fields.shape[1]
        for i in range(fields.shape[1]):
            if fields[row, i] == 0:
                end = i
                break
        start = 0
        for i in range(end - 1, -1, -1):
            if fields[row, i] == 47:  # '/'
                start = i + 1
                break
        dot = end
        for i in range(start, end):
            if fields[row, i] == 46:  # '.'
                dot = i
                break
        bounds[0, row] = start
        bounds[1, row] = dot
        bounds[2, row] = end


@jit.compile_kernel
def copy_parts(fields, bounds, stems, exts):
    """Copy each row's stem and (lower-cased) extension into zeroed matrices.

    Bounds are clamped to the matrices, so no bounds array can make it read or write outside them.
    """
    if bounds.shape[0] < 3:
        return
    width = fields.shape[1]
    for row in range(min(fields.shape[0], bounds.shape[1], stems.shape[0], exts.shape[0])):
        end = min(max(bounds[2, row], 0), width)
        start = min(max(bounds[0, row], 0), end)
        dot = min(max(bounds[1, row], start), end)
        for i in range(start, min(dot, start + stems.shape[1])):
            stems[row, i - start] = fields[row, i]
        ext_start = min(dot + 1, end)
        for i in range(ext_start, min(end, ext_start + exts.shape[1])):
            b = fields[row, i]
            exts[row, i - ext_start] = b + 32 if 65 <= b <= 90 else b
