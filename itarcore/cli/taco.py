"""`itarcore info` for TACO archives, and `itarcore taco update` / `itarcore taco create`."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..formats.taco import (
    BAD_STATUSES,
    MAX_ENTRIES,
    build_payload,
    classify_entry,
    create_archive,
    read_taco,
    update_entries,
)
from . import EXIT_FINDINGS, EXIT_OK, UsageError, print_json
from .progressbar import TextProgressBar


def info(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """The `info --json` object. ``format``, ``entries`` and ``members`` are a contract: keep them exact."""
    taco = read_taco(path)
    h = taco.header
    return {
        "format": "taco",
        "path": path,
        "file_size": taco.zip.file_size,
        "zip64": taco.zip.zip64,
        "header": {name.replace(" ", "_").replace("-", ""): value for name, value in h.lfh.items()},
        "count": h.count,
        "entries": [[offset, length] for offset, length in h.entries],
        "points_at": [t.member.name if t.member else None for t in taco.targets],
        "entry_status": [t.status for t in taco.targets],
        "members": [
            {"name": m.name, "data_offset": m.data_offset, "compressed_size": m.compressed_size, "size": m.size,
             "crc32": m.crc32, "method": m.method}
            for m in taco.zip.members
        ],
    }


def info_text(d: dict[str, Any]) -> str:
    hdr = d["header"]
    lines = [
        f"TACO zip: {d['file_size']:,} bytes, {len(d['members'])} members" + (", ZIP64" if d["zip64"] else ""),
        (f"TACO_HEADER: version needed {hdr['version_needed']}, flags 0x{hdr['general_purpose_flags']:04x}, "
         f"method {hdr['compression_method']}, CRC-32 0x{hdr['crc32']:08x}, sizes "
         f"{hdr['compressed_size']}/{hdr['uncompressed_size']}"),
        f"entries: {d['count']} of {MAX_ENTRIES}",
    ]
    for i, ((offset, length), name, status) in enumerate(zip(d["entries"], d["points_at"], d["entry_status"])):
        lines.append(f"  [{i}] offset {offset:>14,}  length {length:>14,}  {status}: {name or '-'}")
    lines.append("members:")
    width = max((len(f"{m['compressed_size']:,}") for m in d["members"]), default=1)
    for m in d["members"]:
        method = "stored" if m["method"] == 0 else "deflate" if m["method"] == 8 else f"method {m['method']}"
        lines.append(f"  @{m['data_offset']:>14,}  {m['compressed_size']:>{width},} B  crc {m['crc32']:08x}  "
                     f"{method:<7} {m['name']}")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("taco", help="TACO zip commands (update header entries, create archives)",
                                   description="Commands for TACO zip archives (a ZIP whose first member is the "
                                   "157-byte TACO_HEADER with up to 7 (offset, length) entries).")
    sub = parser.add_subparsers(dest="taco_command", metavar="SUBCOMMAND", parser_class=type(parser))
    sub.required = True

    upd = sub.add_parser(
        "update", help="rewrite the header entries in place",
        description="Replace the TACO header entries of FILE in place. The whole archive is checked first; "
        "then only the 116 payload bytes and the two CRC-32 copies (local header, central directory) are "
        "written. The entry count becomes the number of pairs given (none clears the header). Entries that "
        "point past the end of the file or outside every member's data are refused unless --force.",
    )
    upd.add_argument("file", help="TACO archive to change")
    upd.add_argument("entries", nargs="*", metavar="OFFSET:LENGTH",
                     help=f"up to {MAX_ENTRIES} byte ranges; decimal or 0x hex, e.g. 1399:1299")
    upd.add_argument("--force", action="store_true", help="write entries even if they point nowhere sensible")
    upd.add_argument("--json", action="store_true", help="print the new `info --json` object")
    upd.set_defaults(func=_cmd_update)

    crt = sub.add_parser(
        "create", help="write a new TACO archive",
        description="Write OUT, a stored (uncompressed) ZIP whose first member is TACO_HEADER, then each FILE. "
        "Member names: without --root, a file is named by its base name and a directory adds every file "
        "under it named from the directory's own name (DATA/ gives DATA/a.png); with --root DIR, every "
        "name is the path relative to DIR. ZIP64 records are written when sizes or offsets need them. "
        "OUT is written to a temporary file beside it and renamed when complete.",
        epilog="example: itarcore taco create ds.tacozip DATA METADATA COLLECTION.json "
        "--entry METADATA/level0.parquet --entry COLLECTION.json",
    )
    crt.add_argument("out", help="archive to write (replaced if it exists)")
    crt.add_argument("files", nargs="+", metavar="FILE", help="files or directories to store, in this order")
    crt.add_argument("--root", metavar="DIR", help="name members by their path relative to DIR")
    crt.add_argument("--entry", action="append", default=[], metavar="MEMBER",
                     help=f"a member whose stored bytes a header entry points at; repeat, in order, up to "
                     f"{MAX_ENTRIES} (e.g. METADATA/level0.parquet, then COLLECTION.json last)")
    crt.add_argument("--json", action="store_true", help="print the new archive's `info --json` object")
    crt.set_defaults(func=_cmd_create)


def parse_range(text: str) -> tuple[int, int]:
    offset, sep, length = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(offset, 0), int(length, 0)
    except ValueError:
        raise UsageError(f"bad entry {text!r}: expected OFFSET:LENGTH with integers, e.g. 1399:1299") from None


def _cmd_update(args: argparse.Namespace) -> int:
    entries = [parse_range(t) for t in args.entries]
    if len(entries) > MAX_ENTRIES:
        raise UsageError(f"{args.file}: {len(entries)} entries given, a TACO header holds at most {MAX_ENTRIES}")
    build_payload(entries, args.file)  # refuses values outside u64 before anything else
    current = read_taco(args.file)  # checks the archive, and lets us judge the new ranges first
    bad = [(i, t.status) for i, (o, n) in enumerate(entries)
           if (t := classify_entry(current.zip, i, o, n)).status in BAD_STATUSES]
    if bad and not args.force:
        what = "; ".join(f"entry {i} {entries[i][0]}:{entries[i][1]} is {status}" for i, status in bad)
        raise UsageError(f"{args.file}: {what} (use --force to write anyway); nothing written")
    update_entries(args.file, entries)
    data = info(args.file, args)
    if args.json:
        print_json(data)
    else:
        print(info_text(data))
    return EXIT_FINDINGS if bad else EXIT_OK


def _collect(paths: list[str], root: str | None) -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    for given in paths:
        if os.path.isdir(given):
            base = os.path.dirname(os.path.abspath(given))
            for folder, dirs, names in os.walk(given):
                dirs.sort()
                files += [(os.path.join(folder, n), _arcname(os.path.join(folder, n), root, base))
                          for n in sorted(names)]
        elif os.path.isfile(given):
            files.append((given, _arcname(given, root, os.path.dirname(os.path.abspath(given)))))
        else:
            raise UsageError(f"{given}: no such file or directory")
    return files


def _arcname(path: str, root: str | None, base: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root) if root else base)
    if rel.startswith(".."):
        raise UsageError(f"{path}: not inside --root {root}")
    return rel.replace(os.sep, "/")


def _cmd_create(args: argparse.Namespace) -> int:
    files = _collect(args.files, args.root)
    bar = TextProgressBar("create ")
    try:
        create_archive(args.out, files, args.entry, progress=bar)
    finally:
        bar.close()
    data = info(args.out, args)
    if args.json:
        print_json(data)
    else:
        print(info_text(data), file=sys.stdout)
    return EXIT_OK
