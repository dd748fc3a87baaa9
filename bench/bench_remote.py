"""Benchmark: indexing a fold in a store (loopback S3 and HTTP) against downloading it and indexing locally.

Two generated folds are put on four stores on 127.0.0.1, all served from this process:

  * ``images``: small members (~5 KB .jpg, a .cls and a .json per sample), like image shards
  * ``videos``: a few large members (tens of MB .mp4, with a small .json) holding nearly all the bytes

  * ``s3``: moto's S3 server (the tests' ``S3Server``)
  * ``s3-ranged``: the same server with one change, made in this process for this store only:
    a GET of one byte range reads that range from moto's copy of the object, as S3 serves it,
    where moto as shipped reads the whole object for every ranged GET (see below)
  * ``http``: the tests' HTTP range server (``RangeHTTPServer``: a ranged GET reads only its range)
  * ``http-30ms``: the same server waiting 30 ms before each body, as a store's first byte does
    (requests still run side by side): the latency-bound case, where a walk that needs one
    round trip per large member is slowest

and each fold on each store is indexed, side by side in one run, repeated (median
reported), each run in a fresh child process (so its peak RSS is its own):

  * ``itarcore remote``: ``index_folds(URL, remote=…)``: ranged reads of 16 MiB blocks, large
    payloads jumped over (the default read plan), ``--jobs`` shards at a time; again with 8 MiB
    blocks, and with one shard at a time (``--jobs 1``, which was the default for URLs before
    remote folds got ``REMOTE_JOBS``)
  * ``fs.get + local index``: fsspec ``fs.get`` of every shard whole into a temp folder (all shards
    at once: fsspec's own concurrency), then ``index_folds`` on the local copies; warm (the copies
    still in the page cache, as after a download) and cold (dropped with posix_fadvise DONTNEED
    before the local index)

Each child imports itarcore and the store's fsspec backend (s3fs and botocore, or aiohttp)
before its clock starts, in both routes: imports are paid once per process, not per fold
(s3fs's costs ~0.3 s here, which would otherwise sit in both routes' times alike and squeeze
the ratio; the table prints it). Creating the store's client is inside the clock, in both.

Bytes fetched and requests are counted at the HTTP layer (every request aiohttp sends, in
both routes, on both stores) and, for itarcore, also from its own statistics. The indexes
of every route must be byte-identical. The servers keep the objects themselves, so
cold/warm applies to the local copies only.

moto builds the whole object's response for every GET and then cuts the range out (under
a per-object lock, one request at a time), so a ranged GET costs time in proportion to the
object's size (S3's does not): the bench prints that cost, measured in the same run, beside
each table, and what itarcore's requests cost at that price one after another. Timing each
handler in the server (2026-11-23, videos): a 64 KiB GET of a 92 MB object costs moto 50-90
ms (reading the object from its spooled temp file; kept in memory instead, ~47 ms with the
GIL held), and itarcore's 16 GETs (one listing besides, no HEAD) keep the server busy on
both cores for the whole scan while the client's threads wait, so the itarcore row's floor
on moto is those 16 copies of a whole object spread over two cores, however the reads are
ordered. fs.get costs moto 12 such copies (per shard a whole GET closed once its length is
known, then two 50 MB ranged parts) plus the transfer. The servers run in this process,
which does nothing else while a child runs. The HTTP server's ranged GET costs its range only.

Targets (issue 12): on ``images`` itarcore no slower than download-then-index; on ``videos``
fetch under a quarter of the fold's bytes and finish at least 3x faster.

    python bench/bench_remote.py            # ~250 MB of images, ~360 MB of videos, on both stores
    python bench/bench_remote.py --quick    # small, for a smoke run
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from synthetic import drop_from_page_cache

TESTS = Path(__file__).resolve().parents[1] / "tests"  # the loopback servers of the tests
ZERO = bytes(512)
_REQUESTS = [0, 0]  # requests sent, bytes of ranged (206) responses (HTTP layer, every client in the process)


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = size, 1_700_000_000
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def write_fold(folder: Path, fold: str, shards: int, samples: int, members: list[tuple[str, int, int]],
               seed: int = 0) -> int:
    """``shards`` tars of ``samples`` samples, each with ``members`` (ext, min size, max size); returns bytes."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, max(hi for _, _, hi in members) + 1, dtype=np.uint8).tobytes()
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for s in range(shards):
        path = folder / f"{fold}_{s:04d}.tar"
        with open(path, "wb", buffering=8 << 20) as fh:
            for i in range(samples):
                for ext, lo, hi in members:
                    size = int(rng.integers(lo, hi + 1))
                    fh.write(_header(f"{fold}{s:02d}{i:07d}.{ext}", size))
                    fh.write(memoryview(pool)[:size])
                    fh.write(bytes(-size % 512))
            fh.write(ZERO * 2)
        total += path.stat().st_size
    return total


