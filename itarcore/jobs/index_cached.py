"""The index job for folds whose shards are all unchanged since their tables were cached, without numpy.

:func:`index_folds_cached` is :func:`itarcore.jobs.index.index_folds` for the case a rerun
meets most: local shards, every table cached, the usual webdataset fold
(:mod:`itarcore.indexing.cached_fold`). It writes the same bytes and returns the same
results; for anything else it returns None before writing that fold, and the caller runs
the full job (which reads the same cache entries again: a few milliseconds).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from ..formats.taridx_header import write_taridx_records
from ..indexing.cache import ROUTE_REASON, ShardCache, ShardCounts
from ..indexing.cached_fold import UnusualFold, merge_cached
from ..indexing.discover import discover_folds
from ..progress import Progress, ProgressCallback
from ..storage import is_url
from .index_result import IndexResult


def index_folds_cached(root: str | os.PathLike[str], folds: Sequence[str] | None, *, cache: ShardCache,
                       output: str | os.PathLike[str] | None = None,
                       progress: ProgressCallback | None = None) -> list[IndexResult] | None:
    """``index_folds(root, folds, output=output, cache=cache)`` (``if_exists="replace"``; ``contiguous``
    either way, since these folds are contiguous already), or None once a fold is not served from the cache.

    Every fold is merged before any is written, so a fold the cache cannot serve declines the whole
    run up front; only the run check, made while a fold's file syncs, can still decline after earlier
    folds were written (as the full job would have written them).
    """
    if is_url(os.fspath(root)) or (output is not None and is_url(os.fspath(output))):
        return None
    try:
        found = discover_folds(root)
    except OSError:  # the full job says what is wrong
        return None
    chosen = list(folds) if folds else list(found)
    if not chosen or any(f not in found for f in chosen) or (output is not None and len(chosen) != 1):
        return None
    total = sum(os.path.getsize(p) for f in chosen for p in found[f])
    merges = []
    for fold in chosen:
        merged = merge_cached(found[fold], cache)
        if merged is None:
            return None  # before any fold is written
        merges.append((fold, merged))
    results: list[IndexResult] = []
    for fold, merged in merges:
        started = time.perf_counter()
        shards = found[fold]
        target = Path(output) if output is not None else shards[0].parent / f"{fold}.taridx"
        try:
            write_taridx_records(target, merged.record_pieces(), merged.n_rows, merged.extensions, merged.crash_stems,
                                 merged.n_stems, merged.contiguous, while_syncing=merged.check_runs)
        except UnusualFold:  # nothing was written
            return None
        results.append(IndexResult(
            fold=fold, path=target, shards=list(shards), n_rows=merged.n_rows, n_stems=merged.n_stems,
            extensions=list(zip(merged.extensions, merged.extension_counts)), crash_stems=list(merged.crash_stems),
            contiguous=merged.contiguous, seconds=time.perf_counter() - started,
            total_bytes=sum(merged.shard_sizes), counts=ShardCounts(reused=len(shards)), route="cache",
            route_reason=ROUTE_REASON))
        if progress is not None:
            done = sum(r.total_bytes for r in results)
            progress(Progress(done, total, "bytes", f"{fold}: {shards[-1].name}", message=results[-1].counts.text()))
    return results


__all__ = ["index_folds_cached"]
