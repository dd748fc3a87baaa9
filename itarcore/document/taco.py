"""A TACO archive as a Document: the header fields, its entries and the ZIP members."""
from __future__ import annotations

import os
import posixpath
import zlib

import numpy as np

from ..errors import FormatError
from ..formats.taco import (
    BAD_STATUSES,
    ENTRIES_OFFSET,
    LFH_FIELDS,
    MAX_ENTRIES,
    PAYLOAD_OFFSET,
    STATUS_EMPTY,
    STATUS_INSIDE,
    STATUS_MEMBER,
    STATUS_NOT_DATA,
    STATUS_PAST_END,
    TacoArchive,
    read_taco,
)
from ..formats.zipfmt import ZipMember
from .base import Column, Document, HeaderField, Payload, Table, bytes_text

PAYLOAD_PREVIEW_LIMIT = 256 << 20  # larger members are not loaded for preview
ENTRY_STATUS_LABELS = [STATUS_MEMBER, STATUS_INSIDE, STATUS_EMPTY, STATUS_NOT_DATA, STATUS_PAST_END]

_LFH_DISPLAY = {
    "signature": lambda v: f"0x{v:08x} (PK\\x03\\x04)",
    "general purpose flags": lambda v: f"0x{v:04x}" + (" (UTF-8 names)" if v & 0x800 else ""),
    "compression method": lambda v: f"{v} ({'STORE' if v == 0 else 'not STORE'})",
    "crc-32": lambda v: f"0x{v:08x}",
    "last mod time": lambda v: f"{v >> 11:02d}:{(v >> 5) & 63:02d}:{(v & 31) * 2:02d}",
    "last mod date": lambda v: f"{(v >> 9) + 1980:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}",
}


def open_document(path: str | os.PathLike[str], **options: object) -> Document:
    path = os.fspath(path)
    taco = read_taco(path)
    members = taco.zip.members
    doc = Document(
        path=path,
        format="taco",
        title=f"TACO zip ({taco.header.count} of {MAX_ENTRIES} entries, {len(members)} members"
              + (", ZIP64)" if taco.zip.zip64 else ")"),
        header=header_fields(taco),
        tables=[_entries_table(taco), _members_table(taco)],
        summary={"entries": taco.header.count, "members": len(members), "zip64": taco.zip.zip64},
        source=taco,
    )
    for t in taco.targets:
        if t.status in BAD_STATUSES:
            doc.warnings.append(f"entry {t.index} ({t.offset}, {t.length}) points at {t.status}")
    if any(taco.header.padding):
        doc.warnings.append(f"payload padding bytes 42..44 are not zero: {taco.header.padding.hex()}")
    return doc


def header_fields(taco: TacoArchive) -> list[HeaderField]:
    h = taco.header
    lfh = "Local file header"
    fields = [HeaderField(name, typ, h.lfh[name], off, size, _LFH_DISPLAY.get(name, str)(h.lfh[name]), lfh)
              for name, off, size, typ in LFH_FIELDS]
    fields.append(HeaderField("file name", "S11", h.name, 30, len(h.name), h.name.decode("ascii"), lfh))
    payload = "TACO payload"
    fields.append(HeaderField("count", "u8", h.count, PAYLOAD_OFFSET, 1, f"{h.count} of {MAX_ENTRIES}", payload))
    fields.append(HeaderField("padding", "u8[3]", h.padding, PAYLOAD_OFFSET + 1, 3, h.padding.hex(" "), payload))
    for i, (offset, length) in enumerate(h.slots):
        base = ENTRIES_OFFSET + 16 * i
        note = "" if i < h.count else " (unused)"
        fields.append(HeaderField(f"entry {i} offset", "u64", int(offset), base, 8, f"{int(offset):,}{note}", payload))
        fields.append(HeaderField(f"entry {i} length", "u64", int(length), base + 8, 8, f"{int(length):,}{note}",
                                  payload))
    z = taco.zip
    end = "ZIP end records"
    fields.append(HeaderField("central CRC-32 of TACO_HEADER", "u32", taco.header_member.crc32,
                              taco.cd_crc_offset, 4, f"0x{taco.header_member.crc32:08x}", end))
    # where the offset and size were read from: the ZIP64 end record when there is one
    if z.zip64_eocd_offset is not None:
        (off_at, size_at, width, typ) = (z.zip64_eocd_offset + 48, z.zip64_eocd_offset + 40, 8, "u64")
    else:
        (off_at, size_at, width, typ) = (z.eocd_offset + 16, z.eocd_offset + 12, 4, "u32")
    fields.append(HeaderField("central directory offset", typ, z.cd_offset, off_at, width, f"{z.cd_offset:,}", end))
    fields.append(HeaderField("central directory size", typ, z.cd_size, size_at, width, f"{z.cd_size:,}", end))
    fields.append(HeaderField("end of central directory", "u32", z.eocd_offset, z.eocd_offset, 22,
                              f"record at {z.eocd_offset:,}", end))
    if z.zip64_eocd_offset is not None:
        fields.append(HeaderField("ZIP64 end record", "u32", z.zip64_eocd_offset, z.zip64_eocd_offset, 56,
                                  f"record at {z.zip64_eocd_offset:,} (via locator at {z.zip64_locator_offset:,})",
                                  end))
    if z.comment:
        fields.append(HeaderField("archive comment", f"S{len(z.comment)}", z.comment, z.eocd_offset + 22,
                                  len(z.comment), bytes_text(z.comment[:80]), end))
    return fields


