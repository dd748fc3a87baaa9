"""A local payload whose pages are not in RAM is read by the preview's worker, never on the GUI thread (issue 15).

A cold 50 MB member, or any member of a shard just copied, would stall the window if read on the GUI
thread. The residency answer is forced to "not in RAM" here (the answer itself is checked against the
kernel in tests/itarcore/test_residency.py); the worker's read is held while the test looks at the
window, and the payload shown at the end is compared with tarfile's.
"""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from gui_helpers import click, open_file
from off_gui_thread import OffGuiThread, event_loop_answers

from app.views import remote_session
from itarcore import dataset
from itarcore.dataset import Dataset

WEBDS = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"


def member_truth(ds: Dataset, row: int) -> tuple[str, bytes]:
    """(base name, payload) of ``row``'s member, read by tarfile at the row's header offset."""
    rec = ds.rows[row]
    with tarfile.open(ds.shard_paths[int(rec["fid"])]) as tf:
        info = next(m for m in tf.getmembers() if m.offset == int(rec["offset"]))
        return info.name.rsplit("/", 1)[-1], tf.extractfile(info).read()


@pytest.fixture
def cold(qtbot, window, monkeypatch):
    open_file(qtbot, window, WEBDS / "train.taridx")  # opened warm: its first preview is synchronous
    monkeypatch.setattr(dataset, "mapping_range_resident", lambda *a: False)  # every shard is "cold" now
    spy = OffGuiThread(monkeypatch)
    spy.watch(remote_session, "fetch_payload", hold=True)
    spy.watch_method(Dataset, "read_payload")
    yield window, spy
    spy.release()


def test_a_cold_payload_is_read_by_a_worker_while_the_preview_says_so(qtbot, cold, tmp_path):
    window, spy = cold
    ds = window.document.source
    row = 5
    with qtbot.waitSignal(window.previewSettled, timeout=30_000):
        assert window.go_to_row(row)
        spy.wait_held(qtbot)  # the worker is about to read; the GUI thread has not
        assert window.preview.fetching
        assert event_loop_answers(qtbot) and window.preview.fetching
        assert not spy.ran("read_payload")
        window.grab().save(str(tmp_path / "preview_reading.png"))
        spy.release()
    spy.assert_none_on_gui_thread()
    assert spy.ran("read_payload")
    name, data = member_truth(ds, row)
    assert window.preview.payload.name == name
    assert bytes(window.preview.payload.data) == data


def test_cancel_stops_waiting_for_a_cold_payload(qtbot, cold):
    window, spy = cold
    window.go_to_row(7)
    spy.wait_held(qtbot)
    with qtbot.waitSignal(window.previewSettled, timeout=5_000):
        click(qtbot, window.preview.cancel_fetch)
    assert not window.preview.fetching and window.preview.payload is None
    assert "cancelled" in window.preview.placeholder.text()
    spy.release()
    spy.assert_none_on_gui_thread()


def test_a_payload_in_ram_is_shown_without_a_worker(qtbot, window, monkeypatch):
    open_file(qtbot, window, WEBDS / "train.taridx")
    spy = OffGuiThread(monkeypatch)
    spy.watch(remote_session, "fetch_payload")
    ds = window.document.source
    row = 3
    assert ds.rows[row]["fid"] == ds.rows[0]["fid"]  # the shard the first preview opened and read
    ds.read_payload(row)  # its pages are in the page cache now
    with qtbot.waitSignal(window.previewSettled, timeout=10_000):
        assert window.go_to_row(row)
        assert not window.preview.fetching  # no fetch page, no flicker
    assert not spy.ran("fetch_payload")
    assert bytes(window.preview.payload.data) == member_truth(ds, row)[1]
