"""TARIDX as a Document: header, rows, extension and crash tables, payloads from the shards."""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..formats.taridx import FLAG_CONTIGUOUS, HEADER_SIZE, RECORD_SIZE, TaridxHeader
from ..progress import CancelToken, ProgressCallback
from ..rowpass import iter_row_chunks
from .base import Column, Document, HeaderField, Payload, Table, bytes_text

# Per-extension and per-crash-stem counts need a pass over every row; up to this many
# rows they are computed at open, beyond it on first use (the GUI asks from a worker).
EAGER_STATS_ROWS = 2_000_000
_LARGEST_EXACT_INT64 = float(2**63 - 1024)  # the largest float64 below 2**63: casts to int64 exactly


def describe_flags(flags: int) -> str:
    words = ["rows contiguous by stem" if flags & FLAG_CONTIGUOUS else "rows not contiguous by stem"]
    if flags & ~FLAG_CONTIGUOUS:
        words.append(f"reserved bits set: 0x{flags & ~FLAG_CONTIGUOUS:02x}")
    return "; ".join(words)


def header_fields(header: TaridxHeader, ext_bytes: int, crash_bytes: int) -> list[HeaderField]:
    fields = []
    for name, typ, offset, size in TaridxHeader.field_layout():
        value = getattr(header, name)
        display = ""
        if name == "magic":
            display = bytes_text(value.rstrip(b"\0"))
        elif name == "flags":
            display = f"0x{value:02x} — {describe_flags(value)}"
        elif name == "reserved":
            display = value.hex(" ")
        elif name in ("major", "minor"):
            display = f"{value}" + (" (newer minor version: read as 1.0)" if name == "minor" and value > 0 else "")
        fields.append(HeaderField(name, typ, value, offset, size, display, "Header"))
    fields.append(HeaderField("extension block", "utf-8", ext_bytes, HEADER_SIZE, ext_bytes,
                              f"{ext_bytes} bytes, {header.n_ext} names joined by \\n", "Blocks"))
    fields.append(HeaderField("crash block", "utf-8", crash_bytes, header.off_crash, crash_bytes,
                              f"{crash_bytes} bytes, {header.n_crash} stems joined by \\n", "Blocks"))
    fields.append(HeaderField("rows", "32-byte records", header.n_rows, header.off_arr,
                              header.n_rows * RECORD_SIZE, f"{header.n_rows:,} records", "Blocks"))
    return fields


