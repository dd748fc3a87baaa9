"""TBL v1/v2 reader and writers against the fixtures, turboloader, tarfile and hand-computed layouts."""
from __future__ import annotations

import json
import os
import struct
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from itarcore.errors import ChecksumError, FormatError, TruncatedError, VersionError, WriteError
from itarcore.formats import tbl_write
from itarcore.formats.tbl import FORMAT_NAMES, TblFile
from itarcore.formats.tbl_crc import crc16_modbus, crc16_modbus_many, crc16_modbus_numpy
from itarcore.formats.tbl_dims import pil_size
from itarcore.formats.tbl_write import TblWriter, format_for_name, write_all, write_tbl

DATA = Path(__file__).parents[1] / "data" / "tbl"
V2_FIXTURES = ["v2_plain.tbl", "v2_lz4_meta.tbl", "v2_empty.tbl"]
ALL_FIXTURES = ["v1_from_v1code.tbl", "v1_independent.tbl", *V2_FIXTURES]


def tar_members() -> list[tuple[str, bytes]]:
    with tarfile.open(DATA / "images.tar") as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]


def turboloader_or_skip():
    return pytest.importorskip("turboloader", reason="turboloader (optional interop dependency) cannot be imported")


def crc16_bitwise(data: bytes) -> int:
    """Textbook CRC-16/MODBUS, bit by bit: an independent reference for the table/lane code."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


# -- CRC ------------------------------------------------------------------------------------
def test_crc16_check_value_and_numpy_route_match_bitwise_reference():
    assert crc16_modbus(b"123456789") == 0x4B37  # the catalogued check value of CRC-16/MODBUS
    rng = np.random.default_rng(7)
    buffers = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 1, 2, 15, 16, 17, 300, 4097, 70_001)]
    expected = [crc16_bitwise(b) for b in buffers]
    assert crc16_modbus_numpy(buffers).tolist() == expected
    assert crc16_modbus_many(buffers).tolist() == expected


def test_crc16_routes_agree_on_views_of_one_buffer():
    rng = np.random.default_rng(8)
    blob = rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    lengths = [*range(40), *rng.integers(0, 700, 150).tolist(), 4095, 4096, 4097, 16_383, 65_536, 65_537]
    starts = rng.integers(0, len(blob) - 70_000, len(lengths)).tolist()
    views = [memoryview(blob)[a : a + n] for a, n in zip(starts, lengths)]  # as the tar conversion passes them
    expected = [crc16_bitwise(v) for v in views]
    assert crc16_modbus_numpy(views).tolist() == expected
    fastcrc = pytest.importorskip("fastcrc", reason="fastcrc (the optional 'crc' extra) is not installed")
    assert [fastcrc.crc16.modbus(v) for v in views] == expected


# -- reading --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", V2_FIXTURES)
def test_v2_fixture_reads_identically_to_turboloader(name):
    tl = turboloader_or_skip()
    ref = tl.TblReaderV2(str(DATA / name), verify_checksums=True)
    with TblFile(DATA / name) as tbl:
        assert tbl.version == 2 and tbl.num_samples == ref.num_samples()
        assert bool(tbl.flags & 1) == ref.is_compressed() and bool(tbl.metadata) == ref.has_metadata()
        for i in range(tbl.num_samples):
            info = ref.get_sample_info(i)
            e = tbl.entries[i]
            assert (int(e["offset"]), int(e["size"]), int(e["uncompressed_size"]), int(e["width"]),
                    int(e["height"]), int(e["format"])) == (info["offset"], info["size"], info["uncompressed_size"],
                                                            info["width"], info["height"], int(info["format"]))
            assert tbl.is_compressed(i) == info["is_compressed"]
            assert tbl.read_sample(i, verify=True) == ref.read_sample(i)
            if ref.has_metadata():
                text, kind = ref.read_metadata(i)
                (block,) = tbl.metadata_for(i)
                assert tbl.metadata_bytes(block).decode() == text and block.type == int(kind)
        assert tbl.verify().ok


def test_fixture_samples_equal_the_tar_members():
    members = tar_members()
    jpegs = [d for n, d in members if n.endswith(".jpg")]
    for name, expected in [("v1_from_v1code.tbl", jpegs), ("v1_independent.tbl", [d for _, d in members]),
                           ("v2_plain.tbl", [d for _, d in members]), ("v2_lz4_meta.tbl", [d for _, d in members])]:
        with TblFile(DATA / name) as tbl:
            assert [tbl.read_sample(i) for i in range(len(tbl))] == expected, name
    with TblFile(DATA / "v2_lz4_meta.tbl") as tbl:
        names = [tbl.decode_metadata(tbl.metadata_for(i)[0])["name"] for i in range(len(tbl))]
        assert names == [n for n, _ in members]
        for i, (_, data) in enumerate(members):  # dims in the index agree with Pillow's full parse
            assert (int(tbl.entries["width"][i]), int(tbl.entries["height"][i])) == pil_size(data)


def test_v1_fixture_layout_matches_notes():
    raw = (DATA / "v1_from_v1code.tbl").read_bytes()
    magic, version, n, header_size = struct.unpack_from("<4sIQI", raw)
    assert (magic, version, n, header_size) == (b"TBL\x01", 1, 4, 32 + 16 * 4)
    with TblFile(DATA / "v1_from_v1code.tbl") as tbl:
        assert [FORMAT_NAMES[c] for c in tbl.entries["format"]] == ["JPEG"] * 4
        assert int(tbl.entries["offset"][0]) == header_size  # index before data, absolute offsets
        assert tbl.verify().problems == ["TBL v1 stores no checksums; nothing to verify"]


# -- writing --------------------------------------------------------------------------------
def hand_v1(samples: list[tuple[bytes, int]]) -> bytes:
    """TBL v1 laid out by hand from specs/NOTES.md."""
    n = len(samples)
    header_size = 32 + 16 * n
    out = struct.pack("<4sIQI", b"TBL\x01", 1, n, header_size) + bytes(12)
    offset = header_size
    for data, fmt in samples:
        out += struct.pack("<QIB", offset, len(data), fmt) + bytes(3)
        offset += len(data)
    return out + b"".join(d for d, _ in samples)


def test_v1_writer_is_byte_identical_to_fixtures_and_hand_layout(tmp_path):
    members = tar_members()
    jpegs = [(d, 1) for n, d in members if format_for_name(n) == 1]
    everything = [(d, format_for_name(n)) for n, d in members]
    write_tbl(tmp_path / "a.tbl", jpegs, version=1)
    assert (tmp_path / "a.tbl").read_bytes() == (DATA / "v1_from_v1code.tbl").read_bytes() == hand_v1(jpegs)
    write_tbl(tmp_path / "b.tbl", everything, version=1)
    assert (tmp_path / "b.tbl").read_bytes() == (DATA / "v1_independent.tbl").read_bytes() == hand_v1(everything)
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_v2_writer_matches_turboloader_bytes_and_reads_back(tmp_path):
    tl = turboloader_or_skip()
    members = tar_members()
    samples = [(d, format_for_name(n)) for n, d in members]
    write_tbl(tmp_path / "plain.tbl", samples)
    assert (tmp_path / "plain.tbl").read_bytes() == (DATA / "v2_plain.tbl").read_bytes()
    write_tbl(tmp_path / "empty.tbl", [])
    assert (tmp_path / "empty.tbl").read_bytes() == (DATA / "v2_empty.tbl").read_bytes()
    meta = {i: [("json", json.dumps({"label": i % 3, "name": n}).encode())] for i, (n, _) in enumerate(members)}
    write_tbl(tmp_path / "lz4.tbl", samples, lz4=True, metadata=meta)
    ours = tl.TblReaderV2(str(tmp_path / "lz4.tbl"), verify_checksums=True)
    theirs = tl.TblReaderV2(str(DATA / "v2_lz4_meta.tbl"), verify_checksums=True)
    assert ours.is_compressed() and ours.has_metadata()
    for i, (_, data) in enumerate(members):
        assert ours.read_sample(i) == theirs.read_sample(i) == data
        assert ours.read_metadata(i) == theirs.read_metadata(i)
        a, b = ours.get_sample_info(i), theirs.get_sample_info(i)
        # LZ4 only where it saves bytes: the same samples end up compressed as in turboloader's file
        assert (a["is_compressed"], a["width"], a["height"]) == (b["is_compressed"], b["width"], b["height"])
        assert a["size"] < a["uncompressed_size"] if a["is_compressed"] else a["size"] == len(data)


def test_writer_accepts_msgpack_and_raw_metadata(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    payload = msgpack.packb({"label": 3, "tags": ["a", "b"]})
    write_tbl(tmp_path / "m.tbl", [(b"\x00" * 12, "RAW_U8")],
              metadata={0: [("msgpack", payload), ("custom", b"\x01\x02")]})
    with TblFile(tmp_path / "m.tbl") as tbl:
        a, b = tbl.metadata_for(0)
        assert (a.type_name, b.type_name) == ("msgpack", "custom")
        assert tbl.decode_metadata(a) == {"label": 3, "tags": ["a", "b"]}
        assert tbl.decode_metadata(b) == b"\x01\x02"
        assert int(tbl.entries["flags"][0]) == 2 and int(tbl.entries["format"][0]) == 8


def test_writer_refuses_bad_use_and_leaves_no_temp(tmp_path):
    with pytest.raises(WriteError, match="v1 cannot hold LZ4"):
        TblWriter(tmp_path / "x.tbl", 1, version=1, lz4=True)
    writer = TblWriter(tmp_path / "x.tbl", 2)
    writer.add(b"abc", "JPEG")
    with pytest.raises(WriteError, match="1 samples written but 2 declared"):
        writer.commit()
    assert os.listdir(tmp_path) == []
    (tmp_path / "keep.tbl").write_bytes(b"old")
    with pytest.raises(RuntimeError), TblWriter(tmp_path / "keep.tbl", 1) as w:
        w.add(b"abc", "PNG")
        raise RuntimeError("boom")
    assert (tmp_path / "keep.tbl").read_bytes() == b"old" and os.listdir(tmp_path) == ["keep.tbl"]


def test_write_all_groups_buffers_and_finishes_short_writes(tmp_path, monkeypatch):
    buffers = [bytes([i]) * i for i in range(40)] + [memoryview(b"view"), np.arange(5, dtype=np.uint8)]
    expected = b"".join(bytes(b) for b in buffers)
    real_writev = os.writev
    calls = []

    def short_writev(fd, group):  # the kernel may stop early: take at most 17 bytes of each call
        calls.append(len(group))
        return os.write(fd, b"".join(bytes(b) for b in group)[:17]) if group else real_writev(fd, group)

    monkeypatch.setattr(tbl_write, "_IOV_MAX", 6)
    monkeypatch.setattr(os, "writev", short_writev)
    with open(tmp_path / "out", "wb", buffering=0) as fh:
        write_all(fh.fileno(), buffers)
    assert (tmp_path / "out").read_bytes() == expected and max(calls) == 6


# -- corrupt input --------------------------------------------------------------------------
def corrupt(tmp_path: Path, name: str, edit) -> Path:
    raw = bytearray((DATA / name).read_bytes())
    raw = edit(raw) or raw
    out = tmp_path / f"bad_{name}"
    out.write_bytes(bytes(raw))
    return out


def fix_header_crc(raw: bytearray) -> None:
    raw[44:48] = bytes(4)
    raw[44:48] = struct.pack("<I", zlib.crc32(bytes(raw[:64])))


def test_bad_magic(tmp_path):
    path = corrupt(tmp_path, "v2_plain.tbl", lambda r: r.__setitem__(slice(0, 4), b"TBL\x03"))
    with pytest.raises(VersionError, match=r"field 'magic' at offset 0.*TBL\\x01 or TBL\\x02"):
        TblFile(path)


def test_v1_header_size_not_32_plus_16n(tmp_path):
    path = corrupt(tmp_path, "v1_from_v1code.tbl", lambda r: r.__setitem__(slice(16, 20), struct.pack("<I", 97)))
    with pytest.raises(FormatError, match=r"'header_size' at offset 16.*expected 96, found 97"):
        TblFile(path)


def test_v2_header_size_mismatch(tmp_path):
    def edit(r):
        r[16:20] = struct.pack("<I", 353)
        fix_header_crc(r)
    with pytest.raises(FormatError, match=r"'header_size'.*expected 352, found 353"):
        TblFile(corrupt(tmp_path, "v2_plain.tbl", edit))


def test_offset_past_end(tmp_path):
    size = (DATA / "v1_independent.tbl").stat().st_size
    # entry 5's offset field sits at 32 + 16*5
    path = corrupt(tmp_path, "v1_independent.tbl", lambda r: r.__setitem__(slice(112, 120), struct.pack("<Q", size)))
    with pytest.raises(TruncatedError, match=r"entry\[5\]\.offset' at offset 112.*past the end"):
        TblFile(path)


@pytest.mark.parametrize("name", ["v1_independent.tbl", "v2_plain.tbl", "v2_lz4_meta.tbl"])
def test_truncation_is_detected_at_open(tmp_path, name):
    full = (DATA / name).read_bytes()
    for cut in (2, 20, 40, 100, len(full) - 1):
        path = tmp_path / f"cut{cut}.tbl"
        path.write_bytes(full[:cut])
        with pytest.raises(TruncatedError, match=str(path)):
            TblFile(path)


def test_huge_count_is_refused_before_allocating(tmp_path):
    def edit(r):
        r[8:16] = struct.pack("<Q", 2**62)
        fix_header_crc(r)
    with pytest.raises(TruncatedError, match=r"'num_samples' at offset 8.*index cannot fit"):
        TblFile(corrupt(tmp_path, "v2_plain.tbl", edit))


def test_bad_header_crc(tmp_path):
    path = corrupt(tmp_path, "v2_plain.tbl", lambda r: r.__setitem__(slice(48, 49), b"\x01"))
    with pytest.raises(ChecksumError, match=r"'header_crc32' at offset 44.*expected 0x[0-9a-f]{8}, found 0x3bbe9226"):
        TblFile(path)
    with TblFile(path, check_header_crc=False) as tbl:
        report = tbl.verify()
        assert report.header_crc_ok is False and not report.ok


def test_bad_sample_crc_when_verifying(tmp_path):
    with TblFile(DATA / "v2_plain.tbl") as tbl:
        at = int(tbl.entries["offset"][3]) + 100  # inside the BMP's pixels
    path = corrupt(tmp_path, "v2_plain.tbl", lambda r: r.__setitem__(at, r[at] ^ 0xFF))
    with TblFile(path) as tbl:  # opening is fine: sample CRCs are checked on demand
        assert tbl.read_sample(2, verify=True)
        with pytest.raises(ChecksumError, match=r"entry\[3\]\.crc16' at offset 158.*sample CRC-16/MODBUS"):
            tbl.read_sample(3, verify=True)
        report = tbl.verify()
        assert report.bad_samples == [3] and report.checked == 12 and not report.ok
        assert tbl.crc_ok(3) is False and tbl.crc_ok(4) is True


def test_corrupt_lz4_block_and_metadata(tmp_path):
    with TblFile(DATA / "v2_lz4_meta.tbl") as tbl:
        start, meta_end = int(tbl.entries["offset"][0]), tbl.metadata_offset + tbl.metadata_size
        first_meta = tbl.metadata_offset
    path = corrupt(tmp_path, "v2_lz4_meta.tbl", lambda r: r.__setitem__(slice(start, start + 40), b"\xff" * 40))
    with TblFile(path) as tbl:
        with pytest.raises(FormatError, match=r"sample\[0\] LZ4 block"):
            tbl.read_sample(0)
        assert tbl.verify().bad_samples == [0]
    path = corrupt(tmp_path, "v2_lz4_meta.tbl",
                   lambda r: r.__setitem__(slice(first_meta, first_meta + 8), struct.pack("<Q", 99)))
    with pytest.raises(FormatError, match=r"metadata sample_index.*expected < 12, found 99"):
        TblFile(path)
    path = corrupt(tmp_path, "v2_lz4_meta.tbl",
                   lambda r: r.__setitem__(slice(first_meta + 8, first_meta + 12), struct.pack("<I", meta_end)))
    with pytest.raises(TruncatedError, match="metadata len"):
        TblFile(path)
