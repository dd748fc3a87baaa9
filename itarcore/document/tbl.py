"""A TBL file as a Document: header fields, the samples index, and v2 metadata blocks."""
from __future__ import annotations

import json
import os
from collections.abc import Callable

import numpy as np

from ..errors import ChecksumError
from ..formats.tbl import (
    FORMAT_EXTS,
    FORMAT_NAMES,
    META_BLOCK_HEADER_SIZE,
    META_TYPES,
    V1_HEADER_SIZE,
    V2_HEADER_SIZE,
    TblFile,
    entry_flag_names,
    file_flag_names,
    format_name,
)
from .base import Column, Document, HeaderField, Payload, Table, bytes_text

# CRC status codes of the samples table; the panel updates them in place after a verify
CRC_UNCHECKED, CRC_OK, CRC_MISMATCH, CRC_NONE = 0, 1, 2, 3
CRC_LABELS = ["unchecked", "ok", "MISMATCH", "none"]
CHEAP_VERIFY_BYTES = 64 << 20  # verify at open when the decoded samples are this small
_META_TYPE_CODES = sorted(META_TYPES)


def open_document(path: str | os.PathLike[str], **options: object) -> Document:
    """Open ``path``; a bad v2 header CRC opens anyway with a warning unless ``strict=True``."""
    path = os.fspath(path)
    warnings: list[str] = []
    try:
        tbl = TblFile(path)
    except ChecksumError as exc:
        if options.get("strict"):
            raise
        tbl = TblFile(path, check_header_crc=False)
        warnings.append(str(exc))
    try:
        crc_status = _initial_crc_status(tbl, bool(options.get("verify", True)))
        tables = [samples_table(tbl, crc_status)]
        if tbl.version == 2:
            tables.append(metadata_table(tbl))
    except BaseException:
        tbl.close()
        raise
    bad = int(np.count_nonzero(crc_status == CRC_MISMATCH))
    if bad:
        warnings.append(f"{bad} sample(s) fail their CRC-16 check")
    compressed = int(np.count_nonzero(tbl.entries["flags"] & 1)) if tbl.version == 2 else 0
    doc = Document(
        path=path,
        format="tbl",
        title=f"TBL v{tbl.version} ({tbl.num_samples:,} samples"
              + (f", {compressed:,} LZ4" if compressed else "") + (f", {len(tbl.metadata):,} metadata" if
                                                                   tbl.metadata else "") + ")",
        header=header_fields(tbl),
        tables=tables,
        warnings=warnings,
        summary={"version": tbl.version, "samples": tbl.num_samples, "compressed": compressed,
                 "metadata blocks": len(tbl.metadata)},
        source=tbl,
    )
    doc.closers.append(tbl.close)
    return doc


def _initial_crc_status(tbl: TblFile, verify: bool) -> np.ndarray:
    if not tbl.has_checksums:
        return np.full(tbl.num_samples, CRC_NONE, dtype=np.int64)
    status = np.full(tbl.num_samples, CRC_UNCHECKED, dtype=np.int64)
    if verify and int(tbl.entries["uncompressed_size"].sum(dtype=np.int64)) <= CHEAP_VERIFY_BYTES:
        apply_verify_report(status, tbl.verify())
    return status


def apply_verify_report(status: np.ndarray, report: object) -> None:
    """Mark every checked sample ok, then the bad ones as mismatches."""
    status[: getattr(report, "checked", 0)] = CRC_OK
    status[list(getattr(report, "bad_samples", []))] = CRC_MISMATCH


def header_fields(tbl: TblFile) -> list[HeaderField]:
    h = tbl.header_bytes
    g = "Header"
    fields = [
        HeaderField("magic", "S4", h[:4], 0, 4, bytes_text(h[:4]), g),
        HeaderField("version", "u32", tbl.version, 4, 4, str(tbl.version), g),
        HeaderField("num_samples", "u64", tbl.num_samples, 8, 8, f"{tbl.num_samples:,}", g),
    ]
    if tbl.version == 1:
        fields.append(HeaderField("header_size", "u32", tbl.header_size, 16, 4,
                                  f"{tbl.header_size:,} (= 32 + 16 × {tbl.num_samples:,})", g))
        fields.append(HeaderField("reserved", "u8[12]", h[20:32], 20, 12, h[20:32].hex(" "), g))
        fields.append(HeaderField("index", "entry[N]", tbl.num_samples, V1_HEADER_SIZE, 16 * tbl.num_samples,
                                  f"{tbl.num_samples:,} × 16-byte entries", "Index"))
        return fields
    crc_ok = tbl.header_crc_stored == tbl.header_crc_computed
    fields += [
        HeaderField("header_size", "u32", tbl.header_size, 16, 4,
                    f"{tbl.header_size:,} (= 64 + 24 × {tbl.num_samples:,})", g),
        HeaderField("padding", "u8[4]", h[20:24], 20, 4, h[20:24].hex(" "), g),
        HeaderField("metadata_offset", "u64", tbl.metadata_offset, 24, 8, f"{tbl.metadata_offset:,}", g),
        HeaderField("metadata_size", "u64", tbl.metadata_size, 32, 8,
                    f"{tbl.metadata_size:,} ({len(tbl.metadata):,} blocks)", g),
        HeaderField("flags", "u32", tbl.flags, 40, 4,
                    f"0x{tbl.flags:x} ({', '.join(file_flag_names(tbl.flags)) or 'none'})", g),
        HeaderField("header_crc32", "u32", tbl.header_crc_stored, 44, 4,
                    f"0x{tbl.header_crc_stored:08x} " + ("(ok)" if crc_ok else
                                                        f"(MISMATCH: computed 0x{tbl.header_crc_computed:08x})"), g),
        HeaderField("reserved", "u8[16]", h[48:64], 48, 16, h[48:64].hex(" "), g),
        HeaderField("index", "entry[N]", tbl.num_samples, V2_HEADER_SIZE, 24 * tbl.num_samples,
                    f"{tbl.num_samples:,} × 24-byte entries", "Index"),
    ]
    return fields


