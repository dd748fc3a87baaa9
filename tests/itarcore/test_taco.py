"""TACO header: reading, in-place update, creation, checked against tacozip, zipfile and the fixtures."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
import tacozip

from itarcore.errors import ChecksumError, FormatError, ItarError, WriteError
from itarcore.formats.taco import (
    STATUS_INSIDE,
    STATUS_MEMBER,
    STATUS_NOT_DATA,
    STATUS_PAST_END,
    create_archive,
    read_taco,
    update_entries,
)

TACO = Path(__file__).parents[1] / "data" / "taco"
MANIFEST = json.loads((TACO / "manifest.json").read_text())
FIXTURES = ["taco_0entries.tacozip", "taco_3entries.tacozip", "taco_3entries_before_update.tacozip"]


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copyfile(TACO / name, dst)
    return dst


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_header_matches_manifest_and_tacozip(name: str) -> None:
    taco = read_taco(TACO / name)
    want = MANIFEST[name]
    assert taco.header.entries == [tuple(e) for e in want["entries"]] == tacozip.read_header(str(TACO / name))
    assert f"0x{taco.header.payload_crc:08x}" == want["header_crc"]
    assert [m.name for m in taco.zip.members] == want["members"]
    if "points_at" in want:
        assert [t.member.name for t in taco.targets] == want["points_at"]
        assert all(t.status == STATUS_MEMBER for t in taco.targets)


def test_update_is_byte_identical_to_tacozip_fixture(tmp_path: Path) -> None:
    p = _copy(tmp_path, "taco_3entries_before_update.tacozip")
    before = p.read_bytes()
    after = update_entries(p, [tuple(e) for e in MANIFEST["taco_3entries.tacozip"]["entries"]])
    data = p.read_bytes()
    assert data == (TACO / "taco_3entries.tacozip").read_bytes()
    changed = [i for i, (a, b) in enumerate(zip(before, data)) if a != b]
    assert changed == MANIFEST["taco_3entries.tacozip"]["bytes_changed_by_update"]
    assert [t.member.name for t in after.targets] == MANIFEST["taco_3entries.tacozip"]["points_at"]


def test_update_keeps_zip_valid_and_never_drops_entries(tmp_path: Path) -> None:
    p = _copy(tmp_path, "taco_3entries.tacozip")
    entries = [(0, 0), (202, 75), (1400, 10), (0, 0)]  # tacozip would count only the non-zero ones
    update_entries(p, entries)
    with zipfile.ZipFile(p) as zf:
        assert zf.testzip() is None
        assert zf.read("TACO_HEADER")[0] == 4
    assert read_taco(p).header.entries == entries
    assert tacozip.read_header(str(p)) == entries
    statuses = [t.status for t in read_taco(p).targets]
    assert statuses[1:3] == [STATUS_MEMBER, STATUS_INSIDE]


@pytest.mark.parametrize("entries, match", [
    ([(1, 1)] * 8, "at most 7"),
    ([(2**64, 1)], "outside the u64 range"),
    ([(5, -1)], "outside the u64 range"),
    ([(1.5, 2)], "must be an integer"),
    ([(1, 2, 3)], "pair"),
])
def test_update_rejects_bad_entries_without_writing(tmp_path: Path, entries: list, match: str) -> None:
    p = _copy(tmp_path, "taco_3entries.tacozip")
    sha = _sha(p)
    with pytest.raises(WriteError, match=match):
        update_entries(p, entries)
    assert _sha(p) == sha


def _doctor(data: bytes, **changes: tuple[int, bytes]) -> bytes:
    out = bytearray(data)
    for (offset, value) in changes.values():
        out[offset:offset + len(value)] = value
    return bytes(out)


def _with_crcs(payload_byte0: int) -> bytes:
    """taco_3entries with the count byte changed and both CRCs made to match it."""
    data = bytearray((TACO / "taco_3entries.tacozip").read_bytes())
    data[41] = payload_byte0
    crc = struct.pack("<I", zlib.crc32(bytes(data[41:157])))
    data[14:18] = crc
    data[4192:4196] = crc
    return bytes(data)


def _plain_zip() -> bytes:
    p = TACO / "taco_3entries.tacozip"
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(p) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist()[1:]:
            dst.writestr(info.filename, src.read(info))
    return buf.getvalue()


def _fake_eocd_in_comment() -> bytes:
    data = (TACO / "taco_3entries.tacozip").read_bytes()
    fake = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, 46, 157, 0)
    return data[:-2] + struct.pack("<H", len(fake)) + fake


def _fake_zip64_locator() -> bytes:
    data = (TACO / "taco_3entries.tacozip").read_bytes()
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, 1399, 1)
    return data[:-22] + locator + data[-22:]


def _truncated_cd() -> bytes:
    data = (TACO / "taco_3entries.tacozip").read_bytes()
    return data[:4176 + 300] + data[-22:]


MALFORMED = {
    "plain zip without TACO_HEADER": (_plain_zip, FormatError, "first member name"),
    "fake EOCD inside comment": (_fake_eocd_in_comment, FormatError, "inside the archive comment"),
    "fake ZIP64 locator": (_fake_zip64_locator, FormatError, "ZIP64 end record: signature"),
    "truncated central directory": (_truncated_cd, FormatError, "central directory"),
    "count 8": (lambda: _with_crcs(8), FormatError, "entry count"),
    "count 255": (lambda: _with_crcs(255), FormatError, "entry count"),
    "local CRC wrong": (lambda: _doctor((TACO / "taco_3entries.tacozip").read_bytes(), c=(14, b"\0\0\0\0")),
                        ChecksumError, "local header CRC"),
    "central CRC wrong": (lambda: _doctor((TACO / "taco_3entries.tacozip").read_bytes(), c=(4192, b"\0\0\0\0")),
                          ChecksumError, "central directory TACO_HEADER: crc-32"),
    "not STORE": (lambda: _doctor((TACO / "taco_3entries.tacozip").read_bytes(), m=(8, b"\x08\x00")),
                  FormatError, "compression method"),
    "size not 116": (lambda: _doctor((TACO / "taco_3entries.tacozip").read_bytes(), s=(22, b"\x75")),
                     FormatError, "uncompressed size"),
    "too short": (lambda: (TACO / "taco_3entries.tacozip").read_bytes()[:100], FormatError, "too short"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_archives_give_clear_errors_and_stay_unchanged(tmp_path: Path, case: str) -> None:
    make, error, match = MALFORMED[case]
    p = tmp_path / "bad.tacozip"
    p.write_bytes(make())
    sha = _sha(p)
    with pytest.raises(error, match=match) as info:
        read_taco(p)
    assert str(p) in str(info.value)
    with pytest.raises(error, match=match):
        update_entries(p, [(1399, 1299)])
    assert _sha(p) == sha


def _sources(tmp_path: Path) -> list[tuple[Path, str]]:
    src = tmp_path / "src"
    src.mkdir()
    files = {"DATA/s0.png": b"\x89PNG fake image" * 7, "DATA/s1.bin": os.urandom(3000),
             "METADATA/level0.parquet": b"PAR1" + b"x" * 700, "METADATA/level1.parquet": b"PAR1" + b"y" * 901,
             "COLLECTION.json": json.dumps({"id": "demo"}).encode()}
    out = []
    for name, data in files.items():
        path = src / name.replace("/", "_")
        path.write_bytes(data)
        out.append((path, name))
    return out


def test_created_archive_is_read_by_tacozip_and_zipfile(tmp_path: Path) -> None:
    files = _sources(tmp_path)
    pointers = ["METADATA/level0.parquet", "METADATA/level1.parquet", "COLLECTION.json"]
    out = tmp_path / "made.tacozip"
    taco = create_archive(out, files, pointers)
    entries = tacozip.read_header(str(out))
    assert entries == taco.header.entries and len(entries) == 3
    blob = out.read_bytes()
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        assert zf.namelist() == ["TACO_HEADER"] + [n for _, n in files]
        for (src, name) in files:
            assert zf.read(name) == src.read_bytes()
        for (offset, length), name in zip(entries, pointers):
            assert blob[offset:offset + length] == zf.read(name)
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_create_refuses_bad_requests_and_leaves_no_file(tmp_path: Path) -> None:
    files = _sources(tmp_path)
    out = tmp_path / "x.tacozip"
    with pytest.raises(WriteError, match="not one of the files"):
        create_archive(out, files, ["nope"])
    with pytest.raises(WriteError, match="at most 7"):
        create_archive(out, files, [n for _, n in files] * 2)
    with pytest.raises(WriteError, match="appears twice"):
        create_archive(out, files + files[:1])
    with pytest.raises(WriteError, match="usable member name"):
        create_archive(out, [(files[0][0], "../evil")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_tacozip_made_archive_with_seven_entries_is_read(tmp_path: Path) -> None:
    files = _sources(tmp_path)
    files += [(files[2][0], f"METADATA/level{i}.parquet") for i in range(2, 6)]
    out = tmp_path / "t7.tacozip"
    tacozip.create(str(out), [str(s) for s, _ in files], [n for _, n in files], [(0, 0)])
    with zipfile.ZipFile(out) as zf:
        pointed = [f"METADATA/level{i}.parquet" for i in range(6)] + ["COLLECTION.json"]
        offsets = {i.filename: i.header_offset + 30 + len(i.filename) for i in zf.infolist()}
        want = [(offsets[n], zf.getinfo(n).compress_size) for n in pointed]
    tacozip.update_header(str(out), want)
    taco = read_taco(out)
    assert taco.header.entries == want == tacozip.read_header(str(out))
    assert [t.member.name for t in taco.targets] == pointed
    # and our update of a tacozip archive stays readable by both
    update_entries(out, want[::-1])
    assert tacozip.read_header(str(out)) == want[::-1]
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None


def test_entries_pointing_nowhere_are_flagged(tmp_path: Path) -> None:
    p = _copy(tmp_path, "taco_3entries.tacozip")
    size = p.stat().st_size
    update_entries(p, [(0, 157), (size - 5, 10), (4106, 70)])
    statuses = [t.status for t in read_taco(p).targets]
    assert statuses == [STATUS_NOT_DATA, STATUS_PAST_END, STATUS_MEMBER]


def test_zip64_archive_from_sparse_file(tmp_path: Path) -> None:
    """A member over 2 GiB makes zipfile's writer use ZIP64 records; the input and output stay sparse."""
    big = tmp_path / "big.bin"
    n = (1 << 31) + 4097
    with open(big, "wb") as fh:
        fh.seek(n - 3)  # everything before is a hole
        fh.write(b"END")
    small = tmp_path / "c.json"
    small.write_bytes(b'{"last": true}')
    out = tmp_path / "z64.tacozip"
    taco = create_archive(out, [(big, "DATA/big.bin"), (small, "COLLECTION.json")],
                          ["DATA/big.bin", "COLLECTION.json"])
    assert taco.zip.zip64
    assert out.stat().st_blocks * 512 < 64 << 20  # holes were skipped, not written as zeros
    entries = tacozip.read_header(str(out))
    assert entries == taco.header.entries
    with zipfile.ZipFile(out) as zf:
        info_big, info_small = zf.getinfo("DATA/big.bin"), zf.getinfo("COLLECTION.json")
        assert info_big.file_size == n and info_small.header_offset > n
        assert zf.read("COLLECTION.json") == small.read_bytes()
        assert info_big.CRC == taco.zip.member_named("DATA/big.bin").crc32
    assert entries[0][1] == n
    with open(out, "rb") as fh:
        fh.seek(entries[0][0] + n - 3)
        assert fh.read(3) == b"END"
        fh.seek(entries[1][0])
        assert fh.read(entries[1][1]) == small.read_bytes()
    update_entries(out, entries[::-1])
    assert tacozip.read_header(str(out)) == entries[::-1]


