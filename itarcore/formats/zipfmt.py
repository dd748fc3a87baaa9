"""A strict reader of ZIP structure: end records, central directory, local headers.

It does not extract anything. It finds where every member's stored bytes are, with
the sizes, CRC and method the central directory claims, and refuses archives that
different ZIP readers would understand differently (a second end record inside the
comment, a ZIP64 locator pointing nowhere, a central directory that does not start
or end where the end record says). Every count and offset is checked against the
file size before it is used.
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

from ..errors import FormatError, TruncatedError

LFH_SIG = b"PK\x03\x04"
CDH_SIG = b"PK\x01\x02"
EOCD_SIG = b"PK\x05\x06"
ZIP64_EOCD_SIG = b"PK\x06\x06"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"

LFH_SIZE = 30
CDH_SIZE = 46
EOCD_SIZE = 22
ZIP64_EOCD_MIN_SIZE = 56
ZIP64_LOCATOR_SIZE = 20
MAX_COMMENT = 0xFFFF
CDH_CRC_OFFSET = 16  # of the CRC-32 field inside a central-directory record

_LFH = struct.Struct("<4s5H3I2H")
_CDH = struct.Struct("<4s6H3I5H2I")
_EOCD = struct.Struct("<4s4H2IH")
_ZIP64_EOCD = struct.Struct("<4sQ2H2I4Q")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")

METHOD_NAMES = {0: "stored", 8: "deflate", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstd", 95: "xz"}


@dataclass(frozen=True)
class ZipMember:
    index: int
    name: str
    cd_offset: int  # where this member's central-directory record starts
    header_offset: int  # where its local file header starts
    data_offset: int  # absolute offset of its stored bytes
    compressed_size: int
    size: int
    crc32: int
    method: int
    flags: int
    version_needed: int
    mod_time: int
    mod_date: int
    zip64: bool  # sizes or offset came from a ZIP64 extra field

    @property
    def data_end(self) -> int:
        return self.data_offset + self.compressed_size

    @property
    def method_name(self) -> str:
        return METHOD_NAMES.get(self.method, f"method {self.method}")


@dataclass(frozen=True)
class ZipArchive:
    path: str
    file_size: int
    eocd_offset: int
    zip64_locator_offset: int | None
    zip64_eocd_offset: int | None
    cd_offset: int
    cd_size: int
    comment: bytes
    members: list[ZipMember]

    @property
    def zip64(self) -> bool:
        return self.zip64_eocd_offset is not None

    def member_named(self, name: str) -> ZipMember | None:
        for m in self.members:
            if m.name == name:
                return m
        return None

    def member_containing(self, offset: int, length: int) -> ZipMember | None:
        """The member whose stored bytes hold all of [offset, offset + length)."""
        for m in self.members:
            if m.data_offset <= offset and offset + length <= m.data_end:
                return m
        return None


def read_zip(path: str | os.PathLike[str]) -> ZipArchive:
    """Read and cross-check the structure of the ZIP archive at ``path``."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < EOCD_SIZE:
            raise TruncatedError(path, "end of central directory", 0, "file too small for a ZIP archive",
                                 expected=f">= {EOCD_SIZE} bytes", found=f"{size} bytes")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(path, buf, size)


def _parse(path: str, buf: mmap.mmap, size: int) -> ZipArchive:
    eocd = _find_eocd(path, buf, size)
    _, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, comment_len = _EOCD.unpack_from(buf, eocd)
    if (disk, cd_disk) not in ((0, 0), (0xFFFF, 0xFFFF)) or n_disk != n_total:  # 0xFFFF: see ZIP64 record
        raise FormatError(path, "end of central directory: disk numbers", eocd + 4,
                          "multi-disk (split) archives are not supported", expected="disk 0", found=f"disk {disk}")
    comment = bytes(buf[eocd + EOCD_SIZE: eocd + EOCD_SIZE + comment_len])
    cd_end = eocd
    locator = eocd - ZIP64_LOCATOR_SIZE
    locator_offset = zip64_offset = None
    # Follow the ZIP64 locator whenever it is there, not only when the 32-bit fields are saturated:
    # tacozip writes one with ordinary 32-bit values.
    if locator >= 0 and buf[locator: locator + 4] == ZIP64_LOCATOR_SIG:
        locator_offset = locator
        zip64_offset, n_total, cd_size, cd_offset = _read_zip64_end(path, buf, locator)
        cd_end = zip64_offset
    if cd_offset + cd_size != cd_end:
        raise FormatError(path, "end of central directory: central directory offset + size", eocd + 16,
                          "the central directory must end where the end records begin",
                          expected=cd_end, found=f"{cd_offset} + {cd_size} = {cd_offset + cd_size}")
    if n_total * CDH_SIZE > cd_size:  # bound the count before walking the records
        raise FormatError(path, "end of central directory: number of entries", eocd + 10,
                          f"{n_total} records cannot fit in a {cd_size}-byte central directory",
                          expected=f"<= {cd_size // CDH_SIZE}", found=n_total)
    members = _read_central_directory(path, buf, cd_offset, cd_size, n_total)
    return ZipArchive(path, size, eocd, locator_offset, zip64_offset, cd_offset, cd_size, comment, members)


