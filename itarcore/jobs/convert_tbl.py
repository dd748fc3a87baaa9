"""tar shards -> one TBL file, streaming with constant memory.

Headers are scanned first (``itarcore.formats.tar.scan_tar``), which fixes the sample
count and so the layout; then payloads are read from the mapped tars in bounded batches
and streamed into :class:`~itarcore.formats.tbl_write.TblWriter`, which writes the index
and header last and renames the temp file into place. Cancel leaves no output behind.

Per-member work is numpy over whole batches (formats from the raw name fields, image
sizes from the mapped headers); payloads go from the mapping to the output as memoryview
slices, never as Python bytes, so memory stays at one batch of mapped pages. Between the
scan and the copy each shard keeps only its samples' offsets, sizes and formats (17 bytes
a sample; its names too when they become metadata), and the index goes to the file as it
is made.

Samples are the members with a TBL sample format (images, video). With
``metadata_from="json"`` each sample keeps its member name and stem, plus the contents of
its ``.json`` / ``.cls`` / ``.txt`` sidecars (same folder and stem), as a JSON metadata block.
"""
from __future__ import annotations

import json
import mmap
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import WriteError
from ..formats.tar import BLOCK, TarScan, decode_name, scan_tar
from ..formats.tar_names import check_text_names
from ..formats.tbl import FORMAT_CODES, FORMAT_NAMES
from ..formats.tbl_dims import image_dims
from ..formats.tbl_write import TblWriter, format_for_name, formats_for_name_fields
from ..progress import CancelToken, ProgressCallback, ProgressReporter

SIDECAR_EXTS = ("json", "cls", "txt")
_BATCH_BYTES = 8 << 20
_BATCH_SAMPLES = 8192


@dataclass
class ConvertResult:
    output: str
    version: int
    num_samples: int
    compressed: int = 0  # samples stored as LZ4 blocks
    skipped: int = 0  # members that are neither samples nor used sidecars
    bytes_in: int = 0  # sample payload bytes read
    bytes_out: int = 0  # size of the written file
    seconds: float = 0.0
    formats: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.num_samples / self.seconds if self.seconds > 0 else 0.0


def split_key(name: str) -> tuple[str, str, str]:
    """(key, stem, ext) of a member: key is folder + stem; stem is the base name before the first dot."""
    folder, _, base = name.rpartition("/")
    stem, _, ext = base.partition(".")
    return (f"{folder}/{stem}" if folder else stem), stem, ext.lower()


