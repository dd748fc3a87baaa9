"""Row-level audit of one shard: every index row against the tar header at its offset.

All checks are vectorised per chunk of rows: the 512-byte headers at the rows'
offsets are gathered from an mmap in one fancy-indexing step and parsed with the
scanner's column parsers. The same module re-scans the shard for member headers
(``ustar`` magic + valid checksum + regular typeflag, found block by block, not by
walking the chain) so that a broken chain cannot hide members the index lacks.
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

import numpy as np

from ..formats.tar import NAME_LEN, TarScan, decode_name
from ..formats.tar_fields import BLOCK, checksums_ok, parse_number, parse_octal_columns
from ..indexing.indexer import members_from_scan
from ..progress import ProgressReporter
from ..storage import display_name, is_url, local_copy

_USTAR = np.frombuffer(b"ustar", np.uint8)
_REGULAR = np.array([ord("0"), 0, ord("7")], np.uint8)
ROW_CHUNK = 1 << 16  # rows per gather: 32 MiB of header bytes
MAX_MEMBER_SIZE = np.iinfo(np.int64).max  # a header size beyond int64 cannot be a member of any file


def rows_beyond(offsets: np.ndarray, sizes: np.ndarray, file_size: int | np.ndarray) -> np.ndarray:
    """Rows whose header or data reach past ``file_size`` (one size, or one a row), for any u64
    offset and size (no wrap-around)."""
    offsets, sizes = offsets.astype(np.uint64), sizes.astype(np.uint64)
    room = np.asarray(file_size, np.int64) - BLOCK  # bytes a row may take after its header; < 0: no header fits
    fits = room >= 0
    room = np.where(fits, room, 0).astype(np.uint64)
    header_in = fits & (offsets <= room)
    return ~header_in | (sizes > room - np.where(header_in, offsets, np.uint64(0)))

# Row problems, most fundamental first: a row gets the first one that applies.
OUTSIDE, MISALIGNED, BAD_HEADER, NAME_MISMATCH, SIZE_MISMATCH = 1, 2, 3, 4, 5
PROBLEM_KINDS = {OUTSIDE: "outside_shard", MISALIGNED: "misaligned_offset", BAD_HEADER: "bad_header",
                 NAME_MISMATCH: "name_mismatch", SIZE_MISMATCH: "size_mismatch"}


@dataclass
class HeaderColumns:
    """Parsed fields of a batch of 512-byte headers (per-header strings only on request)."""

    checksum_ok: np.ndarray
    regular: np.ndarray
    sizes: np.ndarray
    size_ok: np.ndarray
    keyhash: np.ndarray
    extid: np.ndarray  # the index's id of each header's extension, -1 when the index has no such extension
    stems: np.ndarray  # (n, w) uint8, zero padded
    stem_lengths: np.ndarray
    name_fields: np.ndarray

    def name(self, j: int) -> str:
        return decode_name(bytes(self.name_fields[j]).split(b"\0", 1)[0])

    def stem(self, j: int) -> bytes:
        return bytes(self.stems[j, : self.stem_lengths[j]])


def parse_headers(headers: np.ndarray, path: str, offsets: np.ndarray, extensions: list[str]) -> HeaderColumns:
    """Checksum, typeflag, size, and stem hash/extension id of each (n, 512) header row, in numpy passes."""
    checksum_ok = checksums_ok(headers)
    regular = np.isin(headers[:, 156], _REGULAR)
    size_fields = headers[:, 124:136]
    sizes, size_ok = parse_octal_columns(size_fields)
    for i in np.flatnonzero(size_fields[:, 0] & 0x80).tolist():  # GNU base-256 sizes: up to 88 bits, any sign
        value = parse_number(bytes(size_fields[i]), path, "size", int(offsets[i]) + 124)
        size_ok[i] = 0 <= value <= MAX_MEMBER_SIZE  # checked before it goes into the int64 column
        sizes[i] = value if size_ok[i] else -1
    names = np.ascontiguousarray(headers[:, :NAME_LEN])
    members = members_from_scan(TarScan(path, 0, offsets.astype(np.int64), sizes, names))
    ids = {e: i for i, e in enumerate(extensions)}
    local_to_index = np.array([ids.get(e, -1) for e in members.ext_names] or [-1], np.int64)
    extid = local_to_index[members.ext_codes] if len(headers) else np.zeros(0, np.int64)
    return HeaderColumns(checksum_ok, regular, sizes, size_ok, members.keyhash, extid, members.stems,
                         members.stem_lengths, names)


@dataclass
class ShardAudit:
    """What one shard's rows and re-scan showed."""

    fid: int
    path: str
    file_size: int
    problems: dict[int, tuple[int, str]] = field(default_factory=dict)  # row -> (problem code, detail)
    beyond_end: list[int] = field(default_factory=list)  # rows reaching past the end of the file
    truncated: bool = False
    truncated_detail: str = ""
    unaccounted: list[tuple[int, str, int, int]] = field(default_factory=list)  # (offset, name, keyhash, extid)
    n_members: int = 0  # regular member headers found by the re-scan
    cand_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    cand_headers: np.ndarray = field(default_factory=lambda: np.zeros((0, BLOCK), np.uint8), repr=False)


