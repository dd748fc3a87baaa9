"""Column-at-a-time parts of the numpy scan and name split, against per-row truth.

Truth: ``parse_number`` (one field at a time), byte comparisons of each block, ``split_name``
(the per-row NOTES.md rule) and ``tarfile``; random inputs include the awkward cases
(look-alike magic, junk after a name's NUL, spaces and odd bytes in numbers).
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.errors import FormatError
from itarcore.formats.tar import block_candidates, crop_names, scan_tar
from itarcore.formats.tar_fields import parse_number, parse_octal_columns
from itarcore.indexing.indexer import _gather, _split_name_fields, _stems_and_extensions, shard_members, split_name


def _number_or_none(raw: bytes) -> int | None:
    try:
        return parse_number(raw, "f", "size", 0)
    except FormatError:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_octal_columns_equal_parse_number_row_by_row(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, width = 400, 12
    values = rng.integers(0, 8**11, n)
    fields = np.frombuffer(b"".join(b"%011o\0" % v for v in values), np.uint8).reshape(n, width).copy()
    if seed % 3:  # spoil some rows: the fast form no longer holds, the general rule decides
        rows = rng.choice(n, 20, replace=False)
        cols = rng.integers(0, width, 20)
        fields[rows, cols] = rng.choice(np.frombuffer(b"089 \0/:x\x80", np.uint8), 20)
    values_got, ok = parse_octal_columns(fields)
    for row in range(n):
        want = None if fields[row, 0] & 0x80 else _number_or_none(bytes(fields[row]))  # base-256 is not octal
        if want is None:
            assert not ok[row], bytes(fields[row])
        else:
            assert ok[row] and values_got[row] == want, bytes(fields[row])


def test_octal_columns_fast_form_of_twelve_digits_and_empty_input() -> None:
    fields = np.frombuffer(b"777777777777" + b"000000000001", np.uint8).reshape(2, 12)
    values, ok = parse_octal_columns(fields)
    assert ok.all() and values.tolist() == [8**12 - 1, 1]
    values, ok = parse_octal_columns(np.zeros((0, 12), np.uint8))
    assert len(values) == len(ok) == 0


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_block_candidates_find_exactly_the_magic_blocks(layout: str) -> None:
    rng = np.random.default_rng(11)
    n = 3000
    blocks = rng.integers(0, 256, (n, 512), dtype=np.uint8)
    real = np.sort(rng.choice(n, 300, replace=False))
    for i, b in enumerate(real.tolist()):
        blocks[b] = np.frombuffer(_header(f"s{i:05d}.jpg", int(rng.integers(0, 1 << 30))), np.uint8)
    lookalikes = [b"xustarx", b"\0ustaR\0", b"ustar\0\0", b"\0ustar ", b"\0\0ustar"]  # only the 4th is at 257
    for i, b in enumerate(rng.choice(np.setdiff1d(np.arange(n), real), 200, replace=False).tolist()):
        blocks[b, 256:263] = np.frombuffer(lookalikes[i % len(lookalikes)], np.uint8)
    if layout == "strided":  # every other block of a bigger matrix: not contiguous
        bigger = np.zeros((2 * n, 512), np.uint8)
        bigger[::2] = blocks
        blocks = bigger[::2]
    start = 1000
    cand, sizes, size_ok, checksum_ok, flags, names, _ = block_candidates(blocks, start)
    want = [b for b in range(n) if bytes(blocks[b, 257:262]) == b"ustar"]
    assert (cand - start).tolist() == want
    assert set(real.tolist()) <= set(want)
    planted = set(real.tolist())
    width = names.shape[1]
    for row, b in enumerate(want):
        header = bytes(blocks[b])
        assert flags[row] == header[156]
        assert bytes(names[row]) == header[:width] and not any(header[width:100])
        if b in planted:
            assert size_ok[row] and sizes[row] == int(header[124:135], 8) and checksum_ok[row]


def test_crop_names_keeps_columns_up_to_the_last_used_one() -> None:
    rng = np.random.default_rng(5)
    for width_used in (0, 1, 17, 100):
        fields = np.zeros((50, 100), np.uint8)
        if width_used:
            fields[rng.integers(0, 50, 10), rng.integers(0, width_used, 10)] = 7
            fields[3, width_used - 1] = 9
        cropped = crop_names(fields)
        assert cropped.shape == (50, width_used) and (cropped == fields[:, :width_used]).all()
    assert crop_names(np.zeros((0, 100), np.uint8)).shape == (0, 0)


def _reference_split(field: bytes) -> tuple[int, int, int]:
    """(stem start, dot, end) of one name field by the per-row rule."""
    end = field.find(b"\0") if b"\0" in field else len(field)
    name = field[:end]
    start = name.rfind(b"/") + 1
    stem, _ = split_name(name)
    return start, start + len(stem), end


@pytest.mark.parametrize("seed", range(5))
def test_column_split_equals_split_name(seed: int) -> None:
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"\0\0./..//aBZ\x80\xc3q", np.uint8)
    n, width = 600, int(rng.integers(1, 30))
    fields = alphabet[rng.integers(0, len(alphabet), (n, width))]
    start, dot, end = _split_name_fields(fields)
    assert [(int(a), int(b), int(c)) for a, b, c in zip(start, dot, end)] == [_reference_split(bytes(f)) for f in fields]
    stems, stem_len, exts = _stems_and_extensions(fields)
    for row in range(n):
        name = bytes(fields[row]).split(b"\0", 1)[0]
        stem, ext = split_name(name)
        assert bytes(stems[row, : stem_len[row]]) == stem and not stems[row, stem_len[row] :].any()
        assert bytes(exts[row]).rstrip(b"\0") == ext.encode("utf-8", "surrogateescape").lower() or not ext.isascii()


def test_column_split_of_empty_and_zero_width_fields() -> None:
    for fields in (np.zeros((4, 0), np.uint8), np.zeros((4, 6), np.uint8), np.zeros((0, 6), np.uint8)):
        start, dot, end = _split_name_fields(fields)
        assert start.tolist() == dot.tolist() == end.tolist() == [0] * len(fields)


def test_gather_with_offsets_equals_slicing() -> None:
    rng = np.random.default_rng(9)
    fields = rng.integers(1, 256, (300, 25), dtype=np.uint8)
    start = rng.integers(0, 25, 300)
    length = rng.integers(0, 26, 300)
    length = np.minimum(length, 25 - start)
    out = _gather(fields, start, length, int(length.max()))
    for row in range(300):
        want = bytes(fields[row, start[row] : start[row] + length[row]])
        assert bytes(out[row]).rstrip(b"\0") == want and len(want) == length[row]


def test_scan_of_folders_and_odd_names_equals_tarfile(tmp_path: Path) -> None:
    names = ["a/b.c/d.JPG", "x.tar.gz", "noext", ".hidden", "dir/", "deep/er/s.t.u", "y" * 99 + ".b",
             "UPPER.PNG", "sp ace.txt", "tab\t.x"]
    path = tmp_path / "odd_0000.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for i, name in enumerate(names):
            info = tarfile.TarInfo(name)
            data = bytes([i]) * (i * 700)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with tarfile.open(path) as tar:
        truth = [m for m in tar.getmembers() if m.isreg()]
    scan = scan_tar(path, compiled=False)
    assert scan.names == [m.name for m in truth]
    assert scan.sizes.tolist() == [m.size for m in truth]
    members = shard_members(path, compiled=False)
    for row, member in enumerate(truth):
        stem, ext = split_name(member.name.encode())
        assert members.stem(row) == stem and members.ext_names[members.ext_codes[row]] == ext


def test_text_name_check_reports_the_first_odd_row_in_archive_order() -> None:
    from itarcore.formats.tar import TarScan
    from itarcore.formats.tar_names import check_text_names

    fields = np.tile(np.frombuffer(b"abc.jpg\0", np.uint8), (8, 1))
    fields[5, 1:3] = 0xFF  # not UTF-8, two odd bytes in one row
    fields[2, 0] = 0xE9
    fields[2, 4] = 0xC3
    offsets = np.arange(8, dtype=np.int64) * 1024
    scan = TarScan("s.tar", 8192, offsets, np.zeros(8, np.int64), fields)
    with pytest.raises(FormatError, match="not UTF-8") as info:
        check_text_names(scan)
    assert info.value.offset == 2 * 1024
    fields[2] = np.frombuffer(b"ok.\xc3\xa9\0\0\0", np.uint8)  # UTF-8 text: fine, row 5 is next
    with pytest.raises(FormatError) as info:
        check_text_names(scan)
    assert info.value.offset == 5 * 1024
    fields[5] = np.frombuffer(b"a.j\npg\0\0", np.uint8)
    check_text_names(scan)  # a newline is refused only when asked
    with pytest.raises(FormatError, match="'\\\\n'"):
        check_text_names(scan, forbidden=b"\0\n")
    check_text_names(TarScan("e.tar", 0, offsets[:0], offsets[:0], np.zeros((0, 0), np.uint8)))


def test_block_candidates_in_reused_room_return_copies() -> None:
    """Header blocks copied into a reused scratch buffer: the same fields, none of them a view of the buffer."""
    rng = np.random.default_rng(13)
    blocks = np.zeros((64, 512), np.uint8)
    for b in range(0, 64, 3):
        blocks[b] = np.frombuffer(_header(f"dir/n{b:03d}.Png", b * 1000), np.uint8)
    plain = block_candidates(blocks, 7)
    scratch = rng.integers(0, 256, (64, 512), dtype=np.uint8)
    reused = block_candidates(blocks, 7, scratch)
    scratch[:] = 0xAA  # the next chunk lands here
    for a, b in zip(plain, reused):
        assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
        assert not np.shares_memory(b, scratch)
