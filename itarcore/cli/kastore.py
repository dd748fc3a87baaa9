"""`itarcore info` for kastore files (like `kastore ls -l`) and `itarcore kastore dump FILE KEY`."""
from __future__ import annotations

import argparse
import difflib
import math
import sys
from typing import Any

import numpy as np

from ..document.kastore import as_text
from ..formats.kastore import KastoreStore, open_kastore_file, select_store
from . import EXIT_OK, UsageError, print_json
from .remote import add_storage_options, local_file

_CHUNK = 1 << 16  # values formatted per write, so a 10^8-element dump streams


def info(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """The `info --json` object. ``items`` describes the store ``args.store`` (default 0)."""
    kf = open_kastore_file(path)
    try:
        store = select_store(kf, int(getattr(args, "store", 0) or 0))
        return {
            "format": "kastore",
            "stores": len(kf.stores),
            "store": store.index,
            "version": f"{store.version[0]}.{store.version[1]}",
            "size": store.size,
            "items": [
                {"key": it.key, "type": it.type_name, "length": it.length, "key_start": it.key_start,
                 "array_start": it.array_start}
                for it in store.items_list
            ],
            "warnings": list(store.warnings),
        }
    finally:
        kf.close()


def info_text(d: dict[str, Any]) -> str:
    """Human output: one line per item with type, length, bytes and key (as `kastore ls -l`)."""
    title = f"kastore {d['version']}: store {d['store']} of {d['stores']}, {len(d['items'])} items, {d['size']:,} bytes"
    lines = [title]
    if d["items"]:
        width = max(len(f"{it['length']:,}") for it in d["items"])
        for it in d["items"]:
            nbytes = it["length"] * np.dtype(it["type"]).itemsize
            lines.append(f"  {it['type']:<8} {it['length']:>{width},} {nbytes:>12,} B  {it['key']}")
    lines += [f"warning: {w}" for w in d.get("warnings", [])]
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "kastore", help="kastore / tskit .trees commands",
        description="Commands for kastore files (every tskit .trees file is one).",
    )
    sub = parser.add_subparsers(dest="kastore_command", metavar="SUBCOMMAND", parser_class=type(parser))
    sub.required = True
    dump = sub.add_parser(
        "dump", help="print one array",
        description="Print the array stored under KEY: one value per line, or as text when an int8/uint8 "
        "array holds UTF-8 text (tskit metadata, schemas, provenance). With --json, one JSON list "
        "(NaN and infinities become null).",
    )
    dump.add_argument("file", help="kastore file (.kas, .trees)")
    dump.add_argument("key", help="the item's key, e.g. nodes/time")
    dump.add_argument("--store", type=int, default=0, metavar="N", help="which store of a multi-store file (default 0)")
    dump.add_argument("--json", action="store_true", help="print a JSON list of the values")
    dump.add_argument("--numbers", action="store_true", help="print int8/uint8 arrays as numbers even if they hold text")
    add_storage_options(dump)
    dump.set_defaults(func=_cmd_dump)


def _find(store: KastoreStore, key: str) -> np.ndarray:
    if key in store:
        return store[key]
    near = difflib.get_close_matches(key, list(store), n=3)
    hint = f"; did you mean {', '.join(repr(k) for k in near)}?" if near else ""
    raise UsageError(f"{store.path}: store {store.index} has no key {key!r}{hint}")


def _json_value(v: Any) -> Any:
    return v if not isinstance(v, float) or math.isfinite(v) else None


def _cmd_dump(args: argparse.Namespace) -> int:
    with local_file(args.file, args) as path:
        return _dump(args, path)


def _dump(args: argparse.Namespace, path: str) -> int:
    kf = open_kastore_file(path)
    try:
        array = _find(select_store(kf, args.store), args.key)
        write = sys.stdout.write
        if args.json:
            values = array.tolist()
            if array.dtype.kind == "f":
                values = [_json_value(v) for v in values]
            print_json(values)
            return EXIT_OK
        text = None if args.numbers else as_text(array)
        if text is not None:
            write(text if text.endswith("\n") else text + "\n")
            return EXIT_OK
        # float32 through numpy's own str: its shortest repr ("0.1"), not the float64 widening
        as_python = array.dtype != np.float32
        for start in range(0, len(array), _CHUNK):
            chunk = array[start : start + _CHUNK]
            write("\n".join(map(str, chunk.tolist() if as_python else chunk)) + "\n")
        return EXIT_OK
    finally:
        kf.close()
