"""Stem lookups with and without the key index, its build, and sample grouping, on a synthetic index.

    python bench/bench_keys.py                 # 10M rows (~320 MB index, written to a temp dir, then deleted)
    python bench/bench_keys.py --rows 100000000
    python bench/bench_keys.py --quick         # 1M rows, a smoke run

Rows are random keyhashes, three members a stem, shuffled (not contiguous: the hard case;
a fold indexed in archive order is contiguous and needs no key index for grouping). Each
step runs in a fresh process so its peak RSS (VmHWM, page-cache pages it maps
included) is its own. The reference is the scan of the keyhash column (what every
lookup did before), side by side in the same run. Timings are warm-cache.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import write_index

MEMBERS = 3

STEP = r'''
import json, os, sys, time
import numpy as np
from itarcore.dataset import Dataset
step, path, cache = sys.argv[1:4]
out = {}
t = time.perf_counter()
ds = Dataset.open(path, cache_dir=cache)
out["open_s"] = time.perf_counter() - t
# probe keys read with pread: touching the mapped rows would count their pages in this step's peak RSS
with open(path, "rb") as fh:
    probe = [int.from_bytes(os.pread(fh.fileno(), 8, ds.index.header.off_arr + 32 * row + 24), "little")
             for row in range(0, ds.n_rows, max(1, ds.n_rows // 50))][:50]
if step == "scan":
    ds.key_index = None
    t = time.perf_counter()
    for k in probe[:5]:
        ds.lookup_key(k, 0)
    out["lookup_s"] = (time.perf_counter() - t) / 5
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
    done = subprocess.run([sys.executable, "-c", STEP, step, str(path), str(cache)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"step {step} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="1M rows")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temp dir, deleted after)")
    args = parser.parse_args()
    n = 1_000_000 if args.quick else args.rows
    work = Path(tempfile.mkdtemp(prefix="bench-keys-", dir=args.dir))
    try:
        path = work / "big.taridx"
        write_index(path, n, members_per_stem=MEMBERS)
        cache = work / "cache"
        with open(path, "rb") as fh:  # warm the page cache
            while fh.read(64 << 20):
                pass
        scan = run_step("scan", path, cache)
        build = run_step("build", path, cache)
        lookup = run_step("lookup", path, cache)
        samples = run_step("samples", path, cache)
        key_bytes = sum(p.stat().st_size for p in (cache / "keys").iterdir())
        print(f"\n{n:,} rows ({path.stat().st_size / 1e9:.2f} GB index, shuffled, {MEMBERS} members a stem), "
              "warm cache; each step a fresh process\n")
        print(f"{'step':<40} {'time':>12} {'peak RSS':>10}")
        print(f"{'open (header, tables, cached key index)':<40} {lookup['open_s'] * 1e3:>9.1f} ms {'':>10}")
        print(f"{'lookup by scan (reference)':<40} {scan['lookup_s'] * 1e3:>9.1f} ms {scan['peak_rss_mb']:>7.0f} MB")
        print(f"{'build the key index':<40} {build['build_s']:>10.2f} s {build['peak_rss_mb']:>7.0f} MB")
        print(f"{'lookup through the key index (median)':<40} {lookup['lookup_s'] * 1e6:>9.1f} us "
              f"{lookup['peak_rss_mb']:>7.0f} MB")
        print(f"{'  the first one (cold pages)':<40} {lookup['lookup_first_s'] * 1e6:>9.1f} us")
        print(f"{'group samples (key index cached)':<40} {samples['samples_s']:>10.2f} s "
              f"{samples['peak_rss_mb']:>7.0f} MB")
        print(f"\nkey index file: {key_bytes / 1e9:.2f} GB ({key_bytes / n:.1f} bytes a row); "
              f"speed-up of a lookup: {scan['lookup_s'] / lookup['lookup_s']:,.0f}x; "
              f"{samples['samples']:,} samples")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
