"""Duplicate payloads within and across folds (a leak when the same payload is in train and val).

Members with equal extension, size and xxh3-128 of the payload form a group. As file
de-duplicators do (fclones, rmlint), payloads are first told apart cheaply: each gets a
fingerprint of its first and last ``WINDOW`` bytes, taken for a whole run of payloads at
once in numpy (no call per payload), read shard by shard in large sequential runs. Only
payloads whose extension, size and fingerprint equal another's, in any fold, can be
byte-identical; those alone are hashed whole. The groups are the same as hashing every
payload; ``rows_hashed`` and ``bytes_hashed`` count every payload compared. Left out by default:
empty payloads (all equal, carrying nothing), class labels (``cls``, ``cls2``: a class id
is shared by design) and members without an extension (not part of a sample). A group whose members come from more
than one fold is a cross-fold leak. Memory: about 40 bytes per compared row, plus the
names of the duplicated members.

With ``near=True`` (the ``content`` extra: ``imagehash``), images are also grouped by
perceptual hash (see :mod:`itarcore.content.near`).
"""
from __future__ import annotations

import os
from collections.abc import Collection
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np
import xxhash

from ..dataset import Dataset
from ..errors import DatasetError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from ..rowpass import iter_row_chunks
from .imagedims import image_extension_mask
from .names import stem_names
from .payloads import PayloadRun, iter_payload_runs


@dataclass
class Member:
    fold: int  # position of the fold in DuplicateReport.indexes
    row: int
    stem: str = ""
    shard: str = ""


@dataclass
class DuplicateGroup:
    kind: str  # "exact" | "near"
    ext: str
    size: int  # payload size (exact groups; 0 for near groups)
    digest: str  # xxh3-128 as hex (exact) or the first member's perceptual hash (near)
    members: list[Member]

    @property
    def folds(self) -> set[int]:
        return {m.fold for m in self.members}

    @property
    def cross_fold(self) -> bool:
        return len(self.folds) > 1

    def to_json(self, folds: list[str]) -> dict:
        return {"kind": self.kind, "ext": self.ext, "size": self.size, "hash": self.digest,
                "cross_fold": self.cross_fold, "folds": sorted({folds[m.fold] for m in self.members}),
                "members": [{"fold": folds[m.fold], "row": m.row, "stem": m.stem, "shard": m.shard}
                            for m in self.members]}


@dataclass
class DuplicateReport:
    indexes: list[str]
    folds: list[str]  # fold names, made unique
    groups: list[DuplicateGroup] = field(default_factory=list)
    near_groups: list[DuplicateGroup] | None = None  # None: not asked for
    missing_shards: list[str] = field(default_factory=list)  # "fold/shard": not on disk, not compared
    rows_hashed: int = 0
    bytes_hashed: int = 0
    images_hashed: int = 0

    @property
    def cross_fold_groups(self) -> list[DuplicateGroup]:
        return [g for g in self.groups if g.cross_fold]

    @property
    def n_findings(self) -> int:
        return len(self.groups) + len(self.near_groups or [])

    def to_json(self) -> dict:
        return {
            "indexes": self.indexes, "folds": self.folds, "rows_hashed": self.rows_hashed,
            "bytes_hashed": self.bytes_hashed, "missing_shards": self.missing_shards,
            "summary": {"groups": len(self.groups), "cross_fold_groups": len(self.cross_fold_groups),
                        "duplicate_members": sum(len(g.members) - 1 for g in self.groups),
                        "near_groups": None if self.near_groups is None else len(self.near_groups)},
            "groups": [g.to_json(self.folds) for g in self.groups],
            "near_groups": None if self.near_groups is None else [g.to_json(self.folds) for g in self.near_groups],
        }


@dataclass
class _Hashed:
    """One fold's hashed rows: row ids, global extension ids, sizes and the two halves of each digest."""

    rows: np.ndarray
    ext: np.ndarray
    size: np.ndarray
    hi: np.ndarray
    lo: np.ndarray


DEFAULT_SKIPPED = ("", "cls", "cls2")


