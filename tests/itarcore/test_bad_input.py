"""Bad input meets one exception family: sniffing, the CLI's last line of defence, decoders, numbers from files.

Truth: Python's ``zipfile`` (what it raises on a damaged archive), ``tarfile`` (member offsets),
``pyarrow`` (a parquet file it writes, then relabelled bytes it cannot decode).
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.audit import audit_index, quick_check
from itarcore.audit.rows import parse_headers
from itarcore.cli import main
from itarcore.decoders import DecodeError, decode
from itarcore.document import open_document
from itarcore.errors import FormatError
from itarcore.formats import detect_format, sniffer, unsupported_reason
from itarcore.formats.kastore import TSZIP_HINT, open_kastore_file
from itarcore.formats.taridx import ROW_DTYPE, read_taridx
from itarcore.jobs import index_fold

ROOT = Path(__file__).parents[2]


# -- 1. sniffing never raises ------------------------------------------------------------------------


def zip_needing_version(path: Path, version: int) -> Path:
    """A zip whose central directory says it needs ``version`` to extract (255: "zip file version 25.5")."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(".zattrs", b'{"format": "tszip"}')
    data = bytearray(buf.getvalue())
    central = data.rfind(b"PK\x01\x02")
    data[central + 6 : central + 8] = version.to_bytes(2, "little")
    path.write_bytes(bytes(data))
    return path


def test_damaged_zip_is_not_a_format_it_cannot_sniff(tmp_path: Path) -> None:
    bad = zip_needing_version(tmp_path / "damaged.zip", 255)
    with pytest.raises(NotImplementedError, match="zip file version 25.5"):
        zipfile.ZipFile(bad)  # what the tszip sniffer meets inside
    assert detect_format(bad) == "zip"
    assert "not a TARIDX, TACO, kastore or TBL file" in unsupported_reason(bad, "zip")
    with pytest.raises(FormatError, match="field 'magic' at offset 0"):
        open_document(bad)
    with pytest.raises(FormatError, match="not a kastore file"):
        open_kastore_file(bad)
    intact = zip_needing_version(tmp_path / "intact.zip", 20)  # the same archive, sniffable: a tszip hint
    assert unsupported_reason(intact, "zip") == TSZIP_HINT
    with pytest.raises(FileNotFoundError):  # reading the head is not sniffing: a missing file is a missing file
        detect_format(tmp_path / "nope.taridx")


def test_sniffer_turns_any_exception_into_no() -> None:
    @sniffer
    def explodes(head: bytes) -> bool:
        raise MemoryError(f"{len(head)} bytes")

    assert explodes(b"abc") is False
    assert sniffer(lambda head: head.startswith(b"PK"))(b"PK\x03\x04") is True


# -- 2. the CLI: one line and exit 2, whatever happens; --debug shows the traceback ---------------------


