"""Build TARIDX indexes: fold discovery, per-shard member tables, fold merge.

Per shard (a task of any executor, see ``build``): scan the tar headers, split each name into
stem and extension (NOTES.md rules), hash the stems in one numpy batch. Per fold
(in the parent, in fid order): assign extension ids and crash ids by first
appearance, count stems, set the contiguity flag. Result bytes do not depend on
the number of threads.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DatasetError
from ..formats.tar import TarScan, scan_tar
from ..formats.tar_names import check_text_names
from ..formats.taridx import ROW_DTYPE, contiguous_runs
from ..progress import CancelToken, ProgressCallback
from . import jit
from .discover import MAX_SHARDS, SHARD_PATTERN, discover_folds  # noqa: F401 - re-exported
from .hashing import xxh64_padded


@dataclass
class ShardMembers:
    """One shard's regular members as the index needs them."""

    path: str
    header_offsets: np.ndarray
    sizes: np.ndarray
    keyhash: np.ndarray
    stems: np.ndarray  # (n, W) uint8, zero padded
    stem_lengths: np.ndarray
    ext_codes: np.ndarray  # local ids into ext_names
    ext_names: list[str]  # local first-appearance order
    file_size: int = 0
    run_starts: np.ndarray | None = None  # rows whose (keyhash, stem) differs from the row before
    fetched: tuple[int, int, float] | None = None  # a remote scan's (bytes, requests, seconds waiting)

    def __post_init__(self) -> None:
        if self.run_starts is None:  # computed here, in the worker, to keep the fold merge small
            n = len(self.keyhash)
            same = ((self.keyhash[1:] == self.keyhash[:-1]) & (self.stem_lengths[1:] == self.stem_lengths[:-1])
                    & (self.stems[1:] == self.stems[:-1]).all(axis=1))
            self.run_starts = np.flatnonzero(np.concatenate(([n > 0], ~same)))

    def stem(self, row: int) -> bytes:
        return bytes(self.stems[row, : self.stem_lengths[row]])


