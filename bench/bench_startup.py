"""Start-up of the `itarcore` command: wall clock of whole processes, against the bare interpreter.

    python bench/bench_startup.py                  # this checkout
    python bench/bench_startup.py --before /work/main   # also the same commands from another checkout

Each command runs ``--repeats`` times in a fresh process; min and median are printed,
with the bare interpreter (``python -c pass``) and ``import numpy`` as references in the
same run. On a shared machine the min is the fairer figure. Target (issue 15):
``itarcore --help`` and ``itarcore info X`` under 150 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "taridx" / "webds" / "train.taridx"


def timed(argv: list[str], env: dict[str, str], repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--before", type=Path, help="another checkout to compare (run with PYTHONPATH set to it)")
    args = parser.parse_args()
    py = sys.executable
    checkouts = {"this checkout": ROOT, **({"before": args.before} if args.before else {})}
    rows: list[tuple[str, tuple[float, float]]] = []
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    rows.append(("python -c pass (interpreter only)", timed([py, "-c", "pass"], base_env, args.repeats)))
    rows.append(("python -c 'import numpy'", timed([py, "-c", "import numpy"], base_env, args.repeats)))
    for label, checkout in checkouts.items():
        env = {**base_env, "PYTHONPATH": str(checkout)}
        for name, extra in (("itarcore --help", ["--help"]), ("itarcore info X.taridx", ["info", str(FIXTURE)]),
                            ("itarcore stem X.taridx STEM", ["stem", str(FIXTURE), "train000000"])):
            rows.append((f"{name} ({label})", timed([py, "-m", "itarcore", *extra], env, args.repeats)))
    print(f"\nwhole processes, {args.repeats} runs each, {os.cpu_count()} CPUs\n")
    print(f"{'command':<48} {'min ms':>8} {'median ms':>10}")
    for name, (low, mid) in rows:
        print(f"{name:<48} {low * 1e3:>8.0f} {mid * 1e3:>10.0f}")
    print("\ntarget (issue 15): --help and info under 150 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
