"""Each escape that mutated tar shards found, pinned: indexing, conversion and both scan routes.

Names an index can hold are indexed exactly as NOTES.md splits them; names it cannot
(not UTF-8, a NUL, a newline) are refused with a FormatError at the member's header.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import xxhash
from tar_mutants import BLOCK, fix_checksum, header, record

from itarcore.errors import FormatError, TruncatedError, WriteError
from itarcore.formats.tar import scan_tar
from itarcore.formats.tar_fields import parse_number, parse_octal_columns
from itarcore.formats.taridx import read_taridx, write_taridx
from itarcore.formats.tbl import open_tbl
from itarcore.indexing import jit
from itarcore.indexing.indexer import index_shards
from itarcore.jobs import index_folds
from itarcore.jobs.convert_tbl import convert_tar_to_tbl

END = bytes(2 * BLOCK)


def shard(tmp_path: Path, *records: bytes, name: str = "f_0000.tar") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(records) + END)
    return path


def pax(name: bytes, payload: bytes, key: bytes = b"path") -> bytes:
    """A pax 'x' record setting ``key`` for the member ``name`` that follows it."""
    body = b" %s=%s\n" % (key, payload)
    length = len(body) + 1
    length += len(str(length)) - 1
    rec = b"%d%s" % (length, body)
    assert len(rec) == length
    return record(b"././@PaxHeader", rec, b"x") + record(name, b"data")


# ---- indexing: names ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("scan_route")
def test_empty_and_odd_but_valid_names_are_split_as_the_reference_does(tmp_path: Path) -> None:
    # was: ValueError from argmax in indexer._split_name_fields (numpy route) on a shard of empty names
    path = shard(tmp_path, record(b"", b"abc"), record(b"", b"de"))
    fold = index_shards([path])
    assert fold.extensions == [""]
    assert fold.rows["keyhash"].tolist() == [xxhash.xxh64(b"").intdigest()] * 2
    assert fold.rows["offset"].tolist() == [0, 1024] and fold.rows["size"].tolist() == [3, 2]
    assert fold.n_stems == 1

    names = [b".hidden", b"README", b"dir/", b"dir\\a.JPG", b"a b.Left.PNG", b"x.\xc3\x89T\xc3\x89", b"\t.cls", b""]
    path = shard(tmp_path, *(record(n, b"x") for n in names), name="g_0000.tar")
    fold = index_shards([path])
    truth = []  # NOTES.md: base name after the last '/', stem before the first '.', extension lower-cased
    for n in names:
        stem, _, ext = n.decode().rsplit("/", 1)[-1].partition(".")
        truth.append((xxhash.xxh64(stem.encode()).intdigest(), ext.lower()))
    found = [(int(r["keyhash"]), fold.extensions[r["extid"]]) for r in fold.rows]
    assert found == truth
    assert fold.extensions == ["hidden", "", "jpg", "left.png", "été", "cls"]


@pytest.mark.usefixtures("scan_route")
@pytest.mark.parametrize(("name", "problem"), [
    (b"ok.\xe9", "not UTF-8"), (b"\xff\xfe.jpg", "not UTF-8"), (b"dir\xff/a.jpg", "not UTF-8"),
    (b"a\xed\xa0\x80.txt", "not UTF-8"), (b"a.j\npg", "'\\n'"), (b"a\nb.jpg", "'\\n'"),
])
def test_names_an_index_cannot_hold_are_refused_at_their_header(tmp_path: Path, name: bytes, problem: str) -> None:
    # was: UnicodeEncodeError from write_taridx, or (newline) an index whose extension block reads back wrong
    path = shard(tmp_path, record(b"good.jpg", b"1" * 600), record(name, b"2"))
    with pytest.raises(FormatError) as info:
        index_shards([path])
    err = info.value
    assert (err.path, err.field, err.offset) == (str(path), "name", 1536)
    assert problem in str(err)
    with pytest.raises(FormatError):
        index_folds(tmp_path)  # the CLI's job too, and it leaves no index behind
    assert not list(tmp_path.glob("*.taridx"))


@pytest.mark.usefixtures("scan_route")
def test_a_pax_path_with_a_nul_is_refused(tmp_path: Path) -> None:
    path = shard(tmp_path, record(b"a.jpg", b"1"), pax(b"b.jpg", b"x\0y.jpg"))
    with pytest.raises(FormatError) as info:
        index_shards([path])
    assert (info.value.field, info.value.offset) == ("name", 2048)  # the member's own header, after the pax record


def test_write_taridx_refuses_strings_it_cannot_store(tmp_path: Path) -> None:
    rows = np.zeros(0, read_taridx_dtype())
    with pytest.raises(WriteError, match="UTF-8"):
        write_taridx(tmp_path / "a.taridx", rows, ["jpg", "\udcff"], [], 0)
    with pytest.raises(WriteError, match="newline"):
        write_taridx(tmp_path / "b.taridx", rows, ["jpg"], ["two\nlines"], 0)
    assert not list(tmp_path.iterdir())
    write_taridx(tmp_path / "c.taridx", rows, ["", "jpg"], ["a b"], 0)  # what it can store reads back
    index = read_taridx(tmp_path / "c.taridx")
    assert (index.extensions, index.crash_stems) == (["", "jpg"], ["a b"])


def read_taridx_dtype() -> np.dtype:
    from itarcore.formats.taridx import ROW_DTYPE

    return ROW_DTYPE


# ---- conversion -------------------------------------------------------------------------------------------------


def test_convert_refuses_a_name_that_is_not_text_when_names_become_metadata(tmp_path: Path) -> None:
    # was: UnicodeEncodeError from convert_tbl._metadata
    path = shard(tmp_path, record(b"a.jpg", b"\xff\xd8jpeg"), record(b"b\xff.jpg", b"\xff\xd8jpeg"))
    out = tmp_path / "out.tbl"
    with pytest.raises(FormatError) as info:
        convert_tar_to_tbl([path], out, metadata_from="json")
    assert (info.value.path, info.value.field, info.value.offset) == (str(path), "name", 1024)
    assert not out.exists()
    result = convert_tar_to_tbl([path], out)  # without metadata the name stays bytes: converted
    assert result.num_samples == 2

    path = shard(tmp_path, record("dir/caf\u00e9 1.Left.jpg".encode(), b"\xff\xd8jpeg"), name="g_0000.tar")
    convert_tar_to_tbl([path], out, metadata_from="json")  # valid text: kept exactly
    tbl = open_tbl(out)
    try:
        meta = json.loads(tbl.metadata_bytes(tbl.metadata_for(0)[0]))
    finally:
        tbl.close()
    assert (meta["name"], meta["stem"]) == ("dir/caf\u00e9 1.Left.jpg", "caf\u00e9 1")


def test_convert_of_members_without_names(tmp_path: Path) -> None:
    # was: ValueError from tbl_write._name_tails
    path = shard(tmp_path, record(b"", b"abc"), record(b"x.jpg", b"\xff\xd8jpeg"))
    path0 = shard(tmp_path, record(b"", b"abc"), name="g_0000.tar")
    result = convert_tar_to_tbl([path0, path], tmp_path / "out.tbl", metadata_from="json")
    assert (result.num_samples, result.skipped) == (1, 2)
    with tarfile.open(path) as tar:
        assert [m.name for m in tar.getmembers()] == ["", "x.jpg"]  # tarfile reads the same two members


# ---- the fields every walk parses -------------------------------------------------------------------------------


ODD_FIELDS = [
    b"00000001750\0", b"    1750 \0\0", b"\0\0\0\0" + b"1750\0\0\0\0", b"0000001750\0x", b"0000 001750\0",
    b"+0000001750\0", b"0000000_750\0", b"-0000000001\0", b"\t1750\n\0\0\0\0\0", b" " * 12, b"\0" * 12,
    b"1750  \0 \0 \0", b"17 50\0\0\0\0\0\0\0",
]


@pytest.mark.parametrize("raw", ODD_FIELDS)
def test_octal_fields_read_as_tarfile_reads_them_or_are_refused_by_every_parser(raw: bytes) -> None:
    try:
        truth = tarfile.nti(raw)
    except tarfile.InvalidHeaderError:
        truth = None
    try:
        scalar = parse_number(raw, "t.tar", "size", 124)
    except FormatError:
        scalar = None
    values, ok = parse_octal_columns(np.frombuffer(raw, np.uint8).reshape(1, -1))
    column = int(values[0]) if ok[0] else None
    assert column == scalar  # the sequential walk and the vectorised one
    assert scalar is None or scalar == truth  # stricter than tarfile (no sign, tab or '_'), never different
    if raw.startswith(b"\0"):
        assert scalar == 0  # the field ends at its first NUL (was: 1000 from the column parser)
    if jit.available():
        from itarcore.formats.tar_walk import _octal

        compiled = _octal(np.frombuffer(raw, np.uint8), 0, 12)
        assert (None if compiled < 0 else compiled) in (scalar, None)  # -1 only hands over to the Python walk
        if scalar is not None and raw.strip(b"0123456 \0") == b"":
            assert compiled == scalar


def test_base256_lead_bytes_as_tarfile() -> None:
    assert parse_number(b"\x80" + bytes(10) + b"\x01", "t.tar", "size", 124) == tarfile.nti(b"\x80" + bytes(10) + b"\x01")
    assert parse_number(b"\xff" * 12, "t.tar", "size", 124) == tarfile.nti(b"\xff" * 12) == -1
    with pytest.raises(FormatError, match="lead byte"):  # tarfile: InvalidHeaderError
        parse_number(b"\x81" + bytes(11), "t.tar", "size", 124)


def test_pax_size_must_be_decimal(tmp_path: Path) -> None:
    # was: ValueError from int() in the sequential walk
    from itarcore.formats.tar_fields import parse_pax_size

    path = shard(tmp_path, pax(b"a.jpg", b"abc", key=b"size"))
    with pytest.raises(FormatError) as info:
        scan_tar(path, compiled=False)
    assert (info.value.field, info.value.offset) == ("pax size", 512)
    assert parse_pax_size(b"17", "t", 0) == 17
    for bad in (b"-5", b"1_0", b"+3", b" 3", "٣".encode()):
        with pytest.raises(FormatError):
            parse_pax_size(bad, "t", 0)


# ---- the compiled walk: no read outside the buffer, same answer as numpy ---------------------------------------


HUGE_SIZES = [b"\x80" + bytes(3) + ((1 << 63) - k).to_bytes(8, "big") for k in (1, 512, 513, 4096)]


@pytest.mark.skipif(not jit.available(), reason="numba (the 'fast' extra) is not installed")
@pytest.mark.parametrize("size", HUGE_SIZES)
def test_a_huge_base256_size_is_refused_by_the_compiled_walk_without_a_crash(tmp_path: Path, size: bytes) -> None:
    # was: offset + 512 + size wrapped around int64 and the walk read far outside the map (the process died)
    hdr = bytearray(header(b"a.jpg", 0))
    hdr[124:136] = size
    path = shard(tmp_path, fix_checksum(hdr) + bytes(BLOCK), record(b"b.jpg", b"x" * 700))
    script = ("import sys; from itarcore.formats.tar import scan_tar\n"
              "try:\n    scan_tar(sys.argv[1], compiled=True)\n"
              "except Exception as exc:\n    print(type(exc).__name__, exc.field, exc.offset)")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=False,
                          env={**os.environ, "ITARCORE_JIT": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]  # a crash would be a negative signal number
    assert done.stdout.split() == ["TruncatedError", "payload", "512"]
    with pytest.raises(TruncatedError):
        scan_tar(path, compiled=False)


@pytest.mark.usefixtures("scan_route")
def test_a_v7_header_and_an_odd_size_field_read_the_same_on_both_routes(tmp_path: Path) -> None:
    # was: the compiled walk read "\0\0\0\0" "1750" as 1000 bytes, the Python walk (where a v7 header
    # sends the numpy route) as 0; this shard chains either way, so the routes listed different members
    v7 = bytearray(header(b"v7.bin", 3))
    v7[257:265] = bytes(8)  # no ustar magic: the numpy route walks sequentially
    odd = bytearray(header(b"b.jpg", 0))
    odd[124:136] = b"\0\0\0\0" + b"1750\0\0\0\0"
    inner = record(b"inner.txt", b"i" * 512)  # 1024 bytes: b.jpg's payload if its size were 1000
    path = shard(tmp_path, fix_checksum(v7) + b"abc".ljust(BLOCK, b"\0"), fix_checksum(odd), inner,
                 record(b"c.jpg", b"c" * 1000))
    scan = scan_tar(path)  # size 0, as tarfile reads it: the next header is inner.txt's
    assert [scan.name_bytes(i) for i in range(scan.n_members)] == [b"v7.bin", b"b.jpg", b"inner.txt", b"c.jpg"]
    assert scan.sizes.tolist() == [3, 0, 512, 1000]
    with tarfile.open(path) as tar:
        assert [(m.name, m.size) for m in tar.getmembers()] == [("v7.bin", 3), ("b.jpg", 0), ("inner.txt", 512),
                                                                 ("c.jpg", 1000)]


@pytest.mark.usefixtures("scan_route")
def test_an_error_before_a_truncated_end_is_the_one_reported(tmp_path: Path) -> None:
    # was: the numpy route reported the truncation at the end, the Python walk the earlier bad checksum
    bad = bytearray(record(b"b.jpg", b"x"))
    bad[0] ^= 1  # checksum left stale
    raw = record(b"a.jpg", b"1") + bytes(bad) + record(b"c.jpg", b"2")
    path = tmp_path / "t_0000.tar"
    path.write_bytes(raw + b"\0" * 100)  # ends inside a block after the last member
    with pytest.raises(FormatError) as info:
        scan_tar(path)
    assert (type(info.value).__name__, info.value.field, info.value.offset) == ("ChecksumError", "chksum", 1024 + 148)


@pytest.mark.usefixtures("scan_route")
def test_a_bad_pax_record_before_a_bad_checksum_is_the_one_reported(tmp_path: Path) -> None:
    bad = bytearray(record(b"c.jpg", b"x"))
    bad[0] ^= 1
    path = shard(tmp_path, record(b"a.jpg", b"1"), record(b"././@PaxHeader", b"99 path=x\n", b"x"),
                 record(b"b.jpg", b"2"), bytes(bad))
    with pytest.raises(FormatError) as info:
        scan_tar(path)
    assert (info.value.field, info.value.offset) == ("pax record", 1536)


@pytest.mark.usefixtures("scan_route")
def test_a_file_cut_inside_a_members_padding_is_refused_where_it_ends(tmp_path: Path) -> None:
    # was: "header cut short" at an offset past the end of the file, "found -63 bytes"
    raw = record(b"a.jpg", b"j" * 700) + record(b"b.jpg", b"j" * 700)
    path = tmp_path / "t_0000.tar"
    path.write_bytes(raw[: 1536 + 512 + 700 + 10])
    with pytest.raises(TruncatedError) as info:
        scan_tar(path)
    assert (info.value.field, info.value.offset) == ("padding", 1536 + 512 + 710)


@pytest.mark.skipif(not jit.available(), reason="numba (the 'fast' extra) is not installed")
@pytest.mark.parametrize("offset", [-512, -1, 100, 1 << 40])
def test_the_compiled_walk_refuses_offsets_outside_its_buffer(offset: int) -> None:
    from itarcore.formats import tar_walk

    buf = np.frombuffer(record(b"a.jpg", b"x" * 10) + END, np.uint8)
    out = tar_walk.record_arrays(4)
    stop, at, count = tar_walk.walk_headers(buf, tar_walk.word_view(buf), offset, offset + (1 << 20), 0, *out)
    # was: a negative offset wrapped around to the end marker and read as a clean end of archive
    assert (stop, at, count) == (tar_walk.STOP_UNSUPPORTED, offset, 0)
    assert tar_walk.walk_headers(buf, tar_walk.word_view(buf), 0, 1 << 20, 0, *out)[::2] == (tar_walk.STOP_END, 1)
