"""Optional compiled kernels: numba, from the ``fast`` extra.

The core needs only numpy; with numba installed, the few loops that numpy cannot
express without touching far more memory than needed (the tar header chain, the
name split) run as machine code instead. Every kernel has a numpy route with the
same results, and the tests run both.

Loading numba and the cached kernels costs about 0.4 s and 150 MB once per process,
which the kernels win back only on large scans (0.08 to 0.13 s per GB: a one-shot run
breaks even at 3 to 5 GB). So by default they are used for scans of ``MIN_BYTES`` or
more, and for every scan once they are loaded. ``ITARCORE_JIT`` overrides this: ``0`` never, ``1`` always.
Kernel modules (``formats/tar_walk.py``, ``indexer_kernels.py``) are imported only then.
"""
from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

MIN_BYTES = 8 << 30
_loaded = False


@functools.cache
def available() -> bool:
    """Whether numba is installed (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def worthwhile(n_bytes: int) -> bool:
    """Whether a scan of ``n_bytes`` should take the compiled route (see the module notes)."""
    choice = os.environ.get("ITARCORE_JIT", "auto")
    if choice == "0" or not available():
        return False
    return choice == "1" or _loaded or n_bytes >= MIN_BYTES


def compile_kernel(fn: F) -> F:
    """``fn`` compiled without the GIL; machine code is cached on disk after the first use."""
    import numba

    global _loaded
    _loaded = True  # kernel modules are imported only to be used
    return numba.njit(cache=True, nogil=True, boundscheck=False)(fn)
