"""A slow source (a remote file) is read off the GUI thread: the pane paints, scrolls and copies meanwhile."""
from __future__ import annotations

import struct
import threading

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.views.hex import HexPane
from app.views.hex.model import PAGE, format_line

SIZE = 10 * PAGE + 100


def byte_at(i: int) -> int:
    return (i * 13 + 5) % 251


class GatedSource:
    """Reads wait for ``gate``, and say which thread asked (a remote read is a slow round trip)."""

    size = SIZE

    def __init__(self, fail_from: int | None = None) -> None:
        self.gate = threading.Event()
        self.threads: list[threading.Thread] = []
        self.fail_from = fail_from

    def read(self, offset: int, length: int) -> bytes:
        self.threads.append(threading.current_thread())
        assert self.gate.wait(10)
        if self.fail_from is not None and offset + length > self.fail_from:
            raise OSError(f"range {offset}-{offset + length} of https://example.invalid/big.bin: HTTP 503")
        return bytes(byte_at(i) for i in range(offset, min(self.size, offset + length)))


@pytest.fixture
def pane(qtbot):
    p = HexPane()
    qtbot.addWidget(p)
    p.resize(640, 320)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.set_byte_source(None)  # stops its loader


def test_pages_arrive_from_a_worker_and_the_view_and_inspector_follow(qtbot, pane, tmp_path):
    source = GatedSource()
    pane.set_byte_source(source, background=True)
    view = pane.hex
    pane.grab().save(str(tmp_path / "hex-reading.png"))
    assert pane.inspector.value_text("u32") == "…"  # nothing read yet: the inspector says it waits
    assert view.read(0, 16) is None
    source.gate.set()
    qtbot.waitUntil(lambda: view.read(0, 16) is not None, timeout=5000)
    truth = bytes(byte_at(i) for i in range(16))
    assert format_line(0, view.read(0, 16)) == format_line(0, truth)
    qtbot.waitUntil(lambda: pane.inspector.value_text("u32") != "…", timeout=5000)
    assert pane.inspector.value_text("u32") == str(struct.unpack("<I", truth[:4])[0])
    # far down: asked for, painted when it lands
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    last = SIZE - 1
    qtbot.waitUntil(lambda: pane.inspector.value_text("u8") == str(byte_at(last)), timeout=5000)
    qtbot.keyClick(view, Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier)
    QApplication.clipboard().setText("")
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: QApplication.clipboard().text() != "", timeout=5000)
    assert QApplication.clipboard().text() == f"{byte_at(last - 1):02x} {byte_at(last):02x}"
    assert source.threads and all(t is not threading.main_thread() for t in source.threads)


def test_a_failing_remote_read_is_said_once_and_not_retried_in_a_loop(qtbot, pane):
    source = GatedSource(fail_from=0)
    source.gate.set()
    pane.set_byte_source(source, background=True)
    pane.hex.viewport().repaint()
    qtbot.waitUntil(lambda: "HTTP 503" in pane.caption.text(), timeout=5000)
    assert pane.caption.text().startswith("Could not read bytes: range 0-")
    asked = len(source.threads)
    for _ in range(5):
        pane.hex.viewport().repaint()
        QApplication.processEvents()
    qtbot.wait(50)
    assert len(source.threads) == asked  # the failed pages are not asked again on every paint


def test_a_local_files_pages_in_ram_show_at_once_and_the_others_come_from_a_worker(qtbot, pane, tmp_path):
    """A local index not in the page cache (1B rows): the hex pane never reads the disk on the GUI thread."""
    from itarcore.storage.residency import read_if_cached

    path = tmp_path / "local.bin"
    data = bytes(byte_at(i) for i in range(SIZE))
    path.write_bytes(data)
    cold = {3}  # this page "is not in RAM"; the others really are (just written)
    threads: list[threading.Thread] = []

    def read(offset: int, length: int) -> bytes:
        threads.append(threading.current_thread())
        return data[offset:offset + length]

    def read_cached(offset: int, length: int) -> bytes | None:
        return None if offset // PAGE in cold else read_if_cached(path, offset, length)

    pane.set_source(read, SIZE, background=True, read_cached=read_cached)
    view = pane.hex
    assert view.read(0, 16) == data[:16] and threads == []  # in RAM: no placeholder, no worker
    assert view.read(3 * PAGE, 16) is None  # not in RAM: asked of the worker
    qtbot.waitUntil(lambda: view.read(3 * PAGE, 16) is not None, timeout=5000)
    assert view.read(3 * PAGE, 16) == data[3 * PAGE:3 * PAGE + 16]
    assert threads and all(t is not threading.main_thread() for t in threads)


def test_a_local_file_gone_since_it_was_opened_is_said_not_raised_in_the_paint(qtbot, pane, tmp_path):
    from itarcore.storage.residency import read_if_cached

    path = tmp_path / "gone.bin"
    path.write_bytes(bytes(SIZE))

    def read(offset: int, length: int) -> bytes:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    pane.set_source(read, SIZE, background=True, read_cached=lambda o, n: read_if_cached(path, o, n))
    path.unlink()
    assert pane.hex.read(8 * PAGE, 16) is None  # a page not read yet: nothing raised on the GUI thread, the worker is asked
    qtbot.waitUntil(lambda: "Could not read bytes" in pane.caption.text(), timeout=5000)
    assert str(path) in pane.caption.text() or "No such file" in pane.caption.text()
