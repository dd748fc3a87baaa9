"""TBL (TurboLoader binary) v1 and v2 reader; layouts as in specs/NOTES.md (which wins over tbl-format.md).

v1: 32-byte header (``TBL\\x01``, version, num_samples, header_size = 32 + 16N at offset
16), then N 16-byte entries, then the samples; offsets are absolute.
v2: 64-byte header with a zlib CRC-32, N 24-byte entries (with per-sample CRC-16/MODBUS of
the uncompressed bytes), samples (raw or raw LZ4 blocks), then metadata blocks.

Everything the file declares is checked against the file size when it is opened, so a
truncated file fails at open time. The index is a zero-copy numpy view over the mmap.
"""
from __future__ import annotations

import json
import mmap
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ChecksumError, FormatError, ItarError, TruncatedError, VersionError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .tbl_crc import crc16_modbus_many

if TYPE_CHECKING:
    from typing_extensions import Self

MAGIC_V1, MAGIC_V2 = b"TBL\x01", b"TBL\x02"
V1_HEADER_SIZE, V1_ENTRY_SIZE = 32, 16
V2_HEADER_SIZE, V2_ENTRY_SIZE = 64, 24
META_BLOCK_HEADER_SIZE = 16
LZ4_MAX_RATIO = 255  # an LZ4 block's length bytes add at most 255 output bytes each: a bound on any block's output

V1_ENTRY = np.dtype([("offset", "<u8"), ("size", "<u4"), ("format", "u1"), ("reserved", "V3")])
V2_ENTRY = np.dtype([
    ("offset", "<u8"), ("size", "<u4"), ("uncompressed_size", "<u4"), ("width", "<u2"), ("height", "<u2"),
    ("format", "u1"), ("flags", "u1"), ("crc16", "<u2"),
])
META_BLOCK_HEADER = np.dtype([("sample_index", "<u8"), ("length", "<u4"), ("type", "<u2"), ("reserved", "<u2")])

# SampleFormat codes, named as in specs/NOTES.md (the info JSON uses these names)
FORMAT_NAMES = ("UNKNOWN", "JPEG", "PNG", "WEBP", "BMP", "TIFF", "MP4", "AVI", "RAW_U8")
FORMAT_EXTS = ("bin", "jpg", "png", "webp", "bmp", "tiff", "mp4", "avi", "raw_u8")
FORMAT_CODES = {name: code for code, name in enumerate(FORMAT_NAMES)}

FILE_COMPRESSED, FILE_HAS_METADATA, FILE_HAS_CHECKSUMS = 1, 2, 4
ENTRY_COMPRESSED, ENTRY_HAS_METADATA = 1, 2
META_TYPES = {0: "none", 1: "json", 2: "protobuf", 3: "msgpack", 255: "custom"}
META_TYPE_CODES = {name: code for code, name in META_TYPES.items()}


def format_name(code: int) -> str:
    return FORMAT_NAMES[code] if 0 <= code < len(FORMAT_NAMES) else f"FORMAT_{code}"


def file_flag_names(flags: int) -> list[str]:
    names = [n for bit, n in ((1, "compressed"), (2, "has metadata"), (4, "has checksums")) if flags & bit]
    if flags & ~7:
        names.append(f"unknown bits 0x{flags & ~7:x}")
    return names


def entry_flag_names(flags: int) -> list[str]:
    names = [n for bit, n in ((1, "compressed"), (2, "metadata")) if flags & bit]
    if flags & ~3:
        names.append(f"0x{flags & ~3:x}")
    return names


@dataclass(frozen=True)
class MetadataBlock:
    sample_index: int
    type: int
    offset: int  # absolute offset of the block's 16-byte header
    length: int

    @property
    def type_name(self) -> str:
        return META_TYPES.get(self.type, f"type {self.type}")

    @property
    def data_offset(self) -> int:
        return self.offset + META_BLOCK_HEADER_SIZE


@dataclass
class VerifyReport:
    checked: int = 0
    bad_samples: list[int] = field(default_factory=list)  # CRC mismatch or undecodable payload
    problems: list[str] = field(default_factory=list)
    header_crc_ok: bool | None = None  # None: v1 has no header CRC

    @property
    def ok(self) -> bool:
        return not self.bad_samples and self.header_crc_ok is not False


def _lz4_block() -> Any:
    try:
        import lz4.block
    except ImportError:
        raise ItarError("this TBL file has LZ4-compressed samples; install the optional 'lz4' package "
                        "(pip install 'itar-browser[lz4]') to read them") from None
    return lz4.block


