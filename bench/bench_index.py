"""Benchmark: itarcore's TARIDX indexer against tarfile and a minimal header walk.

Generates a webdataset fold (default: 4 shards x 50,000 samples of .jpg 2-20 KB,
.cls and .json: ~600k members, ~2.8 GB), warms the page cache, then times, side
by side in one process and repeated (median reported):

  * itarcore index_shards, --jobs 1 and --jobs 2, with the compiled tar walk (the
    ``fast`` extra, numba; ITARCORE_JIT=1; one thread a shard) and with numpy alone
    (ITARCORE_JIT=0; its pass over a shard is split over up to 4 threads)
  * tarfile.open(p).getmembers() on every shard (the standard library)
  * a minimal Python loop reading only each header's size field (the practical floor)

Targets (issue 2): >= 40x tarfile's members/s with a warm cache on 2 cores, and
>= 50% of the minimal header walk on one process.

Then, as a user runs them (issue 15): ``itarcore index FOLDER --jobs 2`` as a new process
(imports and start-up included; with the shard tables cached, and with --no-cache) beside
``cat`` of the same shards to /dev/null, warm and cold (the shards dropped from the page
cache with posix_fadvise DONTNEED before each run), in rounds that run every command once
(so each meets the same load as cat), with each process's peak RSS. Target: itarcore at
>= 0.8x the speed of cat (warm). ``--processes-only`` prints only these rows; another
itarcore (a checkout to compare with) is measured by putting it first on PYTHONPATH.

    python bench/bench_index.py            # full size
    python bench/bench_index.py --quick    # small, for CI smoke runs
"""
from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from synthetic import compile_bytecode, drop_from_page_cache, fold_bench_parser

from itarcore.indexing import jit
from itarcore.indexing.indexer import index_shards

