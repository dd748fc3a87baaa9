"""Content commands: `stats` (extensions, shards, labels, image sizes), `dedup` and `export`."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .progressbar import TextProgressBar


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def stats_text(d: dict[str, Any], top: int = 20) -> str:
    lines = [f"{d['index']}: {d['rows']:,} rows, {d['samples']:,} samples, {_human(d['bytes'])} of payloads", ""]
    lines.append(f"  {'extension':<14} {'count':>10} {'total':>11} {'min':>9} {'p50':>9} {'p90':>9} {'p99':>9} "
                 f"{'max':>9}")
    for e in d["extensions"]:
        lines.append(f"  {e['ext'] or '(none)':<14} {e['count']:>10,} {_human(e['bytes']):>11} "
                     + " ".join(f"{_human(e[k]):>9}" for k in ("min", "p50", "p90", "p99", "max")))
    names = [e["ext"] for e in d["extensions"]]
    lines += ["", f"  {'shard':<24} {'rows':>9} {'samples':>9} {'bytes':>11}  extensions (rows)"]
    for s in d["shards"]:
        present = ", ".join(f"{e or '(none)'} {s['extensions'][e]}" for e in names if e in s["extensions"])
        lines.append(f"  {s['shard']:<24} {s['rows']:>9,} {s['samples']:>9,} {_human(s['bytes']):>11}  {present}")
    if d["missing_shards"]:
        lines.append(f"  missing shards (payloads not read): {', '.join(d['missing_shards'])}")
    labels = d["labels"]
    if labels is not None:
        lines += ["", (f"  labels from {labels['source']}: {labels['members']:,} members, "
                  f"{len(labels['counts']):,} distinct, {labels['missing']:,} without the field, "
                  f"{labels['unreadable']:,} unreadable")]
        for label, count in list(labels["counts"].items())[:top]:
            lines.append(f"    {count:>10,}  {label!r}")
        if len(labels["counts"]) > top:
            lines.append(f"    … {len(labels['counts']) - top:,} more (--json lists all)")
    dims = d["image_dims"]
    if dims["images"]:
        lines += ["", (f"  image sizes: {dims['images']:,} images, {dims['distinct_sizes']:,} distinct sizes, "
                  f"{dims['unreadable']:,} unreadable headers")]
        for s in dims["sizes"][:top]:
            lines.append(f"    {s['count']:>10,}  {s['width']}×{s['height']}")
    return "\n".join(lines)


def _with_bar(label: str, job: Callable[[TextProgressBar], Any]) -> Any:
    """Run ``job(progress)`` with a text progress bar on stderr (drawn only on a terminal)."""
    bar = TextProgressBar(label)
    try:
        return job(bar)
    finally:
        bar.close()


def cmd_stats(args: argparse.Namespace) -> int:
    from ..content.stats import compute_stats
    from . import print_json

    data = _with_bar("stats ", lambda bar: compute_stats(args.index, label_field=args.field, progress=bar)).to_json()
    print_json(data) if args.json else print(stats_text(data))
    return 0


def _group_line(g: dict[str, Any], shown: int = 4) -> str:
    tag = "[leak]" if g["cross_fold"] else "[dup] "
    what = f"{g['ext'] or '(none)'} {_human(g['size'])}" if g["kind"] == "exact" else f"{g['ext'] or '(none)'} ~"
    members = ", ".join(f"{m['fold']}/{m['stem']} ({m['shard']} row {m['row']})" for m in g["members"][:shown])
    more = f", … {len(g['members']) - shown} more" if len(g["members"]) > shown else ""
    return f"  {tag} {what} × {len(g['members'])}: {members}{more}"


def dedup_text(d: dict[str, Any], limit: int) -> str:
    s = d["summary"]
    lines = [(f"{len(d['folds'])} fold(s) ({', '.join(d['folds'])}): {d['rows_hashed']:,} payloads "
             f"({_human(d['bytes_hashed'])}) compared: {s['groups']:,} group(s) of identical payloads, "
             f"{s['cross_fold_groups']:,} across folds (leaks)")]
    if d["missing_shards"]:
        lines.append(f"  missing shards (not compared): {', '.join(d['missing_shards'])}")
    groups = sorted(d["groups"], key=lambda g: not g["cross_fold"])  # leaks first
    lines += [_group_line(g) for g in groups[:limit]]
    if len(groups) > limit:
        lines.append(f"  … {len(groups) - limit:,} more group(s) (--limit, or --json for all)")
    if d["near_groups"] is not None:
        near = d["near_groups"]
        lines.append(f"near-duplicate images: {len(near):,} group(s), "
                     f"{sum(g['cross_fold'] for g in near):,} across folds")
        lines += [_group_line(g) for g in near[:limit]]
        if len(near) > limit:
            lines.append(f"  … {len(near) - limit:,} more group(s)")
    return "\n".join(lines)


def cmd_dedup(args: argparse.Namespace) -> int:
    from ..content.dedup import DEFAULT_SKIPPED, find_duplicates
    from . import EXIT_FINDINGS, EXIT_OK, UsageError, print_json

    if args.limit < 0 or not 0 <= args.max_distance <= 32:
        raise UsageError("--limit must be 0 or more and --max-distance 0 to 32")
    report = _with_bar("hashing ", lambda bar: find_duplicates(
        [args.index, *args.others], near=args.near, max_distance=args.max_distance,
        extensions=[e.lower().lstrip(".") for e in args.ext] if args.ext else None,
        skip=() if args.all else DEFAULT_SKIPPED, min_size=args.min_size, progress=bar))
    data = report.to_json()
    print_json(data) if args.json else print(dedup_text(data, args.limit))
    return EXIT_FINDINGS if report.n_findings else EXIT_OK


def _size_arg(text: str) -> int:
    from ..content.selection import parse_size

    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value is None:
        raise argparse.ArgumentTypeError("empty size")
    return value


def selection_from_args(args: argparse.Namespace) -> Any:
    from ..content.selection import Selection, read_stem_list

    return Selection(
        extensions=[e.lower().lstrip(".") for e in args.ext] or None, shards=args.shard or None,
        min_size=args.min_size, max_size=args.max_size, stem_glob=args.stem_glob,
        stems=read_stem_list(args.stems) if args.stems else None, labels=args.label or None,
        label_field=args.field, whole_samples=args.whole_samples)


def cmd_export(args: argparse.Namespace) -> int:
    from ..content.export import export_list, export_subset
    from . import UsageError, print_json

    if args.stems_only and args.csv:
        raise UsageError("export: choose one of --stems-only and --csv")
    selection = selection_from_args(args)
    if args.stems_only or args.csv:
        result = _with_bar("exporting ", lambda bar: export_list(args.index, selection, args.output,
                                                                 as_csv=args.csv, progress=bar))
    else:
        result = _with_bar("exporting ", lambda bar: export_subset(
            args.index, selection, args.output, shard_size=args.shard_size, fold=args.fold, progress=bar))
    summary = {"output": str(result.output), "index": None if result.index is None else str(result.index),
               "shards": [str(p) for p in result.shards], "samples": result.n_samples, "members": result.n_rows,
               "bytes": result.bytes_written}
    if args.json:
        print_json(summary)
    elif result.index is None:
        print(f"{result.output}: {result.n_samples:,} samples ({result.n_rows:,} members)")
    else:
        print(f"{result.output}: {len(result.shards)} shard(s), {result.n_samples:,} samples, {result.n_rows:,} "
              f"members, {_human(result.bytes_written)} of payloads; index {result.index}")
    return 0


def _fold_arguments(p: argparse.ArgumentParser, command: Any, json_help: str) -> None:
    p.add_argument("index", help=".taridx file (its shards beside it)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=command)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="statistics of a fold: extensions, shards, labels, image sizes",
                       description="Per extension: count, total and percentile sizes; per shard: rows, samples, "
                       "bytes and which extensions it holds; labels (from cls/cls2 members, or --field); image "
                       "sizes read from the image headers (no decoding).")
    _fold_arguments(p, cmd_stats, "print one JSON object")
    p.add_argument("--field", metavar="F", help="label source: an extension of the fold (cls2), or a JSON path "
                   "into each .json member (label.class; numbers index lists)")

    p = sub.add_parser("dedup", help="duplicate payloads within and across folds (split leaks)",
                       description="Hash every non-empty payload (xxh3-128) and group members with the same "
                       "extension, size and hash; a group spanning folds is a leak (e.g. the same image in train "
                       "and val). Class labels (cls, cls2) and members without extension are skipped unless --all. "
                       "--near also groups similar images by perceptual hash (needs the content extra). "
                       "Exit 0 no duplicates, 1 duplicates found, 2 unusable input.")
    _fold_arguments(p, cmd_dedup, "print one JSON object with every group")
    p.add_argument("others", nargs="*", metavar="OTHER", help="more folds to compare with (e.g. val.taridx)")
    p.add_argument("--ext", action="append", default=[], metavar="EXT", help="compare only members with this "
                   "extension (repeatable; default: all but cls, cls2 and members without extension)")
    p.add_argument("--all", action="store_true", help="also compare class labels and members without extension")
    p.add_argument("--min-size", type=int, default=1, metavar="BYTES", help="skip payloads smaller than this")
    p.add_argument("--near", action="store_true", help="also near-duplicate images (imagehash phash)")
    p.add_argument("--max-distance", type=int, default=4, metavar="BITS",
                   help="--near: largest phash Hamming distance of a pair (default 4 of 64 bits)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="list the first N groups (default 20)")

    p = sub.add_parser("export", help="export a subset of a fold as new shards and index, or a stem list",
                       description="Copy the chosen members byte for byte into new shards OUTPUT/<fold>_NNNN.tar "
                       "(whole samples, each sample's members together, up to --shard-size each) plus a fresh "
                       "OUTPUT/<fold>.taridx; OUTPUT must not exist (or be empty) and appears only when complete. "
                       "Member conditions (--ext, --shard, --min-size, --max-size) pick members; sample "
                       "conditions (--stem-glob, --stems, --label) pick samples; all are ANDed.")
    _fold_arguments(p, cmd_export, "print one JSON object")
    p.add_argument("--output", required=True, metavar="PATH", help="new folder (or the file, with --stems-only or "
                   "--csv)")
    p.add_argument("--ext", action="append", default=[], metavar="EXT", help="members with this extension "
                   "(repeatable)")
    p.add_argument("--shard", action="append", default=[], metavar="NAME", help="members of this shard (file name "
                   "or fid; repeatable)")
    p.add_argument("--min-size", type=_size_arg, metavar="SIZE", help="members of at least SIZE bytes (10k, 1.5M)")
    p.add_argument("--max-size", type=_size_arg, metavar="SIZE", help="members of at most SIZE bytes")
    p.add_argument("--stem-glob", metavar="GLOB", help="samples whose stem matches (fnmatch, e.g. 'cat_*')")
    p.add_argument("--stems", metavar="FILE", help="samples listed in FILE (one stem a line, or a CSV's first "
                   "column)")
    p.add_argument("--label", action="append", default=[], metavar="VALUE", help="samples with this label "
                   "(repeatable; from cls members, or --field)")
    p.add_argument("--field", metavar="F", help="label source for --label: an extension or a JSON path")
    p.add_argument("--whole-samples", action="store_true", help="keep every member of a sample one of whose "
                   "members passes")
    p.add_argument("--shard-size", type=_size_arg, default=1 << 30, metavar="SIZE", help="target size of each "
                   "new shard (default 1G)")
    p.add_argument("--fold", metavar="NAME", help="fold name of the new shards and index (default: the source's)")
    p.add_argument("--stems-only", action="store_true", help="write only the chosen stems, one a line, to OUTPUT")
    p.add_argument("--csv", action="store_true", help="write the chosen members as CSV (stem, ext, shard, row, "
                   "offset, size) to OUTPUT")


__all__ = ["register"]
