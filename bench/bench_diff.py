"""`itarcore diff` on big synthetic indexes, side by side with a plain Python diff (a dict of samples).

    python bench/bench_diff.py                   # 3M rows (with the reference) and 30M rows (~2 GB of indexes)
    python bench/bench_diff.py --quick           # 300k rows, a smoke run for CI
    python bench/bench_diff.py --rows 3000000    # one size

The old index holds N samples of 3 members (jpg, cls, json) in 16 shards; the new one
removes every sample numbered 0 mod 100, grows a member of those numbered 1 mod 100,
adds a `txt` member to those numbered 2 mod 100, moves those numbered 3 mod 100 to
the next shard and appends N/100 new samples, so the expected counts are known. No
shards exist: stems are reported as hashes. Each route runs in its own process
(peak RSS is that process's), cold (the index files dropped from the page cache
with posix_fadvise DONTNEED) and then warm.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from itarcore.diff.compare import BYTES_PER_SAMPLE
from itarcore.formats.taridx import HEADER_SIZE, ROW_DTYPE, encode_header

EXTS = ("jpg", "cls", "json", "txt")
SHARDS = 16
CHUNK_SAMPLES = 500_000


def sample_rows(first: int, n: int, n_total: int, new: bool) -> np.ndarray:
    """Rows of samples first..first+n-1 (3 or 4 members each), keyhash a fixed function of the number."""
    s = np.arange(first, first + n, dtype=np.uint64)
    keep = np.ones(n, bool)
    members = np.full(n, 3)
    if new:
        keep = (s % 100 != 0) | (s >= n_total)
        members[(s % 100 == 2) & (s < n_total)] = 4
    s, members = s[keep], members[keep]
    rep = np.repeat(np.arange(len(s)), members)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(members) - members, members)
    rows = np.zeros(len(rep), ROW_DTYPE)
    key = s[rep] * np.uint64(0x9E3779B97F4A7C15) + np.uint64(12345)
    rows["keyhash"] = key ^ (key >> np.uint64(29))
    shard = np.minimum(s[rep] * SHARDS // max(1, n_total), SHARDS - 1)
    if new:
        shard = np.where((s[rep] % 100 == 3) & (s[rep] < n_total), (shard + 1) % SHARDS, shard)
    rows["fid"] = shard
    rows["extid"] = within
    rows["size"] = 1000 + (s[rep] % 977) * 7 + within
    if new:
        rows["size"] += ((s[rep] % 100 == 1) & (within == 0)).astype(np.uint64)
    rows["offset"] = np.arange(len(rep), dtype=np.uint64) * 2048
    return rows


def write_index(path: Path, n_samples: int, new: bool) -> int:
    ext_block = "\n".join(EXTS).encode()
    total = n_samples + (n_samples // 100 if new else 0)
    n_rows = n_stems = 0
    with open(path, "wb") as fh:
        fh.write(bytes(HEADER_SIZE) + ext_block)
        for first in range(0, total, CHUNK_SAMPLES):
            rows = sample_rows(first, min(CHUNK_SAMPLES, total - first), n_samples, new)
            fh.write(rows.tobytes())
            n_rows += len(rows)
            n_stems += len(np.unique(rows["keyhash"]))
        fh.seek(0)
        off = HEADER_SIZE + len(ext_block)
        fh.write(encode_header(n_stems, n_rows, len(EXTS), 0, off, off, 1))
    return n_rows


def expected(n: int) -> dict[str, int]:
    s = np.arange(n)
    return {"added": n // 100, "removed": int((s % 100 == 0).sum()), "changed_size": int((s % 100 == 1).sum()),
            "changed_extensions": int((s % 100 == 2).sum()), "moved": int((s % 100 == 3).sum())}


def python_dict_diff(old: str, new: str) -> dict[str, int]:
    """The reference: every sample into a dict {(keyhash, crashid): sorted (ext, size)}, then set algebra."""
    from itarcore.formats.taridx import read_taridx

    def samples(path: str) -> tuple[dict, dict]:
        members: dict = defaultdict(list)
        shard: dict = {}
        with read_taridx(path, check_rows=False) as ix:
            for start in range(0, ix.n_rows, 1 << 20):
                part = ix.rows[start : start + (1 << 20)]
                for kh, cid, ext, size, fid in zip(part["keyhash"].tolist(), part["crashid"].tolist(),
                                                   part["extid"].tolist(), part["size"].tolist(),
                                                   part["fid"].tolist()):
                    members[(kh, cid)].append((ix.extensions[ext], size))
                    shard.setdefault((kh, cid), fid)
        return members, shard

    a, a_shard = samples(old)
    b, b_shard = samples(new)
    out = dict.fromkeys(("added", "removed", "changed_size", "changed_extensions", "moved"), 0)
    out["added"], out["removed"] = len(b.keys() - a.keys()), len(a.keys() - b.keys())
    for key in a.keys() & b.keys():
        x, y = sorted(a[key]), sorted(b[key])
        if sorted(e for e, _ in x) != sorted(e for e, _ in y):
            out["changed_extensions"] += 1
        elif x != y:
            out["changed_size"] += 1
        elif a_shard[key] != b_shard[key]:
            out["moved"] += 1
    return out


class AnonPeak:
    """Peak anonymous memory (heap, numpy arrays; not the mapped index pages ru_maxrss also counts), sampled."""

    def __init__(self) -> None:
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    self.peak_kb = max(self.peak_kb, int(line.split()[1]))

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        return self.peak_kb / 1024


def run_route(route: str, old: str, new: str, budget: int) -> None:
    """Child process: one route, prints {"seconds", "rss_mb", "anon_mb", "counts"} as JSON."""
    from itarcore.diff import diff_indexes  # imports are not timed

    anon = AnonPeak()
    started = time.perf_counter()
    if route == "reference":
        counts = python_dict_diff(old, new)
    else:
        diff = diff_indexes(old, new, keep=20, **({"memory_budget": budget} if budget else {}))
        counts = {k: diff.totals[k] for k in ("added", "removed", "changed_size", "changed_extensions", "moved")}
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rss_mb": rss, "anon_mb": anon.stop(), "counts": counts}))


def drop_cache(*paths: Path) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            os.fsync(fh.fileno())
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def child(route: str, old: Path, new: Path, budget: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--route", route, str(old), str(new), "--budget", str(budget)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_size(n_samples: int, folder: Path, with_reference: bool) -> None:
    old, new = folder / f"old_{n_samples}.taridx", folder / f"new_{n_samples}.taridx"
    n_old, n_new = write_index(old, n_samples, False), write_index(new, n_samples, True)
    want = expected(n_samples)
    sizes = (2 * n_samples + n_samples // 100) * BYTES_PER_SAMPLE  # what diff_indexes estimates for one pass
    routes = [("itarcore diff, one pass", "itarcore", sizes + 1), ("itarcore diff, 4 passes", "itarcore", sizes // 4 + 1)]
    if with_reference:
        routes.append(("Python dict of samples (reference)", "reference", 0))
    print(f"\n{n_old:,} + {n_new:,} rows ({n_samples:,} samples), indexes {old.stat().st_size / 2**20:,.0f} + "
          f"{new.stat().st_size / 2**20:,.0f} MiB")
    print(f"{'route':<36} {'cold s':>8} {'warm s':>8} {'peak RSS MB':>12} {'peak anon MB':>13} "
          f"{'x reference (warm)':>19}")
    results = []
    for label, route, budget in routes:
        drop_cache(old, new)
        cold = child(route, old, new, budget)
        warm = child(route, old, new, budget)
        assert cold["counts"] == want and warm["counts"] == want, (label, cold["counts"], want)
        results.append((label, cold, warm))
    ref = next((w["seconds"] for label, _, w in results if "reference" in label), None)
    for label, cold, warm in results:
        speed = f"{ref / warm['seconds']:.1f}" if ref else "—"
        print(f"{label:<36} {cold['seconds']:>8.2f} {warm['seconds']:>8.2f} {warm['rss_mb']:>12,.0f} "
              f"{warm['anon_mb']:>13,.0f} {speed:>19}")
    print("counts as expected: " + ", ".join(f"{k} {v:,}" for k, v in want.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="300k rows, for CI")
    ap.add_argument("--rows", type=int, action="append", help="rows of the old index (repeatable)")
    ap.add_argument("--dir", help="where to write the indexes (default: a temp dir, deleted after)")
    ap.add_argument("--route", help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.route:
        run_route(args.route, *args.paths, budget=args.budget)
        return
    rows = args.rows or ([300_000] if args.quick else [3_000_000, 30_000_000])
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_diff_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for n in rows:
            bench_size(n // 3, folder, with_reference=n <= 3_000_000)
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
