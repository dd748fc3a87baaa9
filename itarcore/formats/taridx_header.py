"""The TARIDX header and its two tables, parsed and written with ``struct`` alone (no numpy).

``itarcore info`` needs only these, so it starts without importing numpy; the full
reader (:mod:`itarcore.formats.taridx`) validates the same way through this module.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..atomic import BackgroundSync, atomic_write
from ..errors import FormatError, TruncatedError, VersionError, WriteError

if TYPE_CHECKING:
    from ..storage import RangedSource

MAGIC = b"TARIDX"
MAJOR, MINOR = 1, 0
HEADER_SIZE, RECORD_SIZE = 64, 32
FLAG_CONTIGUOUS = 0x01
FIRST_READ = 64 << 10  # a remote index's first request: header and, usually, both tables
HEADER_STRUCT = struct.Struct("<8sHHHHQQIIQQB7s")
assert HEADER_STRUCT.size == HEADER_SIZE

HEADER_FIELD_TYPES = {
    "magic": "S8", "major": "u16", "minor": "u16", "rec_size": "u16", "hdr_size": "u16", "n_stems": "u64",
    "n_rows": "u64", "n_ext": "u32", "n_crash": "u32", "off_crash": "u64", "off_arr": "u64", "flags": "u8",
    "reserved": "u8[7]",
}
_FIELD_SIZES = {"S8": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8, "u8[7]": 7}


def _layout() -> list[tuple[str, str, int, int]]:
    out, offset = [], 0
    for name, typ in HEADER_FIELD_TYPES.items():
        out.append((name, typ, offset, _FIELD_SIZES[typ]))
        offset += _FIELD_SIZES[typ]
    return out


FIELD_LAYOUT = _layout()
FIELD_OFFSETS = {name: off for name, _, off, _ in FIELD_LAYOUT}


@dataclass(frozen=True)
class TaridxHeader:
    magic: bytes
    major: int
    minor: int
    rec_size: int
    hdr_size: int
    n_stems: int
    n_rows: int
    n_ext: int
    n_crash: int
    off_crash: int
    off_arr: int
    flags: int
    reserved: bytes = bytes(7)

    @property
    def contiguous(self) -> bool:
        return bool(self.flags & FLAG_CONTIGUOUS)

    def as_dict(self) -> dict[str, object]:
        """The spec's field names, JSON-ready (magic as text, reserved left out)."""
        return {name: (self.magic.decode("ascii", "replace") if name == "magic" else getattr(self, name))
                for name in HEADER_FIELD_TYPES if name != "reserved"}

    @staticmethod
    def field_layout() -> list[tuple[str, str, int, int]]:
        """(name, type, offset, size) for every header field."""
        return list(FIELD_LAYOUT)


