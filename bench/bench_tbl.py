"""tar -> TBL v2 conversion: itarcore's streaming job vs turboloader's Python route (tarfile + TblWriterV2).

Each route runs in its own child process, so its peak RSS (VmHWM) is its own. Two dataset
sizes show whether memory grows with the data. itarcore runs as a user gets it (for these
sizes its tar scan is numpy's: see ``itarcore.indexing.jit`` for when numba's pays off).

Each route is timed twice over, with its output written to two places:
- **page cache**: both routes stop the clock when the file is complete in the page cache
  (itarcore with ``durable=False``, i.e. ``--no-fsync``; turboloader as its writer always works);
- **disk**: both stop the clock with the output on disk (itarcore's default fsync before its
  rename; the turboloader route followed by the same fsync). For itarcore the difference
  between its two rows is time spent waiting for the disk.

The input tar is flushed to disk before any route runs, and every output is flushed (untimed)
before it is deleted, so no run pays for another's writeback. The routes take turns,
``--repeat`` times each: the table shows median seconds and the largest peak RSS.

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
route, src, dst, where = sys.argv[1:5]
if route == "itarcore":
    from itarcore.jobs import convert_tar_to_tbl
else:
    import tarfile, turboloader as tl
t0 = time.perf_counter()  # imports (and the floor's buffer) are not timed
if route == "itarcore":
    n = convert_tar_to_tbl([src], dst, durable=where == "disk").num_samples
else:
    w = tl.TblWriterV2(dst, enable_compression=False)
    n = 0
    with tarfile.open(src) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".jpg"):
                w.add_sample(tf.extractfile(m).read(), tl.SampleFormat.JPEG, 0, 0)
                n += 1
    w.finalize()
if where == "disk" and route != "itarcore":  # on disk, as itarcore's durable writer leaves its output
    fd = os.open(dst, os.O_RDONLY)
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


def run(route: str, src: str, dst: str, where: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, route, src, dst, where],
                         check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    flush(dst)  # untimed: the next run must not pay for this one's writeback
    os.remove(dst)
    return result


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
    print(f"{'members':>9} {'tar MB':>8} {'written to':<11} {'route':<12} {'seconds':>8} {'samples/s':>11} "
          f"{'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory(prefix="bench_tbl_") as tmp:
        for n in sizes:
            src, dst = os.path.join(tmp, f"in_{n}.tar"), os.path.join(tmp, "out.tbl")
            make_tar(src, n)
            flush(src)
            runs: dict[tuple[str, str], list[dict]] = {}
            for _ in range(repeat):
                for where in ("page cache", "disk"):
                    key = where.split()[0]
                    for route in routes:
                        runs.setdefault((where, route), []).append(run(route, src, dst, key))
            for where in ("page cache", "disk"):
                secs = {}
                for (place, route), results in runs.items():
                    if place != where:
                        continue
                    secs[route] = statistics.median(r["secs"] for r in results)
                    print(f"{n:>9,} {os.path.getsize(src) / 1e6:>8.1f} {where:<11} {route:<12} {secs[route]:>8.2f} "
                          f"{n / secs[route]:>11,.0f} {max(r['rss_mb'] for r in results):>12.1f}", flush=True)
                if "turboloader" in secs:
                    print(f"{'':>9} {'':>8} speed-up ({where}): {secs['turboloader'] / secs['itarcore']:.1f}x")
            os.remove(src)

if __name__ == "__main__":
    main()
