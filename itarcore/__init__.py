"""itarcore: read, write, build and check TARIDX, TACO, kastore and TBL files.

Needs only numpy, xxhash and pillow; never imports Qt.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import (
    Cancelled,
    ChecksumError,
    DatasetError,
    FormatError,
    ItarError,
    MissingShardError,
    TruncatedError,
    VersionError,
    WriteError,
)


def __getattr__(name: str) -> object:
    # progress pulls in threading and dataclasses: imported on first use, so `itarcore --help` stays quick
    if name in ("CancelToken", "Progress"):
        from . import progress

        return getattr(progress, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CancelToken",
    "Cancelled",
    "ChecksumError",
    "DatasetError",
    "FormatError",
    "ItarError",
    "MissingShardError",
    "Progress",
    "TruncatedError",
    "VersionError",
    "WriteError",
    "__version__",
]
