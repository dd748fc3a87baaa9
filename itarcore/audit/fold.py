"""Audit a TARIDX index against its shards: what is wrong, where, and whether a rebuild helps.

``quick_check`` reads only the index and the shards' directory entries, in passes over
the rows of bounded memory (chunks; stems counted by ``stem_count``). ``audit_index``
also reads the tar header behind every row and re-scans each shard for members the
index lacks. Each problem is reported once: row problems are grouped into one finding
per shard, rows of a missing or truncated shard are covered by that shard's finding,
and a member found elsewhere in the shard that matches a failing row explains it
(a moved offset, reordered members) instead of being reported again as unindexed.

The format stores no shard sizes, so a changed shard is detected by its mtime being
newer than the index's, and by the row checks themselves.
"""
from __future__ import annotations

import os
from functools import cached_property

import numpy as np

from ..errors import FormatError
from ..executors import ExecutorSpec, TaskRunner
from ..formats.taridx import TaridxIndex, read_taridx
from ..indexing.hashing import xxh64_padded
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from ..rowpass import iter_row_chunks
from ..shards import find_shards, fold_name, shard_name_for
from ..storage import StorageError, basename, is_url, list_files, open_source, parent
from .parallel import audit_shards
from .report import SHOWN, AuditReport, Finding, rows_text
from .rows import OUTSIDE, PROBLEM_KINDS, ShardAudit, audit_shard, rows_beyond
from .samples import sample_checks
from .stem_count import count_runs, count_stems

__all__ = ["AuditReport", "Finding", "audit_index", "quick_check"]
MTIME_SLACK = 2.0  # seconds: coarse file-system clocks, copies made in the same instant


class _Fold:
    """The index plus the shards found beside it (or in ``shard_dir``, a folder or URL prefix)."""

    def __init__(self, index_path: str | os.PathLike[str], cancel: CancelToken | None,
                 shard_dir: str | os.PathLike[str] | None = None, storage_options: dict | None = None) -> None:
        self.storage_options = storage_options
        self.index: TaridxIndex = read_taridx(index_path, check_rows=False, storage_options=storage_options)
        self.path = self.index.path if self.index.is_remote else os.fspath(index_path)
        self.fold = fold_name(index_path)
        folder = shard_dir if shard_dir is not None else parent(index_path)
        self.shards = find_shards(folder, self.fold, storage_options)
        self.remote_sizes = _listed_sizes(folder, storage_options) if is_url(folder) else None
        if self.index.is_remote:  # an audit reads every row, several times: fetch them once
            self.index.rows = np.asarray(self.index.rows)
        self.rows = self.index.rows
        self.cancel = cancel
        # remote files carry no comparable mtime here: the row checks alone find changed shards
        self.mtime = None if self.index.is_remote else os.stat(self.path).st_mtime

    @cached_property
    def rows_of(self) -> dict[int, np.ndarray]:
        """Rows by shard, in row order within each (the full audit's tasks; 10 bytes a row)."""
        fid = np.asarray(self.rows["fid"])
        order = np.argsort(fid, kind="stable")
        fids, starts = np.unique(fid[order], return_index=True)
        ends = np.append(starts[1:], len(order))
        return {int(f): order[s:e] for f, s, e in zip(fids, starts, ends)}

    def name(self, fid: int) -> str:
        return shard_name_for(self.fold, fid, self.shards)

    def size(self, fid: int) -> int:
        path = self.shards[fid]
        if self.remote_sizes is None:
            return os.stat(path).st_size
        if basename(path) not in self.remote_sizes:  # not listed (a web server without folder pages): ask it
            with open_source(path, self.storage_options) as source:
                self.remote_sizes[basename(path)] = source.size
        return self.remote_sizes[basename(path)]

    def modified(self, fid: int) -> bool:
        path = self.shards.get(fid)
        if path is None or self.mtime is None or is_url(path):
            return False
        return os.stat(path).st_mtime > self.mtime + MTIME_SLACK


