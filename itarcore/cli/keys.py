"""`itarcore keys`: build an index's key index ahead of time (e.g. into a cluster's shared cache)."""
from __future__ import annotations

import argparse
import os
import time

from .progressbar import TextProgressBar
from .remote import add_storage_options, shown, storage_options


def cmd_keys(args: argparse.Namespace) -> int:
    from ..dataset import Dataset
    from . import print_json

    started = time.perf_counter()
    with Dataset.open(args.index, cache_dir=args.cache, key_index=not args.rebuild,
                      storage_options=storage_options(args)) as ds:
        built = ds.key_index is None
        if built:
            bar = TextProgressBar("key index ")
            try:
                ds.build_key_index(progress=bar)
            finally:
                bar.close()
        key_index = ds.key_index
        assert key_index is not None and key_index.path is not None
        summary = {
            "index": shown(args.index), "rows": ds.n_rows, "key_index": str(key_index.path), "kind": key_index.kind,
            "built": built, "bytes": os.path.getsize(key_index.path), "collisions": len(key_index.collisions),
            "seconds": round(time.perf_counter() - started, 3),
        }
    if args.json:
        print_json(summary)
    else:
        what = ("rows already in key order: lookups search the index itself" if summary["kind"] == "in_order"
                else f"{summary['bytes']:,} bytes")
        verb = "built" if built else "already cached (fresh)"
        print(f"{summary['key_index']}: key index of {summary['index']} ({summary['rows']:,} rows), {verb}; {what}; "
              f"{summary['seconds']:.2f}s")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="build an index's key index ahead of time (stem lookups in microseconds)",
                       description="Sort the rows of INDEX by (keyhash, crashid) into the key-index cache, so "
                       "`itarcore stem` and the browser look stems up in microseconds instead of scanning. "
                       "Nothing is sorted when the rows are already in key order (`index --contiguous` of a "
                       "fold that was not contiguous): that is only recorded. A key index is used only while "
                       "INDEX is unchanged (path, size, mtime, inode, content fingerprint).")
    p.add_argument("index", help=".taridx file")
    p.add_argument("--cache", metavar="DIR", help="cache folder (default: $ITARCORE_CACHE_DIR or the user's cache "
                   "folder); key indexes go to DIR/keys/")
    p.add_argument("--rebuild", action="store_true", help="build again even when a fresh key index is cached")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_storage_options(p)
    p.set_defaults(func=cmd_keys)
