"""The indexer's compiled kernels (numba; imported only when ``itarcore.indexing.jit.worthwhile``).

Each matches a numpy route in ``indexer.py`` exactly; the tests run both.
"""
from __future__ import annotations

from . import jit


@jit.compile_kernel
def split_rows(fields, bounds):
    """The NOTES.md split of ``indexer._split_name_fields``, row by row: bounds rows are start, dot, end."""
    for row in range(fields.shape[0]):
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
    """Copy each row's stem and (lower-cased) extension into zeroed matrices."""
    for row in range(fields.shape[0]):
        start, dot, end = bounds[0, row], bounds[1, row], bounds[2, row]
        for i in range(start, dot):
            stems[row, i - start] = fields[row, i]
        ext_start = min(dot + 1, end)
        for i in range(ext_start, end):
            b = fields[row, i]
            exts[row, i - ext_start] = b + 32 if 65 <= b <= 90 else b
