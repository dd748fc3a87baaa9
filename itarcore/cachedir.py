"""Where itarcore keeps what it can rebuild: key indexes, shard tables, the demo fold."""
from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_ENV = "ITARCORE_CACHE_DIR"  # itarcore's cache folder (the tests point it at a temp dir)


def user_cache_dir() -> Path:
    """The platform's per-user cache folder for this application (not created here)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "itar-browser"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """itarcore's cache folder: ``cache_dir``, else ``$ITARCORE_CACHE_DIR``, else :func:`user_cache_dir`."""
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get(CACHE_ENV) or user_cache_dir())
