"""Tar header fields: octal and base-256 numbers, header checksums, pax records.

Shared by the scanner (``tar.py``), the audit and the dataset's stale-row checks.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import ChecksumError, FormatError, TruncatedError

BLOCK = 512


def parse_octal_columns(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse (n, w) ASCII octal fields by the rule of :func:`parse_number`; returns (values, ok)."""
    n, width = fields.shape
    # Fast form written by every common tool: the same number of zero-padded digits in every
    # row, then only NULs and spaces (e.g. "00000001750\0" for sizes, "001750\0 " for checksums).
    # Digits minus '0' wrap below zero as uint8, so one test (<= 7) checks both bounds.
    if n == 0:
        return _parse_octal_general(fields)
    first = (fields[0] - 48) <= 7
    n_digits = int(first.argmin()) if not first.all() else width
    if n_digits:
        digits = fields[:, :n_digits] - np.uint8(48)
        tail = fields[:, n_digits:]
        if (digits <= 7).all() and ((tail == 0) | (tail == 32)).all():
            value = digits[:, 0].astype(np.int64)
            for col in range(1, n_digits):  # at most 12 digits: 36 bits
                value <<= 3
                value |= digits[:, col]
            return value, np.ones(n, bool)
    return _parse_octal_general(fields)


def _parse_octal_general(fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The octal rule of :func:`parse_number`, column by column: spaces, digits, spaces; a NUL ends the field."""
    n, width = fields.shape
    value = np.zeros(n, np.int64)
    started = np.zeros(n, bool)  # a digit seen
    trailing = np.zeros(n, bool)  # a space after the digits: only spaces may follow
    ended = np.zeros(n, bool)  # a NUL seen: the rest of the field is ignored
    ok = np.ones(n, bool)
    for col in range(width):
        b = fields[:, col]
        live = ~ended
        digit = (b >= 48) & (b <= 55) & live
        space = (b == 32) & live
        ended |= (b == 0) & live
        ok &= ~(live & ~digit & ~space & (b != 0))  # any other byte before the NUL
        ok &= ~(digit & trailing)  # digits after the trailing spaces
        trailing |= space & started
        value = np.where(digit & ok, value * 8 + (b.astype(np.int64) - 48), value)
        started |= digit
    return value, ok


def base256(raw: bytes) -> int | None:
    """A GNU base-256 number (lead byte 0x80 positive, 0xFF negative, as tarfile); None for any other lead byte."""
    if raw[0] not in (0x80, 0xFF):
        return None
    value = int.from_bytes(raw[1:], "big")
    return value - (1 << (8 * (len(raw) - 1))) if raw[0] == 0xFF else value


_OCTAL = re.compile(rb" *[0-7]* *")


def parse_number(raw: bytes, path: str, fieldname: str, offset: int) -> int:
    """One numeric header field: octal, or GNU base-256 when the top bit is set.

    Octal, as every walk reads it (the compiled one and the column parsers too, so the
    routes agree): the field ends at its first NUL; before that, optional spaces, octal
    digits, optional spaces, nothing else (no sign, tab or ``_`` that ``int`` would take).
    No digits is 0.
    """
    if raw and raw[0] & 0x80:
        value = base256(raw)
        if value is None:
            raise FormatError(path, fieldname, offset, "base-256 number with an unknown lead byte",
                              expected="0x80 or 0xff", found=f"0x{raw[0]:02x}")
        return value
    text = raw.split(b"\0", 1)[0]
    if not _OCTAL.fullmatch(text):
        raise FormatError(path, fieldname, offset, "not an octal number", expected="octal digits", found=raw)
    return int(text.strip(b" ") or b"0", 8)


def parse_pax_size(value: bytes, path: str, offset: int) -> int:
    """A pax ``size`` record's value: decimal digits only."""
    if not value.isdigit() or not value.isascii():
        raise FormatError(path, "pax size", offset, "not a decimal size", expected="decimal digits", found=value)
    return int(value)


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


def checksum_error(path: str, offset: int, header: bytes) -> ChecksumError:
    """The error for the header at ``offset`` whose checksum does not match (the same from every walk)."""
    raw = header[148:156]
    _, ok = parse_octal_columns(np.frombuffer(raw, np.uint8).reshape(1, 8))
    found = checksum_values(header)[0] if ok[0] else raw
    return ChecksumError(path, "chksum", offset + 148, "tar header checksum mismatch (not a tar header?)",
                         expected=checksum_values(header)[1], found=found)


def truncated_header(path: str, offset: int, file_size: int) -> TruncatedError:
    """The error for a file that ends inside the header block at ``offset`` (or before it, in padding)."""
    if offset > file_size:
        return TruncatedError(path, "padding", file_size, "file ends inside the padding after a member's data",
                              expected=f"padding up to offset {offset}", found=f"end of file at {file_size}")
    return TruncatedError(path, "header", offset, "tar header cut short by end of file",
                          expected=f"{BLOCK} bytes", found=f"{file_size - offset} bytes")
