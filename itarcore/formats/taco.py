"""TACO zip archives: the 157-byte TACO_HEADER at byte 0, its entries, updates and creation.

A TACO archive is an ordinary ZIP whose first member, ``TACO_HEADER``, is stored
(116 bytes) right at offset 0, so a cloud reader can fetch bytes 0-156 and learn up to
seven (offset, length) ranges of the archive it will need. The ZIP structure is read
by :mod:`itarcore.formats.zipfmt`; this module checks the header against it.
"""
from __future__ import annotations

import errno
import os
import struct
import time
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ..errors import ChecksumError, FormatError, TruncatedError, WriteError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .zipfmt import CDH_CRC_OFFSET, LFH_SIG, ZipArchive, ZipMember, read_zip

HEADER_NAME = "TACO_HEADER"
HEADER_SIZE = 157
PAYLOAD_OFFSET = 41
PAYLOAD_SIZE = 116
MAX_ENTRIES = 7
LFH_CRC_OFFSET = 14
ENTRIES_OFFSET = PAYLOAD_OFFSET + 4  # after the count byte and 3 padding bytes
U64_MAX = 2**64 - 1

# (name, offset, size, on-disk type) of the local file header that opens every TACO archive
LFH_FIELDS = [
    ("signature", 0, 4, "u32"),
    ("version needed", 4, 2, "u16"),
    ("general purpose flags", 6, 2, "u16"),
    ("compression method", 8, 2, "u16"),
    ("last mod time", 10, 2, "u16"),
    ("last mod date", 12, 2, "u16"),
    ("crc-32", 14, 4, "u32"),
    ("compressed size", 18, 4, "u32"),
    ("uncompressed size", 22, 4, "u32"),
    ("file name length", 26, 2, "u16"),
    ("extra field length", 28, 2, "u16"),
]
_LFH = struct.Struct("<I5H3I2H")
ENTRY_DTYPE = np.dtype([("offset", "<u8"), ("length", "<u8")])

# Entry status, from best to worst. The last two mean the entry points nowhere sensible.
STATUS_MEMBER = "whole member"
STATUS_INSIDE = "inside member"
STATUS_EMPTY = "empty range"
STATUS_NOT_DATA = "not member data"
STATUS_PAST_END = "past end of file"
BAD_STATUSES = (STATUS_NOT_DATA, STATUS_PAST_END)


@dataclass(frozen=True)
class TacoHeader:
    lfh: dict[str, int]  # LFH_FIELDS name -> value
    name: bytes
    count: int
    padding: bytes
    slots: np.ndarray  # all 7 (offset, length) pairs, ENTRY_DTYPE
    payload_crc: int  # computed over the 116 payload bytes

    @property
    def entries(self) -> list[tuple[int, int]]:
        return [(int(o), int(n)) for o, n in self.slots[: self.count]]


@dataclass(frozen=True)
class EntryTarget:
    index: int
    offset: int
    length: int
    member: ZipMember | None
    status: str

    @property
    def sensible(self) -> bool:
        return self.status not in BAD_STATUSES


@dataclass(frozen=True)
class TacoArchive:
    path: str
    header: TacoHeader
    zip: ZipArchive
    header_member: ZipMember
    targets: list[EntryTarget]

    @property
    def cd_crc_offset(self) -> int:
        return self.header_member.cd_offset + CDH_CRC_OFFSET


