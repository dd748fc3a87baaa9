"""TARIDX read/write against the reference fixtures and hand-corrupted copies."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from itarcore.errors import FormatError, TruncatedError, VersionError
from itarcore.formats.taridx import ROW_DTYPE, read_taridx, write_taridx

FOLDS = ("train", "val", "mixed")
HDR = struct.Struct("<8sHHHHQQIIQQB7s")


def parse_by_hand(raw: bytes) -> dict:
    """Independent parse with the struct module, straight from the spec's tables."""
    names = ("magic", "major", "minor", "rec_size", "hdr_size", "n_stems", "n_rows", "n_ext", "n_crash",
             "off_crash", "off_arr", "flags", "reserved")
    h = dict(zip(names, HDR.unpack_from(raw, 0)))
    ext_block = raw[64 : h["off_crash"]].decode()
    crash_block = raw[h["off_crash"] : h["off_arr"]].decode()
    h["extensions"] = ext_block.split("\n") if h["n_ext"] else []
    h["crash_stems"] = crash_block.split("\n") if h["n_crash"] else []
    h["rows"] = [struct.unpack_from("<HQQHIQ", raw, h["off_arr"] + 32 * i) for i in range(h["n_rows"])]
    return h


@pytest.mark.parametrize("fold", FOLDS)
def test_fixture_reads_exactly(data_dir: Path, fold: str) -> None:
    path = data_dir / "taridx" / "webds" / f"{fold}.taridx"
    truth = parse_by_hand(path.read_bytes())
    with read_taridx(path) as index:
        h = index.header
        for name in ("major", "minor", "rec_size", "hdr_size", "n_stems", "n_rows", "n_ext", "n_crash",
                     "off_crash", "off_arr", "flags"):
            assert getattr(h, name) == truth[name], name
        assert h.magic == truth["magic"].rstrip(b"\0") == b"TARIDX"
        assert index.extensions == truth["extensions"]
        assert index.crash_stems == truth["crash_stems"]
        assert [tuple(int(v) for v in r) for r in index.rows] == truth["rows"]


def test_empty_extension_is_kept(data_dir: Path) -> None:
    """NOTES.md: the README member has extension ''; the reference's own loader cannot read this."""
    with read_taridx(data_dir / "taridx/webds/train.taridx") as index:
        assert index.extensions[-1] == ""
        assert len(index.extensions) == index.header.n_ext == 10


@pytest.mark.parametrize("fold", FOLDS)
def test_round_trip_is_byte_identical(data_dir: Path, tmp_path: Path, fold: str) -> None:
    src = data_dir / "taridx" / "webds" / f"{fold}.taridx"
    with read_taridx(src) as index:
        out = tmp_path / f"{fold}.taridx"
        write_taridx(out, np.array(index.rows), index.extensions, index.crash_stems, index.header.n_stems)
    assert out.read_bytes() == src.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temp file left behind


def test_single_empty_extension_and_spaces_in_crash_stems(tmp_path: Path) -> None:
    rows = np.zeros(2, ROW_DTYPE)
    rows["crashid"] = [0, 1]
    out = tmp_path / "x.taridx"
    write_taridx(out, rows, [""], ["stem with spaces"], n_stems=2)
    raw = out.read_bytes()
    assert raw[64 : 64 + len("stem with spaces")] == b"stem with spaces"  # empty ext block, then crash block
    with read_taridx(out) as index:
        assert index.extensions == [""]
        assert index.crash_stems == ["stem with spaces"]


def test_newer_minor_version_is_accepted(data_dir: Path, tmp_path: Path) -> None:
    raw = bytearray((data_dir / "taridx/webds/val.taridx").read_bytes())
    raw[10:12] = struct.pack("<H", 7)
    p = tmp_path / "minor.taridx"
    p.write_bytes(raw)
    with read_taridx(p) as index:
        assert index.header.minor == 7 and index.n_rows == 98


def _corrupt(src: Path, tmp_path: Path, edit) -> Path:
    raw = bytearray(src.read_bytes())
    raw = edit(raw) or raw
    p = tmp_path / "bad.taridx"
    p.write_bytes(bytes(raw))
    return p


