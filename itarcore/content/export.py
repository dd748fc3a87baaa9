"""Export a subset of a fold as new tar shards with a fresh index, or as a stem list / CSV.

Shards are named ``<fold>_<NNNN>.tar`` and filled sample by sample up to a target size
(a sample is never split; one bigger than the target gets a shard of its own). Samples
keep the order of their first member in the source, and each sample's members are
written together. Every member is copied byte for byte: its 512-byte header as it is
in the source shard (after checking its checksum), its payload and zero padding. Only a
member whose name does not fit the header (a GNU long name or pax path in the source)
gets a new header: a pax header carrying the full name, then the source header's fields.

The shards and the index (built by the project's indexer from the new shards, so it is
exactly what ``itarcore index`` writes for them) go to a temporary folder beside the
output, renamed into place at the end: a cancel or an error leaves nothing behind.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_write, temp_path_for
from ..dataset import Dataset
from ..errors import DatasetError, WriteError
from ..formats.tar_fields import BLOCK, checksums_ok
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .selection import Selection, select_rows

DEFAULT_SHARD_SIZE = 1 << 30
RECORD = 10240  # tar output is padded to whole records, as tar and Python's tarfile do
REGULAR = (b"0", b"\0", b"7")
BATCH = 4096  # members whose headers are checked at once


@dataclass
class ExportResult:
    output: Path
    index: Path | None  # None for a stem list or CSV
    shards: list[Path] = field(default_factory=list)
    n_samples: int = 0
    n_rows: int = 0
    bytes_written: int = 0


def samples_in_order(ds: Dataset, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows grouped by sample, start of each sample in it): samples by first row, members by row."""
    rows = np.unique(np.asarray(rows, np.int64))
    rec = ds.rows[rows]
    keys = np.empty(len(rows), [("keyhash", "<u8"), ("crashid", "<u4")])
    keys["keyhash"], keys["crashid"] = rec["keyhash"], rec["crashid"]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    first_row = rows[first][inverse.ravel()]  # rows ascend: a sample's first occurrence is its first row
    order = np.lexsort((rows, first_row))
    grouped = first_row[order]
    return rows[order], np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(rows) else np.zeros(0, int)


def _long_name_mask(ds: Dataset, rows: np.ndarray) -> np.ndarray:
    """Rows whose member name does not fit its tar header (a pax path or GNU long name in the source)."""
    rec = ds.rows[rows]
    mask = np.zeros(len(rows), bool)
    for fid in np.unique(rec["fid"]).tolist():
        names = ds.long_member_names(fid)
        if names:
            here = rec["fid"] == fid
            mask[here] = np.isin(rec["offset"][here], np.array(list(names), np.uint64))
    return mask


def _member_bytes(sizes: np.ndarray, long_name: np.ndarray) -> np.ndarray:
    padded = (sizes + BLOCK - 1) // BLOCK * BLOCK
    return BLOCK + padded + long_name * 3 * BLOCK  # a pax header takes about 3 blocks more


def plan_shards(sizes: np.ndarray, starts: np.ndarray, shard_size: int) -> list[tuple[int, int]]:
    """Row ranges [a, b) of the output order per shard: whole samples, up to ``shard_size`` bytes each."""
    if shard_size <= 0:
        raise WriteError(f"shard size must be positive, not {shard_size}")
    ends = np.r_[starts[1:], len(sizes)]
    cumulative = np.r_[0, np.cumsum(sizes)]
    plan, a = [], 0
    for s_start, s_end in zip(starts.tolist(), ends.tolist()):
        if s_start > a and cumulative[s_end] - cumulative[a] + 2 * BLOCK > shard_size:
            plan.append((a, s_start))
            a = s_start
    if len(sizes):
        plan.append((a, len(sizes)))
    return plan


def _pax_header(header: bytes, name: bytes) -> bytes:
    info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
    info.name = name.decode("utf-8", "surrogateescape")
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _write_shard(ds: Dataset, rows: np.ndarray, path: Path, reporter: ProgressReporter) -> int:
    rec = ds.rows[rows]
    written = 0
    with open(path, "wb", buffering=8 << 20) as out:
        for lo in range(0, len(rows), BATCH):
            part_rows, part = rows[lo : lo + BATCH], rec[lo : lo + BATCH]
            maps = [ds.shard_map(int(f)) for f in part["fid"]]
            offsets, sizes = part["offset"].tolist(), part["size"].tolist()
            for row, mapped, off, size in zip(part_rows.tolist(), maps, offsets, sizes):
                if off + BLOCK + size > len(mapped):
                    raise DatasetError(f"{ds.shard_paths[int(ds.rows[row]['fid'])]}: row {row} payload "
                                       f"[{off + BLOCK}, {off + BLOCK + size}) lies past the end of the shard")
            headers = np.frombuffer(b"".join(m[o : o + BLOCK] for m, o in zip(maps, offsets)), np.uint8)
            headers = headers.reshape(-1, BLOCK)
            bad = np.flatnonzero(~checksums_ok(headers) | ~np.isin(headers[:, 156], np.frombuffer(b"".join(REGULAR),
                                                                                                   np.uint8)))
            if len(bad):
                row = int(part_rows[bad[0]])
                raise DatasetError(f"{ds.shard_paths[int(part['fid'][bad[0]])]}: row {row}: no regular member's "
                                   f"tar header at offset {offsets[bad[0]]} (the index is stale: rebuild it)")
            for i, (row, mapped, off, size) in enumerate(zip(part_rows.tolist(), maps, offsets, sizes)):
                long_name = ds.long_member_names(int(part["fid"][i])).get(off)
                header = bytes(mapped[off : off + BLOCK])
                out.write(_pax_header(header, long_name) if long_name is not None else header)
                out.write(mapped[off + BLOCK : off + BLOCK + size])
                out.write(bytes(-size % BLOCK))
                written += size
                reporter.update(reporter.done + size)
        end = out.tell() + 2 * BLOCK
        out.write(bytes(2 * BLOCK + (-end % RECORD)))
        out.flush()
        os.fsync(out.fileno())
    return written


