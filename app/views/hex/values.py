"""The value inspector's readings of the bytes at one offset, free of Qt (ImHex's data inspector)."""
from __future__ import annotations

import struct
from dataclasses import dataclass

# name, width in bytes, kind: "u" unsigned, "i" signed, "f" IEEE 754 float
TYPES: tuple[tuple[str, int, str], ...] = (
    ("u8", 1, "u"), ("i8", 1, "i"),
    ("u16", 2, "u"), ("i16", 2, "i"),
    ("u32", 4, "u"), ("i32", 4, "i"),
    ("u64", 8, "u"), ("i64", 8, "i"),
    ("f32", 4, "f"), ("f64", 8, "f"),
)
MAX_WIDTH = max(width for _, width, _ in TYPES)


@dataclass(frozen=True)
class Reading:
    name: str
    text: str  # what the inspector shows; empty when the file ends before the type does
    value: int | float | None


def _float_text(value: float, width: int) -> str:
    # 9 significant digits give back every float32 exactly; repr does the same for float64
    return f"{value:.9g}" if width == 4 else repr(value)


def read_values(data: bytes, little_endian: bool = True) -> list[Reading]:
    """Every type in ``TYPES`` read from the start of ``data`` (pass at least ``MAX_WIDTH`` bytes)."""
    order = "little" if little_endian else "big"
    readings = []
    for name, width, kind in TYPES:
        raw = data[:width]
        if len(raw) < width:
            readings.append(Reading(name, "", None))
            continue
        value: int | float
        if kind == "f":
            value = struct.unpack(("<" if little_endian else ">") + ("f" if width == 4 else "d"), raw)[0]
            text = _float_text(value, width)
        else:
            value = int.from_bytes(raw, order, signed=kind == "i")
            text = str(value)
        readings.append(Reading(name, text, value))
    return readings


def reading_tooltip(reading: Reading, offset: int, little_endian: bool) -> str:
    """The full story of one reading, for a tooltip."""
    width = next(w for n, w, _ in TYPES if n == reading.name)
    order = "little-endian" if little_endian else "big-endian"
    if reading.value is None:
        return f"{reading.name}: the file ends before {width} bytes from 0x{offset:x}"
    extra = f" = 0x{reading.value & ((1 << 8 * width) - 1):0{2 * width}x}" if isinstance(reading.value, int) else ""
    return f"{reading.name} ({order}) at 0x{offset:x}: {reading.text}{extra}"
