"""Stem lookups with and without the key index, its build, and sample grouping, on a synthetic index.

    python bench/bench_keys.py                 # 10M rows (~320 MB index, written to a temp dir, then deleted)
    python bench/bench_keys.py --rows 100000000
    python bench/bench_keys.py --quick         # 1M rows, a smoke run
    python bench/bench_keys.py --index /tmp/big.taridx --rows 100000000   # write once, reuse after

Rows are random keyhashes, three members a stem, shuffled (not contiguous: the hard case;
a fold indexed in archive order is contiguous and needs no key index for grouping). Each
step runs in a fresh process so its peak RSS (VmHWM, page-cache pages it maps
included) is its own. The references, side by side in the same run: for lookups, the
scan as it was before the threaded one (one thread comparing the unaligned keyhash
column), and the threaded scan on one thread. Scans are timed warm (median of
interleaved runs) and cold (the index dropped from the page cache first; mean of two); the other
steps are warm-cache.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import write_index

from itarcore.formats.taridx import read_taridx

MEMBERS = 3

STEP = r'''
import json, os, sys, time
import numpy as np
from itarcore.dataset import Dataset
step, path, cache, bench_dir = sys.argv[1:5]
sys.path.insert(0, bench_dir)
from synthetic import drop_from_page_cache
out = {}
t = time.perf_counter()
ds = Dataset.open(path, cache_dir=cache)
out["open_s"] = time.perf_counter() - t
# probe keys read with pread: touching the mapped rows would count their pages in this step's peak RSS
with open(path, "rb") as fh:
    probe = [int.from_bytes(os.pread(fh.fileno(), 8, ds.index.header.off_arr + 32 * row + 24), "little")
             for row in range(0, ds.n_rows, max(1, ds.n_rows // 50))][:50]
if step == "scan":
    def before(keyhash):  # the scan before the threaded one: one thread, the unaligned u64 column
        kh, cid, chunk, found = ds.rows["keyhash"], ds.rows["crashid"], 1 << 22, []
        for start in range(0, ds.n_rows, chunk):
            match = np.flatnonzero(kh[start : start + chunk] == np.uint64(keyhash))
            found.append(match[cid[start + match] == 0] + start)
            ds.index.release_rows(start, start + chunk)
        return np.concatenate(found)
    ds.key_index = None
    scans = {"before": before, "one thread": lambda k: ds.scan_key(k, 0, threads=1),
             "two threads": lambda k: ds.scan_key(k, 0)}
    want = {k: before(k).tolist() for k in probe[:3]}
    warm = {name: [] for name in scans}
    loads = [os.getloadavg()[0]]
    for rep in range(int(os.environ.get("SCAN_REPEATS", "9"))):
        for name, scan in scans.items():
            k = probe[rep % 3]
            t = time.perf_counter()
            assert scan(k).tolist() == want[k]
            warm[name].append(time.perf_counter() - t)
    loads.append(os.getloadavg()[0])
    cold = {name: [] for name in scans}
    for order in (list(scans), list(scans)[::-1]):  # both orders: the disk's own caches favour no one
        for name in order:
            drop_from_page_cache(path)
            t = time.perf_counter()
            scans[name](probe[0])
            cold[name].append(time.perf_counter() - t)
    loads.append(os.getloadavg()[0])
    out["scan_warm_s"] = {name: sorted(v)[len(v) // 2] for name, v in warm.items()}
    out["scan_warm_min_s"] = {name: min(v) for name, v in warm.items()}
    out["scan_cold_s"] = {name: sum(v) / len(v) for name, v in cold.items()}
    out["loads"] = loads
elif step == "build":
    t = time.perf_counter()
    ds.build_key_index()
    out["build_s"] = time.perf_counter() - t
elif step == "lookup":
    assert ds.key_index_state == "ready"
    times = []
    for k in probe:
        t = time.perf_counter()
        assert len(ds.lookup_key(k, 0)) > 0
        times.append(time.perf_counter() - t)
    out["lookup_s"] = sorted(times)[len(times) // 2]
    out["lookup_first_s"] = times[0]
elif step == "samples":
    t = time.perf_counter()
    groups = ds.compute_samples()
    out["samples_s"] = time.perf_counter() - t
    out["samples"] = groups.n_samples
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec
with open("/proc/self/status") as fh:
    out["peak_rss_mb"] = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024
print(json.dumps(out))
'''


def run_step(step: str, path: Path, cache: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", STEP, step, str(path), str(cache),
                           str(Path(__file__).resolve().parent)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"step {step} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_scans(scan: dict) -> None:
    for name, what in (("before", "lookup by scan, before (1 thread, u64)"), ("one thread", "lookup by scan, 1 thread"),
                       ("two threads", "lookup by scan, 2 threads (default)")):
        print(f"{what:<40} {scan['scan_warm_s'][name] * 1e3:>9.1f} ms {'':>10} "
              f"min {scan['scan_warm_min_s'][name] * 1e3:.1f} ms; cold {scan['scan_cold_s'][name] * 1e3:.0f} ms")
    print(f"{'  (peak RSS of the scans)':<40} {'':>12} {scan['peak_rss_mb']:>7.0f} MB  "
          f"load average {' -> '.join(f'{x:.2f}' for x in scan['loads'])}, {time.strftime('%H:%M UTC', time.gmtime())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="1M rows")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temp dir, deleted after)")
    parser.add_argument("--scan-only", action="store_true", help="only the lookups by scan (no key index)")
    parser.add_argument("--index", type=Path, help="the synthetic index to use: written if missing, kept after")
    args = parser.parse_args()
    n = 1_000_000 if args.quick else args.rows
    work = Path(tempfile.mkdtemp(prefix="bench-keys-", dir=args.dir))
    try:
        path = args.index or work / "big.taridx"
        if not path.exists() or path.stat().st_size < 32 * n:
            write_index(path, n, members_per_stem=MEMBERS)
        n = read_taridx(path, check_rows=False).n_rows
        cache = work / "cache"
        with open(path, "rb") as fh:  # warm the page cache
            while fh.read(64 << 20):
                pass
        scan = run_step("scan", path, cache)
        if args.scan_only:
            print(f"\n{n:,} rows ({path.stat().st_size / 1e9:.2f} GB index), lookups by scan\n")
            print_scans(scan)
            return 0
        build = run_step("build", path, cache)
        lookup = run_step("lookup", path, cache)
        samples = run_step("samples", path, cache)
        key_bytes = sum(p.stat().st_size for p in (cache / "keys").iterdir())
        print(f"\n{n:,} rows ({path.stat().st_size / 1e9:.2f} GB index, shuffled, {MEMBERS} members a stem), "
              "warm cache; each step a fresh process\n")
        print(f"{'step':<40} {'time':>12} {'peak RSS':>10}")
        print(f"{'open (header, tables, cached key index)':<40} {lookup['open_s'] * 1e3:>9.1f} ms {'':>10}")
        print_scans(scan)
        print(f"{'build the key index':<40} {build['build_s']:>10.2f} s {build['peak_rss_mb']:>7.0f} MB")
        print(f"{'lookup through the key index (median)':<40} {lookup['lookup_s'] * 1e6:>9.1f} us "
              f"{lookup['peak_rss_mb']:>7.0f} MB")
        print(f"{'  the first one (cold pages)':<40} {lookup['lookup_first_s'] * 1e6:>9.1f} us")
        print(f"{'group samples (key index cached)':<40} {samples['samples_s']:>10.2f} s "
              f"{samples['peak_rss_mb']:>7.0f} MB")
        print(f"\nkey index file: {key_bytes / 1e9:.2f} GB ({key_bytes / n:.1f} bytes a row); "
              f"speed-up of a lookup: {scan['scan_warm_s']['two threads'] / lookup['lookup_s']:,.0f}x; "
              f"{samples['samples']:,} samples")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
