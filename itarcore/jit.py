"""Optional compiled kernels: numba, from the ``fast`` extra.

The core needs only numpy; with numba installed, the few loops that numpy cannot
express without touching far more memory than needed (the tar header chain, the
name split) run as machine code instead. Every kernel has a numpy route with the
same results, and the tests run both. ``ITARCORE_NO_JIT=1`` turns the kernels off.

Kernel modules (``formats/tar_walk.py``, ``indexer_kernels.py``) are imported only when
first needed, so commands that never scan a tar do not pay for importing numba.
"""
from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


@functools.cache
def available() -> bool:
    """Whether numba is installed (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """Whether to use the compiled kernels: numba is installed and ``ITARCORE_NO_JIT`` is not set."""
    return available() and os.environ.get("ITARCORE_NO_JIT", "") in ("", "0")


def compile_kernel(fn: F) -> F:
    """``fn`` compiled without the GIL; machine code is cached on disk after the first use."""
    import numba

    return numba.njit(cache=True, nogil=True, boundscheck=False)(fn)
