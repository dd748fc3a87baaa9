"""Tar member names: the full name of each regular member (GNU long names, pax paths,
the ustar prefix) and the check that names are text before a writer stores them as text.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import FormatError
from .tar_fields import BLOCK, parse_pax

if TYPE_CHECKING:
    from .tar import TarScan

NAME_LEN = 100


def check_text_names(scan: TarScan, forbidden: bytes = b"") -> None:
    """Refuse, at its header, the first member whose name is not UTF-8 text or holds a ``forbidden`` byte.

    For writers that store names as text (a TARIDX's extension and crash-stem blocks, a
    TBL's JSON metadata). Only rows whose name field has a byte >= 0x80 or a forbidden
    one, and long names, are decoded: a plain ASCII shard costs one numpy pass.
    """
    fields = scan.name_fields
    odd = fields >= 0x80
    for byte in forbidden:
        if byte:  # a NUL ends every name field, so only a long name (pax, GNU) can hold one
            odd |= fields == byte
    width = max(fields.shape[1], 1)
    odd_rows = np.flatnonzero(odd) // width  # the rows of the odd bytes (none, usually): no per-row pass
    for row in sorted(set(odd_rows.tolist()) | set(scan.full_names)):
        name = scan.name_bytes(row)
        try:
            name.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(scan.path, "name", int(scan.header_offsets[row]),
                              f"member name is not UTF-8 text (byte {exc.start})", expected="UTF-8 text",
                              found=name) from None
        bad = [chr(b) for b in forbidden if b in name]
        if bad:
            raise FormatError(scan.path, "name", int(scan.header_offsets[row]),
                              f"member name holds {bad[0]!r}, which this output cannot store",
                              expected=f"no {' or '.join(map(repr, bad))}", found=name)


def resolve_names(mm, path, cand, typeflags, sizes, row_of_block) -> dict[int, bytes]:
    names: dict[int, bytes] = {}
    pending_long: bytes | None = None
    pending_pax: dict[str, bytes] = {}
    global_pax: dict[str, bytes] = {}
    for i, block in enumerate(cand.tolist()):
        off = block * BLOCK
        flag = int(typeflags[i])
        size = int(sizes[i])
        if flag == ord("L"):
            pending_long = bytes(mm[off + BLOCK : off + BLOCK + size]).split(b"\0", 1)[0]
        elif flag in (ord("x"), ord("g")):
            records = parse_pax(bytes(mm[off + BLOCK : off + BLOCK + size]), path, off + BLOCK)
            (pending_pax if flag == ord("x") else global_pax).update(records)
        elif flag == ord("K"):
            continue
        else:
            row = row_of_block.get(block)
            if row is not None:
                name = header_name(mm, off)
                pax_path = pending_pax.get("path", global_pax.get("path"))
                full = pax_path if pax_path is not None else pending_long if pending_long is not None else name
                if full != bytes(mm[off : off + NAME_LEN]).split(b"\0", 1)[0]:
                    names[row] = full
            pending_long, pending_pax = None, {}
    return names


def header_name(mm, off: int) -> bytes:
    name = bytes(mm[off : off + NAME_LEN]).split(b"\0", 1)[0]
    if mm[off + 257 : off + 263] == b"ustar\x00":  # POSIX: the prefix field holds leading directories
        prefix = bytes(mm[off + 345 : off + 500]).split(b"\0", 1)[0]
        if prefix:
            return prefix + b"/" + name
    return name
