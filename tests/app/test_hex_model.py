"""The hex viewer's Qt-free logic against hand-computed values, struct.unpack and numpy."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from app.views.hex.model import (
    PAGE,
    BufferSource,
    CallableSource,
    PageCache,
    describe_range,
    dim_split,
    format_line,
    hex_text,
    offset_digits,
    parse_offset,
    selection_as_hex,
    selection_as_text,
)
from app.views.hex.values import TYPES, read_values


def test_format_line_matches_hexdump_c_layout():
    line = format_line(0x10, b"\x89KAS\r\n\x1a\n\x01\x00\x00\x00\x00\x03\x00\x7f")
    assert line == "00000010  89 4b 41 53 0d 0a 1a 0a  01 00 00 00 00 03 00 7f  .KAS............"
    short = format_line(0x20, b"ab")
    assert short == "00000020  61 62" + " " * 43 + "  ab"  # the hex area is 48 characters wide
    assert len(short) == len(line) - 14  # the ASCII column starts at the same place


def test_offset_digits_grow_past_4_gib():
    assert offset_digits(0) == offset_digits(1 << 32) == 8
    assert offset_digits((1 << 32) + 1) == 9
    assert offset_digits(1 << 40) == 10


def test_page_cache_reads_equal_slices_and_only_the_pages_asked_for():
    data = bytes(np.random.default_rng(1).integers(0, 256, 5 * PAGE + 123, dtype=np.uint8))
    calls: list[tuple[int, int]] = []

    def read(offset: int, length: int) -> bytes:
        calls.append((offset, length))
        return data[offset:offset + length]

    cache = PageCache(CallableSource(read, len(data)), max_pages=2)
    for offset, length in [(0, 10), (PAGE - 3, 7), (2 * PAGE + 5, PAGE), (len(data) - 5, 100), (len(data), 4)]:
        assert cache.read(offset, length) == data[offset:offset + length]
    assert calls == [(0, PAGE), (PAGE, PAGE), (2 * PAGE, PAGE), (3 * PAGE, PAGE), (5 * PAGE, 123)]
    calls.clear()
    assert cache.read(len(data) - 5, 5) == data[-5:]  # still cached
    assert cache.read(0, 1) == data[:1]  # evicted long ago: read again
    assert calls == [(0, PAGE)]


def test_buffer_source_serves_a_memoryview():
    raw = bytearray(range(200))
    source = BufferSource(memoryview(raw)[50:])
    assert source.size == 150
    assert source.read(0, 3) == bytes([50, 51, 52])
    assert source.read(148, 10) == bytes([198, 199])


@pytest.mark.parametrize("text, value", [
    ("1234", 1234), ("1,234", 1234), ("0x4d2", 1234), ("0X4D2", 1234), ("4d2h", 1234), ("4d2", 1234),
    (" 0x_10 ", 16), ("0", 0), ("4095", 4095),
])
def test_parse_offset_reads_decimal_and_hex(text, value):
    assert parse_offset(text, 4096) == value


@pytest.mark.parametrize("text, message", [
    ("", "Type an offset"), ("zz", "is not an offset"), ("4096", "past the end: the last byte is 4,095 (0xfff)"),
    ("-1", "offsets start at 0"), ("0x1000", "past the end"),
])
def test_parse_offset_explains_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_offset(text, 4096)


def test_selection_as_hex_and_text():
    data = b"\x89KAS\x00\tname\xff" + bytes(range(0x41, 0x51))
    assert selection_as_hex(data[:4]) == "89 4b 41 53"
    hexes = selection_as_hex(data)
    assert hexes.splitlines()[0] == "89 4b 41 53 00 09 6e 61 6d 65 ff 41 42 43 44 45"
    assert hexes.splitlines()[1] == "46 47 48 49 4a 4b 4c 4d 4e 4f 50"
    assert bytes.fromhex(hexes.replace("\n", " ")) == data
    # invalid UTF-8 reads as U+FFFD, a NUL as a dot, a tab stays a tab
    assert selection_as_text(data[:11]) == "\ufffdKAS.\tname\ufffd"
    assert selection_as_text("grüße".encode()) == "grüße"


def test_describe_range():
    assert describe_range(12, 13) == "0xc (12)"
    assert describe_range(12, 16) == "0xc–0xf (4 bytes)"


def test_inspector_values_match_struct_unpack_everywhere():
    data = bytes(np.random.default_rng(7).integers(0, 256, 64, dtype=np.uint8))
    codes = {"u8": "B", "i8": "b", "u16": "H", "i16": "h", "u32": "I", "i32": "i", "u64": "Q", "i64": "q",
             "f32": "f", "f64": "d"}
    for start in range(len(data) - 8):
        for little, prefix in ((True, "<"), (False, ">")):
            for reading, (name, width, _) in zip(read_values(data[start:start + 8], little), TYPES):
                truth = struct.unpack(prefix + codes[name], data[start:start + width])[0]
                assert reading.name == name
                if name.startswith("f"):
                    assert reading.value == truth or (np.isnan(truth) and np.isnan(reading.value))
                    # the text gives back the same float when read again (9 digits for f32, repr for f64)
                    again = struct.unpack(prefix + codes[name], struct.pack(prefix + codes[name], float(reading.text)))
                    assert again[0] == truth or np.isnan(truth)
                else:
                    assert reading.value == truth and reading.text == str(truth)


def test_inspector_hand_computed_values():
    one_and_half = bytes.fromhex("0000c03f")  # 1.5 as a little-endian float32
    values = {r.name: r for r in read_values(one_and_half + b"\xff\xff\xff\xff")}
    assert values["f32"].text == "1.5"
    assert values["u8"].value == 0 and values["u32"].value == 0x3FC00000
    assert values["i64"].value == -(1 << 32) + 0x3FC00000
    big = {r.name: r for r in read_values(bytes.fromhex("ff fe"), little_endian=False)}
    assert big["u16"].value == 0xFFFE and big["i16"].value == -2 and big["i8"].value == -1
    assert big["u32"].value is None and big["u32"].text == ""  # the bytes end before a u32 does
    pi = {r.name: r for r in read_values(struct.pack(">d", 3.141592653589793), little_endian=False)}
    assert pi["f64"].text == "3.141592653589793"


def test_dim_split_puts_zeros_and_unprintables_in_the_dim_run():
    hex_bright, hex_dim, ascii_bright, ascii_dim = dim_split(b"A\x00\x7f")
    assert hex_bright.rstrip() == "41    7f" and hex_dim.rstrip() == "   00"
    assert ascii_bright == "A  " and ascii_dim == " .."
    # the two runs of each column are the same width and together give the line back
    for bright, dim, whole in ((hex_bright, hex_dim, hex_text(b"A\x00\x7f")), (ascii_bright, ascii_dim, "A..")):
        assert len(bright) == len(dim) == len(whole)
        assert "".join(d if b == " " else b for b, d in zip(bright, dim)) == whole
