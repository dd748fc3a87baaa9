"""Tar header fields: octal and base-256 numbers, header checksums, pax records.

Shared by the scanner (``tar.py``), the audit and the dataset's stale-row checks.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError

BLOCK = 512


def parse_octal_columns(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse (n, w) ASCII octal fields; returns (values, ok). Leading spaces/NULs, then digits, then NUL/space."""
    n, width = fields.shape
    # Fast form written by every common tool: the same number of zero-padded digits in every
    # row, then only NULs and spaces (e.g. "00000001750\0" for sizes, "001750\0 " for checksums).
    is_digit = (fields >= 48) & (fields <= 55)
    n_digits = int(is_digit[0].argmin()) if n and not is_digit[0].all() else width
    if n and 0 < n_digits and is_digit[:, :n_digits].all() and np.isin(fields[:, n_digits:], (0, 32)).all():
        digits = fields[:, :n_digits].astype(np.int64) - 48
        return digits @ (8 ** np.arange(n_digits - 1, -1, -1, dtype=np.int64)), np.ones(n, bool)
    return _parse_octal_general(fields)


def _parse_octal_general(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, width = fields.shape
    value = np.zeros(n, np.int64)
    started = np.zeros(n, bool)
    stopped = np.zeros(n, bool)
    ok = np.ones(n, bool)
    for col in range(width):
        b = fields[:, col]
        digit = (b >= 48) & (b <= 55)
        filler = (b == 0) | (b == 32)
        ok &= digit | filler
        stopped |= started & ~digit
        ok &= ~(stopped & digit)  # digits after the terminator: not a number
        use = digit & ~stopped
        value = np.where(use, value * 8 + (b.astype(np.int64) - 48), value)
        started |= digit
    return value, ok


def parse_number(raw: bytes, path: str, fieldname: str, offset: int) -> int:
    """One numeric header field: octal, or GNU base-256 when the top bit is set."""
    if raw and raw[0] & 0x80:
        value = int.from_bytes(raw[1:], "big")
        if raw[0] == 0xFF:  # negative base-256
            value -= 1 << (8 * (len(raw) - 1))
        return value
    text = raw.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise FormatError(path, fieldname, offset, "not an octal number", found=raw) from None


def parse_pax(data: bytes, path: str, offset: int) -> dict[str, bytes]:
    """Parse pax extended header records ``"%d %s=%s\\n"``."""
    records: dict[str, bytes] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos)
        if space < 0:
            raise FormatError(path, "pax record", offset + pos, "record without a length")
        try:
            length = int(data[pos:space])
        except ValueError:
            raise FormatError(path, "pax record", offset + pos, "bad record length", found=data[pos:space]) from None
        end = pos + length
        if length <= space - pos or end > len(data) or data[end - 1 : end] != b"\n":
            raise FormatError(path, "pax record", offset + pos, "record length runs past the header", found=length)
        key, sep, value = data[space + 1 : end - 1].partition(b"=")
        if not sep:
            raise FormatError(path, "pax record", offset + pos, "record without '='")
        records[key.decode("utf-8", "replace")] = value
        pos = end
    return records


def checksums_ok(headers: np.ndarray) -> np.ndarray:
    """Whether each (n, 512) header's stored checksum matches its bytes (unsigned, or signed as old tars)."""
    stored, ok = parse_octal_columns(headers[:, 148:156])
    unsigned = headers.sum(axis=1, dtype=np.int32) - headers[:, 148:156].sum(axis=1, dtype=np.int32) + 8 * 32
    good = ok & (unsigned == stored)
    retry = np.flatnonzero(ok & ~good)  # some old writers summed signed bytes
    if len(retry):
        signed_hdr = headers[retry].view(np.int8)
        signed = signed_hdr.sum(axis=1, dtype=np.int64) - signed_hdr[:, 148:156].sum(axis=1, dtype=np.int64) + 256
        good[retry] = signed == stored[retry]
    return good


def header_checksum_ok(header: bytes) -> bool:
    """Whether one 512-byte block is a tar header by its checksum."""
    return bool(checksums_ok(np.frombuffer(header, np.uint8, count=BLOCK).reshape(1, BLOCK))[0])


def checksum_values(header: bytes) -> tuple[int, int]:
    """(stored, computed unsigned) checksum of one header, for error messages."""
    stored, _ = parse_octal_columns(np.frombuffer(header, np.uint8, count=BLOCK)[148:156].reshape(1, 8))
    return int(stored[0]), sum(header) - sum(header[148:156]) + 256
