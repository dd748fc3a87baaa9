"""`itarcore diff OLD NEW`: samples added, removed, changed and moved between two TARIDX indexes."""
from __future__ import annotations

import argparse

from .progressbar import TextProgressBar
from .remote import add_storage_options, storage_options


def cmd_diff(args: argparse.Namespace) -> int:
    from ..diff import diff_indexes, diff_json, diff_text
    from . import EXIT_FINDINGS, EXIT_OK, UsageError, print_json

    if args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, not {args.limit}")
    bar = TextProgressBar("comparing ")
    try:
        diff = diff_indexes(args.old, args.new, keep=args.limit, progress=bar, storage_options=storage_options(args))
    finally:
        bar.close()
    if args.json:
        print_json(diff_json(diff, args.limit))
    else:
        print(diff_text(diff, args.limit))
    return EXIT_FINDINGS if diff.n_differences else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff", help="compare two TARIDX indexes by sample",
        description="Samples added, removed, changed (extension set, or a member's size) and moved to another "
        "shard, per shard and in total. A sample's shard is that of its first row; shards are matched by their "
        "suffix. Stem names are read from the shards beside each index (xxh64 hashes where they are missing). "
        "Exit 0 no differences, 1 differences, 2 unusable input.")
    p.add_argument("old", help="the older .taridx (a path or URL)")
    p.add_argument("new", help="the newer .taridx (a path or URL)")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="list the first N samples of each kind, in file order (default 20)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_storage_options(p)
    p.set_defaults(func=cmd_diff)


__all__ = ["register"]