class TblFile:
    """An opened TBL file. ``entries`` is a structured numpy view (V1_ENTRY or V2_ENTRY) over the mmap."""

    def __init__(self, path: str | os.PathLike[str], *, check_header_crc: bool = True) -> None:
        self.path = os.fspath(path)
        with open(self.path, "rb") as fh:
            self.file_size = os.fstat(fh.fileno()).st_size
            self._map: mmap.mmap | bytes = (
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if self.file_size else b"")
        try:
            self._parse(check_header_crc)
        except BaseException:
            self.close()
            raise

    # -- parsing -----------------------------------------------------------------------------
    def _need(self, end: int, field_name: str, offset: int, what: str) -> None:
        if end > self.file_size:
            raise TruncatedError(self.path, field_name, offset, f"{what} runs past the end of the file",
                                 expected=f"file of at least {end} bytes", found=f"{self.file_size} bytes")

    def _parse(self, check_header_crc: bool) -> None:
        buf = self._map
        self._need(4, "magic", 0, "the 4-byte magic")
        magic = bytes(buf[:4])
        if magic not in (MAGIC_V1, MAGIC_V2):
            raise VersionError(self.path, "magic", 0, "not a TBL file", expected="TBL\\x01 or TBL\\x02", found=magic)
        self.version = 1 if magic == MAGIC_V1 else 2
        fixed = V1_HEADER_SIZE if self.version == 1 else V2_HEADER_SIZE
        self._need(fixed, "header", 0, f"the {fixed}-byte v{self.version} header")
        self.header_bytes = bytes(buf[:fixed])
        version = int.from_bytes(buf[4:8], "little")
        if version != self.version:
            raise VersionError(self.path, "version", 4, f"version does not match the magic {magic!r}",
                               expected=self.version, found=version)
        self.num_samples = int.from_bytes(buf[8:16], "little")
        self.header_size = int.from_bytes(buf[16:20], "little")
        entry_size = V1_ENTRY_SIZE if self.version == 1 else V2_ENTRY_SIZE
        # validate the count against the file size before using it for anything
        max_samples = (self.file_size - fixed) // entry_size
        if self.num_samples > max_samples:
            raise TruncatedError(self.path, "num_samples", 8, "the index cannot fit in the file",
                                 expected=f"at most {max_samples} for {self.file_size} bytes", found=self.num_samples)
        want = fixed + entry_size * self.num_samples
        if self.header_size != want:
            raise FormatError(self.path, "header_size", 16, f"must be {fixed} + {entry_size} × num_samples",
                              expected=want, found=self.header_size)
        self.flags = self.metadata_offset = self.metadata_size = 0
        self.header_crc_stored = self.header_crc_computed = None
        if self.version == 2:
            self._parse_v2_header(check_header_crc)
        self.entries = np.frombuffer(buf, dtype=V1_ENTRY if self.version == 1 else V2_ENTRY,
                                     count=self.num_samples, offset=fixed) if self.num_samples else (
                                     np.zeros(0, dtype=V1_ENTRY if self.version == 1 else V2_ENTRY))
        self._check_entries(fixed, entry_size)
        self.metadata = self._parse_metadata()
        self._meta_by_sample: dict[int, list[MetadataBlock]] = {}
        for block in self.metadata:
            self._meta_by_sample.setdefault(block.sample_index, []).append(block)

    def _parse_v2_header(self, check_header_crc: bool) -> None:
        h = self.header_bytes
        self.metadata_offset = int.from_bytes(h[24:32], "little")
        self.metadata_size = int.from_bytes(h[32:40], "little")
        self.flags = int.from_bytes(h[40:44], "little")
        self.header_crc_stored = int.from_bytes(h[44:48], "little")
        self.header_crc_computed = zlib.crc32(h[:44] + b"\0\0\0\0" + h[48:])
        if check_header_crc and self.header_crc_stored != self.header_crc_computed:
            raise ChecksumError(self.path, "header_crc32", 44, "header CRC-32 mismatch",
                                expected=f"0x{self.header_crc_computed:08x}", found=f"0x{self.header_crc_stored:08x}")
        if self.metadata_size:
            if self.metadata_offset < self.header_size:
                raise FormatError(self.path, "metadata_offset", 24, "metadata overlaps the index",
                                  expected=f">= {self.header_size}", found=self.metadata_offset)
            self._need(self.metadata_offset + self.metadata_size, "metadata_size", 32, "the metadata section")

    @property
    def data_end(self) -> int:
        """Where sample data must end: the metadata section, or the end of the file."""
        return self.metadata_offset if self.version == 2 and self.metadata_size else self.file_size

    def _check_entries(self, fixed: int, entry_size: int) -> None:
        if not self.num_samples:
            return
        e = self.entries
        ends = e["offset"].astype(np.uint64) + e["size"].astype(np.uint64)
        checks = [
            (e["offset"] < self.header_size, "offset", 0, "sample data overlaps the header or index",
             f">= {self.header_size}", e["offset"]),
            (ends > self.file_size, "offset", 0, "sample runs past the end of the file",
             f"end <= {self.file_size}", ends),
            (ends > self.data_end, "size", 8, "sample runs into the metadata section",
             f"end <= {self.data_end}", ends),
        ]
        if self.version == 2:
            raw = (e["flags"] & ENTRY_COMPRESSED) == 0
            checks.append((raw & (e["size"] != e["uncompressed_size"]), "uncompressed_size", 12,
                           "an uncompressed sample must have equal stored and uncompressed sizes",
                           "the stored size", e["uncompressed_size"]))
        for bad, name, rel, problem, expected, found in checks:
            hits = np.flatnonzero(bad)
            if hits.size:
                i = int(hits[0])
                err = TruncatedError if "past the end" in problem else FormatError
                raise err(self.path, f"entry[{i}].{name}", fixed + i * entry_size + rel,
                          f"{problem} ({hits.size} entr{'y' if hits.size == 1 else 'ies'})",
                          expected=expected, found=int(found[i]))

    def _parse_metadata(self) -> list[MetadataBlock]:
        blocks: list[MetadataBlock] = []
        if self.version != 2 or not self.metadata_size:
            return blocks
        pos, end = self.metadata_offset, self.metadata_offset + self.metadata_size
        buf = self._map
        while pos < end:
            if pos + META_BLOCK_HEADER_SIZE > end:
                raise TruncatedError(self.path, "metadata block header", pos, "block header runs past the section",
                                     expected=f"end <= {end}", found=pos + META_BLOCK_HEADER_SIZE)
            head = np.frombuffer(buf, dtype=META_BLOCK_HEADER, count=1, offset=pos)[0]
            index, length = int(head["sample_index"]), int(head["length"])
            if index >= self.num_samples:
                raise FormatError(self.path, "metadata sample_index", pos, "no such sample",
                                  expected=f"< {self.num_samples}", found=index)
            if pos + META_BLOCK_HEADER_SIZE + length > end:
                raise TruncatedError(self.path, "metadata len", pos + 8, "block runs past the metadata section",
                                     expected=f"<= {end - pos - META_BLOCK_HEADER_SIZE}", found=length)
            blocks.append(MetadataBlock(index, int(head["type"]), pos, length))
            pos += META_BLOCK_HEADER_SIZE + length
        return blocks

    # -- access ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.num_samples

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self.entries = self.entries[:0].copy() if hasattr(self, "entries") else None  # drop the exported view
            try:
                self._map.close()
            except BufferError:  # a caller still holds a view; the map closes when it is collected
                pass
        self._map = b""

    def _check_index(self, i: int) -> int:
        if not 0 <= i < self.num_samples:
            raise IndexError(f"{self.path}: sample {i} out of range 0..{self.num_samples - 1}")
        return int(i)

    def is_compressed(self, i: int) -> bool:
        return self.version == 2 and bool(self.entries["flags"][i] & ENTRY_COMPRESSED)

    def uncompressed_size(self, i: int) -> int:
        return int(self.entries["uncompressed_size" if self.version == 2 else "size"][i])

    def stored(self, i: int) -> memoryview:
        """The sample's bytes as stored (an LZ4 block when compressed), zero-copy."""
        i = self._check_index(i)
        start = int(self.entries["offset"][i])
        return memoryview(self._map)[start : start + int(self.entries["size"][i])]

    def read_sample(self, i: int, *, verify: bool = False) -> bytes:
        """The sample's decoded bytes (LZ4 decompressed); ``verify`` checks its CRC-16 first."""
        i = self._check_index(i)
        data = self._decoded(i)
        if verify and self.has_checksums:
            found = int(crc16_modbus_many([data])[0])
            stored = int(self.entries["crc16"][i])
            if found != stored:
                raise ChecksumError(self.path, f"entry[{i}].crc16", self.entry_offset(i) + 22,
                                    "sample CRC-16/MODBUS mismatch", expected=f"0x{stored:04x}", found=f"0x{found:04x}")
        return data

    def _decoded(self, i: int) -> bytes:
        stored = self.stored(i)
        if not self.is_compressed(i):
            return bytes(stored)
        want = self.uncompressed_size(i)
        if want > LZ4_MAX_RATIO * len(stored) + 64:  # lz4 allocates `want` bytes before it looks at the block
            raise FormatError(self.path, f"entry[{i}].uncompressed_size", self.entry_offset(i) + 12,
                              f"more than an LZ4 block of {len(stored)} bytes can hold",
                              expected=f"<= {LZ4_MAX_RATIO * len(stored) + 64}", found=want)
        try:
            data = _lz4_block().decompress(stored, uncompressed_size=want)
        except Exception as exc:  # noqa: BLE001 - lz4 raises its own LZ4BlockError on corrupt blocks
            raise FormatError(self.path, f"sample[{i}] LZ4 block", int(self.entries["offset"][i]),
                              f"cannot decompress: {exc}") from None
        if len(data) != want:
            raise FormatError(self.path, f"entry[{i}].uncompressed_size", self.entry_offset(i) + 12,
                              "decompressed length differs", expected=want, found=len(data))
        return data

    def entry_offset(self, i: int) -> int:
        fixed = V1_HEADER_SIZE if self.version == 1 else V2_HEADER_SIZE
        return fixed + i * (V1_ENTRY_SIZE if self.version == 1 else V2_ENTRY_SIZE)

    @property
    def has_checksums(self) -> bool:
        return self.version == 2 and bool(self.flags & FILE_HAS_CHECKSUMS)

    # -- metadata ----------------------------------------------------------------------------
    def metadata_for(self, i: int) -> list[MetadataBlock]:
        return self._meta_by_sample.get(int(i), [])

    def metadata_bytes(self, block: MetadataBlock) -> bytes:
        return bytes(self._map[block.data_offset : block.data_offset + block.length])

    def decode_metadata(self, block: MetadataBlock) -> Any:
        """JSON and MsgPack (when the optional msgpack package is installed) become objects; else raw bytes."""
        data = self.metadata_bytes(block)
        if block.type == META_TYPE_CODES["json"]:
            try:
                return json.loads(data)
            except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser goes
                raise FormatError(self.path, "metadata JSON", block.data_offset, f"invalid JSON: {exc}") from None
        if block.type == META_TYPE_CODES["msgpack"]:
            try:
                import msgpack
            except ImportError:
                return data
            try:
                return msgpack.unpackb(data, raw=False, strict_map_key=False)
            except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
                raise FormatError(self.path, "metadata MsgPack", block.data_offset, f"invalid MsgPack: {exc}") from None
        return data

    # -- verification ------------------------------------------------------------------------
    def crc_ok(self, i: int) -> bool | None:
        """True/False for a v2 sample's CRC-16; None when the file carries no checksums."""
        if not self.has_checksums:
            return None
        try:
            self.read_sample(i, verify=True)
        except ChecksumError:
            return False
        return True

    def iter_batches(self, max_bytes: int = 32 << 20) -> Iterator[range]:
        """Ranges of samples whose decoded size stays near ``max_bytes`` (bounded memory)."""
        sizes = (self.entries["uncompressed_size"] if self.version == 2 else self.entries["size"]).astype(np.int64)
        start, acc = 0, 0
        for i, size in enumerate(sizes.tolist()):
            if acc and acc + size > max_bytes:
                yield range(start, i)
                start, acc = i, 0
            acc += size
        if start < self.num_samples:
            yield range(start, self.num_samples)

    def verify(self, *, progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> VerifyReport:
        """Check the header CRC-32 and every sample's CRC-16 (decompressing LZ4 samples)."""
        report = VerifyReport()
        if self.version == 1:
            report.problems.append("TBL v1 stores no checksums; nothing to verify")
            return report
        report.header_crc_ok = self.header_crc_stored == self.header_crc_computed
        if not report.header_crc_ok:
            report.problems.append(f"header CRC-32 mismatch: stored 0x{self.header_crc_stored:08x}, "
                                   f"computed 0x{self.header_crc_computed:08x}")
        if not self.has_checksums:
            report.problems.append("header flags say the samples carry no checksums")
            return report
        reporter = ProgressReporter(progress, self.num_samples, "samples", cancel)
        stored_crc = self.entries["crc16"]
        for batch in self.iter_batches():
            datas, indices = [], []
            for i in batch:
                try:
                    datas.append(self._decoded(i))
                    indices.append(i)
                except FormatError as exc:
                    report.bad_samples.append(i)
                    report.problems.append(str(exc))
            crcs = crc16_modbus_many(datas)
            for i, found in zip(indices, crcs.tolist()):
                if found != int(stored_crc[i]):
                    report.bad_samples.append(i)
                    report.problems.append(f"sample {i}: CRC-16 stored 0x{int(stored_crc[i]):04x}, computed 0x{found:04x}")
            report.checked += len(batch)
            reporter.update(report.checked)
        reporter.finish()
        report.bad_samples.sort()
        return report


def open_tbl(path: str | os.PathLike[str], *, check_header_crc: bool = True) -> TblFile:
    return TblFile(path, check_header_crc=check_header_crc)