def _listed_sizes(folder: str | os.PathLike[str], storage_options: dict | None) -> dict[str, int]:
    try:
        return dict(list_files(folder, storage_options, ".tar"))
    except StorageError:
        return {}


def _structure(fold: _Fold, progress: ProgressCallback | None, n_stems: int | None = None) -> list[Finding]:
    """Row ids against the tables, stem count and contiguity flag against the rows.

    ``n_stems``: the stem count if the sample checks already made it (else counted here, in
    bounded memory). Every pass goes a chunk at a time.
    """
    index, header = fold.index, fold.index.header
    findings = []
    try:
        index.check_rows(progress=progress, cancel=fold.cancel, release=True)
    except FormatError as exc:
        parts = [start + np.flatnonzero((part["extid"] >= header.n_ext) | (part["crashid"] > header.n_crash))
                 for start, part in iter_row_chunks(index, cancel=fold.cancel)]
        bad = np.concatenate(parts).tolist()
        findings.append(Finding("bad_row_ids", "error", f"{exc} ({len(bad)} row(s): {rows_text(bad)})", bad))
    if n_stems is None:
        n_stems = count_stems(index, fold.cancel)
    if n_stems != header.n_stems:
        findings.append(Finding("stem_count", "error", f"header n_stems is {header.n_stems} but the rows hold "
                                f"{n_stems} distinct (keyhash, crashid) stems"))
    runs = count_runs(index, fold.cancel)
    contiguous = runs == n_stems
    if contiguous != header.contiguous:
        said = "set" if header.contiguous else "clear"
        findings.append(Finding("contiguity_flag", "error", f"flag bit 0 (contiguous) is {said}, but the rows form "
                                f"{runs} runs for {n_stems} stems"))
    return findings


def _shard_presence(fold: _Fold) -> tuple[list[Finding], list[int]]:
    """Missing shards (their rows are covered here) and shards on disk that no row references."""
    findings = []
    missing = [f for f in fold.rows_of if f not in fold.shards]
    for fid in missing:
        rows = fold.rows_of[fid].tolist()
        findings.append(Finding("missing_shard", "error", f"shard {fold.name(fid)} (fid {fid}) is missing: its "
                                f"{len(rows)} rows cannot be read", rows, [fold.name(fid)]))
    extra = [f for f in fold.shards if f not in fold.rows_of]
    return findings, extra


def quick_check(index_path: str | os.PathLike[str], progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None, *, shard_dir: str | os.PathLike[str] | None = None,
                storage_options: dict | None = None) -> AuditReport:
    """Structural checks that read the index and stat the shards, never their contents.

    Memory stays bounded whatever the number of rows: chunked passes, and the rows findings name.
    """
    fold = _Fold(index_path, cancel, shard_dir, storage_options)
    findings = _structure(fold, progress)
    referenced, sizes, missing_rows, outside_rows = _shard_rows(fold)
    for fid in referenced:
        if fid not in fold.shards:
            rows = missing_rows[fid]
            findings.append(Finding("missing_shard", "error", f"shard {fold.name(fid)} (fid {fid}) is missing: its "
                                    f"{len(rows)} rows cannot be read", rows, [fold.name(fid)]))
    for fid in fold.shards:
        if fid not in referenced:
            name = fold.name(fid)
            findings.append(Finding("extra_shard", "warning", f"shard {name} is beside the index but no row "
                                    "refers to it", [], [name]))
    for fid in referenced:
        path = fold.shards.get(fid)
        if path is None:
            continue
        size, name = sizes[fid], basename(path)
        out = outside_rows[fid]
        note = _mtime_note(fold, fid)
        if out:
            findings.append(Finding("outside_shard", "error", f"{len(out)} row(s) reach past the end of "
                                    f"{name} ({size} bytes): rows {rows_text(out)}{note}", out, [name]))
        elif note:
            findings.append(_modified_finding(fold, fid))
    if cancel is not None:
        cancel.raise_if_cancelled()
    return AuditReport(fold.path, findings, False, len(fold.rows), len(fold.shards))