def _find_eocd(path: str, buf: mmap.mmap, size: int) -> int:
    """Offset of the one end record whose comment reaches exactly to the end of the file.

    Any other end-record signature inside that comment is refused: Python's zipfile, for one,
    trusts the last signature it sees, so such an archive means different things to different readers.
    """
    start = max(0, size - EOCD_SIZE - MAX_COMMENT)
    tail = buf[start:size]
    hits = []
    pos = tail.rfind(EOCD_SIG)
    while pos >= 0:
        hits.append(start + pos)
        pos = tail.rfind(EOCD_SIG, 0, pos)
    consistent = [h for h in hits if h + EOCD_SIZE <= size
                  and h + EOCD_SIZE + int.from_bytes(buf[h + 20: h + 22], "little") == size]
    if not consistent:
        if hits:
            h = hits[0]
            found_len = int.from_bytes(buf[h + 20: h + 22], "little") if h + EOCD_SIZE <= size else None
            raise FormatError(path, "end of central directory: comment length", h + 20,
                              "no end record whose comment ends at the end of the file",
                              expected=size - h - EOCD_SIZE, found=found_len)
        raise FormatError(path, "end of central directory", None,
                          f"signature PK\\x05\\x06 not found in the last {size - start} bytes: not a ZIP archive")
    eocd = min(consistent)  # the outermost: every later hit lies inside its comment
    inside = [h for h in hits if h > eocd]
    if inside:
        raise FormatError(path, "end of central directory: comment", eocd + EOCD_SIZE,
                          f"a second end-record signature at offset {max(inside)} lies inside the archive comment; "
                          "ZIP readers would disagree on which record is real")
    return eocd


def _read_zip64_end(path: str, buf: mmap.mmap, locator: int) -> tuple[int, int, int, int]:
    _, disk, z64_offset, n_disks = _ZIP64_LOCATOR.unpack_from(buf, locator)
    if disk != 0 or n_disks > 1:
        raise FormatError(path, "ZIP64 locator: disk numbers", locator + 4,
                          "multi-disk (split) archives are not supported", expected="disk 0 of 1",
                          found=f"disk {disk} of {n_disks}")
    if z64_offset + ZIP64_EOCD_MIN_SIZE > locator:
        raise FormatError(path, "ZIP64 locator: offset of ZIP64 end record", locator + 8,
                          "points past the locator itself", expected=f"<= {locator - ZIP64_EOCD_MIN_SIZE}",
                          found=z64_offset)
    if buf[z64_offset: z64_offset + 4] != ZIP64_EOCD_SIG:
        raise FormatError(path, "ZIP64 end record: signature", z64_offset,
                          "the ZIP64 locator points at something else",
                          expected="PK\\x06\\x06", found=bytes(buf[z64_offset: z64_offset + 4]))
    (_, rec_size, _made, _needed, disk, cd_disk, n_disk, n_total, cd_size, cd_offset) = \
        _ZIP64_EOCD.unpack_from(buf, z64_offset)
    if z64_offset + 12 + rec_size != locator:
        raise FormatError(path, "ZIP64 end record: record size", z64_offset + 4,
                          "the record must end where the ZIP64 locator begins",
                          expected=locator - z64_offset - 12, found=rec_size)
    if disk != 0 or cd_disk != 0 or n_disk != n_total:
        raise FormatError(path, "ZIP64 end record: disk numbers", z64_offset + 16,
                          "multi-disk (split) archives are not supported", expected="disk 0", found=f"disk {disk}")
    return z64_offset, n_total, cd_size, cd_offset


