"""Sample-level audit from the index rows alone: duplicates, split samples, missing extensions.

A sample is the set of rows with equal (keyhash, crashid). All checks sort the rows
once by (keyhash, crashid, extid) and work on group boundaries, so they run in a few
numpy passes over any number of rows.
"""
from __future__ import annotations

import numpy as np

from ..formats.taridx import TaridxIndex
from ..progress import CancelToken
from .report import Finding, rows_text

MAJORITY = 0.5  # an extension "most samples have" is held by more than this share of samples


def sample_findings(index: TaridxIndex, cancel: CancelToken | None = None) -> list[Finding]:
    rows = index.rows
    n = len(rows)
    if n == 0:
        return []
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
    findings = []

    # Duplicate (stem, extension): equal neighbours in the sorted order.
    dup_sorted = np.flatnonzero(~new_group[1:] & (sext[1:] == sext[:-1])) + 1
    if len(dup_sorted):
        dup_groups = np.unique(group_sorted[dup_sorted])
        dup_rows = np.flatnonzero(np.isin(group, dup_groups) & _dup_mask(order, dup_sorted, n)).tolist()
        findings.append(Finding("duplicate_member", "warning", f"{len(dup_groups)} sample(s) hold the same "
                                f"extension more than once (rows {rows_text(dup_rows)}): a loader keeps only one",
                                dup_rows))

    # Split samples: a sample whose rows form more than one run of adjacent rows.
    run_start = np.ones(n, bool)
    run_start[1:] = group[1:] != group[:-1]
    runs_per_group = np.bincount(group[run_start], minlength=n_groups)
    split = np.flatnonzero(runs_per_group > 1)
    if len(split):
        split_rows = np.flatnonzero(np.isin(group, split)).tolist()
        findings.append(Finding("split_samples", "warning", f"{len(split)} sample(s) have members that are not "
                                f"adjacent in the shards (rows {rows_text(split_rows)}): a streaming webdataset "
                                "loader splits each into several incomplete samples", split_rows))
    if cancel is not None:
        cancel.raise_if_cancelled()

    # Missing extensions: which extensions each sample has, ignoring samples of extension-less members only.
    exts = index.extensions
    empty_ext = [i for i, e in enumerate(exts) if e == ""]
    has = np.zeros((n_groups, max(len(exts), 1)), bool)
    valid = sext < len(exts)
    has[group_sorted[valid], sext[valid]] = True
    bare = has[:, empty_ext].any(axis=1) & (has.sum(axis=1) == len(empty_ext)) if empty_ext else np.zeros(n_groups, bool)
    if bare.any():
        bare_rows = np.flatnonzero(bare[group]).tolist()
        findings.append(Finding("no_extension", "info", f"{int(bare.sum())} member(s) have no extension and no "
                                f"sample (e.g. a README; rows {rows_text(bare_rows)}): loaders skip them",
                                bare_rows))
    samples = ~bare
    n_samples = int(samples.sum())
    common = [e for e, ext in enumerate(exts) if ext != "" and n_samples
              and MAJORITY * n_samples < int((has[:, e] & samples).sum()) < n_samples]
    if common:
        lacking = samples & ~has[:, common].all(axis=1)
        lacking_rows = np.flatnonzero(lacking[group]).tolist()
        what = ", ".join(f"'.{exts[e]}' ({int((samples & ~has[:, e]).sum())})" for e in common)
        findings.append(Finding("missing_extension", "warning", f"{int(lacking.sum())} of {n_samples} samples lack "
                                f"an extension most samples have: {what} (rows {rows_text(lacking_rows)})",
                                lacking_rows))
    return findings


def _dup_mask(order: np.ndarray, dup_sorted: np.ndarray, n: int) -> np.ndarray:
    """Rows that repeat an earlier row's (stem, extension), and the rows they repeat."""
    mask = np.zeros(n, bool)
    mask[order[dup_sorted]] = True
    mask[order[dup_sorted - 1]] = True
    return mask
