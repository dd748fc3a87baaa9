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

from .formats.tar import BLOCK, NAME_LEN, TarScan, parse_number, parse_octal_columns
from .indexer import members_from_scan
from .progress import ProgressReporter

_USTAR = np.frombuffer(b"ustar", np.uint8)
_REGULAR = np.array([ord("0"), 0, ord("7")], np.uint8)
ROW_CHUNK = 1 << 16  # rows per gather: 32 MiB of header bytes

# Row problems, most fundamental first: a row gets the first one that applies.
OUTSIDE, MISALIGNED, BAD_HEADER, NAME_MISMATCH, SIZE_MISMATCH = 1, 2, 3, 4, 5
PROBLEM_KINDS = {OUTSIDE: "outside_shard", MISALIGNED: "misaligned_offset", BAD_HEADER: "bad_header",
                 NAME_MISMATCH: "name_mismatch", SIZE_MISMATCH: "size_mismatch"}


def checksums_ok(headers: np.ndarray) -> np.ndarray:
    """Whether each (n, 512) header's stored checksum matches its bytes (unsigned, or signed as old tars)."""
    stored, ok = parse_octal_columns(headers[:, 148:156])
    field_sum = headers[:, 148:156].sum(axis=1, dtype=np.int64)
    unsigned = headers.sum(axis=1, dtype=np.int64) - field_sum + 8 * 32
    signed_hdr = headers.view(np.int8)
    signed = signed_hdr.sum(axis=1, dtype=np.int64) - signed_hdr[:, 148:156].sum(axis=1, dtype=np.int64) + 8 * 32
    return ok & ((unsigned == stored) | (signed == stored))


@dataclass
class HeaderColumns:
    """Parsed fields of a batch of 512-byte headers."""

    checksum_ok: np.ndarray
    regular: np.ndarray
    sizes: np.ndarray
    size_ok: np.ndarray
    keyhash: np.ndarray
    ext_names: list[str]  # per header
    stems: list[bytes]  # per header
    names: list[str]


def parse_headers(headers: np.ndarray, path: str, offsets: np.ndarray) -> HeaderColumns:
    """Checksum, typeflag, size, and stem/extension of each (n, 512) header row."""
    n = len(headers)
    checksum_ok = checksums_ok(headers)
    regular = np.isin(headers[:, 156], _REGULAR)
    size_fields = headers[:, 124:136]
    sizes, size_ok = parse_octal_columns(size_fields)
    for i in np.flatnonzero(size_fields[:, 0] & 0x80).tolist():  # GNU base-256 sizes
        sizes[i] = parse_number(bytes(size_fields[i]), path, "size", int(offsets[i]) + 124)
        size_ok[i] = sizes[i] >= 0
    scan = TarScan(path, 0, offsets.astype(np.int64), sizes, np.ascontiguousarray(headers[:, :NAME_LEN]))
    members = members_from_scan(scan)
    ext_names = [members.ext_names[c] for c in members.ext_codes.tolist()]
    stems = [bytes(members.stems[i, : members.stem_lengths[i]]) for i in range(n)]
    return HeaderColumns(checksum_ok, regular, sizes, size_ok, members.keyhash, ext_names, stems, scan.names)


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
    unaccounted: list[tuple[int, str, int, str]] = field(default_factory=list)  # (offset, name, keyhash, ext)
    n_members: int = 0  # regular member headers found by the re-scan
    cand_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    cand_headers: np.ndarray = field(default_factory=lambda: np.zeros((0, BLOCK), np.uint8), repr=False)


def audit_shard(fid: int, path: str, rows: np.ndarray, row_ids: np.ndarray, extensions: list[str],
                crash_stems: list[str], reporter: ProgressReporter, done_before: int) -> ShardAudit:
    """Check ``rows`` (structured TARIDX rows of this shard, row indices ``row_ids``) against ``path``."""
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
        _account(result, rows)
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
    crash_ids = {s.encode("utf-8", "surrogateescape"): i + 1 for i, s in enumerate(crash_stems)}
    name = os.path.basename(result.path)
    for start in range(0, len(rows), ROW_CHUNK):
        part = rows[start : start + ROW_CHUNK]
        ids = row_ids[start : start + ROW_CHUNK]
        offset = part["offset"].astype(np.int64)
        size = part["size"].astype(np.int64)
        header_in = (offset >= 0) & (offset + BLOCK <= size_total)
        beyond = ~header_in | (offset + BLOCK + size > size_total)
        code = np.zeros(len(part), np.int8)
        code[beyond] = OUTSIDE
        details: dict[int, str] = {}
        for i in np.flatnonzero(beyond).tolist():
            result.beyond_end.append(int(ids[i]))
            details[i] = f"data ends at {int(offset[i]) + BLOCK + int(size[i])}, file has {size_total} bytes"
        code[(code == 0) & (offset % BLOCK != 0)] = MISALIGNED
        idx = np.flatnonzero(header_in)
        if len(idx):
            headers = data[offset[idx, None] + np.arange(BLOCK)[None, :]]
            cols = parse_headers(headers, result.path, offset[idx])
            exts = [extensions[e] if e < len(extensions) else None for e in part["extid"][idx].tolist()]
            for j, i in enumerate(idx.tolist()):
                if code[i]:
                    continue
                if not (cols.checksum_ok[j] and cols.regular[j]):
                    code[i] = BAD_HEADER
                    details[i] = "no valid tar header there" if not cols.checksum_ok[j] else \
                        f"header typeflag {chr(headers[j, 156])!r} is not a regular file"
                    continue
                crashid = crash_ids.get(cols.stems[j], 0) if crash_ids else 0
                if (cols.keyhash[j] != part["keyhash"][i] or cols.ext_names[j] != exts[i]
                        or crashid != int(part["crashid"][i])):
                    code[i] = NAME_MISMATCH
                    details[i] = f"header names {cols.names[j]!r}, the row expects extension {exts[i]!r}" + (
                        "" if cols.keyhash[j] == part["keyhash"][i] and crashid == int(part["crashid"][i])
                        else f" and stem hash {int(part['keyhash'][i]):016x}")
                elif not cols.size_ok[j] or cols.sizes[j] != size[i]:
                    code[i] = SIZE_MISMATCH
                    details[i] = f"row size {int(size[i])}, header size {int(cols.sizes[j])}"
        for i in np.flatnonzero(code).tolist():
            if i not in details:  # misaligned but the header there looked fine
                details[i] = f"offset {int(offset[i])} is not a multiple of {BLOCK}"
            result.problems[int(ids[i])] = (int(code[i]), details[i])
        reporter.update(done_before + start + len(part), current=name)


def _account(result: ShardAudit, rows: np.ndarray) -> None:
    """Members the re-scan found that no row points at (a row that fails still accounts for its header)."""
    offsets, headers = result.cand_offsets, result.cand_headers
    result.cand_offsets, result.cand_headers = offsets[:0], headers[:0]  # drop views of the closing map
    regular = np.isin(headers[:, 156], _REGULAR) if len(headers) else np.zeros(0, bool)
    pointed = np.isin(offsets, rows["offset"].astype(np.int64))
    loose = np.flatnonzero(regular & ~pointed)
    if not len(loose):
        return
    cols = parse_headers(headers[loose], result.path, offsets[loose])
    for j in range(len(loose)):
        result.unaccounted.append((int(offsets[loose[j]]), cols.names[j], int(cols.keyhash[j]), cols.ext_names[j]))
