"""Statistics of a fold: extensions, shards, labels and image dimensions, computed as a job.

Three passes, each chunked and cancellable, with ``on_partial`` given a snapshot after
each step so a view can draw as the job runs:

1. the index rows alone: per extension count, bytes and size percentiles; per shard
   rows, bytes and a shard × extension count matrix;
2. samples per shard (a sample counts for the shard of its first row; grouping reuses
   ``Dataset.compute_samples``);
3. payloads of label members (or JSON members, for a field) and headers of image
   members, read shard by shard in large sequential runs (``payloads.iter_payload_runs``).

Memory is bounded by the number of extensions, shards and distinct labels, not rows.
"""
from __future__ import annotations

import copy
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..progress import CancelToken, Progress, ProgressCallback, ProgressReporter
from ..rowpass import iter_row_chunks
from .dims import DimsHistogram
from .imagedims import format_codes, image_extension_mask, image_sizes
from .labels import UNREADABLE, LabelSource, resolve_label_source
from .payloads import PayloadRun, iter_payload_runs
from .sizehist import N_BINS, PERCENTILES, SizeHistograms

MAX_LABELS = 10_000  # distinct labels kept; further values count as OTHER_LABEL
OTHER_LABEL = "(other labels)"
PARTIAL_INTERVAL = 0.25  # seconds between snapshots while payloads are read
MAX_CELLS = 1 << 25  # shard x extension counts and size-histogram bins kept at most (256 MiB of int64)
PartialCallback = Callable[["FoldStats"], None]


