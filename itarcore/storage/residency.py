"""Which pages of a memory-mapped array are in RAM, and asking the kernel to read some in.

A read through a mapping whose page is not in the page cache waits for the disk. Code that
must not wait (the GUI thread) asks ``mincore`` first; a worker that will read scattered
rows asks for all their pages at once (``MADV_WILLNEED``), so the disk gets them as one
queue instead of one fault after another. Both go through ctypes, which lets go of the GIL.
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import sys
from collections.abc import Callable

import numpy as np

from .buffers import PAGE

MADV_WILLNEED = 3
MADV_DONTNEED = 4
MADV_POPULATE_READ = 22  # Linux 5.14+; an older kernel answers EINVAL


def libc_calls() -> tuple[Callable[[int, int, int], int], Callable[[int, int, ctypes.Array], int]] | None:
    """libc's madvise and mincore (ctypes lets go of the GIL while they run), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise, mincore = libc.madvise, libc.mincore
    except (OSError, AttributeError):
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    madvise.restype = mincore.restype = ctypes.c_int
    return madvise, mincore


_LIBC = libc_calls()


def in_file_mapping(values: object) -> bool:
    """Whether ``values`` is an array whose memory is (a view of) an mmap of a file."""
    base = values
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


def element_pages(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Start addresses of the pages holding ``values[index]`` (1-D array), sorted and unique."""
    index = np.asarray(index, dtype=np.int64)
    first = values.ctypes.data + index * values.strides[0]
    ends = np.concatenate([first, first + values.itemsize - 1])
    return np.unique(ends // PAGE) * PAGE


def pages_resident(pages: np.ndarray) -> bool:
    """Whether every page (start addresses, as :func:`element_pages` gives) is in RAM.

    Off Linux the answer is always False: callers then read in a worker, never on a thread
    that must not wait."""
    if _LIBC is None:
        return False
    mincore = _LIBC[1]
    vec = ctypes.create_string_buffer(1)
    for page in pages.tolist():
        if mincore(page, PAGE, vec) != 0 or not vec.raw[0] & 1:
            return False
    return True


def mapping_range_resident(mapping: mmap.mmap, offset: int, length: int) -> bool:
    """Whether bytes [offset, offset+length) of a file mapping are all in RAM (one ``mincore`` call).

    False off Linux, as :func:`pages_resident` answers."""
    if _LIBC is None:
        return False
    end = min(len(mapping), offset + max(0, length))
    if end <= offset:
        return True
    base = np.frombuffer(mapping, np.uint8).ctypes.data  # the buffer export ends with this line
    first = (base + offset) // PAGE * PAGE
    n_pages = (base + end - 1) // PAGE - first // PAGE + 1
    vec = ctypes.create_string_buffer(n_pages)
    if _LIBC[1](first, n_pages * PAGE, vec) != 0:
        return False
    return bool(np.all(np.frombuffer(vec.raw, np.uint8, n_pages) & 1))


def populate_range(mapping: mmap.mmap, offset: int, length: int) -> None:
    """Bring bytes [offset, offset+length) of a file mapping into RAM without holding the GIL (as
    :func:`populate`, in two calls for the whole range), so copying them afterwards does not wait for the
    disk while it holds the GIL, which would stall every other thread (the GUI) for the read's length."""
    end = min(len(mapping), offset + max(0, length))
    if _LIBC is None or end <= offset:
        return
    base = np.frombuffer(mapping, np.uint8).ctypes.data
    first = (base + offset) // PAGE * PAGE
    size = base + end - first
    madvise = _LIBC[0]
    madvise(first, size, MADV_WILLNEED)
    madvise(first, size, MADV_POPULATE_READ)


def release_elements(values: np.ndarray, start: int, stop: int) -> None:
    """Drop the pages under ``values[start:stop]`` from this process (a file mapping's; the page cache
    keeps them, a later read maps them again), so a pass over a huge mapped column keeps RSS bounded.

    Pages at the ends shared with neighbours go too: reading those again costs a minor fault, never
    wrong bytes (the mapping is read-only and backed by the file)."""
    if _LIBC is None or stop <= start or not in_file_mapping(values):
        return
    first = values.ctypes.data + start * values.strides[0]
    last = values.ctypes.data + (stop - 1) * values.strides[0] + values.itemsize - 1
    lo, hi = min(first, last) // PAGE * PAGE, (max(first, last) // PAGE + 1) * PAGE
    _LIBC[0](lo, hi - lo, MADV_DONTNEED)


def read_if_cached(path: str | os.PathLike[str], offset: int, length: int) -> bytes | None:
    """File bytes [offset, offset+length) if the page cache holds them all, else None (nothing waits for the
    disk: ``preadv2`` with ``RWF_NOWAIT``). Where the system cannot tell (no ``RWF_NOWAIT``: Windows,
    macOS; a file system that refuses it), the answer is None too: the caller reads in a worker."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None:
        return None
    with open(path, "rb", buffering=0) as fh:
        fd = fh.fileno()
        length = max(0, min(length, os.fstat(fd).st_size - offset))
        if not length:
            return b""
        buf = bytearray(length)
        try:
            n = os.preadv(fd, [buf], offset, nowait)
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            return None
        return bytes(buf) if n == length else None


def populate(pages: np.ndarray) -> None:
    """Bring these pages into RAM and map them, without holding the GIL while the disk works.

    All of them are asked for first (``MADV_WILLNEED`` returns at once), so the disk gets one
    queue; then each is mapped (``MADV_POPULATE_READ``), which waits for it. Reading them from
    Python afterwards does not fault, so a thread that needs the GIL (the GUI) never waits for
    this one's disk reads. Where the kernel lacks ``MADV_POPULATE_READ`` the reader faults them in."""
    if _LIBC is None:
        return
    madvise = _LIBC[0]
    addresses = pages.tolist()
    for page in addresses:
        madvise(page, PAGE, MADV_WILLNEED)
    for page in addresses:
        if madvise(page, PAGE, MADV_POPULATE_READ) != 0:
            return
