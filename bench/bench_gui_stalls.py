"""How long the GUI thread stays away from its event loop while the browser works: a table against 50 ms.

    python bench/bench_gui_stalls.py           # 10M rows, 4M for the panels, a 1 GiB hex file, 400 JPEGs,
                                               # a payload an HTTP server holds back 2 s (the remote issue's heartbeat),
                                               # a fold just copied: a 50 MiB member's preview, a copy of 2,000 rows
    python bench/bench_gui_stalls.py --quick   # small sizes, a smoke run for CI
    python bench/bench_gui_stalls.py --grid-only --grid-rows 100000000   # the grid steps alone, 100M rows

A timer ticks every 5 ms on the GUI thread (``synthetic.Heartbeat``). Per step the table gives the
longest stretch of the GUI thread's own CPU time between two ticks ("busy": the work the thread did
without returning to the event loop, the issue's "nothing over 50 ms on the GUI thread") and the longest
wall gap (which also holds time the OS gave to other processes). Each step runs three rounds and keeps
its best: a stall the code causes comes back every round, a shared machine's noise does not.

The tests check the same steps without a clock (tests/app/off_gui_thread.py): every pass over the rows
runs in a worker and the GUI never waits for it. This script says how long what is left takes.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import Heartbeat, cold_jumps, compile_bytecode, wait_for, write_index

TARGET_MS = 50
ROUNDS = 3


class _Beat:
    """A step measured in parts (the eviction between jumps left out): its longest busy and wall stretch."""

    def __init__(self, max_busy_ms: float, max_gap_ms: float) -> None:
        self.max_busy_ms, self.max_gap_ms = max_busy_ms, max_gap_ms


def best_of(app, step: Callable[[], None], reset: Callable[[], None] | None = None) -> Heartbeat:
    beats = []
    for _ in range(ROUNDS):
        with Heartbeat(5) as beat:
            step()
            app.processEvents()
        beats.append(beat)
        if reset is not None:
            reset()
    return min(beats, key=lambda b: b.max_busy_ms)


def open_window(app, path: Path):
    from app.views.main_window import MainWindow

    w = MainWindow()
    w.resize(1366, 768)
    w.show()
    opened: list[str] = []
    w.documentOpened.connect(opened.append)
    w.open_path(str(path))
    wait_for(app, lambda: bool(opened))
    return w


def grid_steps(app, folder: Path, n_rows: int) -> dict[str, Heartbeat]:
    path = folder / "grid.taridx"
    write_index(path, n_rows, exts=("jpg", "cls", "json", "txt"), max_size=10**9)
    w = open_window(app, path)
    out = {}
    rows = w.tabs_by_name["rows"]
    for name in ("extensions", "crash stems", "rows"):
        tab = w.tabs_by_name[name]

        def show(tab=tab) -> None:
            w.tabs.setCurrentWidget(tab)
            tab.grid.view.viewport().repaint()  # the first paint asks for the lazy columns
            wait_for(app, lambda: not tab.model.fetching)

        out[f"{n_rows:,} rows: show the {name} tab"] = best_of(app, show, lambda: w.tabs.setCurrentWidget(rows))
    applied: list[int] = []
    rows.viewApplied.connect(lambda: applied.append(1))

    def sort() -> None:
        applied.clear()
        rows.sort_by("Size")
        wait_for(app, lambda: bool(applied))
        rows.grid.view.viewport().repaint()

    def unsort() -> None:
        applied.clear()
        rows.clear_sort()
        wait_for(app, lambda: bool(applied))

    out[f"{n_rows:,} rows: sort by size, first screen to full order"] = best_of(app, sort, unsort)
    sort()
    rng = np.random.default_rng(4)
    tops = rng.integers(0, max(1, rows.model.n_view - rows.grid.page_rows), 10).tolist()
    cold = [cold_jumps(app, rows, w.document.source, path, tops) for _ in range(ROUNDS)]
    out[f"{n_rows:,} rows sorted, not in the page cache: 10 jumps"] = _Beat(*min(cold)[:2])
    w.shutdown()
    w.deleteLater()
    return out


def panel_steps(app, folder: Path, n_rows: int) -> dict[str, Heartbeat]:
    path = folder / "panels.taridx"
    write_index(path, n_rows)
    out = {}
    for title, ready in (("Samples", "samplesReady"), ("Plots", "computed")):
        beats = []
        for _ in range(ROUNDS):  # a fresh window each round, opened before the clock: the pass runs again
            w = open_window(app, path)
            wait_for(app, lambda w=w: not w.tabs_by_name["rows"].model.fetching)
            panel = next(p for p in w.panels if p.title == title)
            done: list[int] = []
            getattr(panel, ready).connect(lambda done=done: done.append(1))
            with Heartbeat(5) as beat:
                panel.parent().show()
                panel.parent().raise_()
                wait_for(app, lambda done=done: bool(done))
                app.processEvents()
            beats.append(beat)
            w.shutdown()
            w.deleteLater()
        out[f"{n_rows:,} rows: show the {title} panel until it is filled"] = min(beats, key=lambda b: b.max_busy_ms)
    return out


def hex_steps(app, folder: Path, size: int) -> dict[str, Heartbeat]:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from app.views.hex import HexPane

    path = folder / "sparse.bin"
    with open(path, "wb") as fh:
        fh.truncate(size)

    def read(offset: int, length: int) -> bytes:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    pane = HexPane()
    pane.resize(700, 500)
    pane.show()
    pane.set_source(read, size)
    view = pane.hex
    bar = view.verticalScrollBar()

    def scroll() -> None:
        QTest.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
        for _ in range(30):
            QTest.keyClick(view, Qt.Key.Key_PageUp)
            view.viewport().repaint()
        for k in range(1, 40):
            bar.setValue(bar.maximum() * k // 40)
            view.viewport().repaint()

    return {f"hex pane: scroll a {size >> 20:,} MiB file": best_of(app, scroll)}


def gallery_steps(app, folder: Path, samples: int) -> dict[str, Heartbeat]:
    from bench_gallery import make_jpeg_fold

    index = make_jpeg_fold(folder / "gallery", samples, shards=2, size=(640, 480))
    w = open_window(app, index)
    gallery = next(p for p in w.panels if p.title == "Gallery")
    gallery.parent().show()
    gallery.parent().raise_()
    wait_for(app, lambda: gallery.n_items() == samples)
    bar = gallery.grid.verticalScrollBar()

    def loaded() -> bool:
        first, stop = gallery.grid.visible_range()
        return all(gallery.cell(i) is not None for i in range(first, stop))

    sizes = iter(range(3))

    def resize_and_scroll() -> None:  # each round a new thumbnail size: nothing of it is in memory yet
        gallery.size_slider.setValue(next(sizes))
        for _ in range(2):
            wait_for(app, loaded)
            bar.setValue(bar.value() + bar.pageStep())
        wait_for(app, loaded)

    out = {f"gallery: {samples} JPEGs, new size and two pages": best_of(app, resize_and_scroll)}
    w.shutdown()
    w.deleteLater()
    return out


def cold_fold_steps(app, folder: Path, member_mb: int, samples: int) -> dict[str, Heartbeat]:
    """A local fold just copied (its shard out of the page cache before each round): preview a big member,
    show a sample's cards, copy a page of rows with their stems (issue 15: nothing waits for the disk)."""
    import io
    import subprocess
    import tarfile

    from synthetic import drop_from_page_cache, evict_index

    root = folder / "cold"
    root.mkdir()
    shard = root / "cold_0000.tar"
    rng = np.random.default_rng(5)
    with tarfile.open(shard, "w") as tf:
        for i in range(samples):
            for ext, size in (("bin", 4096), ("cls", 2)):
                data = rng.bytes(size)
                info = tarfile.TarInfo(f"s{i:07d}.{ext}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        big = rng.bytes(member_mb << 20)
        info = tarfile.TarInfo("zbig.mp4")
        info.size = len(big)
        tf.addfile(info, io.BytesIO(big))
    subprocess.run([sys.executable, "-m", "itarcore", "index", str(root)], check=True, capture_output=True)
    index = root / "cold.taridx"
    w = open_window(app, index)
    wait_for(app, lambda: not w.tabs_by_name["rows"].model.fetching and not w.preview.busy)
    out: dict[str, Heartbeat] = {}
    big_row = w.document.source.n_rows - 1
    rows_tab = w.tabs_by_name["rows"]

    def preview(row: int) -> Callable[[], None]:
        def step() -> None:
            settled: list[int] = []

            def on_settled() -> None:
                settled.append(1)

            w.previewSettled.connect(on_settled)
            w.go_to_row(row)
            wait_for(app, lambda: bool(settled) and not w.preview.fetching and not w.preview.busy)
            w.previewSettled.disconnect(on_settled)
        return step

    def cold() -> None:
        w.go_to_row(0)
        wait_for(app, lambda: not w.preview.fetching and not w.preview.busy)
        evict()

    def evict() -> None:
        w.remote.cache.clear()
        ds = w.document.source
        opened = ds.shard_set.opened(0) if hasattr(ds.shard_set, "opened") else ds.shard_set.source(0)
        if opened is not None:
            opened.release(0, opened.size)  # out of this process, so the page cache can let go of it
        evict_index(ds, index)
        drop_from_page_cache(shard)

    cold()
    out[f"cold fold: preview a {member_mb} MiB member"] = best_of(app, preview(big_row), cold)

    from PySide6.QtCore import QItemSelection, QItemSelectionModel

    copied: list[str] = []
    if hasattr(rows_tab, "copied"):  # absent before copies went to a worker: there the copy returns with the text
        rows_tab.copied.connect(copied.append)

    def select_page() -> None:  # then the fold goes cold: the user's Ctrl+C alone is timed
        grid, m = rows_tab.grid, rows_tab.model
        grid.go_to_source_row(samples)
        first, last = m.view_row_of(samples) - m.window_start, m.view_row_of(2 * samples - 1) - m.window_start
        grid.view.selectionModel().select(QItemSelection(m.index(first, 0), m.index(last, m.columnCount() - 1)),
                                          QItemSelectionModel.SelectionFlag.ClearAndSelect)
        grid.view.setFocus()
        wait_for(app, lambda: not m.fetching and not w.preview.fetching and not w.preview.busy)
        evict()

    def copy_page() -> None:
        copied.clear()
        w.actions_.copy_selection()
        wait_for(app, lambda: bool(copied) or not rows_tab.is_busy)

    select_page()
    out[f"cold fold: copy {samples:,} selected rows with their stems"] = best_of(app, copy_page, select_page)
    w.shutdown()
    w.deleteLater()
    return out


def remote_steps(app, folder: Path, delay_s: float) -> dict[str, Heartbeat]:
    """A payload a slow HTTP server holds back for ``delay_s``: the window waits for it without stalling."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from remote_servers import RangeHTTPServer

    webds = Path(__file__).resolve().parents[1] / "tests" / "data" / "taridx" / "webds"
    (folder / "http").mkdir()
    server = RangeHTTPServer(folder / "http")
    try:
        w = open_window(app, server.serve(webds) + "/train.taridx")
        wait_for(app, lambda: not w.preview.fetching)
        server.slow(delay_s, only=".tar")
        rows = iter(range(1, 1 + ROUNDS))

        def fetch_slowly() -> None:  # each round another row: its payload is not in the byte cache
            settled: list[int] = []

            def on_settled() -> None:
                settled.append(1)

            w.previewSettled.connect(on_settled)
            w.go_to_row(next(rows))
            wait_for(app, lambda: bool(settled) and not w.preview.fetching)
            w.previewSettled.disconnect(on_settled)  # only this step's slot: the window's own stay

        out = {f"remote: a payload the server holds back {delay_s:g} s": best_of(app, fetch_slowly)}
        w.shutdown()
        w.deleteLater()
        return out
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--grid-rows", type=int, help="rows of the grid steps' index (default 10M)")
    parser.add_argument("--grid-only", action="store_true", help="only the grid steps")
    parser.add_argument("--cold-fold-only", action="store_true", help="only the cold fold steps")
    parser.add_argument("--dir", type=Path, help="where to write the inputs (default: a temporary folder)")
    args = parser.parse_args()
    compile_bytecode()  # as installed: lazy imports must not compile on the GUI thread while it is timed
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    grid_rows, panel_rows, hex_size, jpegs = (
        (200_000, 200_000, 1 << 26, 40) if args.quick else (10_000_000, 4_000_000, 1 << 30, 400))
    grid_rows = args.grid_rows or grid_rows
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        os.environ["ITARCORE_CACHE_DIR"] = str(folder / "cache")
        results: dict[str, Heartbeat] = {}
        if args.cold_fold_only:
            results.update(cold_fold_steps(app, folder, 8 if args.quick else 50, 500 if args.quick else 2_000))
        else:
            results.update(grid_steps(app, folder, grid_rows))
        if not args.grid_only and not args.cold_fold_only:
            results.update(hex_steps(app, folder, hex_size))
            results.update(panel_steps(app, folder, panel_rows))
            results.update(gallery_steps(app, folder, jpegs))
            results.update(cold_fold_steps(app, folder, 8 if args.quick else 50, 500 if args.quick else 2_000))
            results.update(remote_steps(app, folder, 0.5 if args.quick else 2.0))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"GUI thread stalls, best of {ROUNDS} rounds (load average {' '.join(load)})")
    width = max(map(len, results)) + 2
    print(f"{'step':<{width}}{'busy ms':>9}{'gap ms':>9}  target")
    for step, beat in results.items():
        verdict = "met" if beat.max_busy_ms < TARGET_MS else "NOT met"
        print(f"{step:<{width}}{beat.max_busy_ms:>9.0f}{beat.max_gap_ms:>9.0f}  < {TARGET_MS} ms busy: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