def _read_central_directory(path: str, buf: mmap.mmap, cd_offset: int, cd_size: int,
                            n_total: int) -> list[ZipMember]:
    members: list[ZipMember] = []
    pos, cd_end = cd_offset, cd_offset + cd_size
    for index in range(n_total):
        if pos + CDH_SIZE > cd_end:
            raise TruncatedError(path, f"central directory record {index}", pos,
                                 "the central directory ends inside this record",
                                 expected=f"{CDH_SIZE} bytes", found=f"{cd_end - pos} bytes")
        (sig, _made, needed, flags, method, mtime, mdate, crc, csize, usize,
         name_len, extra_len, comment_len, disk, _iattr, _eattr, lho) = _CDH.unpack_from(buf, pos)
        if sig != CDH_SIG:
            raise FormatError(path, f"central directory record {index}: signature", pos,
                              expected="PK\\x01\\x02", found=sig)
        var_end = pos + CDH_SIZE + name_len + extra_len + comment_len
        if var_end > cd_end:
            raise TruncatedError(path, f"central directory record {index}: name/extra/comment", pos + 28,
                                 "variable-length fields run past the central directory",
                                 expected=f"<= {cd_end}", found=var_end)
        raw_name = bytes(buf[pos + CDH_SIZE: pos + CDH_SIZE + name_len])
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        extra = bytes(buf[pos + CDH_SIZE + name_len: pos + CDH_SIZE + name_len + extra_len])
        usize, csize, lho, disk, zip64 = _apply_zip64_extra(path, index, pos + CDH_SIZE + name_len, extra,
                                                            usize, csize, lho, disk)
        if disk != 0:
            raise FormatError(path, f"central directory record {index} ({name}): disk number start", pos + 34,
                              "multi-disk (split) archives are not supported", expected=0, found=disk)
        data_offset = _local_data_offset(path, buf, index, name, raw_name, lho, cd_offset)
        if data_offset + csize > cd_offset:
            raise FormatError(path, f"member {name!r}: compressed size", pos + 20,
                              "stored bytes run into the central directory",
                              expected=f"<= {cd_offset - data_offset}", found=csize)
        members.append(ZipMember(index, name, pos, lho, data_offset, csize, usize, crc, method, flags, needed,
                                 mtime, mdate, zip64))
        pos = var_end
    if pos != cd_end:
        raise FormatError(path, "central directory size", pos,
                          f"{n_total} records end before the declared end of the central directory",
                          expected=cd_end, found=pos)
    return members


def _apply_zip64_extra(path: str, index: int, extra_offset: int, extra: bytes, usize: int, csize: int,
                       lho: int, disk: int) -> tuple[int, int, int, int, bool]:
    """Replace saturated 32-bit fields by the ZIP64 extra field's values, in the order the format fixes."""
    needed = [usize == 0xFFFFFFFF, csize == 0xFFFFFFFF, lho == 0xFFFFFFFF, disk == 0xFFFF]
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<2H", extra, pos)
        body = extra[pos + 4: pos + 4 + length]
        if len(body) != length:
            raise TruncatedError(path, f"central directory record {index}: extra field 0x{tag:04x}",
                                 extra_offset + pos, "runs past the extra area",
                                 expected=f"{length} bytes", found=f"{len(body)} bytes")
        if tag == 0x0001:
            values = [usize, csize, lho, disk]
            at = 0
            for slot, wanted in enumerate(needed):
                if not wanted:
                    continue
                width = 4 if slot == 3 else 8
                if at + width > length:
                    raise TruncatedError(path, f"central directory record {index}: ZIP64 extra field",
                                         extra_offset + pos + 4 + at, "too short for the saturated fields",
                                         expected=f">= {at + width} bytes", found=f"{length} bytes")
                values[slot] = int.from_bytes(body[at: at + width], "little")
                at += width
            return values[0], values[1], values[2], values[3], True
        pos += 4 + length
    if any(needed[:3]):
        raise FormatError(path, f"central directory record {index}: ZIP64 extra field", extra_offset,
                          "a size or offset is 0xFFFFFFFF but there is no ZIP64 extra field")
    return usize, csize, lho, disk, False


def _local_data_offset(path: str, buf: mmap.mmap, index: int, name: str, raw_name: bytes, lho: int,
                       cd_offset: int) -> int:
    if lho + LFH_SIZE > cd_offset:
        raise FormatError(path, f"central directory record {index} ({name}): local header offset", None,
                          "local header would overlap the central directory",
                          expected=f"<= {cd_offset - LFH_SIZE}", found=lho)
    sig, *_rest, name_len, extra_len = _LFH.unpack_from(buf, lho)
    if sig != LFH_SIG:
        raise FormatError(path, f"local header of {name!r}: signature", lho, expected="PK\\x03\\x04", found=sig)
    local_name = bytes(buf[lho + LFH_SIZE: lho + LFH_SIZE + name_len])
    if local_name != raw_name:
        raise FormatError(path, f"local header of {name!r}: file name", lho + LFH_SIZE,
                          "differs from the central directory", expected=raw_name, found=local_name)
    return lho + LFH_SIZE + name_len + extra_len