def parse_header(path: str, head: bytes, size: int) -> TaridxHeader:
    """Validate the 64-byte header of a ``size``-byte file against the file size."""
    if size < HEADER_SIZE or len(head) < HEADER_SIZE:
        raise TruncatedError(path, "header", 0, "file shorter than the header",
                             expected=f"{HEADER_SIZE} bytes", found=f"{size} bytes")
    fields = HEADER_STRUCT.unpack_from(head, 0)
    if fields[0] != MAGIC.ljust(8, b"\0"):
        raise VersionError(path, "magic", 0, "not a TARIDX file", expected=MAGIC.ljust(8, b"\0"), found=fields[0])
    header = TaridxHeader(fields[0].rstrip(b"\0"), *fields[1:])
    at = FIELD_OFFSETS
    if header.major != MAJOR:
        raise VersionError(path, "major", at["major"], "unsupported major version", expected=MAJOR,
                           found=header.major)
    if header.hdr_size != HEADER_SIZE:
        raise FormatError(path, "hdr_size", at["hdr_size"], "", expected=HEADER_SIZE, found=header.hdr_size)
    if header.rec_size != RECORD_SIZE:
        raise FormatError(path, "rec_size", at["rec_size"], "", expected=RECORD_SIZE, found=header.rec_size)
    if not HEADER_SIZE <= header.off_crash <= size:
        raise FormatError(path, "off_crash", at["off_crash"], "crash block offset outside the file",
                          expected=f"{HEADER_SIZE}..{size}", found=header.off_crash)
    if not header.off_crash <= header.off_arr <= size:
        raise FormatError(path, "off_arr", at["off_arr"], "row array offset outside the file or before the "
                          "crash block", expected=f"{header.off_crash}..{size}", found=header.off_arr)
    region = size - header.off_arr
    if region % RECORD_SIZE:
        raise TruncatedError(path, "rows", header.off_arr, "row region is not a whole number of 32-byte records",
                             expected=f"a multiple of {RECORD_SIZE} bytes", found=f"{region} bytes")
    if header.n_rows != region // RECORD_SIZE:
        raise FormatError(path, "n_rows", at["n_rows"], "row count disagrees with the file size",
                          expected=region // RECORD_SIZE, found=header.n_rows)
    if header.n_stems > header.n_rows:
        raise FormatError(path, "n_stems", at["n_stems"], "more stems than rows",
                          expected=f"<= {header.n_rows}", found=header.n_stems)
    if header.n_ext > 65536:  # extid is u16
        raise FormatError(path, "n_ext", at["n_ext"], "more extensions than a u16 extid can address",
                          expected="<= 65536", found=header.n_ext)
    return header


def split_block(raw: bytes, count: int, path: str, field: str, offset: int) -> list[str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, field, offset + exc.start, "block is not valid UTF-8") from None
    if count == 0:
        if raw:
            raise FormatError(path, field, offset, "block not empty but count is 0", expected=0, found=len(raw))
        return []
    items = text.split("\n")  # n == 1 and an empty block gives [''], as NOTES.md requires
    if len(items) != count:
        count_field = "n_ext" if field == "extensions" else "n_crash"
        raise FormatError(path, field, offset, f"entry count disagrees with {count_field}",
                          expected=count, found=len(items))
    return items


def parse_tables(path: str, header: TaridxHeader, data: bytes | mmap.mmap) -> tuple[list[str], list[str]]:
    """(extensions, crash stems) from ``data``, the file's bytes up to at least ``off_arr``."""
    extensions = split_block(bytes(data[HEADER_SIZE : header.off_crash]), header.n_ext, path, "extensions",
                             HEADER_SIZE)
    crash_stems = split_block(bytes(data[header.off_crash : header.off_arr]), header.n_crash, path, "crash_stems",
                              header.off_crash)
    return extensions, crash_stems


@dataclass(frozen=True)
class TaridxSummary:
    """What ``info`` shows: the header and the tables; no row is read."""

    path: str
    header: TaridxHeader
    extensions: list[str]
    crash_stems: list[str]

    @property
    def n_rows(self) -> int:
        return self.header.n_rows


def read_head_and_tables(source: RangedSource, first: bytes | None = None) -> tuple[TaridxHeader, list[str], list[str]]:
    """Header and tables through ranged reads: one request for an index whose tables fit in 64 KiB.

    ``first``: the file's first bytes, when the caller has read them already (none are read again).
    """
    path, size = source.name, source.size
    if first is None:
        first = bytes(source.read(0, min(size, FIRST_READ)))
    header = parse_header(path, first, size)
    if header.off_arr > len(first):
        first += bytes(source.read(len(first), header.off_arr - len(first)))
    return (header, *parse_tables(path, header, first))


def read_taridx_summary(path: str | os.PathLike[str], storage_options: dict | None = None) -> TaridxSummary:
    """Header and tables of a .taridx, validated as :func:`~itarcore.formats.taridx.read_taridx` does, rows unread."""
    from ..storage import is_url, open_source

    if is_url(path):
        with open_source(path, storage_options) as source:
            return TaridxSummary(source.name, *read_head_and_tables(source))
    path = os.fspath(path)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(HEADER_SIZE)
        header = parse_header(path, head, size)
        data = head + fh.read(header.off_arr - HEADER_SIZE)
    return TaridxSummary(path, header, *parse_tables(path, header, data))


def encode_header(n_stems: int, n_rows: int, n_ext: int, n_crash: int, off_crash: int, off_arr: int,
                  flags: int, minor: int = MINOR) -> bytes:
    return HEADER_STRUCT.pack(MAGIC, MAJOR, minor, RECORD_SIZE, HEADER_SIZE, n_stems, n_rows, n_ext, n_crash,
                              off_crash, off_arr, flags, bytes(7))


def _text_block(path: str | os.PathLike[str], what: str, strings: Sequence[str]) -> bytes:
    """Strings joined by newlines as UTF-8; refuses one that would not read back as itself."""
    for i, text in enumerate(strings):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise WriteError(f"{os.fspath(path)}: {what} {i} {text!r} is not text that UTF-8 can store") from None
        if "\n" in text:
            raise WriteError(f"{os.fspath(path)}: {what} {i} {text!r} holds a newline, the index's separator")
    return "\n".join(strings).encode("utf-8")


def write_taridx_records(path: str | os.PathLike[str], records: Iterable[bytes | bytearray | memoryview],
                         n_rows: int, extensions: Sequence[str], crash_stems: Sequence[str], n_stems: int,
                         contiguous: bool, while_syncing: Callable[[], None] | None = None) -> None:
    """Write a .taridx from its rows as raw 32-byte records, in one or more pieces, atomically
    (temp file, fsync, rename).

    The one writer of TARIDX files: ``taridx.write_taridx`` passes a numpy array's bytes, the
    cached-fold route (:mod:`itarcore.indexing.cached_fold`) one piece per shard, made as they
    are written while the disk takes the pieces before, and the check of its claims as
    ``while_syncing`` (see :func:`itarcore.atomic.atomic_write`).
    """
    ext_block = _text_block(path, "extension", extensions)
    crash_block = _text_block(path, "crash stem", crash_stems)
    off_crash = HEADER_SIZE + len(ext_block)
    off_arr = off_crash + len(crash_block)
    header = encode_header(n_stems, n_rows, len(extensions), len(crash_stems), off_crash, off_arr,
                           FLAG_CONTIGUOUS if contiguous else 0)
    with atomic_write(path, while_syncing=while_syncing) as fh, BackgroundSync(fh) as writeback:
        fh.write(header + ext_block + crash_block)
        written = 0
        for piece in records:
            written += fh.write(piece)
            writeback.kick()  # a no-op while the previous piece is still going to disk
        if written != n_rows * RECORD_SIZE:
            raise ValueError(f"{n_rows} rows need {n_rows * RECORD_SIZE} bytes of records, not {written}")