def audit_shard(fid: int, path: str, rows: np.ndarray, row_ids: np.ndarray, extensions: list[str],
                crash_stems: list[str], reporter: ProgressReporter, done_before: int,
                storage_options: dict | None = None) -> ShardAudit:
    """Check ``rows`` (structured TARIDX rows of this shard, row indices ``row_ids``) against ``path``.

    A URL is fetched whole into a temporary file first (the re-scan reads every block).
    """
    if is_url(path):
        with local_copy(path, storage_options) as copy:
            result = audit_shard(fid, copy, rows, row_ids, extensions, crash_stems, reporter, done_before)
        result.path = display_name(path)
        return result
    with open(path, "rb") as fh:
        file_size = os.fstat(fh.fileno()).st_size
        result = ShardAudit(fid, path, file_size)
        if file_size < BLOCK:
            mm = None
            data = np.zeros(0, np.uint8)
        else:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            data = np.frombuffer(mm, np.uint8)
    try:
        _rescan(result, data)
        _check_rows(result, data, rows, row_ids, extensions, crash_stems, reporter, done_before)
        _account(result, rows, extensions)
    finally:
        del data
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # a traceback (cancel) still holds a view: the map closes when collected
                pass
    return result


def _rescan(result: ShardAudit, data: np.ndarray) -> None:
    """Find member headers block by block; decide whether the shard is cut short."""
    n_blocks = len(data) // BLOCK
    blocks = data[: n_blocks * BLOCK].reshape(n_blocks, BLOCK)
    cand = np.flatnonzero(blocks[:, 257] == _USTAR[0])
    if len(cand):
        cand = cand[(blocks[cand, 257:262] == _USTAR).all(axis=1)]
    headers = blocks[cand]
    offsets = cand.astype(np.int64) * BLOCK
    if len(cand):
        keep = checksums_ok(headers)
        cand, headers, offsets = cand[keep], headers[keep], offsets[keep]
    result.cand_offsets, result.cand_headers = offsets, headers
    if not len(cand):
        return
    sizes, _ = parse_octal_columns(headers[:, 124:136])
    ends = offsets + BLOCK + sizes
    cut = np.flatnonzero(ends > result.file_size)
    last_end = int(offsets[-1] + BLOCK + (-(-int(sizes[-1]) // BLOCK)) * BLOCK)
    has_end_marker = last_end + BLOCK <= result.file_size and not blocks[last_end // BLOCK].any()
    if len(cut):
        result.truncated = True
        first = int(cut[0])
        result.truncated_detail = (f"the member at offset {int(offsets[first])} needs bytes up to {int(ends[first])}"
                                   f" but the file ends at {result.file_size}")
    elif not has_end_marker and last_end != result.file_size:
        result.truncated = True
        result.truncated_detail = f"the file ends at {result.file_size}, inside the archive (no end marker)"
    result.n_members = int(np.count_nonzero(np.isin(headers[:, 156], _REGULAR)))


def _check_rows(result: ShardAudit, data: np.ndarray, rows: np.ndarray, row_ids: np.ndarray,
                extensions: list[str], crash_stems: list[str], reporter: ProgressReporter,
                done_before: int) -> None:
    """Record each failing row with its problem code and a detail for the message."""
    size_total = result.file_size
    name = os.path.basename(result.path)
    blocks = data[: len(data) // BLOCK * BLOCK].reshape(-1, BLOCK)
    for start in range(0, len(rows), ROW_CHUNK):
        part = rows[start : start + ROW_CHUNK]
        ids = row_ids[start : start + ROW_CHUNK]
        beyond = rows_beyond(part["offset"], part["size"], size_total)
        # rows inside the file have int64-safe offsets and sizes; the others keep -1 and are not compared
        offset, size = part["offset"].astype(np.int64), part["size"].astype(np.int64)
        offset[beyond], size[beyond] = -1, -1
        code = np.zeros(len(part), np.int8)
        code[beyond] = OUTSIDE
        details: dict[int, str] = {}
        for i in np.flatnonzero(beyond).tolist():
            result.beyond_end.append(int(ids[i]))
            end = int(part["offset"][i]) + BLOCK + int(part["size"][i])  # Python ints: no overflow
            details[i] = f"data ends at {end}, file has {size_total} bytes"
        code[(code == 0) & (offset % BLOCK != 0)] = MISALIGNED
        idx = np.flatnonzero(code == 0)
        if len(idx):
            headers = blocks[offset[idx] // BLOCK]  # aligned rows only: misaligned ones already failed
            cols = parse_headers(headers, result.path, offset[idx], extensions)
            _compare(part[idx], size[idx], cols, extensions, crash_stems, code, idx, details, headers)
        for i in np.flatnonzero(code).tolist():
            if i not in details:  # misaligned but the header there looked fine
                details[i] = f"offset {int(offset[i])} is not a multiple of {BLOCK}"
            result.problems[int(ids[i])] = (int(code[i]), details[i])
        reporter.update(done_before + start + len(part), current=name)


def _compare(part: np.ndarray, size: np.ndarray, cols: HeaderColumns, extensions: list[str],
             crash_stems: list[str], code: np.ndarray, idx: np.ndarray, details: dict[int, str],
             headers: np.ndarray) -> None:
    """Vectorised row-vs-header comparison; sets ``code[idx[j]]`` and a detail for each failing row."""
    bad_header = ~(cols.checksum_ok & cols.regular)
    crashid = np.zeros(len(part), np.int64)
    if crash_stems:  # only rows whose stem hash collides can have a crash id: look those up one by one
        crash_ids = {s.encode("utf-8", "surrogateescape"): i + 1 for i, s in enumerate(crash_stems)}
        maybe = np.flatnonzero(np.isin(cols.keyhash, part["keyhash"][part["crashid"] > 0]) | (part["crashid"] > 0))
        for j in maybe.tolist():
            crashid[j] = crash_ids.get(cols.stem(j), 0)
    stem_bad = (cols.keyhash != part["keyhash"]) | (crashid != part["crashid"])
    name_bad = ~bad_header & (stem_bad | (cols.extid != part["extid"]))
    size_bad = ~bad_header & ~name_bad & (~cols.size_ok | (cols.sizes != size))
    code[idx[bad_header]] = BAD_HEADER
    code[idx[name_bad]] = NAME_MISMATCH
    code[idx[size_bad]] = SIZE_MISMATCH
    for j in np.flatnonzero(bad_header).tolist():
        details[int(idx[j])] = ("no valid tar header there" if not cols.checksum_ok[j]
                                else f"header typeflag {chr(headers[j, 156])!r} is not a regular file")
    for j in np.flatnonzero(name_bad).tolist():
        extid = int(part["extid"][j])
        ext = repr(extensions[extid]) if extid < len(extensions) else f"id {extid} (not in the table)"
        details[int(idx[j])] = (f"header names {cols.name(j)!r}, the row expects extension {ext}"
                                + (f" and stem hash {int(part['keyhash'][j]):016x}" if stem_bad[j] else ""))
    for j in np.flatnonzero(size_bad).tolist():
        details[int(idx[j])] = f"row size {int(size[j])}, header size {int(cols.sizes[j])}"


def _account(result: ShardAudit, rows: np.ndarray, extensions: list[str]) -> None:
    """Members the re-scan found that no row points at (a row that fails still accounts for its header)."""
    offsets, headers = result.cand_offsets, result.cand_headers
    result.cand_offsets, result.cand_headers = offsets[:0], headers[:0]  # drop views of the closing map
    regular = np.isin(headers[:, 156], _REGULAR) if len(headers) else np.zeros(0, bool)
    pointed = np.isin(offsets, rows["offset"].astype(np.int64))
    loose = np.flatnonzero(regular & ~pointed)
    if not len(loose):
        return
    cols = parse_headers(headers[loose], result.path, offsets[loose], extensions)
    for j in range(len(loose)):
        result.unaccounted.append((int(offsets[loose[j]]), cols.name(j), int(cols.keyhash[j]), int(cols.extid[j])))
