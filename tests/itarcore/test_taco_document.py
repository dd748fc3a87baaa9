"""The TACO Document: header fields at their offsets, entries/members tables, payloads, drill."""
from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.decoders import decode
from itarcore.document import open_document
from itarcore.errors import FormatError

TACO = Path(__file__).parents[1] / "data" / "taco"
MANIFEST = json.loads((TACO / "manifest.json").read_text())
FIXTURES = ["taco_0entries.tacozip", "taco_3entries.tacozip", "taco_3entries_before_update.tacozip"]


@pytest.mark.parametrize("name", FIXTURES)
def test_header_fields_read_back_from_their_offsets(name: str) -> None:
    doc = open_document(TACO / name)
    blob = (TACO / name).read_bytes()
    formats = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q"}
    names = {f.name for f in doc.header}
    assert {"signature", "version needed", "crc-32", "file name", "count", "entry 6 length"} <= names
    for f in doc.header:
        if f.type in formats and f.size == struct.calcsize(formats[f.type]):
            assert struct.unpack_from(formats[f.type], blob, f.offset)[0] == f.value, f.name
    by_name = {f.name: f for f in doc.header}
    assert by_name["count"].value == len(MANIFEST[name]["entries"])
    assert f"0x{by_name['crc-32'].value:08x}" == MANIFEST[name]["header_crc"]
    assert by_name["file name"].value == blob[30:41] == b"TACO_HEADER"


def test_entries_table_points_at_members_and_drills() -> None:
    doc = open_document(TACO / "taco_3entries.tacozip")
    entries, members = doc.table("entries"), doc.table("members")
    want = MANIFEST["taco_3entries.tacozip"]
    rows = np.arange(entries.n_rows)
    assert list(entries.column("offset").get(rows)) == [o for o, _ in want["entries"]]
    assert list(entries.column("member").get(rows)) == want["points_at"]
    assert [entries.column("status").format(v) for v in entries.column("status").get(rows)] == ["whole member"] * 3
    names = list(members.column("name").get(np.arange(members.n_rows)))
    for row, target in enumerate(want["points_at"]):
        table, drilled = entries.drill(row)
        assert table == "members" and names[int(drilled[0])] == target
        assert entries.byte_range(row) == (45 + 16 * row, 16)
    with zipfile.ZipFile(TACO / "taco_3entries.tacozip") as zf:
        for row, info in enumerate(zf.infolist()):
            offset, size = members.byte_range(row)
            assert offset == info.header_offset and size == 30 + len(info.filename) + info.compress_size
            payload = members.payload(row)
            assert bytes(payload.data) == zf.read(info)
            assert payload.name == info.filename.rsplit("/", 1)[-1]
        assert bytes(entries.payload(2).data) == zf.read("COLLECTION.json")


def test_payload_extensions_drive_the_decoders() -> None:
    doc = open_document(TACO / "taco_3entries.tacozip")
    members = doc.table("members")
    names = list(members.column("name").get(np.arange(members.n_rows)))
    collection = members.payload(names.index("COLLECTION.json"))
    assert collection.ext == "json"
    decoded = decode(bytes(collection.data), collection.ext)
    assert decoded.kind == "json" and decoded.value["id"] == "demo"
    image = members.payload(names.index("DATA/s0_000.png"))
    assert image.ext == "png" and decode(bytes(image.data), image.ext).kind == "image"
    parquet = members.payload(names.index("METADATA/level0.parquet"))
    assert parquet.ext == "parquet" and decode(bytes(parquet.data), parquet.ext).kind == "table"


def _deflated_taco(tmp_path: Path, text: bytes, size_lie: int | None = None) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("TACO_HEADER"), bytes(116))
        zf.writestr("notes/readme.txt", text, compress_type=zipfile.ZIP_DEFLATED)
    data = bytearray(buf.getvalue())
    if size_lie is not None:
        cd = data.rindex(b"PK\x01\x02")
        data[cd + 24:cd + 28] = struct.pack("<I", size_lie)
    p = tmp_path / "deflated.tacozip"
    p.write_bytes(bytes(data))
    return p


def test_deflated_member_is_inflated(tmp_path: Path) -> None:
    text = b"line of text\n" * 400
    doc = open_document(_deflated_taco(tmp_path, text))
    members = doc.table("members")
    assert members.column("method").format(members.column("method").get(np.array([1]))[0]) == "deflate"
    payload = members.payload(1)
    assert bytes(payload.data) == text and payload.ext == "txt" and payload.meta["crc_ok"]


def test_deflated_member_size_lie_is_a_format_error(tmp_path: Path) -> None:
    doc = open_document(_deflated_taco(tmp_path, b"abc" * 1000, size_lie=10))
    with pytest.raises(FormatError, match="uncompressed size"):
        doc.table("members").payload(1)
