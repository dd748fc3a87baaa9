"""Showing the Samples and Plots tabs of a big index never stalls the GUI thread: their passes run in workers.

Each panel groups or counts 4M random rows. Every pass over the rows goes through
``iter_row_chunks``; the test holds it in its worker and drives the window meanwhile: the
panel says what it is doing, the event loop answers, and the result is right once released
(issue 16 item 4). The GUI thread's longest busy stretch is measured in bench/bench_gui_stalls.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from off_gui_thread import OffGuiThread, event_loop_answers
from synthetic import write_index

from itarcore import rowpass

N_ROWS = 4_000_000


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
        spy = OffGuiThread(monkeypatch)
        spy.watch(rowpass, "iter_row_chunks", hold=True)
        panel.parent().raise_()  # the user looks at the panel: its pass starts, in a worker
        spy.wait_held(qtbot)
        shown = panel.message.text() if title == "Samples" else panel.status.text()
        assert shown == (f"Grouping {N_ROWS:,} rows into samples…" if title == "Samples" else f"Counting {N_ROWS:,} rows…")
        assert panel._worker is not None and event_loop_answers(qtbot)
        w.tabs.setCurrentWidget(w.tabs_by_name["extensions"])  # the window goes on answering the user
        assert w.tabs.currentWidget() is w.tabs_by_name["extensions"]
        with qtbot.waitSignal(getattr(panel, ready), timeout=120_000):
            spy.release()
        spy.assert_none_on_gui_thread()
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
