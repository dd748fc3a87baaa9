"""Optional compiled kernels: numba, from the ``fast`` extra; and whether a scan should use them.

The core needs only numpy; with numba installed, the few loops that numpy cannot
express without touching far more memory than needed (the tar header chain, the
name split) run as machine code instead. Every kernel has a numpy route with the
same results, and the tests run both.

The route is picked by break-even, here and nowhere else. The compiled scan saves
``SAVED_SECONDS_PER_GB`` over numpy, but loading numba and the kernels costs
``LOAD_SECONDS`` once per process when their machine code is cached on disk, and
``LOAD_SECONDS + COMPILE_SECONDS`` when it is not (the first run after an install or
an upgrade). A scan takes the compiled route when its size is past
``load / saved``: about 4 GB with cached kernels, about 90 GB without, and every
scan once the kernels are loaded. Figures measured with ``bench/bench_index.py`` and
a fresh process on the 2-core dev machine (see README); on a loaded machine all three
grow together, so the break-even moves little. ``ITARCORE_JIT`` overrides: ``0``
never, ``1`` always. Kernel modules (``formats/tar_walk.py``, ``kernels.py``) are
imported only when used.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

F = TypeVar("F", bound=Callable)

SAVED_SECONDS_PER_GB = 0.1  # numpy 0.18 s/GB vs compiled 0.08 s/GB (2.8 GB fold, warm, --jobs 2)
LOAD_SECONDS = 0.4  # import numba + load the cached kernels
COMPILE_SECONDS = 9.0  # compile them when nothing is cached (then cached for the next process)
KERNEL_MODULES = ("formats/tar_walk.py", "indexing/kernels.py")
_loaded = False


@functools.cache
def available() -> bool:
    """Whether numba is installed (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the kernels (index files beside the modules, or in NUMBA_CACHE_DIR)."""
    tag = f"py{sys.version_info.major}{sys.version_info.minor}.nbi"
    root = Path(__file__).resolve().parents[1]
    custom = os.environ.get("NUMBA_CACHE_DIR")
    for module in KERNEL_MODULES:
        path = root / module
        pattern = f"{path.stem}.*{tag}"
        found = Path(custom).rglob(pattern) if custom else (path.parent / "__pycache__").glob(pattern)
        if next(found, None) is None:
            return False
    return True


def break_even_bytes(cached: bool | None = None) -> int:
    """Scan size from which the compiled route pays for loading (and, uncached, compiling) its kernels."""
    cached = kernels_cached() if cached is None else cached
    load = LOAD_SECONDS if cached else LOAD_SECONDS + COMPILE_SECONDS
    return int(load / SAVED_SECONDS_PER_GB * 1e9)


def choose(n_bytes: int) -> tuple[bool, str]:
    """(compiled?, why) for a scan of ``n_bytes``."""
    choice = os.environ.get("ITARCORE_JIT", "auto")
    if choice == "0":
        return False, "ITARCORE_JIT=0"
    if not available():
        return False, "numba not installed (the 'fast' extra)"
    if choice == "1":
        return True, "ITARCORE_JIT=1"
    if _loaded:
        return True, "kernels already loaded in this process"
    cached = kernels_cached()
    threshold = break_even_bytes(cached)
    state = "cached kernels" if cached else "kernels not cached yet"
    if n_bytes >= threshold:
        return True, f"{n_bytes / 1e9:.1f} GB >= break-even {threshold / 1e9:.1f} GB ({state})"
    return False, f"{n_bytes / 1e9:.1f} GB < break-even {threshold / 1e9:.1f} GB ({state})"


def worthwhile(n_bytes: int) -> bool:
    """Whether a scan of ``n_bytes`` should take the compiled route (see the module notes)."""
    return choose(n_bytes)[0]


def compile_kernel(fn: F) -> F:
    """``fn`` compiled without the GIL; machine code is cached on disk after the first use."""
    import numba

    global _loaded
    _loaded = True  # kernel modules are imported only to be used
    return numba.njit(cache=True, nogil=True, boundscheck=False)(fn)