def _entries_table(taco: TacoArchive) -> Table:
    targets = taco.targets
    index_of = {m.index: row for row, m in enumerate(taco.zip.members)}
    member_rows = np.array([index_of[t.member.index] if t.member else -1 for t in targets], dtype=np.int64)

    def drill(row: int) -> tuple[str, np.ndarray]:
        target = member_rows[row]
        return "members", (np.array([target], dtype=np.int64) if target >= 0 else np.empty(0, dtype=np.int64))

    def payload(row: int) -> Payload:
        t = targets[row]
        if t.member is not None and t.status == STATUS_MEMBER:
            return member_payload(taco, t.member)
        data = _read(taco.path, t.offset, min(t.length, PAYLOAD_PREVIEW_LIMIT))
        return Payload(data, "bin", f"entry{row}.bin", {"offset": t.offset, "length": t.length})

    return Table(
        name="entries",
        n_rows=len(targets),
        columns=[
            Column("index", np.arange(len(targets), dtype=np.int64)),
            Column("offset", np.array([t.offset for t in targets], dtype=np.uint64), "size"),
            Column("length", np.array([t.length for t in targets], dtype=np.uint64), "size"),
            Column("member", np.array([t.member.name if t.member else "" for t in targets], dtype=object), "text",
                   tooltip="the member whose stored bytes hold this range"),
            Column("status", np.array([ENTRY_STATUS_LABELS.index(t.status) for t in targets], dtype=np.int64),
                   "enum", labels=ENTRY_STATUS_LABELS),
        ],
        payload=payload,
        payload_available=lambda row: targets[row].status not in BAD_STATUSES,
        byte_range=lambda row: (ENTRIES_OFFSET + 16 * row, 16),  # the entry's own bytes in the header
        drill=drill,
        description="TACO header entries (offset, length) and the member each points into",
    )


def _members_table(taco: TacoArchive) -> Table:
    members = taco.zip.members
    methods = sorted({m.method for m in members})
    method_labels = [members[[m.method for m in members].index(code)].method_name for code in methods]

    def payload(row: int) -> Payload:
        return member_payload(taco, members[row])

    return Table(
        name="members",
        n_rows=len(members),
        columns=[
            Column("name", np.array([m.name for m in members], dtype=object), "text"),
            Column("data offset", np.array([m.data_offset for m in members], dtype=np.uint64), "size"),
            Column("stored size", np.array([m.compressed_size for m in members], dtype=np.uint64), "size"),
            Column("size", np.array([m.size for m in members], dtype=np.uint64), "size"),
            Column("crc-32", np.array([f"{m.crc32:08x}" for m in members], dtype=object), "text"),
            Column("method", np.array([methods.index(m.method) for m in members], dtype=np.int64), "enum",
                   labels=method_labels),
            Column("local header", np.array([m.header_offset for m in members], dtype=np.uint64), "size"),
        ],
        payload=payload,
        payload_available=lambda row: members[row].size <= PAYLOAD_PREVIEW_LIMIT
        and members[row].method in (0, 8),
        # local header through the end of the stored bytes
        byte_range=lambda row: (members[row].header_offset, members[row].data_end - members[row].header_offset),
        description="ZIP members with the absolute offset of their stored bytes",
    )


def member_payload(taco: TacoArchive, member: ZipMember) -> Payload:
    """A member's bytes, inflated when deflated, with the extension the decoders key on."""
    base = posixpath.basename(member.name)
    ext = base.rsplit(".", 1)[1].lower() if "." in base else ""
    if member.size > PAYLOAD_PREVIEW_LIMIT:
        raise FormatError(taco.path, f"member {member.name!r}", member.data_offset,
                          f"too large to preview ({member.size:,} bytes)")
    raw = _read(taco.path, member.data_offset, member.compressed_size)
    if member.method == 8:
        inflater = zlib.decompressobj(-15)
        try:
            data = inflater.decompress(raw, member.size + 1)  # +1 reveals a size lie without inflating a bomb
        except zlib.error as exc:
            raise FormatError(taco.path, f"member {member.name!r}: deflate stream", member.data_offset,
                              str(exc)) from None
    elif member.method == 0:
        data = raw
    else:
        raise FormatError(taco.path, f"member {member.name!r}: compression method", member.cd_offset + 10,
                          "only STORE and DEFLATE can be previewed", found=member.method_name)
    if len(data) != member.size:
        raise FormatError(taco.path, f"member {member.name!r}: uncompressed size", member.cd_offset + 24,
                          expected=member.size, found=len(data))
    crc = zlib.crc32(data)
    if member.name == "TACO_HEADER":
        ext = "bin"
    return Payload(data, ext, base, {"crc_ok": crc == member.crc32, "member": member.name})


def _read(path: str, offset: int, size: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(size)