@dataclass
class FoldStats:
    index: str
    fold: str
    extensions: list[str]
    n_rows: int
    shard_names: dict[int, str]
    phase: str = "rows"  # rows -> samples -> payloads -> done
    rows_counted: int = 0
    ext_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ext_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sizes: SizeHistograms = field(default_factory=lambda: SizeHistograms(0))
    shard_ext: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # fid x extid rows
    shard_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_samples: int | None = None
    shard_samples: np.ndarray | None = None
    missing_shards: list[str] = field(default_factory=list)
    label_source: str | None = None
    labels: Counter = field(default_factory=Counter)  # (label, fid) -> members
    label_members: int = 0
    label_missing: int = 0  # JSON members without the field
    label_unreadable: int = 0
    dims: DimsHistogram = field(default_factory=DimsHistogram)
    payload_rows_done: int = 0
    payload_rows_total: int = 0

    @property
    def complete(self) -> bool:
        return self.phase == "done"

    @property
    def fids(self) -> list[int]:
        """Shards that hold rows, ascending."""
        return np.flatnonzero(self.shard_ext.sum(axis=1)).tolist() if self.shard_ext.size else []

    def snapshot(self) -> FoldStats:
        """An independent copy (the job goes on changing this one)."""
        return copy.deepcopy(self)

    def label_totals(self) -> dict[str, int]:
        """Members per label, most frequent first (ties by label)."""
        totals: Counter = Counter()
        for (label, _), count in self.labels.items():
            totals[label] += count
        return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))

    def label_per_shard(self) -> dict[str, dict[str, int]]:
        """Shard name -> label -> members."""
        out: dict[str, dict[str, int]] = {}
        for (label, fid), count in sorted(self.labels.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            out.setdefault(self.shard_names.get(fid, str(fid)), {})[label] = count
        return out

    def extension_rows(self) -> list[dict]:
        rows = []
        for e, name in enumerate(self.extensions):
            count = int(self.ext_count[e]) if e < len(self.ext_count) else 0
            if not count:
                continue
            entry = {"ext": name, "count": count, "bytes": int(self.ext_bytes[e]),
                     "min": int(self.sizes.minimum[e]), "max": int(self.sizes.maximum[e]),
                     "mean": round(int(self.ext_bytes[e]) / count, 1)}
            entry.update({f"p{q}": self.sizes.percentile(e, q) for q in PERCENTILES})
            rows.append(entry)
        return rows

    def shard_rows(self) -> list[dict]:
        out = []
        for fid in self.fids:
            per_ext = self.shard_ext[fid]
            out.append({
                "fid": fid, "shard": self.shard_names.get(fid, str(fid)), "rows": int(per_ext.sum()),
                "bytes": int(self.shard_bytes[fid]),
                "samples": None if self.shard_samples is None else int(self.shard_samples[fid]),
                "extensions": {self.extensions[e]: int(c) for e, c in enumerate(per_ext) if c},
            })
        return out

    def to_json(self) -> dict:
        return {
            "index": self.index, "fold": self.fold, "complete": self.complete, "phase": self.phase,
            "rows": self.n_rows, "samples": self.n_samples, "bytes": int(self.ext_bytes.sum()),
            "extensions": self.extension_rows(), "shards": self.shard_rows(),
            "missing_shards": list(self.missing_shards),
            "labels": None if self.label_source is None else {
                "source": self.label_source, "members": self.label_members, "missing": self.label_missing,
                "unreadable": self.label_unreadable, "counts": self.label_totals(),
                "per_shard": self.label_per_shard()},
            "image_dims": self.dims.to_json(),
        }


def _index_pass(ds: Dataset, stats: FoldStats, reporter: ProgressReporter, emit: Callable[[bool], None]) -> None:
    n_ext = len(stats.extensions)
    for start, part in iter_row_chunks(ds.index, reporter=reporter, cancel=reporter.cancel):
        extid = part["extid"].astype(np.int64)
        bad = np.flatnonzero(extid >= n_ext)
        if len(bad):
            ds.ext_of(start + int(bad[0]))  # raises the FormatError naming the row's offset
        fid = part["fid"].astype(np.int64)
        size = part["size"]
        weights = size.astype(np.float64)  # exact: a chunk's sums stay far below 2**53
        stats.ext_count += np.bincount(extid, minlength=n_ext)
        stats.ext_bytes += np.rint(np.bincount(extid, weights, minlength=n_ext)).astype(np.int64)
        stats.sizes.add(extid, size)
        n_fid = max(len(stats.shard_bytes), int(fid.max()) + 1)
        if n_fid * n_ext > MAX_CELLS:
            raise DatasetError(f"{ds.path}: {n_fid:,} shard ids × {n_ext:,} extensions are too many cells for the "
                               "shard × extension table")
        if n_fid > len(stats.shard_bytes):
            stats.shard_bytes = np.pad(stats.shard_bytes, (0, n_fid - len(stats.shard_bytes)))
            stats.shard_ext = np.pad(stats.shard_ext, ((0, n_fid - len(stats.shard_ext)), (0, 0)))
        stats.shard_bytes += np.rint(np.bincount(fid, weights, minlength=n_fid)).astype(np.int64)
        stats.shard_ext += np.bincount(fid * n_ext + extid, minlength=n_fid * n_ext).reshape(n_fid, n_ext)
        stats.rows_counted = start + len(part)
        emit(False)


def _samples_pass(ds: Dataset, stats: FoldStats, reporter: ProgressReporter) -> None:
    base = reporter.done

    def relay(p: Progress) -> None:
        reporter.update(base + (stats.n_rows * p.done // p.total if p.total else 0), message="grouping samples")

    groups = ds.compute_samples(progress=relay, cancel=reporter.cancel)
    per_shard = np.zeros(len(stats.shard_bytes), np.int64)
    fid = ds.rows["fid"]
    step = 1 << 22
    for lo in range(0, groups.n_samples, step):
        firsts = groups.first_rows[lo : lo + step]
        per_shard += np.bincount(fid[firsts], minlength=len(per_shard))[: len(per_shard)]
    stats.n_samples = groups.n_samples
    stats.shard_samples = per_shard
    reporter.update(base + stats.n_rows)


def _payload_pass(ds: Dataset, stats: FoldStats, source: LabelSource | None, reporter: ProgressReporter,
                  emit: Callable[[bool], None]) -> None:
    exts = stats.extensions
    is_label = np.array([source is not None and name == source.ext for name in exts] or [False])
    is_image = image_extension_mask(exts)
    wanted = np.flatnonzero(is_label | is_image)
    present = np.array([f in ds.shard_paths for f in range(len(stats.shard_bytes))], bool)
    stats.missing_shards = [ds.shard_name(f) for f in stats.fids if not present[f]]
    stats.payload_rows_total = int(stats.shard_ext[present][:, wanted].sum()) if len(wanted) else 0
    reporter.total = reporter.done + stats.payload_rows_total
    if not stats.payload_rows_total:
        return
    base = reporter.done
    extid_col = ds.rows["extid"]
    codes = format_codes(exts)
    for start, part in iter_row_chunks(ds.index, reporter=ProgressReporter(None, stats.n_rows), cancel=reporter.cancel):
        rows = np.flatnonzero(np.isin(part["extid"], wanted) & present[part["fid"]]) + start
        for run in iter_payload_runs(ds, rows, reporter.cancel):
            extids = extid_col[run.rows].astype(np.int64)
            _run_stats(stats, source, run, is_label[extids], is_image[extids], codes[extids])
            stats.payload_rows_done += len(run.rows)
            reporter.update(base + stats.payload_rows_done, current=stats.shard_names.get(run.fid, ""))
            emit(False)


def _run_stats(stats: FoldStats, source: LabelSource | None, run: PayloadRun, labels: np.ndarray,
               images: np.ndarray, codes: np.ndarray) -> None:
    """Labels and image sizes of one run of payloads, counted in batches."""
    buf = np.frombuffer(run.view, np.uint8)
    sizes = run.ends - run.starts
    # fault the run's first page of every payload in, in one ascending sweep, before the label and image
    # passes each sweep it: on a cold page cache one sweep keeps the kernel's read-ahead streaming
    if len(run.starts):
        buf[run.starts].max()
    if source is not None and labels.any():
        for label, count in source.count_labels(buf, run.starts[labels], sizes[labels]).items():
            _count_label(stats, label, run.fid, count)
    if images.any():
        stats.dims.add(image_sizes(buf, run.starts[images], sizes[images], codes[images]))
    del buf  # the run's view is released when the next run is taken


def _count_label(stats: FoldStats, label: str | None, fid: int, count: int) -> None:
    stats.label_members += count
    if label is None:
        stats.label_missing += count
        return
    if label is UNREADABLE:
        stats.label_unreadable += count
    key = (label, fid)
    if key not in stats.labels and len(stats.labels) >= MAX_LABELS:
        key = (OTHER_LABEL, fid)
    stats.labels[key] += count


def compute_stats(dataset: Dataset | str | os.PathLike[str], *, label_field: str | None = None,
                  progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                  on_partial: PartialCallback | None = None) -> FoldStats:
    """Statistics of a fold (a job): see the module notes. ``on_partial`` gets independent snapshots.

    ``label_field``: None for ``cls`` (else ``cls2``) members, an extension of the fold, or
    a JSON path such as ``label.class``. Rows of missing shards count in the index
    statistics and are listed in ``missing_shards``; their payloads are skipped.
    """
    if not isinstance(dataset, Dataset):
        with Dataset.open(dataset) as ds:
            return compute_stats(ds, label_field=label_field, progress=progress, cancel=cancel,
                                 on_partial=on_partial)
    ds = dataset
    exts = list(ds.extensions)
    if len(exts) * N_BINS > MAX_CELLS:  # e.g. names like frame.000123.jpg: every number is an extension
        raise DatasetError(f"{ds.path}: {len(exts):,} extensions are too many for per-extension size statistics "
                           f"(at most {MAX_CELLS // N_BINS:,})")
    source = resolve_label_source(exts, label_field, f"{ds.path}: ")
    names = {fid: ds.shard_name(fid) for fid in range(max(ds.shard_paths, default=-1) + 1)}
    stats = FoldStats(ds.path, ds.fold, exts, ds.n_rows, names, sizes=SizeHistograms(len(exts)),
                      ext_count=np.zeros(len(exts), np.int64), ext_bytes=np.zeros(len(exts), np.int64),
                      shard_ext=np.zeros((0, len(exts)), np.int64),
                      label_source=None if source is None else source.name)
    reporter = ProgressReporter(progress, 2 * ds.n_rows, "rows", cancel)
    last = [0.0]

    def emit(force: bool) -> None:
        now = time.perf_counter()
        if on_partial is not None and (force or now - last[0] >= PARTIAL_INTERVAL):
            last[0] = now
            on_partial(stats.snapshot())

    _index_pass(ds, stats, reporter, emit)
    for fid in stats.fids:
        stats.shard_names.setdefault(fid, ds.shard_name(fid))
    stats.phase = "samples"
    emit(True)
    _samples_pass(ds, stats, reporter)
    stats.phase = "payloads"
    emit(True)
    _payload_pass(ds, stats, source, reporter, emit)
    stats.phase = "done"
    reporter.finish()
    emit(True)
    return stats
