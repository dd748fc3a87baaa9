"""`itarcore convert tar-to-tbl`: tar shards to one TBL file (v1 or v2)."""
from __future__ import annotations

import argparse
from dataclasses import asdict

from ..formats.tbl import FORMAT_NAMES
from ..jobs.convert_tbl import convert_tar_to_tbl
from . import EXIT_OK, UsageError, print_json
from .progressbar import TextProgressBar


def _cmd_tar_to_tbl(args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        raise UsageError("convert tar-to-tbl: give at least one input tar and the output .tbl")
    *inputs, output = args.paths
    bar = TextProgressBar("convert ")
    try:
        result = convert_tar_to_tbl(inputs, output, version=1 if args.v1 else 2, lz4=args.lz4,
                                    metadata_from=args.metadata_from, include_formats=args.only,
                                    durable=not args.no_fsync, progress=bar)
    finally:
        bar.close()
    if args.json:
        print_json({**asdict(result), "rate": result.rate})
    else:
        kinds = ", ".join(f"{n} {k}" for k, n in result.formats.items()) or "no samples"
        print(f"{output}: TBL v{result.version}, {result.num_samples:,} samples ({kinds}), "
              f"{result.bytes_out:,} bytes" + (f", {result.compressed:,} stored as LZ4" if result.compressed else "")
              + (f"; {result.skipped:,} other members skipped" if result.skipped else "")
              + f" in {result.seconds:.2f} s ({result.rate:,.0f} samples/s)")
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("convert", help="convert between formats (tar shards -> TBL)",
                                   description="Format conversions.")
    sub = parser.add_subparsers(dest="convert_command", metavar="SUBCOMMAND", parser_class=type(parser))
    sub.required = True
    t2t = sub.add_parser(
        "tar-to-tbl", help="tar shards -> one TBL file",
        description="Convert tar shards to one TBL file, streaming with constant memory. Samples are the members "
        "with a TBL sample format (jpg/jpeg, png, webp, bmp, tif/tiff, mp4, avi), in archive order.",
    )
    t2t.add_argument("paths", nargs="+", metavar="IN.tar... OUT.tbl", help="input tar shards, then the output file")
    version = t2t.add_mutually_exclusive_group()
    version.add_argument("--v1", action="store_true", help="write TBL v1 (no checksums, sizes or metadata)")
    version.add_argument("--v2", action="store_true", help="write TBL v2 (the default)")
    t2t.add_argument("--lz4", action="store_true", help="v2: store samples as LZ4 blocks when that is smaller")
    t2t.add_argument("--metadata-from", choices=["json"], default=None,
                     help="v2: keep each sample's name, stem and .json/.cls/.txt sidecars as JSON metadata")
    t2t.add_argument("--only", action="append", metavar="FORMAT", choices=list(FORMAT_NAMES),
                     help="keep only samples of this format (repeatable), e.g. --only JPEG")
    t2t.add_argument("--no-fsync", action="store_true",
                     help="do not wait for the disk before renaming the output into place (faster on slow disks; "
                     "a power cut soon after may leave a partial file)")
    t2t.add_argument("--json", action="store_true", help="print the result as one JSON object")
    t2t.set_defaults(func=_cmd_tar_to_tbl)
