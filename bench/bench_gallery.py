"""The content audit of issue 14 on a fold of JPEG samples, side by side with reading its payloads once (cat).

    python bench/bench_gallery.py                 # 100,000 samples (jpg, cls, json) in 10 shards, ~1.3 GB
    python bench/bench_gallery.py --quick         # 1,000 samples, 1 repeat: a smoke run for CI
    python bench/bench_gallery.py --dir /data/g   # keep the generated fold there (reused when present)

Sections (each prints its own table; a new section is a function added to SECTIONS):

1. the fold (``make_jpeg_fold``): every JPEG distinct (a comment segment carries the sample
   number), except every 1,000th sample, which repeats the previous one byte for byte, so
   ``dedup`` has a known number of groups to find;
2. ``content_section``: ``compute_stats`` and ``find_duplicates`` throughput in GB/s of payload
   bytes against ``cat`` of the shards, cold (shards dropped from the page cache with
   posix_fadvise DONTNEED) and warm, with the peak RSS of each itarcore run (a fresh child process timing the
   library call itself, not the interpreter's start-up; cat's is a few MB and not shown);
3. thumbnails (time to first screen, thumbnails/s, cold and warm cache): the Gallery's section.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from bench_index import warm
from synthetic import drop_from_page_cache, fold_bench_parser

FOLD = "gallery"
DUP_EVERY = 1000  # sample i with i % DUP_EVERY == DUP_EVERY - 1 repeats sample i - 1's JPEG


# -- 1. the fold ------------------------------------------------------------------------------------
def _base_jpegs(count: int, size: tuple[int, int]) -> list[bytes]:
    from PIL import Image, ImageFilter

    rng = random.Random(14)
    out = []
    for _ in range(count):
        small = Image.new("RGB", (size[0] // 8, size[1] // 8))
        small.putdata([tuple(rng.randrange(256) for _ in range(3)) for _ in range(small.width * small.height)])
        img = small.resize(size, Image.BICUBIC).filter(ImageFilter.DETAIL)
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def _distinct(jpeg: bytes, number: int) -> bytes:
    note = f"sample {number}".encode()
    return jpeg[:2] + b"\xff\xfe" + (len(note) + 2).to_bytes(2, "big") + note + jpeg[2:]


def make_jpeg_fold(folder: Path, samples: int, shards: int, size: tuple[int, int] = (320, 240)) -> Path:
    """``<folder>/gallery_NNNN.tar`` plus its index; returns the index path (reused when already there)."""
    from itarcore.jobs import index_fold

    index = folder / f"{FOLD}.taridx"
    paths = [folder / f"{FOLD}_{s:04d}.tar" for s in range(shards)]
    if index.exists() and all(p.exists() for p in paths):
        return index
    folder.mkdir(parents=True, exist_ok=True)
    bases = _base_jpegs(64, size)
    per_shard = -(-samples // shards)
    previous = b""
    for s, path in enumerate(paths):
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(s * per_shard, min(samples, (s + 1) * per_shard)):
                jpeg = previous if i % DUP_EVERY == DUP_EVERY - 1 else _distinct(bases[i % len(bases)], i)
                previous = jpeg
                label = i % 10
                doc = json.dumps({"label": {"class": f"c{label}"}, "i": i}).encode()
                for ext, data in (("jpg", jpeg), ("cls", str(label).encode()), ("json", doc)):
                    info = tarfile.TarInfo(f"s{i:08d}.{ext}")
                    info.size, info.mtime = len(data), 1_700_000_000
                    tar.addfile(info, io.BytesIO(data))
    index_fold(paths, index)
    return index


def fold_shards(index: Path) -> list[Path]:
    return sorted(index.parent.glob(f"{FOLD}_*.tar"))


# -- measuring ----------------------------------------------------------------------------------------
def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run_child(argv: list[str], capture: bool = False) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one child process."""
    t0, c0 = time.perf_counter(), cpu_seconds(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, cpu_seconds(resource.RUSAGE_CHILDREN) - c0, done.stdout.decode() if capture else ""


def peak_rss_mb() -> float:
    """This process's own high-water RSS (VmHWM; ru_maxrss would include the parent's pages before exec)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024


def child(task: str, index: str) -> None:
    """Runs in a fresh process: time one library call and print {"seconds", "cpu", "rss", "result"}."""
    from itarcore.content.dedup import find_duplicates
    from itarcore.content.stats import compute_stats

    t0, c0 = time.perf_counter(), cpu_seconds()
    if task == "stats":
        stats = compute_stats(index)
        result = {"images": stats.dims.images, "labels": len(stats.label_totals())}
    else:
        report = find_duplicates([index])
        result = {"groups": len(report.groups), "bytes": report.bytes_hashed}
    print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": cpu_seconds() - c0, "rss": peak_rss_mb(),
                      "result": result}))


# -- 2. stats and dedup against cat ---------------------------------------------------------------------
def content_section(index: Path, repeats: int) -> None:
    from itarcore.dataset import Dataset

    shards = fold_shards(index)
    with Dataset.open(index) as ds:
        payload = int(ds.rows["size"].sum())
        n_samples = ds.index.header.n_stems
    routes: dict[str, list[str] | None] = {
        "cat shards > /dev/null": None,
        "compute_stats (stats)": [sys.executable, __file__, "--child", "stats", str(index)],
        "find_duplicates (dedup)": [sys.executable, __file__, "--child", "dedup", str(index)],
    }
    results: dict[tuple[str, str], tuple[float, float, float | None]] = {}
    notes: dict[str, dict] = {}
    for cache in ("warm", "cold"):
        for name, argv in routes.items():
            times, cpus, rss = [], [], None
            for _ in range(repeats):
                if cache == "cold":
                    drop_from_page_cache(*shards)
                else:
                    warm(shards)
                if argv is None:
                    seconds, cpu, _ = run_child(["cat", *map(str, shards)])
                else:
                    _, _, out = run_child(argv, capture=True)
                    reply = json.loads(out.splitlines()[-1])
                    seconds, cpu, notes[name] = reply["seconds"], reply["cpu"], reply["result"]
                    rss = max(rss or 0, reply["rss"])
                times.append(seconds)
                cpus.append(cpu)
            results[(name, cache)] = (statistics.median(times), statistics.median(cpus), rss)
    load = os.getloadavg()
    print(f"\nstats and dedup against cat: {n_samples:,} samples, {len(shards)} shards, {payload / 1e9:.2f} GB of "
          f"payloads; median of {repeats}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print(f"{'route':<28} {'cache':<5} {'seconds':>9} {'GB/s':>7} {'x cat':>7} {'CPU s':>7} {'peak RSS MB':>12}")
    for cache in ("warm", "cold"):
        cat_seconds = results[("cat shards > /dev/null", cache)][0]
        for name in routes:
            seconds, cpu, rss = results[(name, cache)]
            rss_text = "—" if rss is None else f"{rss:.0f}"
            print(f"{name:<28} {cache:<5} {seconds:>9.3f} {payload / seconds / 1e9:>7.2f} "
                  f"{cat_seconds / seconds:>7.2f} {cpu:>7.2f} {rss_text:>12}")
    groups = notes["find_duplicates (dedup)"]["groups"]
    expected = n_samples // DUP_EVERY
    print(f"\ndedup found {groups:,} groups of identical JPEGs ({'as planted' if groups == expected else 'PLANTED '}"
          f"{'' if groups == expected else f'{expected:,}'}); stats read {notes['compute_stats (stats)']['images']:,} "
          "image headers")
    print("GB/s: payload bytes of the fold per second (cat reads them once, plus the tar headers); stats reads label "
          "members and image headers only; dedup compares every jpg and json payload by a fingerprint of its first "
          "and last 64 bytes, and hashes whole (xxh3-128) those whose fingerprint, size and extension repeat")
    print("CPU s: user + system time of the call (cat: of the whole process); on a busy machine it shows the work "
          "done where wall time mostly shows the wait for a core")
    print("target (issue 14): stats and dedup at least 0.7x the cat rate")


def thumbnails(index: Path, repeats: int) -> None:
    from gallery_thumbs import thumbnails_section

    thumbnails_section(index, repeats)


SECTIONS: list[Callable[[Path, int], None]] = [content_section, thumbnails]


def main(argv: list[str] | None = None) -> int:
    ap = fold_bench_parser(__doc__, shards=10, samples=100_000, quick="1,000 samples in 2 shards, 1 repeat",
                           samples_help="samples in all")
    ap.add_argument("--child", nargs=2, metavar=("TASK", "INDEX"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    if args.quick:
        args.samples, args.shards, args.repeats = 1_000, 2, 1
    with tempfile.TemporaryDirectory(prefix="itar-gallery-") as tmp:
        folder = args.dir or Path(tmp)
        t0 = time.perf_counter()
        index = make_jpeg_fold(folder, args.samples, args.shards)
        print(f"fold ready in {time.perf_counter() - t0:.1f}s: {index}", file=sys.stderr, flush=True)
        for section in SECTIONS:
            section(index, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