def test_errors_are_itar_errors_for_random_damage(tmp_path: Path) -> None:
    """Flip each byte of the end records and central directory: always an ItarError or a clean read."""
    data = (TACO / "taco_0entries.tacozip").read_bytes()
    p = tmp_path / "flip.tacozip"
    for i in range(300, len(data)):
        doctored = bytearray(data)
        doctored[i] ^= 0xFF
        p.write_bytes(bytes(doctored))
        try:
            read_taco(p)
        except ItarError:
            pass


def test_sparse_inputs_with_holes_anywhere_are_stored_exactly(tmp_path: Path) -> None:
    layouts = {"trailing_hole": ([(0, b"abc")], 4_000_000), "leading_hole": ([(5_000_000, b"xyz")], None),
               "holes_between": ([(0, b"a" * 5000), (3_000_000, b"b" * 10), (2**21 + 7, b"c")], None),
               "empty": ([], None)}
    files = []
    for name, (writes, length) in layouts.items():
        path = tmp_path / name
        with open(path, "wb") as fh:
            for offset, data in writes:
                fh.seek(offset)
                fh.write(data)
            if length:
                fh.truncate(length)
        files.append((path, name))
    out = tmp_path / "sparse.tacozip"
    create_archive(out, files, ["holes_between"])
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        for path, name in files:
            assert zf.read(name) == path.read_bytes()
