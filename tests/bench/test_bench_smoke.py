"""The benchmarks' --quick runs, in CI: they must run and print their tables (no timing assertions)."""
from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from itarcore.indexing import jit

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_bench_index_quick_counts_every_member(tmp_path: Path) -> None:
    out = run("bench_index.py", "--quick", "--dir", str(tmp_path))
    shards = sorted(tmp_path.glob("bench_*.tar"))
    members = 0
    for p in shards:
        with tarfile.open(p) as tar:
            members += len(tar.getmembers())
    assert f"{members:,} members" in out
    routes = ["itarcore numpy, --jobs 1", "itarcore numpy, --jobs 2", "tarfile getmembers()",
              "minimal header walk (floor)"]
    if jit.available():
        routes += ["itarcore compiled, --jobs 1", "itarcore compiled, --jobs 2"]
    for route in routes:
        assert re.search(rf"^{re.escape(route)}\s+[\d.]+\s+[\d,]+", out, re.MULTILINE), route


def test_bench_tbl_quick_prints_both_routes() -> None:
    pytest.importorskip("turboloader")
    out = run("bench_tbl.py", "--quick")
    for where in ("page cache", "disk"):
        for route in ("itarcore", "turboloader"):
            assert re.search(rf"^\s*[\d,]+\s+[\d.]+ {where}\s+{route}\s+[\d.]+\s+[\d,]+\s+[\d.]+$", out, re.MULTILINE), (where, route)
        assert f"speed-up ({where}):" in out


def test_bench_scale_quick_prints_every_executor_and_the_cache_runs(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = run("bench_scale.py", "--quick", "--dir", str(tmp_path))
    shards = sorted(tmp_path.glob("bench_*.tar"))
    assert len(shards) == 256
    members = 0
    for p in shards:
        with tarfile.open(p) as tar:
            members += len(tar.getmembers())
    assert f"256 shards, {members:,} members" in out
    for route in ("threads (--jobs 2)", "processes:2", "dask LocalCluster 2x1"):
        assert re.search(rf"^{re.escape(route)}\s+[\d.]+\s+[\d.]+\s+[\d,]+\s+[\d.]+$", out, re.MULTILINE), route
    assert "identical bytes across executors: yes" in out
    assert "256 entries" in out  # one table a shard: the changed shard's new table replaced its old one
    for page_cache in ("cold", "warm"):
        assert re.search(rf"^{page_cache}\s+[\d.]+\s+[\d.]+\s+[\d.]+%\s+[\d.]+\s+[\d.]+%$", out, re.MULTILINE)


def test_bench_gallery_quick_finds_the_planted_duplicates(tmp_path: Path) -> None:
    out = run("bench_gallery.py", "--quick", "--dir", str(tmp_path))
    for route in ("cat shards > /dev/null", "compute_stats (stats)", "find_duplicates (dedup)"):
        for cache in ("warm", "cold"):
            assert re.search(rf"^{re.escape(route)}\s+{cache}\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+|—)$", out,
                             re.MULTILINE), (route, cache)
    assert "dedup found 1 groups of identical JPEGs (as planted); stats read 1,000 image headers" in out
    # the Gallery's section: first screen and thumbnails/s, cold and warm, beside Pillow's plain route
    for row in (r"first screen \(\d+ cells\), ms", r"itarcore thumbnails/s \(2 threads\)",
                r"Pillow full decode \+ thumbnail/s"):
        assert re.search(rf"^{row}\s+[\d,]+\s+[\d,]+", out, re.MULTILINE), row
    assert re.search(r"^thumbnail cache: 1,000 files", out, re.MULTILINE)


def test_bench_gui_stalls_quick_measures_every_step(tmp_path: Path) -> None:
    pytest.importorskip("PySide6")
    out = run("bench_gui_stalls.py", "--quick", "--dir", str(tmp_path))
    steps = ["hex pane: scroll a 64 MiB file", "200,000 rows: show the extensions tab",
             "200,000 rows: show the crash stems tab", "200,000 rows: sort by size, first screen to full order",
             "200,000 rows: show the Samples panel until it is filled",
             "200,000 rows: show the Plots panel until it is filled", "gallery: 40 JPEGs, new size and two pages",
             "remote: a payload the server holds back 0.5 s"]
    for step in steps:
        assert re.search(rf"^{re.escape(step)}\s+\d+\s+\d+\s+< 50 ms busy: (met|NOT met)$", out, re.MULTILINE), step
    assert list(tmp_path.iterdir()) == []  # the inputs are written to a temporary folder and removed
