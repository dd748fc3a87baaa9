"""Optional compiled kernels: numba, from the ``fast`` extra.

The core needs only numpy; with numba installed, the few loops that numpy cannot
express without touching far more memory than needed (the tar header chain, the
name split) run as machine code instead. Every kernel has a numpy route with the
same results, and the tests run both. ``ITARCORE_NO_JIT=1`` turns the kernels off.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

try:
    import numba
except ImportError:  # the numpy routes are used
    numba = None

F = TypeVar("F", bound=Callable)


def compile_kernel(fn: F) -> F:
    """``fn`` compiled without the GIL (cached on disk after the first use), or ``fn`` itself without numba."""
    if numba is None:
        return fn
    return numba.njit(cache=True, nogil=True, boundscheck=False)(fn)


def enabled() -> bool:
    """Whether to use the compiled kernels: numba is installed and ``ITARCORE_NO_JIT`` is not set."""
    return numba is not None and os.environ.get("ITARCORE_NO_JIT", "") in ("", "0")
