"""Command-line options saying how remote tar shards are read: block size and skip threshold."""
from __future__ import annotations

import argparse
import re

from ..formats.read_plan import DEFAULT_BLOCK_SIZE, DEFAULT_SKIP_THRESHOLD

_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def byte_size(text: str) -> int:
    """``8M``, ``512k``, ``16MiB`` or a plain number of bytes (k, M, G are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 8M, 512k, 1048576)")
    return int(match[1]) * _UNITS[match[2].lower()]


def add_read_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument("--block-size", type=byte_size, default=DEFAULT_BLOCK_SIZE, metavar="SIZE",
                   help=f"remote shards: bytes per ranged read (default {DEFAULT_BLOCK_SIZE >> 20}M)")
    p.add_argument("--skip-threshold", type=byte_size, default=DEFAULT_SKIP_THRESHOLD, metavar="SIZE",
                   help="remote shards: after jumping over a payload larger than this, read a short probe "
                   f"instead of a whole block (default {DEFAULT_SKIP_THRESHOLD >> 20}M); the rest of a payload "
                   "that runs past a read is never downloaded")


__all__ = ["add_read_plan", "byte_size"]
