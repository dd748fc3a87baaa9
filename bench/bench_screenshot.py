"""``itar-browser --screenshot`` of a huge index as a process, cold (index not in the page cache) and warm.

    python bench/bench_screenshot.py                  # 10M rows (320 MB in a temp dir, deleted after)
    python bench/bench_screenshot.py --rows 200000000 # the issue's 200M-row row (6.4 GB)
    python bench/bench_screenshot.py --index BIG.taridx   # an existing index (kept)

The app runs in a child process through its real entry point (``app.main.run``); a
small hook stamps the moments that matter (open asked, grid painted, window closing)
so the parent can print first paint, exit (window closing → process gone, measured
by the parent), RSS growth from before the open to the end, and whatever reached
stderr, beside the issue's targets. Cold means ``posix_fadvise(DONTNEED)`` on the
index first. The machine may be shared: timings are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import compile_bytecode, write_index

ROOT = Path(__file__).resolve().parents[1]

# Runs in the child: stamps (as time.time()) into a JSON file given in argv, then runs the app.
CHILD = textwrap.dedent("""
    import json, os, sys, time
    stamps_path, args = sys.argv[1], sys.argv[2:]
    stamps = {}
    def rss_mb(field="VmRSS"):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    def save():
        with open(stamps_path, "w") as fh:
            json.dump(stamps, fh)
    from app.views import main_window as mw
    open_path, shutdown = mw.MainWindow.open_path, mw.MainWindow.shutdown
    def on_open(self, path, *rest, **options):
        stamps.setdefault("open", time.time())
        stamps.setdefault("rss_before", rss_mb())
        def painted(_path):
            self.tabs.currentWidget().grid.view.viewport().repaint()
            stamps["painted"] = time.time()
        self.documentOpened.connect(painted)
        open_path(self, path, *rest, **options)
    def on_shutdown(self):
        if "closing" not in stamps:
            stamps["closing"] = time.time()
            stamps["rss_at_close"] = rss_mb()
        shutdown(self)
        stamps.setdefault("shut", time.time())
        stamps["rss_peak"] = rss_mb("VmHWM")
        save()
    mw.MainWindow.open_path, mw.MainWindow.shutdown = on_open, on_shutdown
    close_after = float(os.environ.get("BENCH_CLOSE_MID_GROUPING_S", "0"))
    if close_after:  # bring Samples to the front, close the window that long into its pass
        from PySide6.QtCore import QTimer
        init = mw.MainWindow.__init__
        def patched_init(self, *a, **k):
            init(self, *a, **k)
            def raise_samples(_path=None):
                samples = next(p for p in self.panels if p.title == "Samples")
                if samples._worker is not None:  # its pass is running
                    stamps["grouping"] = time.time()
                    QTimer.singleShot(int(close_after * 1000), self.close)
                elif samples.groups is not None:  # grouped already (a cached key index): nothing to stop
                    QTimer.singleShot(int(close_after * 1000), self.close)
                else:  # a background tab: show() first, or raise_() leaves it behind the current one
                    samples.parent().show()
                    samples.parent().raise_()
                    QTimer.singleShot(10, raise_samples)
            self.documentOpened.connect(raise_samples)
        mw.MainWindow.__init__ = patched_init
    from app.workers import JobWorker
    detach = JobWorker.detach
    def timed_detach(self):
        t = time.time()
        stopped = detach(self)
        if not stopped and "grouping_stop_ms" not in stamps:
            self.done_event.wait(5)
            stamps["grouping_stop_ms"] = (time.time() - t) * 1000
        return self.done_event.is_set()
    JobWorker.detach = timed_detach
    import app.main
    app.main.run(args)
""")


def drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def screenshot(index: Path, work: Path, cold: bool, close_mid_grouping_s: float = 0.0) -> dict[str, str]:
    """One run; with ``close_mid_grouping_s`` the app is not a screenshot but a user who opens Samples and quits."""
    if cold:
        drop_cache(index)
    stamps_path = work / "stamps.json"
    stamps_path.unlink(missing_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ITAR_BROWSER_SETTINGS=str(work / "settings.ini"),
               ITARCORE_CACHE_DIR=str(work / "cache"), BENCH_CLOSE_MID_GROUPING_S=str(close_mid_grouping_s))
    args = [str(index)] if close_mid_grouping_s else [str(index), "--screenshot", str(work / "shot.png")]
    done = subprocess.run([sys.executable, "-c", CHILD, str(stamps_path), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    ended = time.time()
    if not stamps_path.exists():
        raise SystemExit(f"the app exited with {done.returncode} before closing its window; its stderr:\n"
                         f"{done.stderr[-2000:]}")
    s = json.loads(stamps_path.read_text())
    return {
        "first paint": f"{(s['painted'] - s['open']) * 1000:.0f} ms",
        "exit": f"{(ended - s['closing']) * 1000:.0f} ms",
        "  of it shutdown()": f"{(s['shut'] - s['closing']) * 1000:.0f} ms",
        "RSS growth": f"{s['rss_peak'] - s['rss_before']:.0f} MB",
        "worker cancel": (f"{s['grouping_stop_ms']:.0f} ms" if "grouping_stop_ms" in s else "(none running)"),
        "stderr": repr(done.stderr[-200:]) if done.stderr else "(empty)",
        "exit code": str(done.returncode),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--index", type=Path, help="an existing index to open instead of writing one")
    p.add_argument("--mid-grouping", type=float, default=2.0, metavar="S",
                   help="for the third run: close the window S seconds into the Samples pass (default 2)")
    args = p.parse_args()
    compile_bytecode()  # the child process imports as an installed app does
    work = Path(tempfile.mkdtemp(prefix="bench-shot-"))
    try:
        index = args.index
        if index is None:
            index = work / "huge.taridx"
            write_index(index, args.rows)
        with open(index, "rb") as fh:
            n_rows = struct.unpack_from("<Q", fh.read(32), 24)[0]  # the header's n_rows
        runs = {"cold": screenshot(index, work, cold=True), "warm": screenshot(index, work, cold=False),
                "quit mid-grouping": screenshot(index, work, cold=True, close_mid_grouping_s=args.mid_grouping)}
        targets = {"first paint": "< 1 s", "exit": "< 0.5 s", "  of it shutdown()": "", "worker cancel": "< 100 ms", "RSS growth": "< 150 MB",
                   "stderr": "(empty)", "exit code": "0"}
        print(f"itar-browser --screenshot, {n_rows:,} rows ({index.stat().st_size / 1e9:.1f} GB)")
        print(f"{'':14}{'cold':>16}{'warm':>16}{'quit mid-grouping':>20}{'target':>12}")
        for key, target in targets.items():
            print(f"{key:14}{runs['cold'][key]:>16}{runs['warm'][key]:>16}{runs['quit mid-grouping'][key]:>20}"
                  f"{target:>12}")
        print(f"(quit mid-grouping: Samples brought to the front, the window closed {args.mid_grouping:g} s into "
              "its pass; exit = close → process gone; worker cancel = the running "
              "pass told to stop → out of its task; the bench waits for it inside shutdown(), which the app does not)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
