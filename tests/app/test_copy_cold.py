"""Copy from the grid (issue 15): at once for a screenful in RAM; from a worker, with Cancel, otherwise.

The copied text is compared with lines built from the index read by numpy and the names read by
tarfile. "Not in RAM" is forced through ``block_resident`` (checked against the kernel in
tests/itarcore/test_residency.py); the worker's text-making is held while the test looks at the window.
"""
from __future__ import annotations

import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from gui_helpers import click, open_file
from off_gui_thread import OffGuiThread, event_loop_answers
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractItemView
from synthetic import ROW_DT

from app.models import selection_copy, windowed_table_model
from itarcore.dataset import Dataset

WEBDS = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"
INDEX = WEBDS / "train.taridx"
EXTS = ["jpg", "cls", "json", "png", "txt", "npy", "seg8", "left.jpg", "webp", "(none)"]


def truth_lines(rows: range) -> list[str]:
    """Header and one line per row: the index by numpy, the stems by tarfile."""
    raw = INDEX.read_bytes()
    recs = np.frombuffer(raw, ROW_DT, offset=struct.unpack_from("<Q", raw, 48)[0])
    names = {}
    for fid in range(3):
        with tarfile.open(WEBDS / f"train_{fid:04d}.tar") as tf:
            names[fid] = {m.offset: m.name for m in tf.getmembers()}
    lines = ["row\tShard\tOffset\tSize\tExt\tCrash id\tKeyhash\tStem"]
    for r in rows:
        rec = recs[r]
        fid, offset = int(rec["fid"]), int(rec["offset"])
        stem = names[fid][offset].rsplit("/", 1)[-1].partition(".")[0]
        lines.append("\t".join([str(r), f"{fid}: train_{fid:04d}.tar", str(offset), f"{int(rec['size']):,}",
                                EXTS[int(rec["extid"])], str(int(rec["crashid"])), f"{int(rec['keyhash']):016x}",
                                stem]))
    return lines


def select_rows(tab, first: int, last: int) -> None:
    view = tab.grid.view
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    view.clearSelection()
    for r in range(first, last + 1):
        view.selectionModel().select(tab.model.index(r, 0), view.selectionModel().SelectionFlag.Select
                                     | view.selectionModel().SelectionFlag.Rows)
    view.setFocus()


@pytest.fixture
def rows_tab(qtbot, window):
    open_file(qtbot, window, INDEX)
    tab = window.current_tab()
    qtbot.waitUntil(lambda: not tab.model.fetching, timeout=30_000)
    QGuiApplication.clipboard().setText("")
    return window, tab


def test_a_screenful_in_ram_is_copied_at_once(qtbot, rows_tab, monkeypatch):
    window, tab = rows_tab
    spy = OffGuiThread(monkeypatch)
    spy.watch(selection_copy, "selection_text")
    select_rows(tab, 0, 9)  # on screen: the grid has read their stems, the index is in RAM
    window.actions_.copy_selection()
    assert QGuiApplication.clipboard().text().split("\n") == truth_lines(range(10))
    assert spy.calls == [("selection_text", True)]  # made on the GUI thread at once: no worker
    # rows never shown: their stems are in the shards, so a worker reads them
    select_rows(tab, 700, 737)
    with qtbot.waitSignal(tab.copied, timeout=30_000):
        window.actions_.copy_selection()
    assert spy.calls[1:] == [("selection_text", False)]
    assert QGuiApplication.clipboard().text().split("\n") == truth_lines(range(700, 738))


def test_a_cold_selection_is_copied_by_a_worker_that_can_be_cancelled(qtbot, rows_tab, monkeypatch):
    window, tab = rows_tab
    monkeypatch.setattr(windowed_table_model, "block_resident", lambda *a: False)  # the index is "cold"
    spy = OffGuiThread(monkeypatch)
    spy.watch(selection_copy, "selection_text", hold=True)
    spy.watch_method(Dataset, "stem_names")
    select_rows(tab, 100, 399)
    window.actions_.copy_selection()
    spy.wait_held(qtbot)
    assert window.status.cancel.isVisible() and event_loop_answers(qtbot)
    assert QGuiApplication.clipboard().text() == ""
    with qtbot.waitSignal(tab.copied, timeout=30_000):
        spy.release()
    spy.assert_none_on_gui_thread()
    assert QGuiApplication.clipboard().text().split("\n") == truth_lines(range(100, 400))
    assert window.status.bar.currentMessage() == "Copied 301 line(s)"

    QGuiApplication.clipboard().setText("before")
    spy.hold_again()
    window.actions_.copy_selection()
    spy.wait_held(qtbot)
    with qtbot.waitSignal(tab.idle, timeout=30_000):
        click(qtbot, window.status.cancel)
        spy.release()
    spy.assert_none_on_gui_thread()
    assert QGuiApplication.clipboard().text() == "before"


def test_a_copy_under_way_survives_a_sort_started_meanwhile(qtbot, rows_tab, monkeypatch):
    """A sort replaces an older sort or filter, never a copy: the copy still reaches the clipboard."""
    window, tab = rows_tab
    monkeypatch.setattr(windowed_table_model, "block_resident", lambda *a: False)  # the index is "cold"
    spy = OffGuiThread(monkeypatch)
    spy.watch(selection_copy, "selection_text", hold=True)
    select_rows(tab, 100, 399)
    window.actions_.copy_selection()
    spy.wait_held(qtbot)
    with qtbot.waitSignal(tab.viewApplied, timeout=30_000):
        tab.sort_by("Size")
    with qtbot.waitSignal(tab.copied, timeout=30_000):
        spy.release()
    assert QGuiApplication.clipboard().text().split("\n") == truth_lines(range(100, 400))
    assert tab.sort_key is not None and tab.sort_key.column == "Size"  # and the sort went through too
