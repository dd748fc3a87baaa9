"""The index job: build ``<fold>.taridx`` for folds of a folder, atomically."""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetError, WriteError
from ..executors import ExecutorSpec, TaskRunner, task_runner
from ..indexing.build import Shard, build_fold
from ..indexing.cache import ShardCache
from ..indexing.indexer import discover_folds
from ..indexing.remote import RemoteOptions, RemoteShard, default_jobs, discover_remote_folds
from ..progress import CancelToken, Progress, ProgressCallback
from ..storage import is_url, join, parent
from .index_result import IndexResult
from .index_target import IndexTarget

IF_EXISTS = ("replace", "backup", "stop")


Executor = str | ExecutorSpec | TaskRunner | None


def index_fold(shards: Sequence[Shard], output: str | os.PathLike[str], *, fold: str | None = None,
               jobs: int | None = None, contiguous: bool = False, if_exists: str = "replace",
               executor: Executor = None, cache: ShardCache | None = None, progress: ProgressCallback | None = None,
               cancel: CancelToken | None = None, remote: RemoteOptions | None = None) -> IndexResult:
    """Index ``shards`` (in fid order) into ``output``. Cancel or failure leaves no partial file.

    ``executor`` runs the per-shard scans (default: ``jobs`` threads, see ``itarcore.executors``;
    ``jobs`` None is 1 for local shards and ``REMOTE_JOBS`` for remote ones, whose scans wait on the network);
    with a ``cache``, unchanged shards are loaded from it and new tables are stored in it.
    Shards may be remote (:class:`~itarcore.indexing.remote.RemoteShard`, read as ``remote``
    says) and ``output`` a store URL (uploaded whole when finished, with ``remote``'s
    storage options).
    """
    if if_exists not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {IF_EXISTS}")
    remote = remote or RemoteOptions()
    target = IndexTarget(output, remote.storage_options)
    shard_list = [s if isinstance(s, RemoteShard) else Path(s) for s in shards]
    if not shard_list:
        raise DatasetError(f"{target.name}: no shards to index")
    if if_exists == "stop" and target.exists():
        raise WriteError(f"{target.name}: an index already exists (choose replace or backup)")
    started = time.perf_counter()
    build = build_fold(shard_list, force_contiguous=contiguous, jobs=default_jobs(jobs, shard_list), executor=executor,
                       cache=cache, progress=progress, cancel=cancel, remote=remote)
    built = build.index
    if cancel is not None:
        cancel.raise_if_cancelled()
    backup = target.backup() if if_exists == "backup" and target.exists() else None
    target.write(built)
    counts = np.bincount(built.rows["extid"], minlength=len(built.extensions)) if len(built.rows) else []
    warnings = list(build.notes)
    if not len(built.rows):
        warnings.append("the shards hold no regular files: the index is empty")
    return IndexResult(
        fold=fold or _stem(target.name), path=target.output if not target.remote else target.name,
        shards=[s.name if isinstance(s, RemoteShard) else s for s in shard_list],
        n_rows=len(built.rows), n_stems=built.n_stems,
        extensions=[(e, int(c)) for e, c in zip(built.extensions, counts)],
        crash_stems=built.crash_stems, contiguous=built.contiguous,
        seconds=time.perf_counter() - started, total_bytes=sum(built.shard_sizes), backup=backup, warnings=warnings,
        counts=build.counts, route=built.route, route_reason=built.route_reason, fetched=build.fetched)


def _stem(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1].removesuffix(".taridx")


def index_folds(root: str | os.PathLike[str], folds: Sequence[str] | None = None, *,
                output: str | os.PathLike[str] | None = None, output_dir: str | os.PathLike[str] | None = None,
                jobs: int | None = None, contiguous: bool = False, if_exists: str = "replace",
                executor: Executor = None, cache: ShardCache | None = None, progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None, remote: RemoteOptions | None = None) -> list[IndexResult]:
    """Index folds found in ``root`` (all by default) into ``<output_dir or root>/<fold>.taridx``.

    One executor serves every fold (a Dask cluster is started at most once, and only if a
    shard needs scanning). ``root`` may be a URL: a folder of shards, or one fold in it
    (``s3://bucket/ds/train``); its shards are then read with ranged requests as ``remote``
    says, and its indexes go beside them unless ``output``/``output_dir`` say otherwise.
    ``jobs`` None: 1 for a local folder, ``REMOTE_JOBS`` shards at a time for a URL.
    """
    remote = remote or RemoteOptions()
    jobs = default_jobs(jobs, os.fspath(root))
    found: dict[str, list[Any]] = (discover_remote_folds(os.fspath(root), remote.storage_options) if is_url(root)
                                   else discover_folds(root))
    if not found:
        raise DatasetError(f"{root}: no shards named <fold>_<suffix>.tar")
    chosen = list(folds) if folds else list(found)
    unknown = [f for f in chosen if f not in found]
    if unknown:
        raise DatasetError(f"{root}: no shards for fold(s) {', '.join(unknown)} (found: {', '.join(found)})")
    if output is not None and len(chosen) != 1:
        raise DatasetError("--output names one file: choose exactly one fold with --fold")
    total = sum(p.size if isinstance(p, RemoteShard) else os.path.getsize(p) for f in chosen for p in found[f])
    done_before = 0
    results = []
    with task_runner(executor, jobs) as runner:
        for fold in chosen:
            target = output if output is not None else _default_target(found[fold][0], output_dir, fold)

            def relay(p: Progress, base: int = done_before, name: str = fold) -> None:
                if progress is not None:
                    progress(Progress(base + p.done, total, p.unit, f"{name}: {p.current}", p.rate, p.message))

            results.append(index_fold(found[fold], target, fold=fold, jobs=jobs, contiguous=contiguous,
                                      if_exists=if_exists, executor=runner, cache=cache, progress=relay,
                                      cancel=cancel, remote=remote))
            done_before += results[-1].total_bytes
    return results


def _default_target(first_shard: Shard, output_dir: str | os.PathLike[str] | None, fold: str) -> str | Path:
    """``<output_dir or the shards' folder>/<fold>.taridx`` (a URL when that folder is one)."""
    folder = output_dir if output_dir is not None else (
        parent(first_shard.url) if isinstance(first_shard, RemoteShard) else Path(first_shard).parent)
    return join(folder, f"{fold}.taridx") if is_url(os.fspath(folder)) else Path(folder) / f"{fold}.taridx"


def update_index(index: str | os.PathLike[str], *, jobs: int | None = None, contiguous: bool = False,
                 if_exists: str = "replace", executor: Executor = None, cache: ShardCache | None = None,
                 progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> IndexResult:
    """Rebuild ``index`` from the shards now beside it, scanning only shards not in ``cache`` as they are now.

    A shard whose path, size and mtime are unchanged since its table was cached is not
    read again; the result is byte-identical to a clean full index of the same shards with
    the same options (``contiguous`` is not read from the old index: its flag cannot tell a
    reordered fold from one that was contiguous anyway).
    """
    from ..formats.taridx import read_taridx

    index = Path(index)
    with read_taridx(index, check_rows=False):  # it must be a TARIDX: --update never overwrites anything else
        pass
    fold = index.name.removesuffix(".taridx")
    shards = discover_folds(index.parent).get(fold)
    if not shards:
        raise DatasetError(f"{index}: no shards named {fold}_<suffix>.tar beside it")
    return index_fold(shards, index, fold=fold, jobs=jobs, contiguous=contiguous, if_exists=if_exists,
                      executor=executor, cache=cache if cache is not None else ShardCache(), progress=progress, cancel=cancel)
