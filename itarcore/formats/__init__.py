"""On-disk formats, one module each, and detection by magic bytes.

Sniffing never raises: every test that decides "is this format X?" is a :func:`sniffer`,
so a damaged file that trips a parser inside a test (Python's zipfile refusing a
mangled version field, say) simply is not that format.
Only reading the file's first bytes can fail, with the ``OSError`` that says why.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import ParamSpec

_P = ParamSpec("_P")

TARIDX_MAGIC = b"TARIDX\x00\x00"
KASTORE_MAGIC = b"\x89KAS\r\n\x1a\n"
TBL_MAGICS = (b"TBL\x01", b"TBL\x02")
ZIP_LFH = b"PK\x03\x04"

FORMAT_NAMES = {
    "taridx": "TARIDX index",
    "kastore": "kastore",
    "tbl": "TBL (TurboLoader)",
    "taco": "TACO zip",
    "zip": "ZIP archive",
    "tar": "tar archive",
}


def sniffer(test: Callable[_P, bool]) -> Callable[_P, bool]:
    """Make a format test total: any exception inside it means "not this format"."""

    @functools.wraps(test)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> bool:
        try:
            return bool(test(*args, **kwargs))
        except Exception:  # noqa: BLE001 - whatever a damaged file makes a parser raise, it is not this format
            return False

    return guarded


@sniffer
def _is_taco(head: bytes) -> bool:
    name_len = int.from_bytes(head[26:28], "little")
    return head.startswith(ZIP_LFH) and head[30 : 30 + name_len] == b"TACO_HEADER"


# (format, test of the first 512 bytes), in the order they are tried
MAGIC_TESTS: tuple[tuple[str, Callable[[bytes], bool]], ...] = (
    ("taridx", sniffer(lambda head: head.startswith(TARIDX_MAGIC[:6]))),
    ("kastore", sniffer(lambda head: head.startswith(KASTORE_MAGIC))),
    ("tbl", sniffer(lambda head: head[:4] in TBL_MAGICS)),
    ("taco", _is_taco),
    ("zip", sniffer(lambda head: head.startswith(ZIP_LFH))),
    ("tar", sniffer(lambda head: len(head) == 512 and head[257:262] == b"ustar")),
)


def detect_format(path: str | os.PathLike[str], storage_options: dict | None = None) -> str | None:
    """Return 'taridx', 'kastore', 'tbl', 'taco', 'zip', 'tar' or None, by magic bytes only (paths or URLs)."""
    from ..storage import is_url, open_source

    if is_url(path):
        with open_source(path, storage_options) as source:
            head = bytes(source.read(0, min(512, source.size)))
    else:
        with open(path, "rb") as fh:
            head = fh.read(512)
    return format_of(head)


def format_of(head: bytes) -> str | None:
    """The format whose magic ``head`` (a file's first bytes, 512 or more when the file has them) starts with."""
    head = head[:512]
    return next((name for name, test in MAGIC_TESTS if test(head)), None)


def unsupported_reason(path: str | os.PathLike[str], fmt: str | None) -> str:
    """A helpful sentence for a file none of the four formats can open."""
    path = os.fspath(path)
    if fmt == "zip":
        from .kastore import TSZIP_HINT, _is_tszip

        with open(path, "rb") as fh:
            if _is_tszip(path, fh.read(8)):
                return TSZIP_HINT
    if fmt == "tar":
        return ("a tar shard, not an index: build its fold's index with `itarcore index FOLDER` "
                "(or File → Build index… in the browser)")
    return f"not a TARIDX, TACO, kastore or TBL file ({FORMAT_NAMES.get(fmt or '', 'unrecognised data')})"
