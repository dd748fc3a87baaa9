"""tar shards -> one TBL file, streaming with constant memory.

Headers are scanned first (``itarcore.formats.tar.scan_tar``), which fixes the sample
count and so the layout; then payloads are read from the mapped tars in bounded batches
and streamed into :class:`~itarcore.formats.tbl_write.TblWriter`, which writes the index
and header last and renames the temp file into place. Cancel leaves no output behind.

Samples are the members with a TBL sample format (images, video). With
``metadata_from="json"`` each sample keeps its member name and stem, plus the contents of
its ``.json`` / ``.cls`` / ``.txt`` sidecars (same folder and stem), as a JSON metadata block.
"""
from __future__ import annotations

import json
import mmap
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import WriteError
from ..formats.tar import scan_tar
from ..formats.tbl import FORMAT_CODES, FORMAT_NAMES
from ..formats.tbl_dims import image_dims
from ..formats.tbl_write import TblWriter, format_for_name
from ..progress import CancelToken, ProgressCallback, ProgressReporter

SIDECAR_EXTS = ("json", "cls", "txt")
_BATCH_BYTES = 16 << 20
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
        except ValueError:
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
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> ConvertResult:
    """Convert tar shards to one TBL; ``include_formats`` (e.g. {"JPEG"}) keeps only those sample formats."""
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

    scans = []
    for p in paths:
        if cancel is not None:
            cancel.raise_if_cancelled()
        scan = scan_tar(p, cancel=cancel)
        names = scan.names
        codes = np.fromiter((format_for_name(n) for n in names), dtype=np.uint8, count=len(names))
        keep = codes != 0 if wanted is None else np.isin(codes, list(wanted))
        scans.append((p, scan, names, codes, np.flatnonzero(keep)))
    total = sum(len(rows) for *_, rows in scans)
    result = ConvertResult(output, version, total)
    reporter = ProgressReporter(progress, total, "samples", cancel)
    writer = TblWriter(output, total, version=version, lz4=lz4)
    try:
        for path, scan, names, codes, rows in scans:
            used_sidecars = _convert_one(writer, path, scan, names, codes, rows, metadata_from, reporter, result)
            result.skipped += scan.n_members - len(rows) - used_sidecars
        if cancel is not None:  # the last chance to stop before the output appears
            cancel.raise_if_cancelled()
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    reporter.finish()
    result.compressed = int(np.count_nonzero(writer.entries["flags"] & 1)) if version == 2 else 0
    result.bytes_out = os.path.getsize(output)
    result.seconds = time.perf_counter() - started
    kinds, counts = np.unique(writer.entries["format"], return_counts=True)
    result.formats = {FORMAT_NAMES[int(k)]: int(c) for k, c in zip(kinds, counts)}
    return result


def _drop_pages(mm: mmap.mmap, start: int, end: int) -> None:
    """Unmap pages already copied, so resident memory stays at one batch (the page cache keeps them)."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    start -= start % mmap.PAGESIZE
    end -= end % mmap.PAGESIZE
    if end > start:
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)


def _convert_one(writer: TblWriter, path: str, scan: Any, names: list[str], codes: np.ndarray, rows: np.ndarray,
                 metadata_from: str | None, reporter: ProgressReporter, result: ConvertResult) -> int:
    if not len(rows):
        return 0
    offsets = scan.data_offsets.astype(np.int64)
    sizes = scan.sizes.astype(np.int64)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sidecars: dict[str, dict[str, Any]] = {}
        used = 0
        if metadata_from:
            for row, name in enumerate(names):
                key, _, ext = split_key(name)
                if ext in SIDECAR_EXTS and codes[row] == 0:
                    start = int(offsets[row])
                    sidecars.setdefault(key, {})[ext] = _sidecar_value(ext, mm[start : start + int(sizes[row])])
                    used += 1
        shard = os.path.basename(path)
        # batches bounded in count and bytes keep memory constant for any dataset size
        cum = np.cumsum(sizes[rows])
        start_i = 0
        while start_i < len(rows):
            budget = (cum[start_i - 1] if start_i else 0) + _BATCH_BYTES
            stop_i = max(start_i + 1, min(int(np.searchsorted(cum, budget, side="right")),
                                          start_i + _BATCH_SAMPLES))
            batch = rows[start_i:stop_i]
            datas = [mm[o : o + s] for o, s in zip(offsets[batch].tolist(), sizes[batch].tolist())]
            widths = heights = None
            if writer.version == 2:
                widths, heights = image_dims(datas, codes[batch])
            meta = None
            if metadata_from:
                meta = []
                for row in batch.tolist():
                    key, stem, _ = split_key(names[row])
                    record = {"name": names[row], "stem": stem, "key": key, "shard": shard}
                    record.update(sidecars.get(key, {}))
                    meta.append([("json", json.dumps(record, ensure_ascii=False).encode())])
            writer.add_batch(datas, codes[batch], widths, heights, meta)
            del datas
            _drop_pages(mm, int(offsets[batch[0]]), int(offsets[batch[-1]] + sizes[batch[-1]]))
            result.bytes_in += int(sizes[batch].sum())
            reporter.update(reporter.done + len(batch), current=names[int(batch[-1])])
            start_i = stop_i
    return used