def _count_http_requests() -> None:
    """Count every request aiohttp sends (s3fs goes through aiobotocore, fsspec's HTTP through aiohttp)."""
    import aiohttp

    request = aiohttp.ClientSession._request

    async def counting(self, *args, **kwargs):
        _REQUESTS[0] += 1
        response = await request(self, *args, **kwargs)
        if response.status == 206:  # a whole-object GET may be dropped unread: only ranged bodies are counted
            _REQUESTS[1] += int(response.headers.get("content-length") or 0)
        return response

    aiohttp.ClientSession._request = counting


def child(args: argparse.Namespace) -> None:
    """One measured run, in its own process; prints one JSON line."""
    from itarcore.formats.read_plan import ReadPlan
    from itarcore.indexing.remote import RemoteOptions
    from itarcore.jobs import index_folds

    options = json.loads(os.environ["BENCH_STORAGE_OPTIONS"])
    _count_http_requests()
    out = Path(args.out)
    imported = time.perf_counter()
    import fsspec

    fsspec.get_filesystem_class(args.url.split("://", 1)[0])  # s3fs and botocore: outside the clock, as itarcore's
    started = time.perf_counter()
    fetched = None
    if args.child.startswith("itarcore"):
        plan = ReadPlan(8 << 20) if args.child == "itarcore-8M" else ReadPlan()
        jobs = 1 if args.child == "itarcore-1" else args.jobs
        (result,) = index_folds(args.url, output_dir=out, jobs=jobs, remote=RemoteOptions(options, plan))
        fetched = (result.fetched.bytes_fetched, result.fetched.requests)
        received = _REQUESTS[1]
    else:
        from fsspec.core import url_to_fs

        fs, folder = url_to_fs(args.url, **options)
        local = out / "shards"
        local.mkdir()
        shards = sorted(p for p in fs.ls(folder, detail=False) if p.endswith(".tar"))
        fs.get(shards, [str(local / p.rsplit("/", 1)[1]) for p in shards])  # every shard at once
        if args.child == "download-cold":
            drop_from_page_cache(*local.iterdir())
        (result,) = index_folds(local, output_dir=out, jobs=args.jobs)
        received = result.total_bytes  # every shard, whole (fsspec may split big files into ranged parts)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "import_s": started - imported, "requests": _REQUESTS[0],
                      "bytes": received, "itarcore": fetched,
                      "rss_mb": peak_rss_mb(),
                      "sha": hashlib.sha256(Path(result.path).read_bytes()).hexdigest()[:16], "rows": result.n_rows}))