def _prepare_output(output: Path) -> Path:
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise WriteError(f"{output}: exists and is not an empty folder (choose a new output folder)")
    if not output.parent.is_dir():
        raise WriteError(f"{output.parent}: no such folder")
    tmp = temp_path_for(output)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def export_subset(dataset: Dataset | str | os.PathLike[str], selection: Selection | np.ndarray,
                  output_dir: str | os.PathLike[str], *, shard_size: int = DEFAULT_SHARD_SIZE,
                  fold: str | None = None, progress: ProgressCallback | None = None,
                  cancel: CancelToken | None = None) -> ExportResult:
    """Write the subset (a :class:`Selection` or explicit rows) as ``output_dir/<fold>_NNNN.tar`` + ``<fold>.taridx``.

    ``output_dir`` must not exist (or be an empty folder); it appears whole or not at all.
    """
    from ..jobs import index_fold

    if not isinstance(dataset, Dataset):
        with Dataset.open(dataset) as ds:
            return export_subset(ds, selection, output_dir, shard_size=shard_size, fold=fold, progress=progress,
                                 cancel=cancel)
    ds, output = dataset, Path(output_dir)
    fold = fold or ds.fold
    if not fold or any(c in fold for c in "/\\\0\n"):
        raise WriteError(f"{fold!r}: not a usable fold name")
    rows = select_rows(ds, selection, cancel=cancel) if isinstance(selection, Selection) else selection
    ordered, starts = samples_in_order(ds, rows)
    if not len(ordered):
        raise DatasetError(f"{ds.path}: the selection matches no member: nothing to export")
    sizes = ds.rows["size"][ordered].astype(np.int64)
    plan = plan_shards(_member_bytes(sizes, _long_name_mask(ds, ordered)), starts, shard_size)
    width = max(4, len(str(len(plan) - 1)))
    reporter = ProgressReporter(progress, int(sizes.sum()), "bytes", cancel)
    tmp = _prepare_output(output)
    try:
        result = ExportResult(output, output / f"{fold}.taridx", n_samples=len(starts), n_rows=len(ordered))
        paths = []
        for number, (a, b) in enumerate(plan):
            path = tmp / f"{fold}_{number:0{width}d}.tar"
            result.bytes_written += _write_shard(ds, ordered[a:b], path, reporter)
            paths.append(path)
        index_fold(paths, tmp / f"{fold}.taridx", fold=fold, cancel=cancel)
        if cancel is not None:
            cancel.raise_if_cancelled()
        if output.exists():
            output.rmdir()
        os.replace(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result.shards = [output / p.name for p in paths]
    reporter.finish()
    return result


def export_list(dataset: Dataset | str | os.PathLike[str], selection: Selection | np.ndarray,
                output: str | os.PathLike[str], *, as_csv: bool = False, progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> ExportResult:
    """Write the subset's stems (one a line, each sample once) or a CSV of its members, atomically."""
    if not isinstance(dataset, Dataset):
        with Dataset.open(dataset) as ds:
            return export_list(ds, selection, output, as_csv=as_csv, progress=progress, cancel=cancel)
    ds = dataset
    rows = select_rows(ds, selection, progress=progress, cancel=cancel) if isinstance(selection, Selection) \
        else selection
    ordered, starts = samples_in_order(ds, rows)
    text = io.StringIO()
    if as_csv:
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["stem", "ext", "shard", "row", "offset", "size"])
        rec = ds.rows[ordered]
        for row, stem, r in zip(ordered.tolist(), ds.stem_names(ordered), rec):
            writer.writerow([stem, ds.ext_of(row), ds.shard_name(int(r["fid"])), row, int(r["offset"]), int(r["size"])])
    else:
        for stem in ds.stem_names(ordered[starts]):
            text.write(stem + "\n")
    with atomic_write(output) as fh:
        fh.write(text.getvalue().encode("utf-8", "surrogateescape"))
    return ExportResult(Path(output), None, n_samples=len(starts), n_rows=len(ordered))
