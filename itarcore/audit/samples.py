"""Sample-level audit from the index rows alone: duplicates, split samples, missing extensions.

A sample is the set of rows with equal (keyhash, crashid). A small index is checked by
sorting all its rows by (keyhash, crashid, extid) in memory. A bigger one is checked
a chunk at a time in the order of its key index (the cached one, else one built into
the cache: an external sort with bounded memory), so memory stays at a few chunks
whatever the number of rows. Both routes give the same findings.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

from ..formats.taridx import TaridxIndex
from ..keyindex import KeyIndex, build_key_index
from ..progress import CancelToken
from .report import Finding, rows_text
from .sample_chunks import SampleTally, tally_samples

MAJORITY = 0.5  # an extension "most samples have" is held by more than this share of samples
IN_MEMORY_ROWS = 1 << 21  # up to this many rows, one in-memory sort (about 100 bytes a row) is quickest


def sample_findings(index: TaridxIndex, cancel: CancelToken | None = None, *, key_index: KeyIndex | None = None,
                    cache_dir: str | os.PathLike[str] | None = None, in_memory_rows: int = IN_MEMORY_ROWS,
                    chunk_rows: int | None = None) -> list[Finding]:
    """Findings about the samples of ``index``: through ``key_index`` (or the cached one) when there is one.

    Without one, an index of at most ``in_memory_rows`` rows is sorted in memory, and
    a bigger one gets its key index built first (in the cache, else in a temporary folder).
    """
    return sample_checks(index, cancel, key_index=key_index, cache_dir=cache_dir, in_memory_rows=in_memory_rows,
                         chunk_rows=chunk_rows)[0]


def sample_checks(index: TaridxIndex, cancel: CancelToken | None = None, *, key_index: KeyIndex | None = None,
                  cache_dir: str | os.PathLike[str] | None = None, in_memory_rows: int = IN_MEMORY_ROWS,
                  chunk_rows: int | None = None) -> tuple[list[Finding], int]:
    """``sample_findings`` and the number of distinct (keyhash, crashid) stems, from the same pass."""
    if index.n_rows == 0:
        return [], 0
    with contextlib.ExitStack() as stack:
        if key_index is None:
            key_index = KeyIndex.open_cached(index, cache_dir)
            if key_index is not None:
                stack.callback(key_index.close)
        if key_index is None and index.n_rows <= in_memory_rows:
            return _checked(index.extensions, _tally_in_memory(index, cancel))
        options = {} if chunk_rows is None else {"chunk_rows": chunk_rows}
        if key_index is None:
            key_index = _build_keys(index, cache_dir, cancel, stack, options)
        # worded inside the stack: naming the samples that lack an extension reads the key index again
        return _checked(index.extensions, tally_samples(index, key_index, cancel, **options))


def _build_keys(index: TaridxIndex, cache_dir: str | os.PathLike[str] | None, cancel: CancelToken | None,
                stack: contextlib.ExitStack, options: dict[str, int]) -> KeyIndex:
    """The key index built into the cache, else (the cache cannot be written) into a folder deleted after."""
    try:
        built = build_key_index(index, cache_dir, cancel=cancel, **options)
    except OSError:
        private = stack.enter_context(tempfile.TemporaryDirectory(prefix="itar-audit-keys-"))
        built = build_key_index(index, private, cancel=cancel, **options)
    stack.callback(built.close)
    return built


def _tally_in_memory(index: TaridxIndex, cancel: CancelToken | None) -> SampleTally:
    """All rows sorted by (keyhash, crashid, extid) at once, checks on the group boundaries."""
    rows = index.rows
    n = len(rows)
    keyhash, crashid, extid = rows["keyhash"], rows["crashid"], rows["extid"].astype(np.int64)
    order = np.lexsort((extid, crashid, keyhash))
    skh, scid, sext = keyhash[order], crashid[order], extid[order]
    new_group = np.ones(n, bool)
    new_group[1:] = (skh[1:] != skh[:-1]) | (scid[1:] != scid[:-1])
    group_sorted = np.cumsum(new_group) - 1
    n_groups = int(group_sorted[-1]) + 1
    group = np.empty(n, np.int64)
    group[order] = group_sorted  # sample number of every row
    if cancel is not None:
        cancel.raise_if_cancelled()
    tally = SampleTally(len(index.extensions))
    tally.n_groups = n_groups

    # Duplicate (stem, extension): equal neighbours in the sorted order, and the rows they repeat.
    dup_sorted = np.flatnonzero(~new_group[1:] & (sext[1:] == sext[:-1])) + 1
    tally.dup_groups = len(np.unique(group_sorted[dup_sorted]))
    dup_mask = np.zeros(n, bool)
    dup_mask[order[dup_sorted]] = True
    dup_mask[order[dup_sorted - 1]] = True
    tally.dup_rows.append(np.flatnonzero(dup_mask))

    # Split samples: a sample whose rows form more than one run of adjacent rows.
    run_start = np.ones(n, bool)
    run_start[1:] = group[1:] != group[:-1]
    split = np.bincount(group[run_start], minlength=n_groups) > 1
    tally.split_groups = int(split.sum())
    tally.split_rows.append(np.flatnonzero(split[group]))
    if cancel is not None:
        cancel.raise_if_cancelled()

    # Which extensions each sample has, ignoring samples of extension-less members only.
    exts = index.extensions
    empty_ext = [i for i, e in enumerate(exts) if e == ""]
    has = np.zeros((n_groups, max(len(exts), 1)), bool)
    valid = sext < len(exts)
    has[group_sorted[valid], sext[valid]] = True
    bare = has[:, empty_ext].any(axis=1) & (has.sum(axis=1) == len(empty_ext)) if empty_ext else np.zeros(n_groups, bool)
    tally.bare_groups = int(bare.sum())
    tally.bare_rows.append(np.flatnonzero(bare[group]))
    samples = ~bare
    tally.n_samples = int(samples.sum())
    tally.ext_samples[:] = (has[:, : len(exts)] & samples[:, None]).sum(axis=0)

    def lacking_rows(common: list[int]) -> tuple[int, np.ndarray]:
        lacking = samples & ~has[:, common].all(axis=1)
        return int(lacking.sum()), np.flatnonzero(lacking[group])

    tally.lacking = lacking_rows
    return tally


def _checked(exts: list[str], tally: SampleTally) -> tuple[list[Finding], int]:
    return _findings(exts, tally), tally.n_groups


def _sorted_rows(parts: list[np.ndarray]) -> list[int]:
    return np.sort(np.concatenate(parts)).tolist() if parts else []


def _findings(exts: list[str], tally: SampleTally) -> list[Finding]:
    findings = []
    if tally.dup_groups:
        dup_rows = _sorted_rows(tally.dup_rows)
        findings.append(Finding("duplicate_member", "warning", f"{tally.dup_groups} sample(s) hold the same "
                                f"extension more than once (rows {rows_text(dup_rows)}): a loader keeps only one",
                                dup_rows))
    if tally.split_groups:
        split_rows = _sorted_rows(tally.split_rows)
        findings.append(Finding("split_samples", "warning", f"{tally.split_groups} sample(s) have members that are "
                                f"not adjacent in the shards (rows {rows_text(split_rows)}): a streaming webdataset "
                                "loader splits each into several incomplete samples", split_rows))
    if tally.bare_groups:
        bare_rows = _sorted_rows(tally.bare_rows)
        findings.append(Finding("no_extension", "info", f"{tally.bare_groups} member(s) have no extension and no "
                                f"sample (e.g. a README; rows {rows_text(bare_rows)}): loaders skip them",
                                bare_rows))
    n_samples = tally.n_samples
    common = [e for e, ext in enumerate(exts) if ext != "" and n_samples
              and MAJORITY * n_samples < int(tally.ext_samples[e]) < n_samples]
    if common:
        n_lacking, rows = tally.lacking(common)
        lacking_rows = np.sort(rows).tolist()
        what = ", ".join(f"'.{exts[e]}' ({n_samples - int(tally.ext_samples[e])})" for e in common)
        findings.append(Finding("missing_extension", "warning", f"{n_lacking} of {n_samples} samples lack "
                                f"an extension most samples have: {what} (rows {rows_text(lacking_rows)})",
                                lacking_rows))
    return findings