def peak_rss_mb() -> float:
    """This process's peak resident size since exec (VmHWM; ru_maxrss would carry the parent's over a fork)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024


def request_cost_ms(fs, path: str) -> float:
    """Median seconds of a 64 KiB ranged GET of ``path`` on the server, in ms."""
    fs.cat_file(path, start=0, end=65536)  # the connection and the client are set up first
    times = []
    for _ in range(5):
        started = time.perf_counter()
        fs.cat_file(path, start=0, end=65536)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def run_child(route: str, url: str, options: dict, jobs: int, scratch: Path) -> dict:
    with tempfile.TemporaryDirectory(dir=scratch) as out:
        env = dict(os.environ, BENCH_STORAGE_OPTIONS=json.dumps(options))
        done = subprocess.run([sys.executable, __file__, "--child", route, "--url", url, "--out", out,
                               "--jobs", str(jobs)], check=False, capture_output=True, text=True, env=env)
        if done.returncode:
            raise SystemExit(f"{route} failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.splitlines()[-1])


STORES = {"s3": "moto S3", "s3-ranged": "moto S3, ranged GETs read only their range", "http": "HTTP range server",
          "http-30ms": "HTTP range server, 30 ms a GET"}
LATENCY = {"http-30ms": 0.030}  # seconds the HTTP server waits before each body: a store's first-byte latency
ROUTES = {"itarcore": "itarcore remote index", "itarcore-8M": "  the same, --block-size 8M",
          "itarcore-1": "  the same, --jobs 1",
          "download-warm": "fs.get + local index (warm)", "download-cold": "fs.get + local index (cold)"}


def measure(url: str, options: dict, jobs: int, repeats: int, scratch: Path) -> dict[str, dict]:
    runs: dict[str, list[dict]] = {r: [] for r in ROUTES}
    for _ in range(repeats):  # interleaved, so a load spike hits every route alike
        for route in ROUTES:
            runs[route].append(run_child(route, url, options, jobs, scratch))
    shas = {r["sha"] for rs in runs.values() for r in rs}
    if len(shas) != 1:
        raise SystemExit(f"{url}: the routes wrote different indexes: {shas}")
    out = {}
    for route, rs in runs.items():
        out[route] = dict(rs[0], seconds=statistics.median(r["seconds"] for r in rs),
                          rss_mb=max(r["rss_mb"] for r in rs))
    return out


def print_table(name: str, store: str, fold_bytes: int, shards: int, results: dict[str, dict],
                cost_ms: float) -> dict[str, float]:
    print(f"\n{name} on {store}: {shards} shards, {fold_bytes / 1e6:,.1f} MB, {results['itarcore']['rows']:,} members")
    print(f"  {'route':<30} {'seconds':>8} {'MB/s':>8} {'fetched MB':>11} {'of fold':>8} {'requests':>9} "
          f"{'peak RSS MB':>12}")
    for route, label in ROUTES.items():
        r = results[route]
        print(f"  {label:<30} {r['seconds']:>8.2f} {fold_bytes / r['seconds'] / 1e6:>8.1f} {r['bytes'] / 1e6:>11.1f} "
              f"{r['bytes'] / fold_bytes:>8.1%} {r['requests']:>9,} {r['rss_mb']:>12.0f}")
    own = results["itarcore"]["itarcore"]
    print(f"  (itarcore's own count: {own[0] / 1e6:,.1f} MB in {own[1]:,} ranged reads; the index is "
          "byte-identical in every route)")
    imports = statistics.median(r["import_s"] for r in results.values())
    print(f"  (the store's fsspec backend, imported before the clock in every route: {imports:.2f} s)")
    print(f"  server cost of one 64 KiB ranged GET of a {fold_bytes / shards / 1e6:.0f} MB shard: {cost_ms:.1f} ms; "
          f"itarcore's {own[1]:,} reads one after another: {own[1] * cost_ms / 1000:.2f} s")
    ref = min(results["download-warm"]["seconds"], results["download-cold"]["seconds"])
    return {"speedup": ref / results["itarcore"]["seconds"], "fraction": results["itarcore"]["bytes"] / fold_bytes,
            "speedup_8M": ref / results["itarcore-8M"]["seconds"]}


def verdict_lines(name: str, v: dict[str, float]) -> str:
    if name == "images":
        return (f"no slower than download-then-index: {v['speedup']:.2f}x "
                f"({'met' if v['speedup'] >= 1 else 'NOT met'}; with --block-size 8M: {v['speedup_8M']:.2f}x)")
    return (f"fetch < 1/4 of the fold: {v['fraction']:.1%} ({'met' if v['fraction'] < 0.25 else 'NOT met'}); "
            f">= 3x faster: {v['speedup']:.2f}x ({'met' if v['speedup'] >= 3 else 'NOT met'}; "
            f"with --block-size 8M: {v['speedup_8M']:.2f}x)")


class _RangeOnly:
    """An object's bytes as moto's ranged GET slices them, read from its buffer only where sliced."""

    def __init__(self, key) -> None:
        self.key = key

    def __len__(self) -> int:
        return self.key.size

    def __getitem__(self, span: slice) -> bytes:
        with self.key.lock:
            self.key._value_buffer.seek(span.start)
            return self.key._value_buffer.read(span.stop - span.start)


@contextlib.contextmanager
def ranged_gets_read_their_range():
    """While active, moto serves a GET of one plain byte range from that range of the object alone.

    moto's own handler takes the whole object (``FakeKey.value``) and slices the range out of it,
    so every ranged GET costs what a whole GET costs; S3's costs its range. Everything else (the
    HTTP exchange, signing, headers, the 206 and its Content-Range) is moto's own code."""
    from moto.s3.models import FakeKey
    from moto.s3.responses import S3Response

    local = threading.local()
    value, key_response = FakeKey.value, S3Response.key_response

    def lazy_value(key):
        return _RangeOnly(key) if getattr(local, "ranged", False) else value.fget(key)

    def ranged_key_response(self, request, full_url, headers):
        plain = re.fullmatch(r"bytes=\d+-\d*", request.headers.get("range", "")) is not None
        local.ranged = request.method == "GET" and plain
        try:
            return key_response(self, request, full_url, headers)
        finally:
            local.ranged = False

    FakeKey.value, S3Response.key_response = property(lazy_value, value.fset), ranged_key_response
    try:
        yield
    finally:
        FakeKey.value, S3Response.key_response = value, key_response


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small folds, 1 repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=4, help="shards at a time (itarcore threads; fs.get is concurrent)")
    ap.add_argument("--fold", action="append", choices=["images", "videos"], help="only this fold (repeatable)")
    ap.add_argument("--store", action="append", choices=list(STORES), help="only this store (repeatable)")
    ap.add_argument("--child", choices=list(ROUTES), help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    import itarcore  # noqa: F401 - first: tests/itarcore (a folder of tests) must not shadow the package

    sys.path.append(str(TESTS))
    from remote_servers import RangeHTTPServer, S3Server

    repeats = 1 if args.quick else args.repeats
    scale = 8 if args.quick else 1
    folds = {
        "images": (4, 12_000 // scale, [("jpg", 4_000, 6_000), ("cls", 1, 3), ("json", 40, 80)]),
        "videos": (4, 3, [("json", 200, 400), ("mp4", (24 << 20) // scale, (36 << 20) // scale)]),
    }
    stores = [s for s in STORES if not args.store or s in args.store]
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        scratch = Path(tmp)
        (scratch / "http-root").mkdir()
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
        s3, http = S3Server(), RangeHTTPServer(scratch / "http-root")
        try:
            verdicts: dict[tuple[str, str], dict[str, float]] = {}
            print(f"bench_remote: loopback {' and '.join(STORES[s] for s in stores)}, {repeats} repeat(s), "
                  f"jobs {args.jobs}, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            for name, (shards, samples, members) in folds.items():
                if args.fold and name not in args.fold:
                    continue
                fold_bytes = write_fold(scratch / name, name, shards, samples, members)
                served = ""
                for store in stores:
                    pricing = contextlib.nullcontext()
                    if store.startswith("s3"):
                        url, options, fs = s3.upload(scratch / name, prefix=name), s3.storage_options, s3.fs()
                        if store == "s3-ranged":
                            pricing = ranged_gets_read_their_range()
                    else:
                        import fsspec

                        served = served or http.serve(scratch / name)  # one copy for every HTTP store
                        url, options, fs = served, {}, fsspec.filesystem("http")
                        http.reset()
                        if store in LATENCY:
                            http.slow(LATENCY[store])
                    with pricing:
                        results = measure(url, options, min(args.jobs, shards), repeats, scratch)
                        cost = request_cost_ms(fs, url.removeprefix("s3://") + f"/{name}_0000.tar")
                    http.reset()
                    verdicts[name, store] = print_table(name, STORES[store], fold_bytes, shards, results, cost)
                    if store.startswith("s3"):
                        fs.rm(url.removeprefix("s3://"), recursive=True)  # moto holds objects in memory
                    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
                for p in (scratch / name).iterdir():
                    p.unlink()
                shutil.rmtree(scratch / "http-root")
                (scratch / "http-root").mkdir()
        finally:
            http.stop()
            s3.stop()
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("targets (issue 12):")
    for (name, store), v in verdicts.items():
        print(f"  {name} on {store}: {verdict_lines(name, v)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