def _entry_flag_labels() -> list[str]:
    return [", ".join(entry_flag_names(code)) or "-" for code in range(256)]


def samples_table(tbl: TblFile, crc_status: np.ndarray) -> Table:
    e = tbl.entries
    n = tbl.num_samples
    columns = [
        Column("sample", np.arange(n, dtype=np.int64)),
        Column("offset", e["offset"], "size", tooltip="absolute file offset of the stored bytes"),
        Column("stored size", e["size"], "size"),
    ]
    if tbl.version == 2:
        columns.append(Column("uncompressed size", e["uncompressed_size"], "size"))
    columns.append(Column("format", e["format"], "enum",
                          labels=[format_name(c) for c in range(256)]))
    if tbl.version == 2:
        columns += [
            Column("width", e["width"], "int"),
            Column("height", e["height"], "int"),
            Column("flags", e["flags"], "enum", labels=_entry_flag_labels()),
            Column("crc16", np.array([f"0x{c:04x}" for c in e["crc16"].tolist()], dtype=object), "text",
                   tooltip="stored CRC-16/MODBUS of the uncompressed bytes"),
        ]
    columns.append(Column("CRC status", crc_status, "enum", labels=CRC_LABELS,
                          tooltip="'unchecked' until verified (Verify all checksums in the TBL panel)"))

    def payload(row: int) -> Payload:
        data = tbl.read_sample(row)
        code = int(e["format"][row])
        ext = FORMAT_EXTS[code] if code < len(FORMAT_EXTS) else "bin"
        meta: dict[str, object] = {"sample": row, "format": format_name(code)}
        if tbl.version == 2:
            w, h = int(e["width"][row]), int(e["height"][row])
            meta.update(width=w, height=h)
            if ext == "raw_u8" and w and h and len(data) % (w * h) == 0:
                meta["channels"] = len(data) // (w * h)
        return Payload(data, ext, f"sample_{row:06d}.{ext}", meta)

    return Table(
        name="samples",
        n_rows=n,
        columns=columns,
        payload=payload,
        payload_available=lambda row: True,
        byte_range=lambda row: (int(e["offset"][row]), int(e["size"][row])),
        lookup=_name_lookup(tbl) if tbl.metadata else None,
        lookup_label="name or stem (from metadata)",
        drill=(lambda row: ("metadata", _blocks_of(tbl, row))) if tbl.metadata else None,
        description="the index: one row per sample, in file order",
    )


def _blocks_of(tbl: TblFile, sample: int) -> np.ndarray:
    rows = [k for k, b in enumerate(tbl.metadata) if b.sample_index == sample]
    return np.array(rows, dtype=np.int64)


def _name_lookup(tbl: TblFile) -> Callable[[str], np.ndarray]:
    """Exact search over the 'name', 'stem' and 'key' fields of JSON metadata (built on first use)."""
    table: dict[str, list[int]] = {}

    def lookup(text: str) -> np.ndarray:
        if not table:
            for block in tbl.metadata:
                if META_TYPES.get(block.type) != "json":
                    continue
                try:
                    value = json.loads(tbl.metadata_bytes(block))
                except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
                    continue
                if isinstance(value, dict):
                    for k in ("name", "stem", "key"):
                        if isinstance(value.get(k), str):
                            table.setdefault(value[k], []).append(block.sample_index)
        return np.array(sorted(set(table.get(text, []))), dtype=np.int64)

    return lookup


def metadata_table(tbl: TblFile) -> Table:
    blocks = tbl.metadata

    def payload(row: int) -> Payload:
        b = blocks[row]
        if META_TYPES.get(b.type) in ("json", "msgpack"):
            value = tbl.decode_metadata(b)
            if not isinstance(value, bytes):
                text = json.dumps(value, ensure_ascii=False, indent=1, default=repr)
                return Payload(text.encode(), "json", f"metadata_{b.sample_index}.json", {"type": b.type_name})
        return Payload(tbl.metadata_bytes(b), "bin", f"metadata_{b.sample_index}.bin", {"type": b.type_name})

    type_labels = [META_TYPES[c] for c in _META_TYPE_CODES] + ["other"]
    type_codes = np.array([_META_TYPE_CODES.index(b.type) if b.type in META_TYPES else len(_META_TYPE_CODES)
                           for b in blocks], dtype=np.int64)
    return Table(
        name="metadata",
        n_rows=len(blocks),
        columns=[
            Column("sample", np.array([b.sample_index for b in blocks], dtype=np.int64)),
            Column("type", type_codes, "enum", labels=type_labels),
            Column("offset", np.array([b.offset for b in blocks], dtype=np.int64), "size",
                   tooltip="absolute offset of the block's 16-byte header"),
            Column("length", np.array([b.length for b in blocks], dtype=np.int64), "size"),
        ],
        payload=payload,
        payload_available=lambda row: True,
        byte_range=lambda row: (blocks[row].offset, META_BLOCK_HEADER_SIZE + blocks[row].length),
        drill=lambda row: ("samples", np.array([blocks[row].sample_index], dtype=np.int64)),
        description="v2 metadata blocks (after the sample data)",
    )


__all__ = ["CRC_LABELS", "FORMAT_NAMES", "apply_verify_report", "open_document"]
