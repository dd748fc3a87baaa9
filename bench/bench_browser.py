"""How the browser copes with huge indexes: prints a table against the issue's targets.

    python bench/bench_browser.py            # 10M and 100M rows (writes ~3.5 GB to a temp dir, then deletes it)
    python bench/bench_browser.py --quick    # 1M rows, a smoke run for CI
    python bench/bench_browser.py --rows 10000000   # one size
    python bench/bench_browser.py --huge     # adds 1B rows: a 32 GB index (needs the disk space and ~30 min)

Each size is opened cold (the index dropped from the page cache with posix_fadvise
DONTNEED) for the open and first-paint rows; the other rows run warm. Stem lookups are
timed by a scan and through the key index (itarcore.keyindex, built first in the
background as the GUI does); the sort rows time the first sorted screen (the grid's
first window) and the full order swapped in later, while a 5 ms timer records the
longest stall of the GUI thread.

Each index holds real random rows (written in chunks with numpy), so sorting and
masking do real work; no shards exist, so previews are measured on a separate JPEG.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import (
    NEEDLE,
    ROW_DT,
    Heartbeat,
    cold_jumps,
    compile_bytecode,
    drop_from_page_cache,
    evict_index,
    wait_for,
    write_index,
)

WARM_SCANS = 5  # right after a cold read the first warm scans are slower (the kernel still settles the pages)


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def bench_index(app, path: Path, n_rows: int) -> dict[str, str]:
    from app.views.main_window import MainWindow

    out: dict[str, str] = {}
    w = MainWindow()
    w.resize(1440, 900)
    w.show()
    app.processEvents()
    drop_from_page_cache(path)
    rss0 = rss_mb()
    opened: list[str] = []
    w.documentOpened.connect(opened.append)
    t0 = time.perf_counter()
    w.open_path(str(path))
    wait_for(app, lambda: bool(opened))
    tab = w.tabs_by_name["rows"]
    tab.grid.view.viewport().repaint()
    wait_for(app, lambda: not tab.model.fetching)  # the stems of the first screen (no shards: the crash table)
    out["open → first paint (cold)"] = f"{(time.perf_counter() - t0) * 1000:.0f} ms"
    out["RSS growth"] = f"{rss_mb() - rss0:.0f} MB"

    ds = w.document.source
    scans = []
    for _ in range(1 + WARM_SCANS):  # the first scan reads the cold file from disk, the others the page cache
        t = time.perf_counter()
        rows = ds.lookup_stem(NEEDLE)
        scans.append(time.perf_counter() - t)
        assert ds.key_index is None and rows.tolist() == [n_rows * 2 // 3]
    warm = np.array(scans[1:]) * 1000
    out["stem lookup, scan"] = (f"{np.median(warm):.0f} ms warm (median of {WARM_SCANS}: {warm.min():.0f}–"
                                f"{warm.max():.0f}; {scans[0] * 1000:.0f} ms cold)")
    t = time.perf_counter()
    ds.build_key_index()
    build_s = time.perf_counter() - t
    times = []
    for _ in range(20):
        t = time.perf_counter()
        rows = ds.lookup_stem(NEEDLE)
        times.append(time.perf_counter() - t)
    assert ds.key_index_state == "ready" and rows.tolist() == [n_rows * 2 // 3]
    out["stem lookup, key index"] = f"{np.median(times) * 1e6:.0f} µs (built in {build_s:.1f} s, background)"

    # sort by size in the worker while a 5 ms QTimer measures the event loop's longest stall
    applied: list[int] = []
    tab.viewApplied.connect(lambda: applied.append(1))
    meter = Heartbeat(5)
    meter.start()
    t = time.perf_counter()
    tab.sort_by("Size")
    wait_for(app, lambda: tab.counting or bool(applied), timeout=600)
    tab.grid.view.viewport().repaint()
    first_s = time.perf_counter() - t
    wait_for(app, lambda: bool(applied), timeout=600)
    sort_s = time.perf_counter() - t
    stall = meter.stop()
    sizes = tab.table.column("Size").values
    first, last_row = tab.model.source_row(0), tab.model.source_row(tab.model.n_view - 1)
    assert sizes[first] == sizes.min() and sizes[last_row] == sizes.max()
    out["first sorted screen (by size)"] = f"{first_s * 1000:.0f} ms"
    out["full sort (background)"] = f"{sort_s:.1f} s"
    out["max GUI stall while sorting"] = f"{stall:.0f} ms"

    model, grid = tab.model, tab.grid
    idx = [model.index(r, c) for r in range(min(model.rowCount(), 2000)) for c in range(model.columnCount())
           if not model.table.columns[c].lazy]
    t = time.perf_counter()
    for i in idx:
        model.data(i)
    out["data() call"] = f"{(time.perf_counter() - t) / len(idx) * 1e6:.1f} µs"
    rng = np.random.default_rng(1)
    times = []
    for top in rng.integers(0, max(1, model.n_view - grid.page_rows), 20):
        grid.scrollbar.setValue(int(top))
        t = time.perf_counter()
        grid.view.viewport().repaint()
        times.append(time.perf_counter() - t)
    out["full-viewport paint"] = f"{np.median(times) * 1000:.1f} ms ({grid.page_rows} rows, stems read)"
    # the sorted rows again, the index out of RAM (a 1B-row index after its sort): 20 jumps, each painted
    rng = np.random.default_rng(3)
    tops = rng.integers(0, max(1, model.n_view - grid.page_rows), 40).tolist()
    busy, gap, paints, fills = cold_jumps(app, tab, ds, path, tops[:20])
    out["cold sorted scroll: paint, screen filled"] = \
        f"{np.median(paints):.0f} ms, {np.median(fills):.0f} ms (median of 20 jumps)"
    out["cold sorted scroll: GUI busy / stall"] = f"{busy:.0f} / {gap:.0f} ms"
    per_call = []
    for top in tops[20:]:  # data() of a screen nobody has read yet, asked for straight after the jump
        evict_index(ds, path)
        grid.scrollbar.setValue(top)
        first = grid.view.verticalScrollBar().value()
        cells = [model.index(r, c) for r in range(first, min(model.rowCount(), first + grid.page_rows))
                 for c in range(model.columnCount()) if not model.table.columns[c].lazy]
        t = time.perf_counter()
        for i in cells:
            model.data(i)
        per_call.append((time.perf_counter() - t) / max(1, len(cells)) * 1e6)
        wait_for(app, lambda: not model.fetching)
    out["cold sorted scroll: data() call"] = f"{np.median(per_call):.1f} µs (median), {max(per_call):.0f} µs (max)"
    w.shutdown()
    w.deleteLater()
    app.processEvents()
    return out


def bench_preview(app) -> str:
    from PIL import Image

    from app.views.preview import PayloadPreview
    from itarcore.document import Payload

    rng = np.random.default_rng(2)
    side = 160
    data = b""
    while len(data) < 100_000:  # grow a noisy image until its JPEG is about 100 KB
        side += 20
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(buf, "JPEG", quality=92)
        data = buf.getvalue()
    preview = PayloadPreview(debounce_ms=0)
    preview.resize(500, 500)
    preview.show()
    times = []
    ready: list[int] = []
    preview.previewReady.connect(lambda: ready.append(1))
    for _ in range(5):
        ready.clear()
        t = time.perf_counter()
        preview.show_payload(Payload(data, "jpg", "noise.jpg"))
        wait_for(app, lambda: bool(ready))
        preview.repaint()
        times.append(time.perf_counter() - t)
    preview.shutdown()
    return f"{np.median(times) * 1000:.1f} ms ({len(data) / 1000:.0f} KB, {side}×{side})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1M rows only")
    parser.add_argument("--rows", type=int, nargs="+", metavar="N", help="index sizes to measure (default 10M 100M)")
    parser.add_argument("--huge", action="store_true",
                        help="add 1B rows (a 32 GB index in the temp dir; checks the free space first)")
    parser.add_argument("--no-panels", action="store_true",
                        help="leave out the format panels (samples, plots): measures the format-neutral window alone")
    args = parser.parse_args()
    compile_bytecode()  # as installed: lazy imports must not compile on the GUI thread while it is timed
    if args.no_panels:
        from app.views import main_window

        main_window.panels_for = lambda document: []
    os.environ.setdefault("ITAR_BROWSER_SETTINGS", os.path.join(tempfile.gettempdir(), "itar-bench-settings.ini"))
    from PySide6.QtWidgets import QApplication

    from app.main import quiet_offscreen_noise

    quiet_offscreen_noise()
    app = QApplication.instance() or QApplication([])
    sizes = args.rows or ([1_000_000] if args.quick else [10_000_000, 100_000_000])
    if args.huge:
        sizes.append(1_000_000_000)
    results: dict[int, dict[str, str]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="itar-bench-"))
    os.environ.setdefault("ITARCORE_CACHE_DIR", str(tmp / "cache"))  # key indexes go with the temp files
    need = max(sizes) * ROW_DT.itemsize * 1.2  # the index plus its key index
    if shutil.disk_usage(tmp).free < need:
        print(f"not enough free space in {tmp} for {max(sizes):,} rows ({need / 1e9:.0f} GB)", file=sys.stderr)
        return 1
    try:
        for n in sizes:
            path = tmp / f"bench{n // 1_000_000}m.taridx"
            t = time.perf_counter()
            write_index(path, n)
            print(f"wrote {n:,} rows ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t:.1f} s",
                  file=sys.stderr)
            results[n] = bench_index(app, path, n)
            path.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    preview = bench_preview(app)
    targets = {"open → first paint (cold)": "< 1 s", "RSS growth": "< 150 MB",
               "stem lookup, scan": "< 200 ms", "stem lookup, key index": "< 1 ms",
               "first sorted screen (by size)": "< 1 s", "full sort (background)": "< 5 s",
               "max GUI stall while sorting": "< 50 ms",
               "cold sorted scroll: paint, screen filled": "—", "cold sorted scroll: data() call": "—",
               "cold sorted scroll: GUI busy / stall": "< 50 ms",
               "data() call": "—", "full-viewport paint": "—"}
    heads = [f"{n // 1_000_000:,}M rows" for n in sizes]
    print("Targets are the issue-15 figures for 100M rows (1B: the same, as far as the disk allows).")
    print(f"| What | {' | '.join(heads)} | Target |")
    print("|---|" + "---|" * len(heads) + "---|")
    for what, target in targets.items():
        print(f"| {what} | {' | '.join(results[n][what] for n in sizes)} | {target} |")
    print(f"| preview of a 100 KB JPEG (decode + display) | {preview}" + " |" * (len(sizes) - 1) + " < 30 ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
