"""The index job: build ``<fold>.taridx`` for folds of a folder, atomically."""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DatasetError, WriteError
from ..formats.taridx import write_taridx
from ..indexing.indexer import discover_folds, index_shards
from ..progress import CancelToken, Progress, ProgressCallback

IF_EXISTS = ("replace", "backup", "stop")


@dataclass
class IndexResult:
    fold: str
    path: Path
    shards: list[Path]
    n_rows: int
    n_stems: int
    extensions: list[tuple[str, int]]  # (name, row count) in id order
    crash_stems: list[str]
    contiguous: bool
    seconds: float
    total_bytes: int
    backup: Path | None = None
    warnings: list[str] = field(default_factory=list)
    route: str = "numpy"  # the tar scan that ran: "compiled" (numba) or "numpy"
    route_reason: str = ""

    @property
    def members_per_second(self) -> float:
        return self.n_rows / self.seconds if self.seconds > 0 else 0.0


def index_fold(shards: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, fold: str | None = None,
               jobs: int = 1, contiguous: bool = False, if_exists: str = "replace",
               progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> IndexResult:
    """Index ``shards`` (in fid order) into ``output``. Cancel or failure leaves no partial file."""
    if if_exists not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {IF_EXISTS}")
    output = Path(output)
    shard_paths = [Path(p) for p in shards]
    if not shard_paths:
        raise DatasetError(f"{output}: no shards to index")
    if output.exists() and if_exists == "stop":
        raise WriteError(f"{output}: an index already exists (choose replace or backup)")
    started = time.perf_counter()
    built = index_shards(shard_paths, force_contiguous=contiguous, jobs=jobs, progress=progress, cancel=cancel)
    if cancel is not None:
        cancel.raise_if_cancelled()
    backup = None
    if output.exists() and if_exists == "backup":
        backup = output.with_name(output.name + f".bak-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(output, backup)
    write_taridx(output, built.rows, built.extensions, built.crash_stems, built.n_stems, built.contiguous)
    counts = np.bincount(built.rows["extid"], minlength=len(built.extensions)) if len(built.rows) else []
    warnings = []
    if not len(built.rows):
        warnings.append("the shards hold no regular files: the index is empty")
    return IndexResult(
        fold=fold or output.name.removesuffix(".taridx"), path=output, shards=shard_paths,
        n_rows=len(built.rows), n_stems=built.n_stems,
        extensions=[(e, int(c)) for e, c in zip(built.extensions, counts)],
        crash_stems=built.crash_stems, contiguous=built.contiguous,
        seconds=time.perf_counter() - started, total_bytes=sum(built.shard_sizes), backup=backup, warnings=warnings,
        route=built.route, route_reason=built.route_reason)


def index_folds(root: str | os.PathLike[str], folds: Sequence[str] | None = None, *,
                output: str | os.PathLike[str] | None = None, output_dir: str | os.PathLike[str] | None = None,
                jobs: int = 1, contiguous: bool = False, if_exists: str = "replace",
                progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> list[IndexResult]:
    """Index folds found in ``root`` (all by default) into ``<output_dir or root>/<fold>.taridx``."""
    found = discover_folds(root)
    if not found:
        raise DatasetError(f"{root}: no shards named <fold>_<suffix>.tar")
    chosen = list(folds) if folds else list(found)
    unknown = [f for f in chosen if f not in found]
    if unknown:
        raise DatasetError(f"{root}: no shards for fold(s) {', '.join(unknown)} (found: {', '.join(found)})")
    if output is not None and len(chosen) != 1:
        raise DatasetError("--output names one file: choose exactly one fold with --fold")
    total = sum(os.path.getsize(p) for f in chosen for p in found[f])
    done_before = 0
    results = []
    for fold in chosen:
        target = Path(output) if output is not None else Path(output_dir or root) / f"{fold}.taridx"

        def relay(p: Progress, base: int = done_before, name: str = fold) -> None:
            if progress is not None:
                progress(Progress(base + p.done, total, p.unit, f"{name}: {p.current}", p.rate, p.message))

        results.append(index_fold(found[fold], target, fold=fold, jobs=jobs, contiguous=contiguous,
                                  if_exists=if_exists, progress=relay, cancel=cancel))
        done_before += results[-1].total_bytes
    return results
