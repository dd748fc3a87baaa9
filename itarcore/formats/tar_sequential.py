"""The strict tar walk: one header at a time, exact for every tar dialect, with precise errors.

:func:`itarcore.formats.tar.scan_tar` (and the remote scan in ``tar_stream``) hand it any
archive their fast routes find unusual: a bad checksum, truncation, GNU long names, pax
records, data after the end marker. ``mm`` is anything sliced as bytes: a file mapping,
or a remote reader.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError, TruncatedError
from ..progress import ProgressReporter
from .tar import _REGULAR, _ZERO_BLOCK, TarScan, crop_names
from .tar_fields import (
    BLOCK,
    checksum_error,
    header_checksum_ok,
    parse_number,
    parse_pax,
    parse_pax_size,
    truncated_header,
)
from .tar_names import NAME_LEN, header_name


def scan_sequential(mm, path: str, file_size: int, reporter: ProgressReporter) -> TarScan:
    """Strict one-header-at-a-time walk: exact for every tar dialect, precise errors."""
    offsets: list[int] = []
    sizes: list[int] = []
    fields: list[bytes] = []
    full_names: dict[int, bytes] = {}
    pending_long: bytes | None = None
    pending_pax: dict[str, bytes] = {}
    global_pax: dict[str, bytes] = {}
    pending_pax_at = 0  # payload offset of the pax record that set the pending size
    skipped = 0
    off = 0
    while True:
        if off + BLOCK > file_size:
            if off == file_size:
                break  # no end-of-archive marker: accepted, as tarfile does
            raise truncated_header(path, off, file_size)
        header = mm[off : off + BLOCK]
        if header == _ZERO_BLOCK:
            break
        if not header_checksum_ok(header):
            raise checksum_error(path, off, header)
        size = parse_number(header[124:136], path, "size", off + 124)
        flag = header[156]
        if "size" in pending_pax:
            size = parse_pax_size(pending_pax["size"], path, pending_pax_at)
        if size < 0:
            raise FormatError(path, "size", off + 124, "negative size", found=size)
        data_end = off + BLOCK + size
        if data_end > file_size:
            raise TruncatedError(path, "payload", off + BLOCK, "member data runs past end of file",
                                 expected=f"{size} bytes", found=f"{max(0, file_size - off - BLOCK)} bytes")
        if flag == ord("L"):
            pending_long = mm[off + BLOCK : data_end].split(b"\0", 1)[0]
        elif flag in (ord("x"), ord("g")):
            records = parse_pax(mm[off + BLOCK : data_end], path, off + BLOCK)
            (pending_pax if flag == ord("x") else global_pax).update(records)
            if flag == ord("x") and "size" in records:
                pending_pax_at = off + BLOCK
        elif flag == ord("K"):
            pass
        else:
            if flag in _REGULAR:
                name = header_name(mm, off)
                pax_path = pending_pax.get("path", global_pax.get("path"))
                full = pax_path if pax_path is not None else pending_long if pending_long is not None else name
                raw_field = header[:NAME_LEN]
                if full != raw_field.split(b"\0", 1)[0]:
                    full_names[len(offsets)] = full
                offsets.append(off)
                sizes.append(size)
                fields.append(raw_field)
            else:
                skipped += 1
            pending_long, pending_pax = None, {}
            off = data_end + (-size % BLOCK)
            reporter.update(off)
            continue
        skipped += 1
        off = data_end + (-size % BLOCK)
    name_fields = crop_names(np.frombuffer(b"".join(fields), np.uint8).reshape(len(fields), NAME_LEN))
    return TarScan(path, file_size, np.array(offsets, np.int64), np.array(sizes, np.int64), name_fields,
                   full_names, off, skipped, method="sequential")
