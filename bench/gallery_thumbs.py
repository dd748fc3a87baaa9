"""The Gallery's rows of bench_gallery.py: time to the first screen of thumbnails, and thumbnails per second.

Two tables, cold (shards dropped from the page cache, thumbnail cache empty) and warm
(the thumbnail cache filled by the cold run, shards in memory):

- first screen: a Gallery panel (offscreen Qt, 1400×900) opened on the fold, from
  ``show()`` until every visible cell has its thumbnail; the work includes finding each
  sample's image member (a sort of the rows) and reading stems from the tar headers;
- thumbnails/s: ``row_thumbnail`` over a run of samples on 2 threads (JPEG draft mode,
  the disk cache), beside the reference: Pillow's plain decode of the full image then
  ``thumbnail()``, as a script would do it.

Run alone: ``python bench/gallery_thumbs.py INDEX`` (or through bench_gallery.py).
"""
from __future__ import annotations

import io
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench_index import drop_from_page_cache, warm

THUMB = 128
THREADS = 2


def _shards(index: Path) -> list[Path]:
    from itarcore.dataset import find_shards, fold_name

    return list(find_shards(index.resolve().parent, fold_name(index)).values())


def first_screen_ms(index: Path) -> tuple[float, int]:
    """Milliseconds from show() to a full first screen of thumbnails, and how many cells that screen holds."""
    from PySide6.QtCore import QElapsedTimer
    from PySide6.QtWidgets import QApplication

    from app.views.formats.taridx.gallery_panel import GalleryPanel
    from itarcore.dataset import Dataset
    from itarcore.document import Document

    app = QApplication.instance() or QApplication([])
    with Dataset.open(index) as ds:
        panel = GalleryPanel(Document(str(index), "taridx", "TARIDX", [], [], source=ds))
        panel.resize(1400, 900)
        clock = QElapsedTimer()
        clock.start()
        panel.show()

        def done() -> bool:
            first, stop = panel.grid.visible_range()
            return panel.n_items() > 0 and stop > first and all(panel.cell(i) is not None for i in range(first, stop))

        while not done():
            app.processEvents()
            time.sleep(0.0005)
        elapsed = clock.nsecsElapsed() / 1e6
        first, stop = panel.grid.visible_range()
        panel.shutdown()
        panel.deleteLater()
        app.processEvents()
    return elapsed, stop - first


def thumbnails_per_s(index: Path, n: int, cache_dir: Path | None, reference: bool = False) -> float:
    """Thumbnails of the first ``n`` image rows on THREADS threads: ours (draft + cache) or Pillow's plain route."""
    from PIL import Image

    from app.models.gallery_items import gallery_rows
    from itarcore.dataset import Dataset
    from itarcore.thumbnails import ThumbnailCache, row_thumbnail

    with Dataset.open(index) as ds:
        rows = gallery_rows(ds.rows, ds.extensions, None)[:n].tolist()
        cache = ThumbnailCache(ds.index, cache_dir) if cache_dir is not None else None

        def ours(row: int) -> None:
            row_thumbnail(ds, row, THUMB, cache)

        def plain(row: int) -> None:
            img = Image.open(io.BytesIO(ds.read_payload(row))).convert("RGB")
            img.thumbnail((THUMB, THUMB))

        start = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(plain if reference else ours, rows))
        return len(rows) / (time.perf_counter() - start)


def thumbnails_section(index: Path, repeats: int = 1, n_rate: int = 2000) -> None:
    """Print the Gallery's tables for the fold of ``index``."""
    cache_root = Path(tempfile.mkdtemp(prefix="thumbs-"))
    os.environ["ITARCORE_CACHE_DIR"] = str(cache_root)  # the panel's cache: empty for the cold run
    shards = _shards(index)
    try:
        drop_from_page_cache(*shards)
        cold_ms, cells = first_screen_ms(index)
        warm(shards)
        warm_ms, _ = first_screen_ms(index)  # thumbnails now come from the disk cache
        rate_dir = cache_root / "rate"
        drop_from_page_cache(*shards)
        cold_rate = thumbnails_per_s(index, n_rate, rate_dir)
        warm(shards)
        warm_rate = thumbnails_per_s(index, n_rate, rate_dir)
        drop_from_page_cache(*shards)
        ref_cold = thumbnails_per_s(index, n_rate, None, reference=True)
        warm(shards)
        ref_warm = thumbnails_per_s(index, n_rate, None, reference=True)
        files = list((rate_dir / "thumbs").rglob("*.thumb"))
        size, n_files = sum(f.stat().st_size for f in files), len(files)
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nGallery thumbnails ({THUMB} px), {index.name}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'':34}{'cold':>12}{'warm':>12}")
    print(f"{'first screen (' + str(cells) + ' cells), ms':34}{cold_ms:>12,.0f}{warm_ms:>12,.0f}   target < 300 warm")
    print(f"{'itarcore thumbnails/s (2 threads)':34}{cold_rate:>12,.0f}{warm_rate:>12,.0f}   cold: decode, warm: cache")
    print(f"{'Pillow full decode + thumbnail/s':34}{ref_cold:>12,.0f}{ref_warm:>12,.0f}   reference (no draft)")
    print(f"thumbnail cache: {n_files:,} files, {size / max(1, n_files):,.0f} B each; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    thumbnails_section(Path(sys.argv[1]), 1, int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