def _shard_rows(fold: _Fold) -> tuple[list[int], dict[int, int], dict[int, list[int]], dict[int, list[int]]]:
    """One chunked pass: the shards rows refer to (ascending), the sizes of those present,
    every row of each missing one, and the rows of each present one that reach past its
    end (rows ascending)."""
    n_fids = 1 << 16
    counts = np.zeros(n_fids, np.int64)
    sizes = np.full(n_fids, -1, np.int64)  # -1: no such shard (or not yet seen)
    missing: dict[int, list[np.ndarray]] = {}
    outside: dict[int, list[np.ndarray]] = {}
    for start, part in iter_row_chunks(fold.index, cancel=fold.cancel):
        fid = part["fid"].astype(np.intp)
        in_chunk = np.bincount(fid, minlength=n_fids)
        for f in np.flatnonzero((in_chunk > 0) & (counts == 0)).tolist():  # stat a shard once, when first met
            if f in fold.shards:
                sizes[f] = fold.size(f)
        counts += in_chunk
        size = sizes[fid]
        absent = size < 0
        beyond = ~absent & rows_beyond(part["offset"], part["size"], np.maximum(size, 0))
        for store, flags in ((missing, absent), (outside, beyond)):
            rows = np.flatnonzero(flags)
            if len(rows):
                held = fid[rows]
                for f in np.unique(held).tolist():
                    store.setdefault(f, []).append(start + rows[held == f])
    referenced = np.flatnonzero(counts).tolist()
    empty = [np.zeros(0, np.int64)]
    return (referenced, {f: int(sizes[f]) for f in referenced if f in fold.shards}, {f: np.concatenate(missing.get(f, empty)).tolist() for f in referenced},
            {f: np.concatenate(outside.get(f, empty)).tolist() for f in referenced})


def _mtime_note(fold: _Fold, fid: int) -> str:
    return "; the shard was modified after the index was written" if fold.modified(fid) else ""


def _modified_finding(fold: _Fold, fid: int) -> Finding:
    name = fold.name(fid)
    return Finding("shard_modified", "info", f"shard {name} was modified after the index was written (the index "
                   "format stores no shard size; the row checks found no difference)", [], [name])


def audit_index(index_path: str | os.PathLike[str], progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None, *, executor: str | ExecutorSpec | TaskRunner | None = None,
                jobs: int = 1, shard_dir: str | os.PathLike[str] | None = None,
                storage_options: dict | None = None, content: bool = False) -> AuditReport:
    """The full audit: every row against its tar header, a re-scan of each shard, sample-level checks.

    By default the shards are checked one after the other here; ``executor`` (and ``jobs``
    threads) runs each shard's checks as one task elsewhere (see ``itarcore.executors``),
    with the same findings in the same order. Remote shards are each fetched whole (ranged
    reads into a temporary file, one shard at a time per task): the re-scan reads every block. ``content`` adds
    duplicate-payload and split-leak findings against the other folds beside the index (``audit.content``).
    """
    fold = _Fold(index_path, cancel, shard_dir, storage_options)
    presence, extra = _shard_presence(fold)
    findings: list[Finding] = []
    reporter = ProgressReporter(progress, len(fold.rows), "rows", cancel)
    tasks = []
    for fid in sorted(fold.shards):
        rows_idx = fold.rows_of.get(fid, np.zeros(0, np.int64))
        tasks.append((fid, os.fspath(fold.shards[fid]), fold.rows[rows_idx], rows_idx, list(fold.index.extensions),
                      list(fold.index.crash_stems), storage_options))
    local = executor is None or (str(executor) == "threads" and jobs <= 1)
    audits = {} if local else audit_shards(tasks, executor, jobs, reporter)
    done = 0
    for task in tasks:  # shard order, wherever the checks ran
        fid = task[0]
        shard = audits[fid] if not local else audit_shard(*task[:6], reporter, done, storage_options)
        done += len(task[2])
        findings += _shard_findings(fold, shard, fid in extra)
    reporter.finish()
    samples, n_stems = sample_checks(fold.index, cancel)  # bounded memory: key order, chunk by chunk
    findings = _structure(fold, None, n_stems) + presence + findings + samples + _collisions(fold)
    if content:
        from .content import content_findings

        findings += content_findings(fold.path, progress, cancel)
    return AuditReport(fold.path, findings, True, len(fold.rows), len(fold.shards))