def payload_rows(ds: Dataset, extensions: Collection[str] | None = None, skip: Collection[str] = DEFAULT_SKIPPED,
                 min_size: int = 1, chunk_rows: int = 1 << 21) -> np.ndarray:
    """Rows to hash: of ``extensions`` (all but ``skip`` when None), at least ``min_size`` bytes, in a shard on disk."""
    present = np.zeros(1 << 16, bool)
    present[list(ds.shard_paths)] = True
    wanted = [e for e, name in enumerate(ds.extensions)
              if (name in extensions if extensions is not None else name not in skip)]
    allowed = np.zeros(len(ds.extensions) + 1, bool)
    allowed[wanted] = True
    allowed[-1] = True
    last = len(allowed) - 1  # an out-of-range extension id stays in, to be reported when hashed
    parts = [np.flatnonzero((part["size"] >= max(min_size, 1)) & present[part["fid"]]
                            & allowed[np.minimum(part["extid"], last)]) + start
             for start, part in iter_row_chunks(ds.index, chunk_rows)]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def hash_rows(ds: Dataset, rows: np.ndarray, reporter: ProgressReporter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows in read order, digest high halves, low halves): xxh3-128 of each row's payload, from the page cache."""
    hasher = xxhash.xxh3_128_digest
    out_rows, digests = [np.zeros(0, np.int64)], []
    for run in iter_payload_runs(ds, rows, reporter.cancel):
        view = run.view
        digests.append(b"".join([hasher(view[a:b]) for a, b in zip(run.starts.tolist(), run.ends.tolist())]))
        out_rows.append(run.rows)
        reporter.update(reporter.done + int((run.ends - run.starts).sum()), current=ds.shard_name(run.fid))
    halves = np.frombuffer(b"".join(digests), ">u8").reshape(-1, 2).astype(np.uint64)
    return np.concatenate(out_rows), halves[:, 0].copy(), halves[:, 1].copy()


WINDOW = 64  # bytes at each end of a payload that go into its fingerprint
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd constants of a multiply-xorshift mix (splitmix64)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)


def _fingerprints(run: PayloadRun) -> np.ndarray:
    """A 64-bit mix of the first and last ``WINDOW`` bytes of each payload of ``run`` (the whole of a short one).

    Bytes past the end of a short payload count as zeros, and a short payload has no tail
    window, so the fingerprint depends only on the payload's bytes and size: equal payloads
    always get equal fingerprints.
    """
    buf = np.frombuffer(run.view, np.uint8)
    starts, ends = run.starts, run.ends
    sizes = ends - starts
    n = len(starts)
    # every WINDOW-byte slice of the run as a row, so one index fetches a window (no per-byte index arrays)
    windows = np.lib.stride_tricks.as_strided(buf, (max(len(buf) - WINDOW + 1, 0), WINDOW), (1, 1), writeable=False)
    head = np.zeros((n, WINDOW), np.uint8)
    fits = starts + WINDOW <= len(buf)
    if fits.all():
        head[:] = windows[starts]
    else:
        head[fits] = windows[starts[fits]]
        for i in np.flatnonzero(~fits).tolist():  # a short payload at the end of the run
            head[i, : sizes[i]] = buf[starts[i] : ends[i]]
    short = np.flatnonzero(sizes < WINDOW)
    if len(short):
        head[short] *= np.arange(WINDOW) < sizes[short, None]
    tail = np.zeros((n, WINDOW), np.uint8)
    long = np.flatnonzero(sizes >= WINDOW)
    tail[long] = windows[ends[long] - WINDOW]
    key = np.zeros(n, np.uint64)
    for window in (head, tail):
        columns = np.ascontiguousarray(window.view("<u8").T)  # one transpose, then contiguous rows
        for column in columns:  # WINDOW / 8 rounds, each over all payloads at once
            key = (key ^ column) * _MIX
            key ^= key >> np.uint64(31)
    key *= _MIX2
    return key ^ (key >> np.uint64(29))