def _stems_and_extensions(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NOTES.md split of (n, w) name fields: zero-padded stems, their lengths, lower-cased extensions."""
    n = len(fields)
    compiled = jit.worthwhile(0) and n > 0  # once the scan has loaded the kernels
    if compiled:
        from .kernels import copy_parts, split_rows

        bounds = np.empty((3, n), np.int64)
        split_rows(fields, bounds)
        start, dot, end = bounds
    else:
        start, dot, end = _split_name_fields(fields)
    stem_len = dot - start
    ext_start = np.minimum(dot + 1, end)
    ext_len = end - ext_start
    stem_w, ext_w = int(stem_len.max(initial=0)), int(ext_len.max(initial=0))
    if compiled:
        stems, exts = np.zeros((n, stem_w), np.uint8), np.zeros((n, ext_w), np.uint8)
        copy_parts(fields, bounds, stems, exts)
        return stems, stem_len, exts
    exts = _gather(fields, ext_start, ext_len, ext_w)
    exts[(exts >= ord("A")) & (exts <= ord("Z"))] += 32
    return _gather(fields, start, stem_len, stem_w), stem_len, exts


def _split_name_fields(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stem_start, dot, end) per row, a column at a time.

    Fields are (n, w) with n large and w small (names are cropped to the longest), so each
    step is one operation over a column of every row: the first NUL and the first dot are
    found walking the columns right to left, the last ``/`` left to right.
    """
    n, width = fields.shape
    end = np.full(n, width, np.int64)
    for col in range(width - 1, -1, -1):
        np.putmask(end, fields[:, col] == 0, col)
    start = np.zeros(n, np.int64)
    has_slash = width > 0 and bool((fields == ord("/")).any())
    if has_slash:
        for col in range(width):
            np.putmask(start, (fields[:, col] == ord("/")) & (end > col), col + 1)
    dot = end.copy()
    for col in range(width - 1, -1, -1):
        found = (fields[:, col] == ord(".")) & (end > col)
        if has_slash:
            found &= start <= col
        np.putmask(dot, found, col)
    return start, dot, end


def _gather(fields: np.ndarray, start: np.ndarray, length: np.ndarray, width: int) -> np.ndarray:
    """``fields[i, start[i] : start[i] + length[i]]`` of every row, zero padded to ``width``, a column at a time."""
    n = len(fields)
    if width == 0:
        return np.zeros((n, 0), np.uint8)
    cols = np.arange(width)
    if not start.any():
        out = fields[:, :width].copy()
    else:
        out = np.empty((n, width), np.uint8)
        flat = np.ascontiguousarray(fields).ravel()
        row_starts = np.arange(n) * fields.shape[1]
        last = fields.shape[1] - 1
        for col in range(width):
            out[:, col] = flat[row_starts + np.minimum(start + col, last)]
    out[cols[None, :] >= length[:, None]] = 0
    return out


def split_name(name: bytes) -> tuple[bytes, str]:
    """(stem bytes, lower-cased extension) of one member name, per NOTES.md."""
    base = name.rsplit(b"/", 1)[-1]
    stem, _, ext = base.partition(b".")
    return stem, ext.decode("utf-8", "surrogateescape").lower()


def shard_members(path: str | os.PathLike[str], cancel: CancelToken | None = None,
                  progress: ProgressCallback | None = None, compiled: bool | None = None,
                  threads: int | None = None) -> ShardMembers:
    """One shard's member table; refuses (FormatError at the member's header) names an index cannot hold.

    Names are indexed exactly as the reference splits them (NOTES.md): only ``/``
    separates folders, so a backslash, space or tab is part of the stem; the stem ends at
    the first dot, so ``.hidden`` has stem ``''`` and a name without a dot (``README``,
    ``dir/``) has extension ``''``. Refused: names that are not UTF-8 (the spec hashes
    ``stem.encode('utf-8')`` and stores extensions and crash stems as UTF-8 text), and
    names with a NUL (only a pax path can hold one) or a newline (the index's text blocks
    are newline-separated, so the extension or crash stem would not read back).
    """
    scan = scan_tar(path, progress, cancel, compiled=compiled, threads=threads)
    check_text_names(scan, forbidden=b"\0\n")
    return members_from_scan(scan)


def members_from_scan(scan: TarScan) -> ShardMembers:
    stems, stem_len, exts = _stems_and_extensions(scan.name_fields)
    odd_rows = dict(scan.full_names)
    if exts.shape[1]:
        for row in np.flatnonzero((exts >= 0x80).any(axis=1)).tolist():
            odd_rows.setdefault(row, scan.name_bytes(row))
    stem_w = stems.shape[1]
    ext_strings: dict[int, str] = {}
    if odd_rows:  # long names, prefixes, non-ASCII extensions: exact per-row split
        split = {row: split_name(name) for row, name in odd_rows.items()}
        stem_w = max(stem_w, max(len(s) for s, _ in split.values()))
        if stems.shape[1] < stem_w:
            stems = np.pad(stems, ((0, 0), (0, stem_w - stems.shape[1])))
        for row, (stem, ext) in split.items():
            stems[row] = 0
            stems[row, : len(stem)] = np.frombuffer(stem, np.uint8)
            stem_len[row] = len(stem)
            ext_strings[row] = ext
    keyhash = xxh64_padded(stems, stem_len)
    ext_codes, ext_names = _local_extension_ids(exts, ext_strings)
    return ShardMembers(scan.path, scan.header_offsets, scan.sizes, keyhash, stems, stem_len, ext_codes,
                        ext_names, scan.file_size)


def _local_extension_ids(exts: np.ndarray, overrides: dict[int, str]) -> tuple[np.ndarray, list[str]]:
    n, width = exts.shape
    if n == 0:
        return np.zeros(0, np.int64), []
    uniq, first, inverse = np.unique(_row_keys(exts), return_index=True, return_inverse=True)
    names = [_key_bytes(u, width).rstrip(b"\0").decode("utf-8", "surrogateescape") for u in uniq]
    codes = inverse.ravel().astype(np.int64)
    if overrides:
        names = list(names)
        for row, ext in overrides.items():
            if ext not in names:
                names.append(ext)
            codes[row] = names.index(ext)
        first_seen = {}
        for row, code in enumerate(codes.tolist()):
            first_seen.setdefault(code, row)
        used = sorted(first_seen, key=first_seen.get)
    else:
        used = list(np.argsort(first, kind="stable"))
    remap = np.zeros(len(names), np.int64)
    remap[np.array(used, dtype=np.int64)] = np.arange(len(used))
    return remap[codes], [names[i] for i in used]


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One sortable scalar per row of a (n, w) uint8 matrix: a uint64 when w <= 8 (much faster to sort)."""
    n, width = rows.shape
    if width > 8:
        return np.ascontiguousarray(rows).view(f"V{width}").ravel()
    packed = np.zeros((n, 8), np.uint8)
    packed[:, :width] = rows
    return packed.view("<u8").ravel()


def _key_bytes(key, width: int) -> bytes:
    return bytes(key) if width > 8 else int(key).to_bytes(8, "little")[:width]


@dataclass
class FoldIndex:
    rows: np.ndarray
    extensions: list[str]
    crash_stems: list[str]
    n_stems: int
    contiguous: bool
    shard_sizes: list[int]
    route: str = "numpy"  # which scan ran: "compiled" (numba) or "numpy"
    route_reason: str = ""  # why (jit.choose)


def merge_shards(shards: Sequence[ShardMembers], force_contiguous: bool = False) -> FoldIndex:
    """Fold-level ids, crash stems and flags, in fid order, exactly as the reference assigns them."""
    if len(shards) > MAX_SHARDS:
        raise DatasetError(f"{len(shards)} shards: a fold can have at most {MAX_SHARDS} (fid is u16)")
    n = sum(len(s.keyhash) for s in shards)
    rows = np.zeros(n, ROW_DTYPE)
    extensions: list[str] = []
    ext_ids: dict[str, int] = {}
    pos = 0
    for fid, shard in enumerate(shards):
        m = len(shard.keyhash)
        local_to_global = np.array([ext_ids.setdefault(e, len(ext_ids)) for e in shard.ext_names], np.int64)
        extensions = list(ext_ids)
        block = rows[pos : pos + m]
        block["fid"] = fid
        block["offset"] = shard.header_offsets
        block["size"] = shard.sizes
        block["extid"] = local_to_global[shard.ext_codes] if m else 0
        block["keyhash"] = shard.keyhash
        pos += m
    if len(ext_ids) > 65536:
        raise DatasetError(f"{len(ext_ids)} distinct extensions: at most 65536 fit a u16 extid")
    crash_stems, n_stems = _assign_crash_ids(rows, shards)
    contiguous = contiguous_runs(rows["keyhash"], rows["crashid"]) == n_stems
    if force_contiguous and not contiguous:  # as the reference: an already contiguous fold keeps its order
        rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]
        contiguous = True
    return FoldIndex(rows, extensions, crash_stems, n_stems, contiguous, [s.file_size for s in shards])


def _assign_crash_ids(rows: np.ndarray, shards: Sequence[ShardMembers]) -> tuple[list[str], int]:
    """Crash ids for stems whose xxh64 equals an earlier, different stem's; returns (crash stems, n_stems).

    One row per run of equal stems (``run_starts``) is sorted by hash, and stems are
    compared only where neighbours share a hash: in a webdataset fold that is rare, so
    the merge sorts a third of the rows and compares almost no stems. Rows are numbered
    fold-wide.
    """
    keyhash = rows["keyhash"]
    if len(keyhash) == 0:
        return [], 0
    starts = np.cumsum([0] + [len(s.keyhash) for s in shards])
    reps = np.concatenate([s.run_starts + start for s, start in zip(shards, starts)])
    reps = reps[np.argsort(keyhash[reps])]
    kh = keyhash[reps]
    same_hash = np.flatnonzero(kh[1:] == kh[:-1])
    n_stems = len(kh) - len(same_hash)
    if len(same_hash) == 0:
        return [], n_stems
    differ = (_stem_matrix(shards, starts, reps[same_hash]) != _stem_matrix(shards, starts, reps[same_hash + 1]))
    clash = same_hash[differ.any(axis=1)]
    if len(clash) == 0:
        return [], n_stems
    colliding = np.unique(kh[clash])
    canonical: dict[int, bytes] = {}
    crash_ids: dict[bytes, int] = {}
    crash_stems: list[str] = []
    crashid = rows["crashid"]
    for row in np.flatnonzero(np.isin(keyhash, colliding)).tolist():
        fid = int(rows["fid"][row])
        stem = shards[fid].stem(row - int(starts[fid]))
        first = canonical.setdefault(int(keyhash[row]), stem)
        if stem == first:
            continue
        if stem not in crash_ids:
            crash_ids[stem] = len(crash_ids) + 1
            crash_stems.append(stem.decode("utf-8", "surrogateescape"))
        crashid[row] = crash_ids[stem]
    return crash_stems, n_stems + len(crash_ids)


def _stem_matrix(shards: Sequence[ShardMembers], starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Stems of fold-wide ``rows``, zero padded, each followed by its length (so padding never hides a NUL)."""
    width = max(s.stems.shape[1] for s in shards)
    out = np.zeros((len(rows), width + 4), np.uint8)
    fids = np.searchsorted(starts, rows, side="right") - 1
    for fid in np.unique(fids).tolist():
        pick = np.flatnonzero(fids == fid)
        local = rows[pick] - starts[fid]
        shard = shards[fid]
        out[pick, : shard.stems.shape[1]] = shard.stems[local]
        out[pick, width:] = shard.stem_lengths[local].astype("<u4").view(np.uint8).reshape(-1, 4)
    return out


def index_shards(shards: Sequence[str | os.PathLike[str]], **options: Any) -> FoldIndex:
    """Index a fold's shards (fid = position in ``shards``): :func:`itarcore.indexing.build.index_shards`.

    Options: ``force_contiguous``, ``jobs`` (threads), ``executor``, ``cache``, ``progress``, ``cancel``.
    """
    from .build import index_shards as build_index  # build imports this module

    return build_index(shards, **options)