def parse_header(data: bytes, path: str | None = None) -> TacoHeader:
    """Parse and check the 157 bytes at the start of a TACO archive."""
    if len(data) < HEADER_SIZE:
        raise TruncatedError(path, "TACO_HEADER", 0, "file too short for a TACO header",
                             expected=f"{HEADER_SIZE} bytes", found=f"{len(data)} bytes")
    values = _LFH.unpack_from(data, 0)
    lfh = {name: value for (name, *_), value in zip(LFH_FIELDS, values)}
    if data[:4] != LFH_SIG:
        raise FormatError(path, "local header signature", 0, expected="PK\\x03\\x04", found=bytes(data[:4]))
    name = bytes(data[30:30 + lfh["file name length"]])
    if lfh["file name length"] != len(HEADER_NAME) or name != HEADER_NAME.encode():
        raise FormatError(path, "first member name", 30, "not a TACO archive", expected=HEADER_NAME, found=name)
    if lfh["extra field length"] != 0:
        raise FormatError(path, "extra field length", 28, "the payload must start at byte 41", expected=0,
                          found=lfh["extra field length"])
    if lfh["compression method"] != 0:
        raise FormatError(path, "compression method", 8, "TACO_HEADER must be stored", expected="0 (STORE)",
                          found=lfh["compression method"])
    for field, offset in (("compressed size", 18), ("uncompressed size", 22)):
        if lfh[field] != PAYLOAD_SIZE:
            raise FormatError(path, field, offset, expected=PAYLOAD_SIZE, found=lfh[field])
    payload = bytes(data[PAYLOAD_OFFSET:HEADER_SIZE])
    count = payload[0]
    if count > MAX_ENTRIES:
        raise FormatError(path, "entry count", PAYLOAD_OFFSET, expected=f"0..{MAX_ENTRIES}", found=count)
    crc = zlib.crc32(payload)
    if crc != lfh["crc-32"]:
        raise ChecksumError(path, "crc-32", LFH_CRC_OFFSET, "local header CRC does not match the payload",
                            expected=f"0x{crc:08x}", found=f"0x{lfh['crc-32']:08x}")
    slots = np.frombuffer(payload, dtype=ENTRY_DTYPE, count=MAX_ENTRIES, offset=4)
    return TacoHeader(lfh, name, count, payload[1:4], slots, crc)


