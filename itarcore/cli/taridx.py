"""TARIDX commands: info, index, rows, stem, cat, verify.

Readers are imported inside the commands: ``info`` reads the header and tables with
``struct`` alone, so it starts without numpy.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError
from ..formats.read_plan import REMOTE_JOBS
from ..formats.taridx_header import TaridxSummary, read_head_and_tables, read_taridx_summary
from .read_plan import add_read_plan
from .remote import add_storage_options, shown, storage_options

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..storage import RangedSource


def info(path: str, args: argparse.Namespace, source: RangedSource | None = None,
         first: bytes | None = None) -> dict[str, Any]:
    """The `info --json` object; ``source``: the URL already open, ``first``: its first bytes, already read."""
    if source is not None:
        summary = TaridxSummary(source.name, *read_head_and_tables(source, first))
    else:
        summary = read_taridx_summary(path, storage_options(args))
    return {
        "format": "taridx",
        "file": shown(path),
        "header": summary.header.as_dict(),
        "extensions": list(summary.extensions),
        "crash_stems": list(summary.crash_stems),
        "rows": summary.n_rows,
    }


def info_text(d: dict[str, Any]) -> str:
    h = d["header"]
    lines = [f"{d['file']}: TARIDX {h['major']}.{h['minor']}", ""]
    width = max(len(k) for k in h)
    lines += [f"  {k:<{width}}  {v}" for k, v in h.items()]
    flags = "rows contiguous by stem" if h["flags"] & 1 else "rows NOT contiguous by stem"
    lines += ["", f"  flags: {flags}", "", f"Extensions ({len(d['extensions'])}):"]
    lines += [f"  {i:>5}  {e if e else '(none)'}" for i, e in enumerate(d["extensions"])]
    lines += ["", f"Crash stems ({len(d['crash_stems'])}):"]
    lines += [f"  {i:>5}  {s!r}" for i, s in enumerate(d["crash_stems"], start=1)]
    lines += ["", f"Rows: {d['rows']:,}"]
    return "\n".join(lines)


def _row_objects(ds: Dataset, rows: Iterable[int]) -> Iterable[dict[str, Any]]:
    recs = ds.rows
    for row in rows:
        rec = recs[row]
        fid = int(rec["fid"])
        yield {
            "row": int(row), "fid": fid, "shard": ds.shard_name(fid), "offset": int(rec["offset"]),
            "size": int(rec["size"]), "extid": int(rec["extid"]), "ext": ds.ext_of(int(row)),
            "crashid": int(rec["crashid"]), "keyhash": int(rec["keyhash"]),
        }


def _print_rows(objs: Iterable[dict[str, Any]], as_json: bool) -> int:
    from . import print_json_lines

    if as_json:
        print_json_lines(objs)
        return 0
    out = sys.stdout
    out.write(f"{'row':>10} {'fid':>5} {'shard':<24} {'offset':>14} {'size':>12} {'ext':<10} {'crash':>5} keyhash\n")
    for o in objs:
        out.write(f"{o['row']:>10} {o['fid']:>5} {o['shard']:<24} {o['offset']:>14} {o['size']:>12} "
                  f"{o['ext'] or '(none)':<10} {o['crashid']:>5} {o['keyhash']:016x}\n")
    return 0


def _open(args: argparse.Namespace) -> Dataset:
    from ..dataset import Dataset

    return Dataset.open(args.index, shard_dir=args.shards, cache_dir=getattr(args, "cache", None),
                        storage_options=storage_options(args))


def cmd_rows(args: argparse.Namespace) -> int:
    with _open(args) as ds:
        start = max(0, args.start)
        stop = ds.n_rows if args.limit is None else min(ds.n_rows, start + max(0, args.limit))
        return _print_rows(_row_objects(ds, range(start, stop)), args.json)


def cmd_stem(args: argparse.Namespace) -> int:
    with _open(args) as ds:
        rows = ds.lookup_stem(args.stem)
        if len(rows) == 0:
            raise DatasetError(f"{ds.path}: no sample with stem {args.stem!r}")
        return _print_rows(list(_row_objects(ds, rows.tolist())), args.json)


def cmd_cat(args: argparse.Namespace) -> int:
    with _open(args) as ds:
        rows = ds.lookup_stem(args.stem)
        if len(rows) == 0:
            raise DatasetError(f"{ds.path}: no sample with stem {args.stem!r}")
        ext = args.ext.lower().lstrip(".") if args.ext != "" else ""
        matches = [r for r in rows.tolist() if ds.ext_of(r) == ext]
        if not matches:
            have = ", ".join(sorted({ds.ext_of(r) or "(none)" for r in rows.tolist()}))
            raise DatasetError(f"{ds.path}: sample {args.stem!r} has no .{ext} member (it has: {have})")
        data = ds.read_payload(matches[0])
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0


def _shard_cache(args: argparse.Namespace) -> Any:
    from ..indexing.cache import ShardCache

    return None if args.no_cache else ShardCache(args.cache)


def cmd_index(args: argparse.Namespace) -> int:
    from ..storage import is_url
    from . import UsageError, resume_gc
    from .progressbar import TextProgressBar

    if args.update is not None and (args.no_cache or args.fold or args.output):
        raise UsageError("index --update INDEX: rebuilds INDEX in place with the cache (no --fold, --output, "
                         "--no-cache)")
    if args.update is not None and is_url(args.update):
        raise UsageError("index --update INDEX: INDEX must be a local file (to rebuild a remote index, index its "
                         "URL again: unchanged shards come from the cache)")
    bar = TextProgressBar("indexing ")
    try:
        results = _index_from_cache(args, bar)
        if results is None:
            results = _index_fully(args, bar)
        else:
            resume_gc()
    finally:
        bar.close()
    from . import print_json

    for r in results:
        if args.json:
            print_json({"fold": r.fold, "path": str(r.path), "rows": r.n_rows, "stems": r.n_stems,
                        "extensions": dict(r.extensions), "crash_stems": r.crash_stems,
                        "contiguous": r.contiguous, "seconds": round(r.seconds, 3), "shards": len(r.shards),
                        "reused": r.counts.reused, "scanned": r.counts.scanned, "failed": r.counts.failed,
                        "warnings": r.warnings, "route": r.route, "route_reason": r.route_reason,
                        **({"fetch": r.fetch_summary()} if r.fetched is not None else {})})
        else:
            print(f"{r.path}: {r.n_rows:,} rows, {r.n_stems:,} stems, {len(r.extensions)} extensions, "
                  f"{len(r.crash_stems)} crash stems, {'contiguous' if r.contiguous else 'not contiguous'}, "
                  f"{len(r.shards)} shards ({r.counts.text()}) in {r.seconds:.2f}s "
                  f"({r.members_per_second:,.0f} members/s)")
            if r.fetched is not None:
                print(f"  {r.fetch_text()}")
            for w in r.warnings:
                print(f"  warning: {w}")
    return 0


def _index_from_cache(args: argparse.Namespace, bar: Any) -> list | None:
    """The results of a plain rerun whose every fold comes from the shard cache, without numpy; else None.

    Only where the cache alone decides the outcome: a local folder, the default executor (another
    one is checked, and a cluster started, by the full job), replacing existing indexes.
    """
    if args.update is not None or args.no_cache or args.executor != "threads" or args.if_exists != "replace":
        return None
    from ..indexing.cache import ShardCache
    from ..jobs.index_cached import index_folds_cached

    return index_folds_cached(args.root, args.fold or None, cache=ShardCache(args.cache), output=args.output,
                              progress=bar)


def _index_fully(args: argparse.Namespace, bar: Any) -> list:
    """The index job with every option: scans, remote shards and indexes, executors, --update."""
    from ..jobs import index_folds, update_index
    from . import resume_gc

    resume_gc()  # the indexer's modules (numpy first) are loaded: see resume_gc
    options: dict[str, Any] = {"jobs": args.jobs, "contiguous": args.contiguous, "if_exists": args.if_exists,
                               "executor": args.executor, "cache": _shard_cache(args), "progress": bar}
    if args.update is not None:
        return [update_index(args.update, **options)]
    return index_folds(args.root, args.fold or None, output=args.output, remote=_remote(args), **options)


def _remote(args: argparse.Namespace) -> Any:
    from ..formats.read_plan import ReadPlan
    from ..indexing.remote import RemoteOptions
    from . import UsageError

    try:
        plan = ReadPlan(args.block_size, args.skip_threshold)
    except ValueError as exc:
        raise UsageError(f"index: {exc}") from None
    return RemoteOptions(storage_options(args) or {}, plan)


def cmd_verify(args: argparse.Namespace) -> int:
    from .. import audit
    from . import UsageError, print_json
    from .progressbar import TextProgressBar

    if args.executor is not None and not args.full:
        raise UsageError("verify: --executor applies to the full audit (--full)")
    if args.content and not args.full:
        raise UsageError("verify: --content adds to the full audit: use --full --content")
    bar = TextProgressBar("auditing " if args.full else "checking ")
    try:
        where = {"shard_dir": args.shards, "storage_options": storage_options(args)}
        if args.full:
            report = audit.audit_index(args.index, progress=bar, executor=args.executor, jobs=args.jobs,
                                       content=args.content, **where)
        else:
            report = audit.quick_check(args.index, progress=bar, **where)
    finally:
        bar.close()
    if args.json:
        print_json(report.to_json())
    else:
        print(report.summary_text())
    return report.exit_code


def _cache_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", metavar="DIR", help="cache folder holding key indexes (default: $ITARCORE_CACHE_DIR "
                   "or the user's cache folder); a fresh key index there makes the lookup instant")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="build <fold>.taridx for the folds of a folder of shards",
                       description="Index tar shards named <fold>_<suffix>.tar in ROOT into ROOT/<fold>.taridx "
                       "(fid = position of the sorted suffix). Output is written atomically. ROOT may be a URL "
                       "(s3://bucket/ds/, https://host/ds/, or one fold: s3://bucket/ds/train): remote shards are "
                       "read in large ranged reads, jumping over payloads, and the summary says what was fetched.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("root", nargs="?", help="folder or URL holding the shards (or a fold's URL prefix)")
    source.add_argument("--update", metavar="INDEX", help="rebuild INDEX from the shards beside it, scanning only the "
                   "shards that changed since their tables were cached (same bytes as a full rebuild)")
    p.add_argument("--fold", action="append", metavar="NAME", help="index only this fold (repeatable; default: all)")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead (exactly one fold); FILE may be a store "
                   "URL, uploaded whole when finished")
    p.add_argument("--jobs", type=int, metavar="N", help="scan N shards at a time, in threads (default 1 for a "
                   f"folder; {REMOTE_JOBS} for a URL, whose scans mostly wait on the network)")
    _executor_option(p, "scans")
    p.add_argument("--cache", metavar="DIR", help="cache folder; shard tables go to DIR/shards (default: "
                   "$ITARCORE_CACHE_DIR or the user cache folder, e.g. ~/.cache/itar-browser)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the shard table cache")
    p.add_argument("--contiguous", action="store_true",
                   help="reorder rows by (keyhash, crashid) so every sample's rows are adjacent")
    p.add_argument("--if-exists", choices=("replace", "backup", "stop"), default="replace",
                   help="when an index exists: replace it (default), keep a .bak copy, or stop")
    p.add_argument("--json", action="store_true", help="print one JSON object per fold")
    add_read_plan(p)
    add_storage_options(p)
    p.set_defaults(func=cmd_index, resumes_gc=True)

    p = sub.add_parser("rows", help="print rows of an index", description="Print rows of a .taridx.")
    p.add_argument("index", help=".taridx file")
    p.add_argument("--start", type=int, default=0, metavar="N", help="first row (default 0)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N rows (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON Lines, one object per row")
    add_storage_options(p, shards=True)
    p.set_defaults(func=cmd_rows)

    p = sub.add_parser("stem", help="print the rows of one sample, by stem",
                       description="Find a sample by exact stem (xxh64 plus the crash table) and print its rows: "
                       "through the key index when a fresh one is cached (see `itarcore keys`), else by a scan "
                       "of the keyhash column.")
    p.add_argument("index", help=".taridx file")
    p.add_argument("stem", help="exact stem, e.g. sample000123")
    p.add_argument("--json", action="store_true", help="print JSON Lines, one object per row")
    _cache_option(p)
    add_storage_options(p, shards=True)
    p.set_defaults(func=cmd_stem)

    p = sub.add_parser("cat", help="write one member's raw payload to stdout",
                       description="Write the raw payload of member STEM.EXT to stdout (shards must be beside "
                       "the index).")
    p.add_argument("index", help=".taridx file")
    p.add_argument("stem", help="exact stem")
    p.add_argument("ext", help="extension, e.g. jpg or left.jpg ('' for none)")
    _cache_option(p)
    add_storage_options(p, shards=True)
    p.set_defaults(func=cmd_cat)

    p = sub.add_parser("verify", help="check an index (and with --full, its shards)",
                       description="Quick structural checks of a .taridx and its shard set; --full also reads "
                       "every row's tar header and re-scans the shards. Exit 0 clean (info findings only), "
                       "1 findings, 2 unusable input.")
    p.add_argument("index", help=".taridx file")
    p.add_argument("--full", action="store_true", help="full audit against the shards")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="--full: check N shards at a time in threads")
    _executor_option(p, "checks (with --full)", default=None)
    p.add_argument("--content", action="store_true", help="--full: also hash the payloads: identical payloads "
                   "within the fold (warning) and shared with the other folds beside it (split leak, error)")
    p.add_argument("--json", action="store_true", help='print one JSON object {"findings": [...]}')
    add_storage_options(p, shards=True)
    p.set_defaults(func=cmd_verify)


def _executor_option(p: argparse.ArgumentParser, what: str, default: str | None = "threads") -> None:
    p.add_argument("--executor", default=default, metavar="SPEC",
                   help=f"where the per-shard {what} run: threads (default; --jobs of them), processes[:N] "
                   "(N local processes, default one per core), dask (a local Dask cluster) or dask:ADDRESS (the "
                   "scheduler at ADDRESS, e.g. dask:tcp://10.0.0.5:8786; workers must see the shard paths)")


__all__ = ["info", "info_text", "register"]
