"""Showing the Samples and Plots tabs of a big index never stalls the GUI thread: their passes run in workers.

A 5 ms timer ticks on the GUI thread while each panel groups or counts 4M random rows;
the longest gap between ticks is the longest freeze a user would feel (issue 16 item 4).
Grouping 4M rows takes long enough that a pass on the GUI thread would show as a gap of
seconds.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")



from synthetic import Heartbeat, write_index

N_ROWS = 4_000_000
# The budget is 50 ms on an idle machine. These tests share 2 cores with other jobs (load 5-7),
# where a 5 ms timer alone sees 100-400 ms gaps while pyqtgraph builds and first paints its plots beside
# a worker; this bound is what work on the GUI thread proportional to the rows blows through (the old
# samples list: 7.6 s at this size) without flaking on that noise.
MAX_STALL_MS = 1000


@pytest.fixture(scope="module")
def big_index(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.taridx"
    write_index(path, N_ROWS)  # random keys: grouping needs the key index, built in the worker
    return path


@pytest.mark.parametrize("title, ready", [("Samples", "samplesReady"), ("Plots", "computed")])
def test_showing_a_panel_of_a_big_index_never_stalls_the_gui(qtbot, tmp_path, monkeypatch, big_index, title, ready):
    from app.views.main_window import MainWindow

    monkeypatch.setenv("ITARCORE_CACHE_DIR", str(tmp_path / "cache"))
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    try:
        with qtbot.waitSignal(w.previewSettled, timeout=30_000), qtbot.waitSignal(w.documentOpened, timeout=30_000):
            w.open_path(str(big_index))
        panel = next(p for p in w.panels if p.title == title)
        assert panel._worker is None  # nothing passes over the rows at open
        notes: list[str] = []
        panel.statusNote.connect(notes.append)
        with Heartbeat() as beat:
            with qtbot.waitSignal(getattr(panel, ready), timeout=120_000):
                panel.parent().raise_()
            qtbot.wait(50)  # ticks after the result is shown: a stall in showing it is measured too
        assert beat.max_gap_ms < MAX_STALL_MS, f"the GUI thread stalled {beat.max_gap_ms:.0f} ms"
        if title == "Samples":
            # random keys: grouping built the key index, and the status bar said lookups scan meanwhile
            assert "Stem lookups use a scan while the key index builds" in notes
            qtbot.waitUntil(lambda: panel._worker is None)
            assert notes[-1] == "" and not w.status.note_label.isVisible()
            ds = panel.dataset
            assert ds.key_index_state == "ready"
            row = N_ROWS * 2 // 3  # bench_browser's needle row
            assert ds.lookup_stem("needle-stem").tolist() == [row]
            assert panel.find("needle-stem") == panel.groups.sample_of_row(row)
    finally:
        w.shutdown()