def read_taco(path: str | os.PathLike[str]) -> TacoArchive:
    """Read a TACO archive, checking the header against the whole ZIP structure."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        head = fh.read(HEADER_SIZE)
    header = parse_header(head, path)
    archive = read_zip(path)
    first = next((m for m in archive.members if m.header_offset == 0), None)
    if first is None or first.name != HEADER_NAME:
        raise FormatError(path, "central directory", archive.cd_offset,
                          "no central-directory record for the TACO_HEADER at offset 0",
                          expected=HEADER_NAME, found=first.name if first else "nothing")
    for field, want, got in (("compression method", 0, first.method),
                             ("compressed size", PAYLOAD_SIZE, first.compressed_size),
                             ("uncompressed size", PAYLOAD_SIZE, first.size)):
        if want != got:
            raise FormatError(path, f"central directory TACO_HEADER: {field}", first.cd_offset,
                              expected=want, found=got)
    if first.crc32 != header.payload_crc:
        raise ChecksumError(path, "central directory TACO_HEADER: crc-32", first.cd_offset + CDH_CRC_OFFSET,
                            "does not match the payload", expected=f"0x{header.payload_crc:08x}",
                            found=f"0x{first.crc32:08x}")
    targets = [classify_entry(archive, i, o, n) for i, (o, n) in enumerate(header.entries)]
    return TacoArchive(path, header, archive, first, targets)


def classify_entry(archive: ZipArchive, index: int, offset: int, length: int) -> EntryTarget:
    """Which member an (offset, length) range falls in, and whether that makes sense."""
    if offset + length > archive.file_size:
        return EntryTarget(index, offset, length, None, STATUS_PAST_END)
    for m in archive.members:
        if offset == m.data_offset and length == m.compressed_size:
            return EntryTarget(index, offset, length, m, STATUS_MEMBER)
    member = archive.member_containing(offset, length)
    if length == 0:
        return EntryTarget(index, offset, length, member, STATUS_EMPTY)
    if member is not None:
        return EntryTarget(index, offset, length, member, STATUS_INSIDE)
    return EntryTarget(index, offset, length, None, STATUS_NOT_DATA)


def build_payload(entries: Sequence[tuple[int, int]], path: str | None = None) -> bytes:
    """The 116 payload bytes for ``entries``; refuses anything the header cannot hold as given."""
    where = path or "<memory>"
    entries = list(entries)
    if len(entries) > MAX_ENTRIES:
        raise WriteError(f"{where}: {len(entries)} entries given, a TACO header holds at most {MAX_ENTRIES}")
    slots = np.zeros(MAX_ENTRIES, dtype=ENTRY_DTYPE)
    for i, pair in enumerate(entries):
        if len(pair) != 2:
            raise WriteError(f"{where}: entry {i} must be an (offset, length) pair, got {pair!r}")
        for what, value in zip(("offset", "length"), pair):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise WriteError(f"{where}: entry {i} {what} must be an integer, got {value!r}")
            if not 0 <= int(value) <= U64_MAX:
                raise WriteError(f"{where}: entry {i} {what} {int(value)} is outside the u64 range 0..{U64_MAX}")
        slots[i] = (int(pair[0]), int(pair[1]))
    return bytes([len(entries), 0, 0, 0]) + slots.tobytes()


def update_entries(path: str | os.PathLike[str], entries: Sequence[tuple[int, int]], *,
                   progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> TacoArchive:
    """Rewrite the header entries in place: 116 payload bytes, the local CRC and the central CRC.

    The whole archive is checked first; nothing is written unless every check passes.
    """
    path = os.fspath(path)
    reporter = ProgressReporter(progress, 3, "steps", cancel)
    payload = build_payload(entries, path)
    before = read_taco(path)
    reporter.update(1, message="archive checked")
    crc = struct.pack("<I", zlib.crc32(payload))
    with open(path, "r+b") as fh:
        # Refuse if the file changed between the check and this write.
        head = fh.read(HEADER_SIZE)
        fh.seek(before.cd_crc_offset)
        cd_crc = fh.read(4)
        if (os.fstat(fh.fileno()).st_size != before.zip.file_size or head[14:18] != cd_crc
                or zlib.crc32(head[PAYLOAD_OFFSET:]) != before.header.payload_crc):
            raise WriteError(f"{path}: the file changed while it was being checked; nothing written")
        reporter.update(2, message="writing")
        fh.seek(PAYLOAD_OFFSET)
        fh.write(payload)
        fh.seek(LFH_CRC_OFFSET)
        fh.write(crc)
        fh.seek(before.cd_crc_offset)
        fh.write(crc)
        fh.flush()
        os.fsync(fh.fileno())
    after = read_taco(path)
    reporter.cancel = None  # written: too late to report a cancel
    reporter.finish("header updated")
    return after


def entries_for_members(archive: ZipArchive, names: Sequence[str]) -> list[tuple[int, int]]:
    """(data offset, stored size) of each named member, in the order given."""
    out = []
    for name in names:
        member = archive.member_named(name)
        if member is None:
            raise WriteError(f"{archive.path}: no member named {name!r} "
                             f"(members: {', '.join(m.name for m in archive.members)})")
        out.append((member.data_offset, member.compressed_size))
    return out


def create_archive(out: str | os.PathLike[str], files: Sequence[tuple[str | os.PathLike[str], str]],
                   entry_members: Sequence[str] = (), *, progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> TacoArchive:
    """Write a TACO archive of ``files`` ((source path, name in archive) pairs), all stored.

    Its header entries point at the data of ``entry_members``, in that order. ZIP64 records are
    used where sizes or offsets need them. The archive is written to a temporary file next to
    ``out``, synced, and renamed over ``out`` only when complete.
    """
    out = os.fspath(out)
    if len(entry_members) > MAX_ENTRIES:
        raise WriteError(f"{out}: {len(entry_members)} entries asked, a TACO header holds at most {MAX_ENTRIES}")
    names = [arcname for _, arcname in files]
    _check_arcnames(out, names, entry_members)
    sizes = [os.path.getsize(src) for src, _ in files]
    reporter = ProgressReporter(progress, sum(sizes) + 1, "bytes", cancel)
    folder, base = os.path.split(os.path.abspath(out))
    tmp = os.path.join(folder, f".{base}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w+b") as raw:
            _write_zip(raw, files, sizes, reporter)
            raw.flush()
            os.fsync(raw.fileno())
        entries = entries_for_members(read_zip(tmp), entry_members)
        update_entries(tmp, entries)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    reporter.cancel = None
    reporter.finish("archive written")
    return read_taco(out)


def _check_arcnames(out: str, names: Sequence[str], entry_members: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if not name or name.startswith("/") or name.endswith("/") or ".." in name.split("/"):
            raise WriteError(f"{out}: {name!r} is not a usable member name (relative path, no '..')")
        if name == HEADER_NAME or name in seen:
            raise WriteError(f"{out}: member name {name!r} appears twice (TACO_HEADER is reserved)")
        seen.add(name)
    for name in entry_members:
        if name not in seen:
            raise WriteError(f"{out}: entry member {name!r} is not one of the files being archived")


_CHUNK = 1 << 20


def _write_zip(raw: BinaryIO, files: Sequence[tuple[str | os.PathLike[str], str]], sizes: list[int],
               reporter: ProgressReporter) -> None:
    writer = _SparseWriter(raw)
    with zipfile.ZipFile(writer, "w", zipfile.ZIP_STORED) as zf:
        header = zipfile.ZipInfo(HEADER_NAME, date_time=time.localtime()[:6])
        header.external_attr = 0o644 << 16
        zf.writestr(header, build_payload([]))  # entries are filled in once offsets are known
        done = 0
        for (src, arcname), size in zip(files, sizes):
            info = zipfile.ZipInfo.from_file(src, arcname, strict_timestamps=False)
            info.compress_type = zipfile.ZIP_STORED
            with open(src, "rb") as fin, zf.open(info, "w", force_zip64=size > zipfile.ZIP64_LIMIT) as dst:
                for chunk in _chunks(fin):
                    dst.write(chunk)
                    done += len(chunk)
                    reporter.update(done, current=arcname)
            if info.file_size != size:
                raise WriteError(f"{src}: changed size while being archived ({size} -> {info.file_size} bytes)")
    writer.flush()


def _chunks(fin: BinaryIO) -> Iterator[bytes]:
    """The file's bytes in chunks; holes of a sparse file come from a zero buffer instead of read()."""
    zero = _SparseWriter._ZERO
    fd, pos = fin.fileno(), 0
    while True:
        try:
            data_at = os.lseek(fd, pos, os.SEEK_DATA)
            hole_at = os.lseek(fd, data_at, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # no hole support here: plain reads
                data_at, hole_at = pos, None
            else:  # only a hole from here to the end
                data_at, hole_at = os.fstat(fd).st_size, None
                if data_at <= pos:
                    return
        if data_at > pos:
            while pos < data_at:
                n = min(_CHUNK, data_at - pos)
                yield zero if n == _CHUNK else zero[:n]
                pos += n
            continue
        fin.seek(pos)
        chunk = fin.read(_CHUNK if hole_at is None else min(_CHUNK, hole_at - pos) or _CHUNK)
        if not chunk:
            return
        yield chunk
        pos += len(chunk)


class _SparseWriter:
    """File wrapper for zipfile that seeks over all-zero chunks, so sparse inputs stay sparse."""

    _ZERO = bytes(_CHUNK)

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.end = 0

    def write(self, data: bytes) -> int:
        n = len(data)
        # bytes == bytes is a memcmp; memoryview comparison would walk element by element
        if 4096 <= n <= _CHUNK and bytes(data) == (self._ZERO if n == _CHUNK else self._ZERO[:n]):
            self.raw.seek(n, os.SEEK_CUR)
        else:
            self.raw.write(data)
        self.end = max(self.end, self.raw.tell())
        return n

    def flush(self) -> None:
        self.raw.truncate(max(self.end, self.raw.tell()))  # a trailing hole still counts as file length
        self.raw.flush()

    def tell(self) -> int:
        return self.raw.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        """The underlying file belongs to the caller, which syncs and closes it."""
