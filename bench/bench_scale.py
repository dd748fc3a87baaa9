"""Benchmark: indexing a many-shard fold with each executor, and what the shard-table cache saves.

Generates a webdataset fold of at least 256 shards (default: 256 x 300 samples of .jpg
2-20 KB, .cls and .json, as bench_index.py writes them: 230,400 members, ~1.1 GB), then
prints, side by side in one run:

  * the full index with each executor, page cache dropped (cold: posix_fadvise DONTNEED)
    and warm: threads (``--jobs 2``), processes (``processes:2``) and a Dask LocalCluster
    of 2 worker processes x 1 thread (its start-up is timed apart); all must give the
    same bytes;
  * the shard-table cache (threads, --jobs 2): a first run that scans every shard and
    writes the cache, a second run that reuses every table (target: under 10% of the
    first), and ``--update`` after one shard changed (target: under 5% of a full run).

    python bench/bench_scale.py            # full size
    python bench/bench_scale.py --quick    # 256 tiny shards, one repeat: for CI smoke runs
"""
from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import resource
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from bench_index import generate, warm
from synthetic import drop_from_page_cache, fold_bench_parser

from itarcore.executors import DaskRunner, ProcessRunner
from itarcore.indexing.cache import ShardCache
from itarcore.jobs import index_fold, update_index


def timed(fn, repeats: int, before=None) -> float:
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = fold_bench_parser(__doc__, shards=256, samples=300, quick="256 shards x 8 samples, 1 repeat")
    args = ap.parse_args(argv)
    if args.quick:
        args.shards, args.samples, args.repeats = 256, 8, 1
    if args.shards < 256:
        ap.error("the scale bench needs at least 256 shards")
    folder = args.dir or Path(tempfile.mkdtemp(prefix="itar-bench-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        run(folder, args)
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def run(folder: Path, args: argparse.Namespace) -> None:
    paths = sorted(folder.glob("bench_*.tar"))
    if len(paths) != args.shards:
        for p in paths:
            p.unlink()
        t0 = time.perf_counter()
        paths = generate(folder, args.shards, args.samples)
        os.sync()
        print(f"generated {args.shards} shards in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    total_bytes = sum(p.stat().st_size for p in paths)
    out = folder / "out"
    out.mkdir(exist_ok=True)
    def cold() -> None:
        drop_from_page_cache(*paths)

    outputs: dict[str, bytes] = {}

    def index_with(label: str, executor) -> float:
        target = out / f"{label.split()[0]}.taridx"
        seconds = timed(lambda: index_fold(paths, target, jobs=2, executor=executor), args.repeats, cold)
        warm(paths)
        warm_seconds = timed(lambda: index_fold(paths, target, jobs=2, executor=executor), args.repeats)
        outputs[label] = target.read_bytes()
        return seconds, warm_seconds

    routes: dict[str, tuple[float, float]] = {}
    routes["threads (--jobs 2)"] = index_with("threads (--jobs 2)", "threads")
    startups = {}
    t0 = time.perf_counter()
    with ProcessRunner(2) as pool:
        for _ in pool.run(os.getpid, [()] * 2):  # the pool starts its processes on first use
            pass
        startups["process pool"] = time.perf_counter() - t0
        routes["processes:2"] = index_with("processes:2", pool)
    if importlib.util.find_spec("distributed") is None:
        print("Dask distributed is not installed (the 'dask' extra): no Dask route", file=sys.stderr)
    else:
        from distributed import Client, LocalCluster

        t0 = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            startups["Dask LocalCluster"] = time.perf_counter() - t0
            routes["dask LocalCluster 2x1"] = index_with("dask LocalCluster 2x1", DaskRunner(client))
    members = 0
    with tarfile.open(paths[0]) as tar:
        members = len(tar.getmembers()) * len(paths)  # every generated shard holds the same number
    same = len(set(outputs.values())) == 1
    print(f"\n{len(paths)} shards, {members:,} members, {total_bytes / 1e9:.2f} GB, {os.cpu_count()} CPUs, "
          f"median of {args.repeats}; cold = page cache dropped before each run\n")
    print(f"{'executor':<24} {'cold s':>8} {'warm s':>8} {'members/s warm':>15} {'x threads warm':>15}")
    base = routes["threads (--jobs 2)"][1]
    for name, (cold_s, warm_s) in routes.items():
        print(f"{name:<24} {cold_s:>8.3f} {warm_s:>8.3f} {members / warm_s:>15,.0f} {base / warm_s:>15.2f}")
    print("start-up, not included above: " + ", ".join(f"{k} {v:.2f} s" for k, v in startups.items()))
    print(f"identical bytes across executors: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit("executors disagree")
    cache_runs(paths, folder, args)
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def cache_runs(paths: list[Path], folder: Path, args: argparse.Namespace) -> None:
    """First run (scans all, writes the cache), second run (reuses all), --update after one shard changed."""
    target = folder / "bench.taridx"  # beside its shards, where --update finds them
    rows = []
    cache_dir = folder / "shard-cache"
    for page_cache in ("cold", "warm"):
        firsts, seconds, updates = [], [], []
        for _ in range(args.repeats):
            shutil.rmtree(cache_dir, ignore_errors=True)
            cache = ShardCache(cache_dir)
            if page_cache == "cold":
                drop_from_page_cache(*paths)
            else:
                warm(paths)
            t0 = time.perf_counter()
            first = index_fold(paths, target, jobs=2, cache=cache)
            firsts.append(time.perf_counter() - t0)
            clean = target.read_bytes()
            if page_cache == "cold":
                drop_from_page_cache(*paths)
            t0 = time.perf_counter()
            second = index_fold(paths, target, jobs=2, cache=cache)
            seconds.append(time.perf_counter() - t0)
            assert target.read_bytes() == clean and second.counts.reused == len(paths)
            changed = paths[len(paths) // 2]
            st = changed.stat()
            os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # one shard changed
            if page_cache == "cold":
                drop_from_page_cache(*paths)
            t0 = time.perf_counter()
            updated = update_index(target, jobs=2, cache=cache)
            updates.append(time.perf_counter() - t0)
            assert target.read_bytes() == clean and (updated.counts.reused, updated.counts.scanned) == (
                len(paths) - 1, 1)
            assert first.counts.scanned == len(paths)
        rows.append((page_cache, statistics.median(firsts), statistics.median(seconds), statistics.median(updates)))
    n_entries = len(ShardCache(cache_dir).entries())
    cache_mb = sum(p.stat().st_size for p in ShardCache(cache_dir).entries()) / 1e6
    print(f"\nshard-table cache (threads, --jobs 2; {n_entries} entries, {cache_mb:.1f} MB on disk)\n")
    print(f"{'page cache':<11} {'first run s':>12} {'second run s':>13} {'% of first':>11} {'--update s':>11} "
          f"{'% of first':>11}")
    for page_cache, first, second, update in rows:
        print(f"{page_cache:<11} {first:>12.3f} {second:>13.3f} {100 * second / first:>10.1f}% {update:>11.3f} "
              f"{100 * update / first:>10.1f}%")
    print("targets: second run < 10% of the first; --update (1 of the shards changed) < 5% of a full run; "
          "every run gave the same bytes")


if __name__ == "__main__":
    raise SystemExit(main())
