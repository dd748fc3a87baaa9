"""On-disk formats, one module each, and detection by magic bytes."""
from __future__ import annotations

import os

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


def detect_format(path: str | os.PathLike[str]) -> str | None:
    """Return 'taridx', 'kastore', 'tbl', 'taco', 'zip', 'tar' or None, by magic bytes only."""
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(TARIDX_MAGIC[:6]):
        return "taridx"
    if head.startswith(KASTORE_MAGIC):
        return "kastore"
    if head[:4] in TBL_MAGICS:
        return "tbl"
    if head.startswith(ZIP_LFH):
        name_len = int.from_bytes(head[26:28], "little")
        return "taco" if head[30 : 30 + name_len] == b"TACO_HEADER" else "zip"
    if len(head) == 512 and head[257:262] == b"ustar":
        return "tar"
    return None


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
