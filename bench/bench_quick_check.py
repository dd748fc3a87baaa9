"""``quick_check`` of a big synthetic fold: time and peak RSS, this tree beside a reference checkout.

    python bench/bench_quick_check.py                          # 30M rows, this tree only
    python bench/bench_quick_check.py --reference /work/main   # and the same check from another checkout
    python bench/bench_quick_check.py --dir /tmp/qc --rows 30000000   # keep the fold for the next run

The fold is a synthetic index (random keyhashes, three members a stem, shuffled) and one
sparse shard file big enough for every row, so the check finds nothing and does all its
passes. Each run is a fresh process (``PYTHONPATH`` set to the checkout under test), warm
cache; peak RSS is VmHWM (mapped pages of the index included). The findings of both
checkouts are compared.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import write_index

HERE = Path(__file__).resolve().parents[1]
STEP = r'''
import json, sys, time
from itarcore.audit import quick_check
import itarcore
t = time.perf_counter()
report = quick_check(sys.argv[1])
out = {"s": time.perf_counter() - t, "findings": [(f.kind, f.message) for f in report.findings],
       "module": itarcore.__file__}
with open("/proc/self/status") as fh:
    out["peak_rss_mb"] = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024
print(json.dumps(out))
'''


def write_fold(folder: Path, n: int) -> Path:
    index = folder / f"qc{n // 1_000_000}m.taridx"
    shard = folder / f"{index.stem}_0000.tar"
    if not index.exists() or index.stat().st_size < 32 * n:
        write_index(index, n, members_per_stem=3)
    with open(shard, "wb") as fh:
        fh.truncate(n * 1024 + (1 << 20))  # sparse: sizes are only looked up with stat
    mtime = index.stat().st_mtime
    os.utime(shard, (mtime, mtime))
    return index


def run(tree: Path, index: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", STEP, str(index)], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir(), check=False)
    if done.returncode:
        raise SystemExit(f"quick_check from {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--reference", type=Path, help="another checkout to run beside this one (e.g. /work/main)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="keep the fold here (default: a temp dir, removed)")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-qc-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        index = write_fold(work, args.rows)
        with open(index, "rb") as fh:  # warm the page cache
            while fh.read(64 << 20):
                pass
        trees = {"this tree": HERE}
        if args.reference:
            trees[f"reference ({args.reference})"] = args.reference.resolve()
        results: dict[str, list[dict]] = {name: [] for name in trees}
        loads = [os.getloadavg()[0]]
        for _ in range(args.repeats):  # interleaved, so both see the same machine
            for name, tree in trees.items():
                results[name].append(run(tree, index))
        loads.append(os.getloadavg()[0])
        print(f"\nquick_check of {args.rows:,} rows ({index.stat().st_size / 1e9:.2f} GB index), warm cache, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
              f"{' -> '.join(f'{x:.2f}' for x in loads)}\n")
        print(f"| {'checkout':<40} | {'time (median)':>13} | {'peak RSS (max)':>14} | findings |")
        print(f"|{'-' * 42}|{'-' * 15}|{'-' * 16}|----------|")
        for name, runs in results.items():
            times = sorted(r["s"] for r in runs)
            print(f"| {name:<40} | {times[len(times) // 2]:>11.2f} s | {max(r['peak_rss_mb'] for r in runs):>11.0f} MB "
                  f"| {len(runs[0]['findings']):>8} |")
        found = [json.dumps(r["findings"]) for runs in results.values() for r in runs]
        print("\nfindings identical across checkouts and runs:", len(set(found)) == 1)
        for name, runs in results.items():
            print(f"{name}: itarcore from {Path(runs[0]['module']).parent}")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