def fingerprint_rows(ds: Dataset, rows: np.ndarray, reporter: ProgressReporter) -> tuple[np.ndarray, np.ndarray]:
    """(rows in read order, their fingerprints): see :func:`_fingerprints`."""
    out_rows, keys = [np.zeros(0, np.int64)], [np.zeros(0, np.uint64)]
    for run in iter_payload_runs(ds, rows, reporter.cancel):
        keys.append(_fingerprints(run))
        out_rows.append(run.rows)
        reporter.update(reporter.done + int((run.ends - run.starts).sum()), current=ds.shard_name(run.fid))
    return np.concatenate(out_rows), np.concatenate(keys)


def _shared_keys(*columns: np.ndarray) -> np.ndarray:
    """Mask of the entries whose tuple of ``columns`` values occurs more than once.

    The last column is the most telling: only entries whose value there repeats take part in
    the sort by all columns."""
    last = columns[-1]
    maybe = np.flatnonzero(_repeats(last, np.argsort(last)))
    twin = np.zeros(len(last), bool)
    twin[maybe] = _repeats(np.rec.fromarrays([c[maybe] for c in columns]),
                           np.lexsort([c[maybe] for c in columns[::-1]]))
    return twin


def _repeats(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Mask of the entries of ``values`` equal to another; ``order`` sorts ``values``."""
    ordered = values[order]
    same = ordered[1:] == ordered[:-1]
    mask = np.zeros(len(values), bool)
    mask[order[1:][same]] = True
    mask[order[:-1][same]] = True
    return mask


def _global_ext_ids(datasets: list[Dataset]) -> tuple[list[str], list[np.ndarray]]:
    names: dict[str, int] = {}
    maps = [np.array([names.setdefault(e, len(names)) for e in ds.extensions] or [0], np.int64) for ds in datasets]
    return list(names), maps


def _exact_groups(hashed: list[_Hashed], ext_names: list[str]) -> list[DuplicateGroup]:
    fold = np.concatenate([np.full(len(h.rows), i, np.int64) for i, h in enumerate(hashed)])
    rows = np.concatenate([h.rows for h in hashed])
    ext, size = np.concatenate([h.ext for h in hashed]), np.concatenate([h.size for h in hashed])
    hi, lo = np.concatenate([h.hi for h in hashed]), np.concatenate([h.lo for h in hashed])
    # only rows whose digest's high half occurs twice can be in a group: the full sort is of those few
    cand = np.flatnonzero(_repeats(hi, np.argsort(hi, kind="stable")))
    order = cand[np.lexsort((rows[cand], fold[cand], lo[cand], hi[cand], size[cand], ext[cand]))]
    ext, size, hi, lo = ext[order], size[order], hi[order], lo[order]
    same = (ext[1:] == ext[:-1]) & (size[1:] == size[:-1]) & (hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.r_[starts[1:], len(order)]
    groups = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        if b - a < 2:
            continue
        members = [Member(int(fold[i]), int(rows[i])) for i in order[a:b].tolist()]
        digest = f"{int(hi[a]):016x}{int(lo[a]):016x}"
        groups.append(DuplicateGroup("exact", ext_names[int(ext[a])], int(size[a]), digest, members))
    groups.sort(key=lambda g: (g.members[0].fold, g.members[0].row))
    return groups


def _hash_candidates(datasets: list[Dataset], todo: list[np.ndarray], ext_maps: list[np.ndarray],
                     reporter: ProgressReporter, near: bool) -> list[_Hashed]:
    """Fingerprint every row of ``todo``; hash whole the rows that may have a twin (and, for ``near``, all images)."""
    seen = []
    for ds, rows, ext_map in zip(datasets, todo, ext_maps):
        done_rows, keys = fingerprint_rows(ds, rows, reporter)
        extid = ds.rows["extid"][done_rows]
        bad = np.flatnonzero(extid >= len(ds.extensions))
        if len(bad):
            ds.ext_of(int(done_rows[bad[0]]))  # raises the FormatError naming the row's offset
        seen.append((done_rows, ext_map[extid.astype(np.int64)], ds.rows["size"][done_rows].astype(np.int64), keys))
    twin = _shared_keys(*(np.concatenate([part[i] for part in seen]) for i in (1, 2, 3)))
    wanted = np.split(twin, np.cumsum([len(part[0]) for part in seen])[:-1])
    if near:
        for f, ds in enumerate(datasets):
            image_ext = image_extension_mask(ds.extensions)
            wanted[f] = wanted[f] | image_ext[ds.rows["extid"][seen[f][0]].astype(np.int64)]
    candidates = [part[0][mask] for part, mask in zip(seen, wanted)]
    reporter.total = reporter.done + max(1, sum(int(ds.rows["size"][rows].sum())
                                                for ds, rows in zip(datasets, candidates)))
    hashed = []
    for ds, rows, ext_map in zip(datasets, candidates, ext_maps):
        done_rows, hi, lo = hash_rows(ds, rows, reporter)
        rec = ds.rows[done_rows]
        hashed.append(_Hashed(done_rows, ext_map[rec["extid"].astype(np.int64)], rec["size"].astype(np.int64),
                              hi, lo))
    return hashed


def name_members(datasets: list[Dataset], groups: list[DuplicateGroup]) -> None:
    """Fill in each member's stem and shard name (read from the tar headers)."""
    for f, ds in enumerate(datasets):
        members = [m for g in groups for m in g.members if m.fold == f]
        stems = stem_names(ds, [m.row for m in members])
        fids = ds.rows["fid"][[m.row for m in members]].tolist() if members else []
        for m, stem, fid in zip(members, stems, fids):
            m.stem, m.shard = stem, ds.shard_name(int(fid))


def unique_fold_names(datasets: list[Dataset]) -> list[str]:
    names = [ds.fold for ds in datasets]
    return [n if names.count(n) == 1 else f"{n}#{i + 1}" for i, n in enumerate(names)]


def find_duplicates(datasets: list[Dataset | str | os.PathLike[str]], *, progress: ProgressCallback | None = None,
                    cancel: CancelToken | None = None, near: bool = False, max_distance: int = 4,
                    extensions: Collection[str] | None = None, skip: Collection[str] = DEFAULT_SKIPPED,
                    min_size: int = 1) -> DuplicateReport:
    """Exact duplicate payloads within and across ``datasets`` (a job; see the module notes).

    Only members of ``extensions`` are compared (default: all but ``skip``), of at least
    ``min_size`` bytes (never empty ones).

    ``near`` also groups images whose perceptual hashes differ in at most ``max_distance``
    bits (needs ``imagehash``; raises ``ItarError`` when it is not installed).
    """
    with ExitStack() as stack:
        opened = [d if isinstance(d, Dataset) else stack.enter_context(Dataset.open(d)) for d in datasets]
        paths = [os.path.realpath(ds.path) for ds in opened]
        twice = sorted({p for p in paths if paths.count(p) > 1})
        if twice:  # its every payload would be reported as a leak into itself
            raise DatasetError(f"{twice[0]}: the same index is given twice")
        if near:
            from .near import require_imagehash

            require_imagehash()
        todo = [payload_rows(ds, extensions, skip, min_size) for ds in opened]
        total = sum(int(ds.rows["size"][rows].sum()) for ds, rows in zip(opened, todo))
        reporter = ProgressReporter(progress, max(total, 1), "bytes", cancel)
        ext_names, ext_maps = _global_ext_ids(opened)
        hashed = _hash_candidates(opened, todo, ext_maps, reporter, near)
        report = DuplicateReport([ds.path for ds in opened], unique_fold_names(opened))
        report.missing_shards = [f"{name}/{shard}" for name, ds in zip(report.folds, opened)
                                 for shard in ds.missing_shards]
        report.groups = _exact_groups(hashed, ext_names)
        report.rows_hashed = sum(len(rows) for rows in todo)
        report.bytes_hashed = total
        reporter.finish()
        if near:
            from .near import near_groups

            report.near_groups, report.images_hashed = near_groups(opened, hashed, max_distance, progress, cancel)
        name_members(opened, report.groups + (report.near_groups or []))
        return report