def _sidecar_value(ext: str, raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    if ext == "json":
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            return text  # kept as text rather than lost
    if ext == "cls":
        try:
            return int(text.strip())
        except ValueError:
            return text.strip()
    return text


def convert_tar_to_tbl(
    inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    output: str | os.PathLike[str],
    version: int = 2,
    lz4: bool = False,
    metadata_from: str | None = None,
    *,
    include_formats: Iterable[str] | None = None,
    durable: bool = True,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> ConvertResult:
    """Convert tar shards to one TBL; ``include_formats`` (e.g. {"JPEG"}) keeps only those sample formats.

    ``durable=False`` leaves the output in the page cache rather than waiting for the disk
    (see :class:`~itarcore.formats.tbl_write.TblWriter`).
    """
    started = time.perf_counter()
    paths = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(p) for p in inputs]
    output = os.fspath(output)
    if not paths:
        raise WriteError("convert: no input tar files given")
    if metadata_from not in (None, "json"):
        raise WriteError(f"convert: unknown metadata source {metadata_from!r} (only 'json')")
    if metadata_from and version == 1:
        raise WriteError("convert: TBL v1 has no metadata section; use version 2 for --metadata-from")
    wanted = None
    if include_formats is not None:
        wanted = set()
        for name in include_formats:
            if name.upper() not in FORMAT_CODES:
                raise WriteError(f"convert: unknown sample format {name!r}; known: {', '.join(FORMAT_NAMES)}")
            wanted.add(FORMAT_CODES[name.upper()])
    for p in paths:
        if os.path.abspath(p) == os.path.abspath(output):
            raise WriteError(f"convert: output {output} is also an input")

    plans = []
    for p in paths:
        if cancel is not None:
            cancel.raise_if_cancelled()
        plans.append(_plan(p, scan_tar(p, cancel=cancel), wanted, keep_scan=metadata_from is not None))
    total = sum(plan.n_samples for plan in plans)
    result = ConvertResult(output, version, total)
    reporter = ProgressReporter(progress, total, "samples", cancel)
    writer = TblWriter(output, total, version=version, lz4=lz4, durable=durable)
    try:
        for plan in plans:
            used_sidecars = _convert_one(writer, plan, reporter, result)
            result.skipped += plan.n_members - plan.n_samples - used_sidecars
        if cancel is not None:  # the last chance to stop before the output appears
            cancel.raise_if_cancelled()
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    reporter.finish()
    result.compressed = writer.compressed
    result.bytes_out = os.path.getsize(output)
    result.seconds = time.perf_counter() - started
    result.formats = {FORMAT_NAMES[k]: int(c) for k, c in enumerate(writer.format_counts[: len(FORMAT_NAMES)]) if c}
    return result


@dataclass
class _ShardPlan:
    """What the copy needs of one scanned shard: its samples' payload offsets, sizes and formats."""

    path: str
    n_members: int
    starts: np.ndarray  # int64 payload offsets of the samples, in archive order
    lengths: np.ndarray  # int64 payload sizes
    codes: np.ndarray  # uint8 TBL format codes
    rows: np.ndarray | None = None  # the samples' member rows and the scan: kept only when names become metadata
    scan: TarScan | None = None

    @property
    def n_samples(self) -> int:
        return len(self.starts)


def _plan(path: str, scan: TarScan, wanted: set[int] | None, keep_scan: bool) -> _ShardPlan:
    if keep_scan:  # names become JSON text: a name that is not UTF-8 is refused at its header, before any output
        check_text_names(scan)
    codes = sample_formats(scan)
    keep = codes != 0 if wanted is None else np.isin(codes, list(wanted))
    if keep.all():  # the usual shard: every member is a sample, so no gathers
        rows = None
        starts, lengths = scan.header_offsets + BLOCK, scan.sizes
    else:
        rows = np.flatnonzero(keep)
        starts, lengths, codes = scan.header_offsets[rows] + BLOCK, scan.sizes[rows], codes[rows]
    if not keep_scan:
        return _ShardPlan(path, scan.n_members, starts, lengths.astype(np.int64, copy=False), codes)
    rows = np.arange(len(codes)) if rows is None else rows
    return _ShardPlan(path, scan.n_members, starts, lengths.astype(np.int64, copy=False), codes, rows, scan)


def sample_formats(scan: TarScan) -> np.ndarray:
    """TBL format code of every member (0 = not a sample), as format_for_name of its name."""
    codes = formats_for_name_fields(scan.name_fields)
    for row, raw in scan.full_names.items():  # long names: only these rows need decoding
        codes[row] = format_for_name(decode_name(raw))
    return codes


def _drop_pages(mm: mmap.mmap, start: int, end: int) -> None:
    """Unmap pages already copied, so resident memory stays at one batch (the page cache keeps them)."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    start -= start % mmap.PAGESIZE
    end -= end % mmap.PAGESIZE
    if end > start:
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)


def _convert_one(writer: TblWriter, plan: _ShardPlan, reporter: ProgressReporter, result: ConvertResult) -> int:
    if not plan.n_samples:
        return 0
    with open(plan.path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        names = plan.scan.names if plan.scan is not None else None
        sidecars, used = _read_sidecars(mm, plan.scan, names) if names is not None else ({}, 0)
        _copy_samples(writer, mm, plan, names, sidecars, reporter, result)
    finally:
        try:
            mm.close()
        except BufferError:  # an error's traceback still holds views of the map; GC closes it
            pass
    return used


def _read_sidecars(mm: mmap.mmap, scan: TarScan, names: list[str]) -> tuple[dict[str, dict[str, Any]], int]:
    """Sidecar contents by sample key, and how many members were used as sidecars."""
    sidecars: dict[str, dict[str, Any]] = {}
    used = 0
    offsets, sizes = scan.data_offsets.tolist(), scan.sizes.tolist()
    for row, name in enumerate(names):
        key, _, ext = split_key(name)
        if ext in SIDECAR_EXTS:  # the whole suffix after the stem, so never a sample's format
            sidecars.setdefault(key, {})[ext] = _sidecar_value(ext, mm[offsets[row] : offsets[row] + sizes[row]])
            used += 1
    return sidecars, used


def _metadata(names: list[str], batch: np.ndarray, shard: str, sidecars: dict[str, dict[str, Any]],
              ) -> list[list[tuple[str, bytes]]]:
    meta = []
    for row in batch.tolist():
        key, stem, _ = split_key(names[row])
        record = {"name": names[row], "stem": stem, "key": key, "shard": shard}
        record.update(sidecars.get(key, {}))
        meta.append([("json", json.dumps(record, ensure_ascii=False).encode())])
    return meta


def _batches(sizes: np.ndarray) -> Iterator[slice]:
    """Consecutive slices bounded in count and bytes, so memory stays constant for any dataset size."""
    cum = np.cumsum(sizes)
    start = 0
    while start < len(sizes):
        budget = (cum[start - 1] if start else 0) + _BATCH_BYTES
        stop = max(start + 1, min(int(np.searchsorted(cum, budget, side="right")), start + _BATCH_SAMPLES))
        yield slice(start, stop)
        start = stop


def _copy_samples(writer: TblWriter, mm: mmap.mmap, plan: _ShardPlan, names: list[str] | None,
                  sidecars: dict[str, dict[str, Any]], reporter: ProgressReporter, result: ConvertResult) -> None:
    shard = os.path.basename(plan.path)
    whole, buf = memoryview(mm), np.frombuffer(mm, np.uint8)  # released on return, before the map closes
    written_to = int(plan.starts[0])
    for part in _batches(plan.lengths):
        o, s, codes = plan.starts[part], plan.lengths[part], plan.codes[part]
        views = [whole[a:b] for a, b in zip(o.tolist(), (o + s).tolist())]
        widths = heights = None
        if writer.version == 2:
            widths, heights = image_dims(buf, o, s, codes)
        meta = _metadata(names, plan.rows[part], shard, sidecars) if names is not None else None
        writer.add_batch(views, codes, widths, heights, meta)  # returns when the batch before is written
        del views
        _drop_pages(mm, written_to, int(o[0]))
        written_to = int(o[0])
        result.bytes_in += int(s.sum())
        current = names[int(plan.rows[part][-1])] if names is not None else shard
        reporter.update(reporter.done + len(s), current=current)
    writer.wait()  # the map closes after this