ZERO = bytes(512)


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 1_700_000_000
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def generate(folder: Path, shards: int, samples: int, seed: int = 0) -> list[Path]:
    """Write the fold with raw header blocks (tarfile's writer would take minutes at full size)."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, 21_000, dtype=np.uint8).tobytes()
    paths = []
    for s in range(shards):
        path = folder / f"bench_{s:04d}.tar"
        with open(path, "wb", buffering=8 << 20) as fh:
            sizes = rng.integers(2_000, 20_001, samples)
            for i in range(samples):
                stem = f"sample{s:02d}{i:07d}"
                members = (
                    ("jpg", pool[: int(sizes[i])]),
                    ("cls", str(i % 1000).encode()),
                    ("json", b'{"caption": "a generated sample", "i": %d}' % i),
                )
                for ext, data in members:
                    fh.write(_header(f"{stem}.{ext}", len(data)))
                    fh.write(data)
                    fh.write(bytes(-len(data) % 512))
            fh.write(ZERO * 2)
        paths.append(path)
    return paths


def warm(paths: list[Path]) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(16 << 20):
                pass


def header_walk(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            while True:
                h = fh.read(512)
                if len(h) < 512 or h == ZERO:
                    break
                size = int(h[124:136].strip(b"\0 ") or b"0", 8)
                fh.seek((size + 511) // 512 * 512, io.SEEK_CUR)
                n += 1
    return n


def tarfile_members(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with tarfile.open(p) as tar:
            n += len(tar.getmembers())
    return n


def itarcore_index(paths: list[Path], jobs: int, compiled: bool) -> int:
    os.environ["ITARCORE_JIT"] = "1" if compiled else "0"
    try:
        return len(index_shards(paths, jobs=jobs).rows)
    finally:
        os.environ.pop("ITARCORE_JIT")


COLD_START = """
import sys, time
t0 = time.perf_counter()
from itarcore.indexing.indexer import index_shards
index_shards(sys.argv[1:], jobs=2)
print(time.perf_counter() - t0, "numba" in sys.modules)
"""


def cold_start(paths: list[Path]) -> tuple[float, bool]:
    """The whole fold, --jobs 2, in a fresh process as the CLI runs it: (seconds with imports, numba used)."""
    done = subprocess.run([sys.executable, "-c", COLD_START, *map(str, paths)], capture_output=True, text=True,
                          check=True)
    seconds, used = done.stdout.split()
    return float(seconds), used == "True"


def itarcore_command() -> list[str]:
    """The installed `itarcore` script beside this interpreter, else `python -m itarcore`."""
    script = Path(sys.executable).with_name("itarcore")
    return [str(script)] if script.exists() else [sys.executable, "-m", "itarcore"]


GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None  # GNU time, for %M


def run_measured(argv: list[str], capture: bool) -> tuple[float, float | None, bytes]:
    """(wall seconds, peak RSS in MB, stdout) of one process.

    The peak comes from GNU time's own wait4 (``%M``): Python's wait4 would report at least
    this bench's resident size, since Linux carries a parent's ru_maxrss over fork and exec.
    Without GNU time the peak is None."""
    with tempfile.NamedTemporaryFile("r") as rss:
        wrapped = [GNU_TIME, "-f", "%M", "-o", rss.name, *argv] if GNU_TIME else argv
        t0 = time.perf_counter()
        done = subprocess.run(wrapped, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=True)
        seconds = time.perf_counter() - t0
        peak = rss.read().split()
    return seconds, int(peak[-1]) / 1024 if peak else None, done.stdout or b""


CAT = "cat shards > /dev/null"


def process_rows(paths: list[Path], out: Path, repeats: int) -> dict[str, tuple[float, float, float | None, str]]:
    """Whole processes, `itarcore index` and `cat`, warm then cold: per command, the median wall seconds, the
    median of its per-round speed as a fraction of cat's, the largest peak RSS (MB) and the route.

    Each round runs every command once, one after the other, so a command and cat meet the same load
    (on a shared machine the load moves between rounds)."""
    compile_bytecode()
    fold = paths[0].name.rsplit("_", 1)[0]
    commands = {
        "itarcore index --jobs 2": [*itarcore_command(), "index", str(paths[0].parent), "--fold", fold,
                                    "--jobs", "2", "--output", str(out), "--json"],
        CAT: ["cat", *map(str, paths)],
    }
    # the first index of a fold (no shard table cached yet): every shard is scanned
    commands["itarcore index --jobs 2 --no-cache"] = [*commands["itarcore index --jobs 2"], "--no-cache"]
    rows: dict[str, tuple[float, float, float | None, str]] = {}
    run_measured(commands["itarcore index --jobs 2"], capture=True)  # fills the shard cache: its rows show reuse
    for cache in ("warm", "cold"):
        times: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, list[float | None]] = {name: [] for name in commands}
        notes = dict.fromkeys(commands, "")
        for _ in range(repeats):
            for name, argv in commands.items():
                if cache == "cold":
                    drop_from_page_cache(*paths)
                else:
                    warm(paths)
                ours = name.startswith("itarcore")  # its JSON is one line; cat's output goes to /dev/null
                seconds, peak, stdout = run_measured(argv, capture=ours)
                times[name].append(seconds)
                peaks[name].append(peak)
                if ours:
                    notes[name] = json.loads(stdout.decode().splitlines()[-1]).get("route", "")
        for name in commands:
            of_cat = statistics.median(c / t for c, t in zip(times[CAT], times[name]))
            peak = None if None in peaks[name] else max(peaks[name])
            rows[f"{name} ({cache})"] = (statistics.median(times[name]), of_cat, peak, notes[name])
    warm(paths)
    return rows


def print_process_rows(paths: list[Path], folder: Path, total_bytes: int, repeats: int) -> None:
    procs = process_rows(paths, folder / "bench-process.taridx", repeats)
    print(f"\nwhole processes as a user runs them, {total_bytes / 1e9:.2f} GB, {repeats} rounds of every command "
          "(seconds: median; x cat: median of the rounds' cat seconds / its seconds; cold: shards dropped from the "
          "page cache first; peak RSS: the largest of the rounds)\n")
    print(f"{'command':<46} {'seconds':>9} {'GB/s':>7} {'x cat':>7} {'peak MB':>8}  route")
    for cache in ("warm", "cold"):
        for name in ("itarcore index --jobs 2", "itarcore index --jobs 2 --no-cache", CAT):
            seconds, of_cat, peak, route = procs[f"{name} ({cache})"]
            shown = f"{peak:>8.0f}" if peak is not None else f"{'n/a':>8}"
            print(f"{name + f' ({cache})':<46} {seconds:>9.3f} {total_bytes / seconds / 1e9:>7.2f} "
                  f"{of_cat:>7.2f} {shown}  {route}")
    print(f"\ntarget (issue 15): itarcore index >= 0.8x the speed of cat, warm; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def timed(fn, repeats: int) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), count


def main(argv: list[str] | None = None) -> int:
    ap = fold_bench_parser(__doc__, shards=4, samples=50_000, quick="2 shards x 2,000 samples, 1 repeat")
    ap.add_argument("--processes-only", action="store_true", help="only the whole-process rows (itarcore vs cat)")
    args = ap.parse_args(argv)
    if args.quick:
        args.shards, args.samples, args.repeats = 2, 2_000, 1
    folder = args.dir or Path(tempfile.mkdtemp(prefix="itar-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        paths = sorted(folder.glob("bench_*.tar"))
        if len(paths) != args.shards:
            t0 = time.perf_counter()
            paths = generate(folder, args.shards, args.samples)
            print(f"generated {args.shards} shards in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        total_bytes = sum(p.stat().st_size for p in paths)
        warm(paths)
        if args.processes_only:
            print_process_rows(paths, folder, total_bytes, args.repeats)
            return 0
        index_shards(paths[:1])  # loads the compiled kernels once, like the page cache (cold start is below)
        routes = []
        for label, compiled in (("compiled", True), ("numpy", False)):
            if compiled and not jit.available():
                print("numba is not installed (the 'fast' extra): no compiled route", file=sys.stderr)
                continue
            # --jobs 1: one shard at a time (numpy's scan still splits each shard over scan_threads())
            routes += [(f"itarcore {label}, --jobs 1", lambda c=compiled: itarcore_index(paths, 1, c)),
                       (f"itarcore {label}, --jobs 2", lambda c=compiled: itarcore_index(paths, 2, c))]
        routes += [
            ("tarfile getmembers()", lambda: tarfile_members(paths)),
            ("minimal header walk (floor)", lambda: header_walk(paths)),
        ]
        results = {name: timed(fn, args.repeats) for name, fn in routes}
        members = results["minimal header walk (floor)"][1]
        tar_rate = members / results["tarfile getmembers()"][0]
        floor_rate = members / results["minimal header walk (floor)"][0]
        print(f"\n{len(paths)} shards, {members:,} members, {total_bytes / 1e9:.2f} GB, warm page cache, "
              f"{os.cpu_count()} CPUs, median of {args.repeats}\n")
        print(f"{'route':<30} {'seconds':>9} {'members/s':>12} {'x tarfile':>10} {'x floor':>8}")
        for name, (seconds, count) in results.items():
            rate = count / seconds
            print(f"{name:<30} {seconds:>9.3f} {rate:>12,.0f} {rate / tar_rate:>10.1f} {rate / floor_rate:>8.2f}")
        print("\ntargets: >= 40x tarfile (2 cores), >= 0.50x floor (1 process)")
        seconds, used = cold_start(paths)
        print(f"cold start (a new process indexes the fold, --jobs 2, imports included; default route: "
              f"{'compiled' if used else 'numpy'}): {seconds:.2f} s")
        print_process_rows(paths, folder, total_bytes, args.repeats)
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
