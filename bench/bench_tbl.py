"""tar -> TBL v2 conversion: itarcore's streaming job vs turboloader's Python route (tarfile + TblWriterV2).

Each route runs in its own child process, so its peak RSS (VmHWM) is its own. Two dataset
sizes show whether memory grows with the data. itarcore runs as a user gets it (for these
sizes its tar scan is numpy's: see ``itarcore.jit`` for when numba's pays off).
Both routes stop the clock with their output on disk: itarcore's atomic writer fsyncs
before its rename, and the turboloader route is followed by the same fsync.
The input tar is flushed to disk before any route runs, so none pays for its writeback, and
the routes take turns, ``--repeat`` times each: the table shows median seconds and the largest
peak RSS.

    python bench/bench_tbl.py            # 50,000 and 200,000 members, median of 3
    python bench/bench_tbl.py --quick    # 2,000 and 8,000 members, once
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

CHILD = r"""
import json, os, sys, time
route, src, dst = sys.argv[1:4]
if route == "itarcore":
    from itarcore.jobs import convert_tar_to_tbl
else:
    import tarfile, turboloader as tl
t0 = time.perf_counter()  # imports are not timed
if route == "itarcore":
    n = convert_tar_to_tbl([src], dst).num_samples
else:
    w = tl.TblWriterV2(dst, enable_compression=False)
    n = 0
    with tarfile.open(src) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".jpg"):
                w.add_sample(tf.extractfile(m).read(), tl.SampleFormat.JPEG, 0, 0)
                n += 1
    w.finalize()
    fd = os.open(dst, os.O_RDONLY)  # on disk, as itarcore's atomic writer leaves its output
    os.fsync(fd)
    os.close(fd)
secs = time.perf_counter() - t0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"n": n, "secs": secs, "rss_mb": hwm / 1024}))
"""


def make_tar(path: str, n: int) -> None:
    """n small JPEG-like members (a real JPEG header with a varying tail), 2..6 KB each."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (120, 30, 200)).save(buf, "JPEG", quality=90)
    head = buf.getvalue()
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(n):
            data = head + os.urandom(1500 + (i * 7919) % 4000)
            info = tarfile.TarInfo(f"{i // 10000:03d}/sample{i:07d}.jpg")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def flush(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run(route: str, src: str, dst: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, route, src, dst], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (2,000 and 8,000 members)")
    parser.add_argument("--sizes", type=int, nargs="+", help="member counts to try")
    parser.add_argument("--repeat", type=int, help="runs of each route (default 3, 1 with --quick)")
    args = parser.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    sizes = args.sizes or ([2_000, 8_000] if args.quick else [50_000, 200_000])
    routes = ["itarcore"]
    try:
        import turboloader  # noqa: F401

        routes.append("turboloader")
    except ImportError:
        print("turboloader is not installed: timing itarcore only")
    print(f"{'members':>9} {'tar MB':>8} {'route':<12} {'seconds':>8} {'samples/s':>11} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory(prefix="bench_tbl_") as tmp:
        for n in sizes:
            src = os.path.join(tmp, f"in_{n}.tar")
            make_tar(src, n)
            flush(src)
            runs: dict[str, list[dict]] = {route: [] for route in routes}
            for _ in range(repeat):
                for route in routes:
                    dst = os.path.join(tmp, "out.tbl")
                    runs[route].append(run(route, src, dst))
                    os.remove(dst)
            rates = {}
            for route, results in runs.items():
                secs = statistics.median(r["secs"] for r in results)
                rates[route] = results[0]["n"] / secs
                print(f"{n:>9,} {os.path.getsize(src) / 1e6:>8.1f} {route:<12} {secs:>8.2f} "
                      f"{rates[route]:>11,.0f} {max(r['rss_mb'] for r in results):>12.1f}", flush=True)
            if "turboloader" in rates:
                print(f"{'':>9} {'':>8} speed-up: {rates['itarcore'] / rates['turboloader']:.1f}x")
            os.remove(src)


if __name__ == "__main__":
    main()