def _set(offset: int, fmt: str, value: int):
    def edit(raw: bytearray) -> None:
        struct.pack_into(fmt, raw, offset, value)
    return edit


CORRUPTIONS = {
    # name: (edit, exception type, field named in the message, offset named in the message)
    "bad magic": (lambda r: r.__setitem__(slice(0, 6), b"TARIDY"), VersionError, "magic", 0),
    "major 2": (_set(8, "<H", 2), VersionError, "major", 8),
    "rec_size 31": (_set(12, "<H", 31), FormatError, "rec_size", 12),
    "hdr_size 65": (_set(14, "<H", 65), FormatError, "hdr_size", 14),
    "off_crash below header": (_set(40, "<Q", 10), FormatError, "off_crash", 40),
    "off_arr past end": (_set(48, "<Q", 1 << 40), FormatError, "off_arr", 48),
    "off_arr before off_crash": (_set(48, "<Q", 70), FormatError, "off_arr", 48),
    "n_rows mismatch": (_set(24, "<Q", 737), FormatError, "n_rows", 24),
    "huge n_rows": (_set(24, "<Q", 1 << 62), FormatError, "n_rows", 24),
    "n_ext mismatch": (_set(32, "<I", 9), FormatError, "extensions", 64),
    "n_crash mismatch": (_set(36, "<I", 3), FormatError, "crash_stems", 108),
    "extid >= n_ext": (_set(125 + 18, "<H", 10), FormatError, "extid", 125 + 18),
    "crashid past table": (_set(125 + 20, "<I", 3), FormatError, "crashid", 125 + 20),
    "invalid utf-8": (lambda r: r.__setitem__(64, 0xFF), FormatError, "extensions", 64),
    "truncated mid-row": (lambda r: r[:-5], TruncatedError, "rows", 125),
    "truncated header": (lambda r: r[:40], TruncatedError, "header", 0),
    "n_stems above n_rows": (_set(16, "<Q", 10_000), FormatError, "n_stems", 16),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_gives_clear_format_error(data_dir: Path, tmp_path: Path, name: str) -> None:
    edit, exc_type, field, offset = CORRUPTIONS[name]
    p = _corrupt(data_dir / "taridx/webds/train.taridx", tmp_path, edit)
    with pytest.raises(exc_type) as info:
        read_taridx(p, check_rows=True)
    err = info.value
    assert isinstance(err, FormatError)
    assert err.field == field and err.offset == offset
    message = str(err)
    assert str(p) in message and f"'{field}'" in message and f"offset {offset}" in message


def test_huge_n_rows_on_tiny_file_allocates_nothing(tmp_path: Path) -> None:
    p = tmp_path / "tiny.taridx"
    p.write_bytes(struct.pack("<8sHHHHQQIIQQB7s", b"TARIDX", 1, 0, 32, 64, 1, (1 << 64) - 1, 0, 0, 64, 64, 0,
                              bytes(7)))
    with pytest.raises(FormatError, match="n_rows"):
        read_taridx(p)


def test_large_index_defers_row_checks(tmp_path: Path) -> None:
    """Above the eager limit rows are not scanned at open; check_rows still finds a bad extid."""
    n = (256 << 20) // 32 + 1
    p = tmp_path / "big.taridx"
    header = struct.pack("<8sHHHHQQIIQQB7s", b"TARIDX", 1, 0, 32, 64, 1, n, 1, 0, 67, 67, 0, bytes(7))
    with open(p, "wb") as fh:
        fh.write(header + b"jpg")
        fh.truncate(67 + 32 * n)  # sparse: all-zero rows are valid (extid 0 < n_ext 1)
        fh.seek(67 + 32 * (n - 1) + 18)
        fh.write(struct.pack("<H", 5))
    with read_taridx(p) as index:
        assert not index.rows_checked and index.n_rows == n
        with pytest.raises(FormatError, match=f"row {n - 1}"):
            index.check_rows()