def _shard_findings(fold: _Fold, shard: ShardAudit, extra: bool) -> list[Finding]:
    name = basename(shard.path)
    note = _mtime_note(fold, shard.fid)
    findings = []
    if extra:
        if shard.n_members:
            findings.append(Finding("extra_shard", "warning", f"shard {name} holds {shard.n_members} member(s) but "
                                    f"no row refers to it{note}", [], [name]))
        else:
            findings.append(Finding("extra_shard", "info", f"shard {name} holds no members and no row refers to it",
                                    [], [name]))
        return findings
    problems = shard.problems
    if shard.truncated:
        cut = sorted(shard.beyond_end)
        findings.append(Finding("truncated_shard", "error", f"shard {name} is truncated: {shard.truncated_detail}; "
                                f"{len(cut)} row(s) lie beyond its end: {rows_text(cut)}{note}", cut, [name]))
        problems = {r: p for r, p in problems.items() if p[0] != OUTSIDE}
    failed = sorted(problems)
    # A loose member with a failing row's stem hash and extension is that row's member, moved.
    wanted = {(int(fold.rows[r]["keyhash"]), int(fold.rows[r]["extid"])) for r in failed}
    moved = [u for u in shard.unaccounted if (u[2], u[3]) in wanted]
    loose = [u for u in shard.unaccounted if (u[2], u[3]) not in wanted]
    if failed:
        kinds = {p[0] for p in problems.values()}
        kind = PROBLEM_KINDS[kinds.pop()] if len(kinds) == 1 else "row_mismatch"
        shown = "; ".join(f"row {r}: {problems[r][1]}" for r in failed[:SHOWN])
        more = f"; … {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
        why = (f"; {len(moved)} of their members sit at other offsets in the shard (moved or reordered: the index "
               "is stale)") if moved else ""
        severity = "error"
        findings.append(Finding(kind, severity, f"{len(failed)} row(s) of {name} do not match the tar headers: "
                                f"{shown}{more}{why}{note}", failed, [name]))
    if loose:  # data no loader that trusts the index can see: the index is stale, an error like the row ones
        names = ", ".join(f"{n!r} at offset {o}" for o, n, _, _ in loose[:SHOWN])
        more = f" … ({len(loose)} members)" if len(loose) > SHOWN else ""
        findings.append(Finding("unindexed_member", "error", f"{len(loose)} member(s) of {name} are not in the "
                                f"index: {names}{more}{'' if failed else note}", [], [name]))
    if not findings and note:
        findings.append(_modified_finding(fold, shard.fid))
    return findings


def _collisions(fold: _Fold) -> list[Finding]:
    crash = fold.index.crash_stems
    if not crash:
        return []
    encoded = [s.encode("utf-8", "surrogateescape") for s in crash]
    width = max(len(e) for e in encoded)
    mat = np.zeros((len(encoded), max(width, 1)), np.uint8)
    for i, e in enumerate(encoded):
        mat[i, : len(e)] = np.frombuffer(e, np.uint8)
    hashes = xxh64_padded(mat, np.array([len(e) for e in encoded], np.int64))
    rows = np.flatnonzero(np.isin(fold.rows["keyhash"], hashes)).tolist()
    listed = ", ".join(f"{s!r} (crash id {i + 1}, xxh64 {int(h):016x})" for i, (s, h) in enumerate(zip(crash, hashes)))
    return [Finding("colliding_stems", "info", f"{len(crash)} stem(s) share an xxh64 hash with an earlier, different "
                    f"stem and are told apart by crash id: {listed}", rows, [])]