def test_cli_damaged_zip_one_line_exit_2(tmp_path: Path) -> None:
    bad = zip_needing_version(tmp_path / "damaged.zip", 255)
    run = subprocess.run([sys.executable, "-m", "itarcore", "info", str(bad)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 2 and run.stdout == ""
    line = f"itarcore: error: {bad}: not a TARIDX, TACO, kastore or TBL file (ZIP archive)"
    assert run.stderr.splitlines() == [line]


def _break_info(monkeypatch) -> None:
    import itarcore.cli.taridx as taridx_cli

    def broken(path: str, args: object) -> dict:
        raise ValueError("a bug\nover two lines")

    monkeypatch.setattr(taridx_cli, "info", broken)


def test_cli_unexpected_exception_is_one_line_and_exit_2(monkeypatch, capsys, data_dir: Path) -> None:
    _break_info(monkeypatch)
    code = main(["info", str(data_dir / "taridx" / "webds" / "val.taridx")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("itarcore: error: internal error (ValueError: a bug over two lines)")
    assert "itarcore --debug" in err


@pytest.mark.parametrize("where", ["before", "after"])
def test_cli_debug_shows_the_traceback(monkeypatch, capsys, data_dir: Path, where: str) -> None:
    _break_info(monkeypatch)
    argv = ["info", str(data_dir / "taridx" / "webds" / "val.taridx")]
    code = main(["--debug", *argv] if where == "before" else [*argv, "--debug"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("Traceback (most recent call last):") and 'in broken\n    raise ValueError("a bug' in err
    assert err.splitlines()[-1].startswith("itarcore: error: internal error (ValueError")


def test_cli_debug_on_an_expected_error(capsys, tmp_path: Path) -> None:
    assert main(["--debug", "info", str(tmp_path / "missing.taridx")]) == 2
    err = capsys.readouterr().err
    assert "FileNotFoundError" in err and err.splitlines()[-1] == f"itarcore: error: {tmp_path / 'missing.taridx'}: no such file"


# -- 3. decode raises DecodeError only -----------------------------------------------------------------


def parquet_with_invalid_utf8() -> bytes:
    """A parquet file pyarrow writes, whose string value is then replaced by bytes that are not UTF-8."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    buf = io.BytesIO()
    pq.write_table(pa.table({"name": ["QQQQQQQQ"], "n": [1]}), buf, compression="none", use_dictionary=False,
                   write_statistics=False)
    data = buf.getvalue()
    assert data.count(b"QQQQQQQQ") == 1  # the value is stored once, plain: relabel it in place
    return data.replace(b"QQQQQQQQ", b"\xff\xfeQQQQQQ")


def test_parquet_with_invalid_utf8_shows_the_bytes() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = parquet_with_invalid_utf8()
    with pytest.raises(UnicodeDecodeError):  # what pyarrow itself raises
        pq.ParquetFile(pa.BufferReader(data)).read().to_pylist()
    got = decode(data, "parquet")
    assert got.kind == "table" and got.value["rows"] == [{"name": b"\xff\xfeQQQQQQ", "n": 1}]
    assert got.description.endswith("(text that is not UTF-8 shown as bytes)")


def test_damaged_parquet_is_a_decode_error() -> None:
    data = parquet_with_invalid_utf8()
    damaged = data[:4] + bytes(len(data) - 8) + data[-4:]  # the magic at both ends, nothing between
    with pytest.raises(DecodeError, match="not a decodable parquet payload"):
        decode(damaged, "parquet")


def test_any_decoder_failure_becomes_decode_error(monkeypatch) -> None:
    from itarcore import decoders

    def scipy_like(data: bytes, meta: dict | None = None) -> None:
        raise TypeError("unexpected mat5 layout")

    monkeypatch.setitem(decoders.DECODERS, "mat", scipy_like)
    with pytest.raises(DecodeError, match=r"not a decodable mat payload \(TypeError: unexpected mat5 layout\)"):
        decode(b"MATLAB 5.0", "mat")


def test_cls_with_invalid_utf8_shows_its_bytes() -> None:
    got = decode(b"\xff3\n", "cls")
    assert got.kind == "text" and got.value == "\ufffd3\n" and "not an ASCII integer" in got.description
    assert decode(b" 42\n", "cls").value == 42 and decode(b"-3", "cls").value == -3
    assert decode(b"+-5", "cls").kind == "text"


# -- 4. numbers from files are range-checked before a cast ---------------------------------------------


def test_parse_headers_base256_size_beyond_int64() -> None:
    headers = np.zeros((2, 512), np.uint8)
    headers[:, :5] = np.frombuffer(b"a.bin", np.uint8)
    headers[0, 124:136] = np.frombuffer(b"\x80" + b"\xff" * 11, np.uint8)  # 2**88 - 1
    headers[1, 124:136] = np.frombuffer(b"\x80" + (5000).to_bytes(11, "big"), np.uint8)
    cols = parse_headers(headers, "x.tar", np.array([0, 512], np.int64), [])
    assert cols.size_ok.tolist() == [False, True] and cols.sizes.tolist() == [-1, 5000]


@pytest.fixture
def fold_with_header_like_payload(tmp_path: Path) -> tuple[Path, int]:
    """A one-shard fold whose .bin payload is blocks of 0x80 (a huge base-256 size if read as a header)."""
    shard = tmp_path / "fold_0000.tar"
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tf:
        for name, payload in (("s0.bin", b"\x80" * 1024), ("s0.cls", b"1"), ("s1.cls", b"2")):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    with tarfile.open(shard) as tf:
        data_offset = tf.getmember("s0.bin").offset_data
    index = tmp_path / "fold.taridx"
    index_fold([shard], index)
    return index, data_offset


def set_row_field(index: Path, row: int, field: str, value: int) -> None:
    off_arr = read_taridx(index, check_rows=False).header.off_arr
    data = bytearray(index.read_bytes())
    start = off_arr + row * ROW_DTYPE.itemsize + ROW_DTYPE.fields[field][1]
    width = ROW_DTYPE.fields[field][0].itemsize
    data[start : start + width] = value.to_bytes(width, "little")
    index.write_bytes(bytes(data))


def test_verify_full_row_pointing_at_a_huge_base256_size(fold_with_header_like_payload, capsys) -> None:
    index, data_offset = fold_with_header_like_payload
    set_row_field(index, 0, "offset", data_offset)  # the row now points into its own payload
    assert main(["verify", "--full", str(index)]) == 1
    out = capsys.readouterr().out
    assert "bad_header" in out and "row 0: no valid tar header there" in out


@pytest.mark.parametrize("field,value", [("size", (1 << 64) - 1), ("size", 1 << 63), ("offset", (1 << 64) - 512)])
def test_rows_reaching_past_the_shard_with_u64_extremes(fold_with_header_like_payload, field: str, value: int) -> None:
    """offset + size must not wrap around int64 and pass for a row inside the shard."""
    index, _ = fold_with_header_like_payload
    set_row_field(index, 1, field, value)
    for report in (quick_check(index), audit_index(index)):
        outside = [f for f in report.findings if f.kind in ("outside_shard", "truncated_shard", "row_mismatch")]
        assert [f.rows for f in outside] == [[1]] and outside[0].severity == "error", report.summary_text()


def test_extension_bytes_of_a_row_with_a_u64_size(webds: Path) -> None:
    """The per-extension byte sum of a damaged size stays a large positive number, not a wrapped cast."""
    index = webds / "val.taridx"
    rows = read_taridx(index).rows.copy()
    set_row_field(index, 0, "size", (1 << 64) - 1)
    doc = open_document(index)
    try:
        table = doc.table("extensions")
        extid = int(rows["extid"][0])
        total = int(table.column("Bytes").get(np.array([extid]))[0])
        others = [int(table.column("Bytes").get(np.array([e]))[0]) for e in range(table.n_rows) if e != extid]
        truth = [int(rows["size"][rows["extid"] == e].sum()) for e in range(table.n_rows) if e != extid]
        assert total >= 1 << 62 and others == truth
    finally:
        doc.close()


def test_unchecked_rows_of_a_big_index_name_no_table_entry(webds: Path, monkeypatch, capsys) -> None:
    """Rows of an index over the eager-check size are checked by verify, not at open: lookups check their ids."""
    from itarcore.dataset import Dataset
    from itarcore.formats import taridx

    index = webds / "train.taridx"
    header = read_taridx(index).header
    set_row_field(index, 3, "extid", header.n_ext + 4)
    set_row_field(index, 5, "crashid", header.n_crash + 9)
    monkeypatch.setattr(taridx, "EAGER_ROW_CHECK_BYTES", 0)  # as if the index were over 256 MiB
    with Dataset.open(index) as ds:
        assert not ds.index.rows_checked
        with pytest.raises(FormatError, match=rf"'extid' at offset {header.off_arr + 3 * 32 + 18}.*row 3"):
            ds.ext_of(3)
        (webds / "train_0000.tar").unlink()  # names come from the crash table when the shard is missing
        assert ds.stem_names([5]) == [""]
    assert main(["rows", str(index), "--start", "3", "--limit", "1", "--json"]) == 2
    assert "row 3: extension id out of range" in capsys.readouterr().err


def test_lz4_sample_claiming_more_than_its_block_can_hold(data_dir: Path, tmp_path: Path) -> None:
    """lz4 allocates the claimed size up front: a claim no block of that size can reach is refused first."""
    from itarcore.formats.tbl import TblFile

    path = tmp_path / "claims.tbl"
    path.write_bytes((data_dir / "tbl" / "v2_lz4_meta.tbl").read_bytes())
    with TblFile(path) as tbl:
        i = next(i for i in range(len(tbl)) if tbl.is_compressed(i))
        at, stored = tbl.entry_offset(i) + 12, len(tbl.stored(i))
    data = bytearray(path.read_bytes())
    data[at : at + 4] = (0xFFFF_FFFF).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with TblFile(path, check_header_crc=False) as tbl, pytest.raises(FormatError) as caught:
        tbl.read_sample(i)
    assert f"field 'entry[{i}].uncompressed_size' at offset {at}" in str(caught.value)
    assert f"more than an LZ4 block of {stored} bytes can hold" in str(caught.value)


def test_deeply_nested_json_metadata_is_a_format_error(tmp_path: Path) -> None:
    """json.loads raises RecursionError, not ValueError, on deep nesting: still bad metadata, not a crash."""
    from itarcore.formats.tbl import TblFile
    from itarcore.formats.tbl_write import write_tbl

    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(RecursionError):
        json.loads(deep)
    path = tmp_path / "deep.tbl"
    write_tbl(path, [(b"\x00" * 12, "RAW_U8")], metadata={0: [("json", deep)]})
    with TblFile(path) as tbl, pytest.raises(FormatError, match="metadata JSON"):
        tbl.decode_metadata(tbl.metadata_for(0)[0])
    doc = open_document(path)
    try:
        assert doc.table("samples").lookup("anything").tolist() == []  # the name search skips it
        with pytest.raises(FormatError, match="metadata JSON"):
            doc.table("metadata").payload(0)
    finally:
        doc.close()


def test_convert_keeps_a_deeply_nested_json_sidecar_as_text(tmp_path: Path) -> None:
    from itarcore.formats.tbl import TblFile
    from itarcore.jobs import convert_tar_to_tbl

    deep = b"[" * 100_000
    shard = tmp_path / "in_0000.tar"
    with tarfile.open(ROOT / "tests" / "data" / "tbl" / "images.tar") as tf:
        image = next(m for m in tf.getmembers() if m.name.endswith(".png"))
        image_bytes = tf.extractfile(image).read()
    with tarfile.open(shard, "w") as tf:
        for name, payload in (("s0.png", image_bytes), ("s0.json", deep)):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    convert_tar_to_tbl([shard], tmp_path / "out.tbl", metadata_from="json")
    with TblFile(tmp_path / "out.tbl") as tbl:
        (block,) = tbl.metadata_for(0)
        assert json.loads(tbl.metadata_bytes(block))["json"] == deep.decode()


def test_full_audit_of_a_row_pointing_at_the_end_marker(fold_with_header_like_payload) -> None:
    """Every checked row of a shard at a nameless block (the zero end marker): a bad header, not a crash."""
    index, _ = fold_with_header_like_payload
    shard = index.with_name("fold_0000.tar")
    end_marker = shard.stat().st_size - 1024
    for row in range(3):
        set_row_field(index, row, "offset", end_marker)
        set_row_field(index, row, "size", 0)
    report = audit_index(index)
    bad = [f for f in report.findings if f.kind == "bad_header"]
    assert [f.rows for f in bad] == [[0, 1, 2]] and bad[0].severity == "error", report.summary_text()
