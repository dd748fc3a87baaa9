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
from .progress import CancelToken, Progress

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
