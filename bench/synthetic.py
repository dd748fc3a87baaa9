"""Shared by benchmarks and the GUI tests: synthetic TARIDX files, page-cache eviction, a GUI stall meter."""
from __future__ import annotations

import argparse
import os
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xxhash

if TYPE_CHECKING:
    from typing_extensions import Self

ROW_DT = np.dtype([("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"),
                   ("keyhash", "<u8")])
EXTS = ("jpg", "cls", "json")
NEEDLE = "needle-stem"
CHUNK = 2_000_000


def write_index(path: Path, n_rows: int, seed: int = 0, *, exts: tuple[str, ...] = EXTS,
                members_per_stem: int | None = None, max_size: int = 200_000) -> None:
    """A valid TARIDX of ``n_rows`` random rows and no shards, written in chunks (memory stays small).

    Keyhashes are random (one stem a row) unless ``members_per_stem`` is given: then each stem's members
    land in random places, the hard case for sample grouping. Row ``n_rows * 2 // 3`` holds the stem
    ``NEEDLE``, for lookups.
    """
    ext_block = "\n".join(exts).encode()
    off_arr = 64 + len(ext_block)
    n_stems = -(-n_rows // members_per_stem) if members_per_stem else n_rows // len(exts)
    header = struct.pack("<8sHHHHQQIIQQB7x", b"TARIDX\0\0", 1, 0, 32, 64, n_stems, n_rows, len(exts), 0,
                         off_arr, off_arr, 0)
    rng = np.random.default_rng(seed)
    stem_keys = rng.integers(0, 2**64, n_stems, dtype=np.uint64, endpoint=False) if members_per_stem else None
    needle_row = n_rows * 2 // 3
    with open(path, "wb") as fh:
        fh.write(header + ext_block)
        for start in range(0, n_rows, CHUNK):
            n = min(CHUNK, n_rows - start)
            rows = np.zeros(n, ROW_DT)
            rows["offset"] = np.arange(start, start + n, dtype=np.uint64) * 1024
            rows["size"] = rng.integers(1, max_size, n)
            rows["extid"] = np.arange(start, start + n) % len(exts)
            if stem_keys is None:
                rows["fid"] = rng.integers(0, 8, n)
                rows["keyhash"] = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)
                if start <= needle_row < start + n:
                    rows["keyhash"][needle_row - start] = xxhash.xxh64_intdigest(NEEDLE.encode())
            else:
                rows["keyhash"] = stem_keys[rng.permutation(np.arange(start, start + n) % n_stems)]
            fh.write(rows.tobytes())


def fold_bench_parser(doc: str | None, *, shards: int, samples: int, quick: str,
                      samples_help: str = "samples per shard") -> argparse.ArgumentParser:
    """The options of a bench that generates a fold: --quick, --shards, --samples, --repeats, --dir."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--shards", type=int, default=shards)
    ap.add_argument("--samples", type=int, default=samples, help=samples_help)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, help="keep the generated fold here (default: a temp dir, removed)")
    return ap


def drop_from_page_cache(*paths: Path) -> None:
    """Make the next read of each path cold (what a user sees after copying or downloading a file)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def evict_index(dataset, path: Path) -> None:
    """Make an open index cold again: its rows out of this process and out of the page cache (what a
    1B-row index, bigger than RAM, is after a sort has read it)."""
    dataset.index.release_rows(0, dataset.n_rows)
    drop_from_page_cache(path)


def cold_jumps(app, tab, dataset, path: Path, tops: list[int]) -> tuple[float, float, list[float], list[float]]:
    """Jump the grid of an open index to each of ``tops`` with the index out of RAM before each jump.

    Returns the GUI thread's longest busy and wall stretch (ms) while jumping and painting (the
    eviction itself is not timed), and per jump the ms of the paint and until the screen showed
    real values instead of placeholders.
    """
    from app.models.windowed_table_model import PENDING

    model, grid = tab.model, tab.grid
    inner = grid.view.verticalScrollBar()

    def filled() -> bool:
        rows = range(inner.value(), min(model.rowCount(), inner.value() + grid.page_rows))
        return all(model.data(model.index(r, 0)) != PENDING for r in rows)

    busy = gap = 0.0
    paints, fills = [], []
    for top in tops:
        evict_index(dataset, path)
        with Heartbeat(5) as beat:
            t = time.perf_counter()
            grid.scrollbar.setValue(int(top))
            grid.view.viewport().repaint()
            paints.append((time.perf_counter() - t) * 1000)
            wait_for(app, filled)
            fills.append((time.perf_counter() - t) * 1000)
            app.processEvents()
        busy, gap = max(busy, beat.max_busy_ms), max(gap, beat.max_gap_ms)
        wait_for(app, lambda: not model.fetching)
    return busy, gap, paints, fills


def wait_for(app, cond, timeout: float = 300.0) -> None:
    """Run the Qt event loop until ``cond()`` holds (a benchmark step that never ends fails after ``timeout``)."""
    end = time.perf_counter() + timeout
    while not cond():
        app.processEvents()
        if time.perf_counter() > end:
            raise TimeoutError("benchmark step timed out")
        time.sleep(0.001)


class Heartbeat:
    """A timer on the GUI thread; each gap between two ticks is a time the event loop did not run.

    Per gap it records the wall time and the GUI thread's own CPU time. On a loaded shared machine the
    wall gap also holds time the OS gave to other processes; the CPU time is the work the GUI thread
    itself did without returning to the event loop, which is what "nothing over 50 ms on the GUI
    thread" is about. Use it as a context manager, or with start() and stop().
    """

    def __init__(self, interval_ms: int = 10) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer

        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.last = 0
        self.last_cpu = 0.0
        self.max_gap_ms = 0.0
        self.max_busy_ms = 0.0

    def _tick(self) -> None:
        now, cpu = self.clock.nsecsElapsed(), time.thread_time()
        self.max_gap_ms = max(self.max_gap_ms, (now - self.last) / 1e6)
        self.max_busy_ms = max(self.max_busy_ms, (cpu - self.last_cpu) * 1e3)
        self.last, self.last_cpu = now, cpu

    def start(self) -> Self:
        self.clock.start()
        self.last, self.last_cpu = self.clock.nsecsElapsed(), time.thread_time()
        self.timer.start()
        return self

    def stop(self) -> float:
        """Stop; the longest wall gap in ms (the gap up to the end of the measured action counts too)."""
        self._tick()
        self.timer.stop()
        return self.max_gap_ms

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def compile_bytecode() -> None:
    """Compile itarcore's and the app's modules as pip does on install. A source checkout run with
    PYTHONDONTWRITEBYTECODE=1 (as on the dev VM) otherwise compiles every module it imports in every
    process: ~0.15 s for ``itarcore index``, and a stall of the GUI thread when a module is first
    imported lazily (the first sort took 150-270 ms that way)."""
    import compileall

    root = Path(__file__).resolve().parents[1]
    for package in ("itarcore", "app"):
        compileall.compile_dir(root / package, quiet=1)
