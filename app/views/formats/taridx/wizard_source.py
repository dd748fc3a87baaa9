"""The index wizard without widgets: what the source holds (folds, shards, sizes, early warnings), and the run.

Kept free of Qt so the wizard pages stay small and this part is easy to test.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from itarcore.audit.rows import checksums_ok
from itarcore.executors import task_runner
from itarcore.formats.tar_fields import BLOCK
from itarcore.indexing.cache import ShardCache
from itarcore.indexing.indexer import SHARD_PATTERN, discover_folds
from itarcore.indexing.remote import RemoteOptions, RemoteShard, discover_remote_folds
from itarcore.jobs import IndexResult, index_fold
from itarcore.progress import CancelToken, Progress, ProgressCallback
from itarcore.storage import basename, parent

SAMPLE_HEADERS = 64  # headers walked at the start of a fold's first shard to estimate bytes per member


Shard = Path | RemoteShard


@dataclass
class SourcePlan:
    """Folds to index (fid order), with sizes and warnings."""

    folds: dict[str, list[Shard]] = field(default_factory=dict)
    sizes: dict[Shard, int] = field(default_factory=dict)
    folder: Path | str | None = None  # default output folder: beside the shards (a URL for a URL source)
    remote: RemoteOptions | None = None  # a URL source: how its shards are read (storage options)
    non_tar: list[Path] = field(default_factory=list)
    unreadable: dict[Path, str] = field(default_factory=dict)
    odd_names: list[Path] = field(default_factory=list)  # tars not named <fold>_<suffix>.tar
    bytes_per_member: dict[str, float] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())

    def fold_bytes(self, fold: str) -> int:
        return sum(self.sizes[p] for p in self.folds[fold])

    def warnings(self) -> list[str]:
        out = [f"{p.name}: {why} — indexing this fold will fail" for p, why in self.unreadable.items()]
        if self.non_tar:
            names = ", ".join(p.name for p in self.non_tar[:5]) + (" …" if len(self.non_tar) > 5 else "")
            out.append(f"{len(self.non_tar)} file(s) that are not .tar shards are ignored: {names}")
        out += [f"{p.name} is not named <fold>_<suffix>.tar: the browser will not find it beside its index"
                for p in self.odd_names]
        return out


def plan_folder(folder: str | os.PathLike[str]) -> SourcePlan:
    folder = Path(folder)
    plan = SourcePlan(folder=folder)
    plan.folds = {fold: list(paths) for fold, paths in discover_folds(folder).items()}
    taken = {p for paths in plan.folds.values() for p in paths}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = Path(entry.path)
        if not entry.is_file() or entry.name.startswith(".") or path in taken:
            continue
        if entry.name.endswith(".tar"):
            plan.odd_names.append(path)
        elif not entry.name.endswith((".taridx", ".bak")) and ".taridx.bak-" not in entry.name:
            plan.non_tar.append(path)
    _finish(plan)
    return plan


def plan_url(url: str, storage_options: dict | None = None) -> SourcePlan:
    """The folds under a URL (a folder, or one fold's prefix), as listed: no shard is read."""
    folds = discover_remote_folds(url, storage_options)
    plan = SourcePlan(folds=dict(folds), remote=RemoteOptions(storage_options or {}))
    plan.folder = parent(next(iter(folds.values()))[0].url)
    plan.sizes = {shard: shard.size for shards in folds.values() for shard in shards}
    return plan


def shard_name(shard: Shard) -> str:
    """A shard's file name (a URL's last part)."""
    return basename(shard.url) if isinstance(shard, RemoteShard) else shard.name


def plan_files(files: list[str | os.PathLike[str]]) -> SourcePlan:
    """An explicit list of tar files (or a single tar): folds by name, others as their own fold."""
    paths = [Path(f) for f in files]
    plan = SourcePlan(folder=paths[0].parent if paths else None)
    grouped: dict[str, list[tuple[str, Path]]] = {}
    for path in paths:
        match = SHARD_PATTERN.match(path.name)
        if not path.name.endswith(".tar"):
            plan.non_tar.append(path)
        elif match:
            grouped.setdefault(match["fold"], []).append((match["suffix"], path))
        else:
            plan.odd_names.append(path)
            grouped.setdefault(path.name.removesuffix(".tar"), []).append(("", path))
    plan.folds = {fold: [p for _, p in sorted(items)] for fold, items in sorted(grouped.items())}
    _finish(plan)
    return plan


def _finish(plan: SourcePlan) -> None:
    for fold, paths in plan.folds.items():
        for path in paths:
            try:
                plan.sizes[path] = path.stat().st_size
                problem = first_header_problem(path)
            except OSError as exc:
                plan.sizes.setdefault(path, 0)
                problem = exc.strerror or str(exc)
            if problem:
                plan.unreadable[path] = problem
        plan.bytes_per_member[fold] = _bytes_per_member(paths[0]) if paths[0] not in plan.unreadable else 0.0


def first_header_problem(path: Path) -> str:
    """'' when the file starts like a tar archive, else why not."""
    with open(path, "rb") as fh:
        head = fh.read(BLOCK)
    if not head:
        return "empty file"
    if len(head) < BLOCK:
        return f"only {len(head)} bytes: shorter than one tar header"
    if not any(head):
        return ""  # an empty archive: only its end marker
    if not checksums_ok(np.frombuffer(head, np.uint8).reshape(1, BLOCK))[0]:
        return "does not start with a valid tar header (bad checksum)"
    return ""


def _bytes_per_member(path: Path) -> float:
    """Average bytes a member takes at the start of ``path`` (for a members/s estimate while indexing)."""
    offset = count = 0
    try:
        with open(path, "rb") as fh:
            for _ in range(SAMPLE_HEADERS):
                fh.seek(offset)
                head = fh.read(BLOCK)
                if len(head) < BLOCK or not any(head):
                    break
                size = int(head[124:136].split(b"\0", 1)[0].strip() or b"0", 8)
                offset += BLOCK + -(-size // BLOCK) * BLOCK
                count += head[156:157] in (b"0", b"\0", b"7")
    except (OSError, ValueError):
        return 0.0
    return offset / count if count else 0.0


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n} B"


def human_seconds(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def index_plan(jobs_list: list[tuple[str, list[Shard], Path | str]], *, jobs: int, contiguous: bool,
               if_exists: str, executor: str = "threads", cache: ShardCache | None = None,
               remote: RemoteOptions | None = None, progress: ProgressCallback | None = None,
               cancel: CancelToken | None = None) -> list[IndexResult]:
    """Run ``index_fold`` for each (fold, shards, output) with one executor; progress is in bytes over all folds.

    ``Progress.message`` is the current fold's shard counts (reused, scanned). Remote shards
    are read as ``remote`` says, and an output URL is uploaded whole when its fold is done.
    """
    total = sum(p.size if isinstance(p, RemoteShard) else p.stat().st_size for _, shards, _ in jobs_list
                for p in shards)
    base = 0
    results = []
    with task_runner(executor, jobs) as runner:  # a Dask cluster starts once, and only if a shard needs a scan
        for fold, shards, output in jobs_list:
            def relay(p: Progress, base: int = base) -> None:
                if progress is not None:
                    progress(Progress(base + p.done, total, p.unit, p.current, p.rate, p.message))

            results.append(index_fold(shards, output, fold=fold, jobs=jobs, contiguous=contiguous,
                                      if_exists=if_exists, executor=runner, cache=cache, progress=relay,
                                      cancel=cancel, remote=remote))
            base += results[-1].total_bytes
    return results