class _Counts:
    """Rows and bytes per extension and rows per crash id: one chunked pass over the rows, on demand.

    The pass releases the pages it read (``itarcore.rowpass``), checks cancel between
    chunks and reports progress, so a worker can run it on a 32 GB index.
    """

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self._ext: tuple[np.ndarray, np.ndarray] | None = None
        self._crash: np.ndarray | None = None

    def compute(self, progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> None:
        if self._ext is not None and self._crash is not None:
            return
        n_ext, n_crash = len(self.ds.extensions), len(self.ds.index.crash_stems) + 1
        rows = np.zeros(n_ext, np.int64)
        size = np.zeros(n_ext, np.float64)
        crash = np.zeros(n_crash, np.int64)
        for _, part in iter_row_chunks(self.ds.index, progress=progress, cancel=cancel):
            extid = part["extid"]
            rows += np.bincount(extid, minlength=n_ext)[:n_ext]
            size += np.bincount(extid, weights=part["size"].astype(np.float64), minlength=n_ext)[:n_ext]
            # ids past the table (rows not checked yet on a big index) count in one spare bin, not in
            # a bincount as long as the largest id read from the file
            crashid = np.minimum(part["crashid"], n_crash)
            crash += np.bincount(crashid, minlength=n_crash + 1)[:n_crash]
        # sizes are u64 from the file: a damaged row's sum may not fit int64, so clip before the cast
        self._ext = rows, np.minimum(size, _LARGEST_EXACT_INT64).astype(np.int64)
        self._crash = crash

    def ext(self) -> tuple[np.ndarray, np.ndarray]:
        self.compute()
        assert self._ext is not None
        return self._ext

    def crash(self) -> np.ndarray:
        self.compute()
        assert self._crash is not None
        return self._crash


def _lazy(fn):
    return lambda rows: fn()[np.asarray(rows)]


def open_document(path: str, **options: object) -> Document:
    ds = Dataset.open(path, storage_options=options.get("storage_options"),  # type: ignore[arg-type]
                      source=options.get("source"))  # type: ignore[arg-type]
    index, header = ds.index, ds.index.header
    n = ds.n_rows
    eager = n <= EAGER_STATS_ROWS and not index.is_remote  # a remote index is not read whole to open it
    ext_bytes = header.off_crash - HEADER_SIZE
    crash_bytes = header.off_arr - header.off_crash
    warnings: list[str] = []
    known = ds.shard_paths
    if not known:
        warnings.append(f"No shards named {ds.fold}_*.tar beside the index: rows browse, previews are off.")
    elif eager and ds.missing_shards:
        missing = ds.missing_shards
        warnings.append(f"{len(missing)} shard(s) missing ({', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}): "
                        "their rows browse, previews are off.")
    if index.is_remote:
        warnings.append("Remote index: rows are fetched as they are shown; row ids are checked by Verify.")
    elif not index.rows_checked:
        warnings.append("Large index: row ids are checked in the background by Verify, not at open.")

    max_fid = max([*known, *(ds.referenced_fids().tolist() if eager else [])], default=-1)
    shard_labels = [f"{fid}: {ds.shard_name(fid)}" + ("" if fid in known else " (missing)")
                    for fid in range(max_fid + 1)]
    ext_labels = [e if e else "(none)" for e in ds.extensions]
    rows = ds.rows
    # a remote index's rows are fetched on demand: its columns are resolvers of the rows asked for
    column = ((lambda name: (lambda r: rows[name][np.asarray(r, dtype=np.int64)])) if index.is_remote
              else (lambda name: rows[name]))
    counts = _Counts(ds)
    if eager:
        counts.compute()

    def payload(row: int) -> Payload:
        data = ds.read_payload(row)
        name = ds.member_names([row])[0].rsplit("/", 1)[-1]
        return Payload(data, ds.ext_of(row), name or f"row{row}", {"row": row})

    # no "Row" column: the grid's row header already shows each row's index in the file
    row_table = Table(
        "rows", n,
        [
            Column("Shard", column("fid"), "enum", shard_labels, "fid and shard file"),
            Column("Offset", column("offset"), "int", tooltip="offset of the member's 512-byte tar header"),
            Column("Size", column("size"), "size", tooltip="payload bytes"),
            Column("Ext", column("extid"), "enum", ext_labels, "extension"),
            Column("Crash id", column("crashid"), "int", tooltip="0 = canonical stem; ≥1 = crash table entry"),
            Column("Keyhash", column("keyhash"), "hex", tooltip="xxh64 of the stem"),
            Column("Stem", ds.stem_names, "text", tooltip="read from the tar header, for visible rows only"),
        ],
        payload=payload,
        payload_available=lambda row: ds.has_shard(int(rows["fid"][row])),
        payload_in_ram=None if index.is_remote else ds.payload_in_ram,
        byte_range=lambda row: (header.off_arr + row * RECORD_SIZE, RECORD_SIZE),
        lookup=lambda stem: ds.lookup_stem(stem),
        lookup_label="stem",
        description="one row per tar member",
    )
    ext_ids = np.arange(len(ds.extensions))
    ext_offsets = np.cumsum([0] + [len(e.encode()) + 1 for e in ds.extensions])
    ext_table = Table(
        "extensions", len(ds.extensions),
        [
            Column("Id", ext_ids, "int"),
            Column("Name", np.array(ext_labels, dtype=object), "text"),
            Column("Rows", _lazy(lambda: counts.ext()[0]), "int"),
            Column("Bytes", _lazy(lambda: counts.ext()[1]), "size"),
        ],
        byte_range=lambda i: (HEADER_SIZE + int(ext_offsets[i]), len(ds.extensions[i].encode())),
        drill=lambda i: ("rows", np.flatnonzero(rows["extid"] == i)),
        description="click an extension to filter the rows",
    )
    crash_stems = index.crash_stems
    crash_offsets = np.cumsum([0] + [len(s.encode()) + 1 for s in crash_stems])
    crash_table = Table(
        "crash stems", len(crash_stems),
        [
            Column("Crash id", np.arange(1, len(crash_stems) + 1), "int"),
            Column("Stem", np.array(crash_stems, dtype=object), "text"),
            Column("Rows", _lazy(lambda: counts.crash()[1:]), "int"),
        ],
        byte_range=lambda i: (header.off_crash + int(crash_offsets[i]), len(crash_stems[i].encode())),
        drill=lambda i: ("rows", ds.lookup_stem(crash_stems[i])),
        description="stems whose xxh64 equals an earlier, different stem's",
    )
    doc = Document(
        path=ds.path,
        format="taridx",
        title=f"TARIDX {header.major}.{header.minor}",
        header=header_fields(header, ext_bytes, crash_bytes),
        tables=[row_table, ext_table, crash_table],
        warnings=warnings,
        summary={"rows": n, "stems": header.n_stems, "shards": len(known), "extensions": header.n_ext,
                 "contiguous": header.contiguous},
        source=ds,
        closers=[ds.close],
    )
    if index.is_remote:
        doc.byte_source = index.source
    return doc
