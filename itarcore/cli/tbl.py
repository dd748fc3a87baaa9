"""`itarcore info` for TBL files, and `itarcore tbl cat` / `itarcore tbl verify`."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..formats.tbl import TblFile, file_flag_names, format_name
from . import EXIT_FINDINGS, EXIT_OK, UsageError, print_json
from .progressbar import TextProgressBar
from .remote import add_storage_options, local_file, shown


def info(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """The `info --json` object. ``format``, ``version``, ``num_samples`` and ``samples`` are a contract."""
    with TblFile(path) as tbl:
        e = tbl.entries
        names = [format_name(c) for c in range(256)]
        offsets, sizes, formats = e["offset"].tolist(), e["size"].tolist(), e["format"].tolist()
        d: dict[str, Any] = {"format": "tbl", "version": tbl.version, "num_samples": tbl.num_samples,
                             "path": path, "file_size": tbl.file_size, "header_size": tbl.header_size}
        if tbl.version == 1:
            d["samples"] = [{"offset": o, "size": s, "format": names[f]} for o, s, f in zip(offsets, sizes, formats)]
            return d
        d.update(flags=tbl.flags, metadata_offset=tbl.metadata_offset, metadata_size=tbl.metadata_size,
                 metadata_blocks=len(tbl.metadata), header_crc32=tbl.header_crc_stored)
        d["samples"] = [
            {"offset": o, "size": s, "format": names[f], "uncompressed_size": u, "width": w, "height": h, "flags": fl}
            for o, s, f, u, w, h, fl in zip(offsets, sizes, formats, e["uncompressed_size"].tolist(),
                                            e["width"].tolist(), e["height"].tolist(), e["flags"].tolist())
        ]
        return d


def info_text(d: dict[str, Any]) -> str:
    lines = [(f"TBL v{d['version']}: {d['file_size']:,} bytes, {d['num_samples']:,} samples, "
              f"header_size {d['header_size']:,}")]
    if d["version"] == 2:
        lines.append(f"flags 0x{d['flags']:x} ({', '.join(file_flag_names(d['flags'])) or 'none'}), "
                     f"header CRC-32 0x{d['header_crc32']:08x} (ok), metadata {d['metadata_blocks']:,} blocks "
                     f"({d['metadata_size']:,} bytes at {d['metadata_offset']:,})")
    shown = d["samples"][:50]
    for i, s in enumerate(shown):
        line = f"  [{i}] @{s['offset']:>12,}  {s['size']:>10,} B  {s['format']:<7}"
        if d["version"] == 2:
            line += (f" raw {s['uncompressed_size']:>10,} B  {s['width']}×{s['height']}"
                     + ("  lz4" if s["flags"] & 1 else "") + ("  meta" if s["flags"] & 2 else ""))
        lines.append(line)
    if len(d["samples"]) > len(shown):
        lines.append(f"  … {len(d['samples']) - len(shown):,} more (use --json for all)")
    return "\n".join(lines)


def _cmd_cat(args: argparse.Namespace) -> int:
    with local_file(args.file, args) as path, TblFile(path) as tbl:
        if not 0 <= args.n < tbl.num_samples:
            raise UsageError(f"{shown(args.file)}: sample {args.n} out of range (file has {tbl.num_samples} samples)")
        data = tbl.stored(args.n).tobytes() if args.stored else tbl.read_sample(args.n, verify=args.verify)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    bar = TextProgressBar("verify ")
    with local_file(args.file, args) as path, TblFile(path, check_header_crc=False) as tbl:  # a bad CRC: a finding
        try:
            report = tbl.verify(progress=bar)
        finally:
            bar.close()
        if args.json:
            print_json({"path": shown(args.file), "version": tbl.version, "checked": report.checked,
                        "header_crc_ok": report.header_crc_ok, "bad_samples": report.bad_samples,
                        "problems": report.problems, "ok": report.ok})
        else:
            for problem in report.problems:
                print(problem)
            print(f"{shown(args.file)}: {report.checked:,} sample CRCs checked, {len(report.bad_samples):,} bad"
                  + ("" if report.header_crc_ok is None else
                     f", header CRC-32 {'ok' if report.header_crc_ok else 'MISMATCH'}"))
    return EXIT_OK if report.ok else EXIT_FINDINGS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tbl", help="TBL (TurboLoader) commands: cat a sample, verify checksums",
                                   description="Commands for TBL v1/v2 files (TurboLoader's binary container).")
    sub = parser.add_subparsers(dest="tbl_command", metavar="SUBCOMMAND", parser_class=type(parser))
    sub.required = True
    cat = sub.add_parser("cat", help="write sample N's decoded bytes to stdout",
                         description="Write sample N's bytes to stdout, LZ4-decompressed when stored compressed.")
    cat.add_argument("file")
    cat.add_argument("n", type=int, metavar="N", help="sample index (0-based)")
    cat.add_argument("--verify", action="store_true", help="check the sample's CRC-16 first (v2)")
    cat.add_argument("--stored", action="store_true", help="write the bytes as stored (no decompression)")
    add_storage_options(cat)
    cat.set_defaults(func=_cmd_cat)
    ver = sub.add_parser("verify", help="check the header CRC-32 and every sample CRC-16 (exit 1 on mismatch)",
                         description="Check a v2 file's header CRC-32 and each sample's CRC-16/MODBUS "
                         "(decompressing LZ4 samples). Exit 0 when all match, 1 on any mismatch.")
    ver.add_argument("file")
    ver.add_argument("--json", action="store_true", help="print one JSON object")
    add_storage_options(ver)
    ver.set_defaults(func=_cmd_verify)
