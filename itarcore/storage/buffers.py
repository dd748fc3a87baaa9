"""Arrays for ``read``/``preadv`` to fill, placed so the kernel's copy into them runs at full speed.

The kernel copies page-cache pages into a read's buffer with ``rep movsb``. On AMD Zen CPUs
(most cloud machines) that copy runs about 5x slower when the buffer starts 1 to 31 bytes
past the place the file's data starts within its page, and glibc puts a large ``malloc``
block (and so numpy's arrays) 16 bytes into a page. Measured on the 2-core dev VM, 4 MiB
``preadv`` of a warm 690 MB shard from page-aligned offsets: 2.5 GB/s into ``np.empty``,
13 GB/s into a page-aligned buffer (``cat``: 13). Reading from offset 100 within a page,
a buffer 116 bytes into its page gave 2.6 GB/s and one 100 bytes in 13 GB/s.
"""
from __future__ import annotations

import mmap
import operator

import numpy as np

PAGE = mmap.PAGESIZE


def read_buffer(shape: int | tuple[int, ...], dtype: np.dtype | str | type = np.uint8,
                file_offset: int = 0) -> np.ndarray:
    """An uninitialised C-contiguous array to read the file's bytes from ``file_offset`` into.

    Its first byte sits where ``file_offset`` sits within a page (page-aligned for the default 0), moved
    back to the dtype's alignment if need be: a destination a few bytes *before* the data's place is fast."""
    dtype = np.dtype(dtype)
    dims = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimensions are not allowed: {dims}")
    nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + PAGE, np.uint8)  # room to start anywhere in the first page
    start = (file_offset - file_offset % dtype.alignment - raw.ctypes.data) % PAGE
    return raw[start : start + nbytes].view(dtype).reshape(dims)
