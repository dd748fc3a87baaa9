"""The browser on remote files: S3 (moto) and HTTP (a range server) on loopback, through fsspec.

A remote preview is compared with Pillow's decode of the same member read by Python's
tarfile from the local shard (an independent route to the same bytes and pixels). A held-back
server shows that the window answers while a fetch waits: no clock is read.
"""
from __future__ import annotations

import tarfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from gui_helpers import click
from off_gui_thread import event_loop_answers
from PIL import Image
from PySide6.QtGui import QImage

from app.views.formats.taridx.wizard_source import human_bytes
from app.views.preview_widgets import ImagePane

WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"


def image_rows(shard: str) -> list[tuple[int, str]]:
    """(row, member name) of the jpg rows of one local shard, from the local index: the truth."""
    from itarcore.dataset import Dataset

    with Dataset.open(WEBDS / "train.taridx") as ds:
        return [(row, ds.member_names([row])[0]) for row in range(ds.n_rows)
                if ds.ext_of(row) == "jpg" and ds.shard_name(int(ds.rows["fid"][row])) == shard]


def member_bytes(shard: str, member: str) -> bytes:
    with tarfile.open(WEBDS / shard) as tar:
        return tar.extractfile(member).read()


def shown_pixels(preview) -> np.ndarray:
    """The pixels the preview paints (its QImage), as an H×W×3 array."""
    pane = preview.content
    assert isinstance(pane, ImagePane)
    image = pane.qitem.qimage.convertToFormat(QImage.Format.Format_RGB888)
    rows = [np.frombuffer(bytes(image.constScanLine(y))[: image.width() * 3], np.uint8)
            for y in range(image.height())]
    return np.stack(rows).reshape(image.height(), image.width(), 3)


@pytest.fixture(params=["s3", "http"])
def remote_index(request) -> tuple[str, dict | None]:
    """(URL of train.taridx with its shards beside it, storage options) on a loopback server."""
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        return server.upload(WEBDS) + "/train.taridx", server.storage_options
    return request.getfixturevalue("http_server").serve(WEBDS) + "/train.taridx", None


def open_url(qtbot, window, url: str, options: dict | None, timeout: int = 30_000) -> None:
    with qtbot.waitSignal(window.previewSettled, timeout=timeout), \
            qtbot.waitSignal(window.documentOpened, timeout=timeout):
        window.open_path(url, options)


def select_row(qtbot, window, row: int, timeout: int = 30_000) -> None:
    with qtbot.waitSignal(window.previewSettled, timeout=timeout):
        assert window.go_to_row(row)


def test_opens_a_url_and_previews_an_image_as_pillow_decodes_it(qtbot, window, remote_index):
    url, options = remote_index
    open_url(qtbot, window, url, options)
    assert window.document.format == "taridx" and window.remote.active
    assert window.windowTitle().startswith("train.taridx — TARIDX")
    tab = window.current_tab()
    assert tab.table.n_rows == 738  # the local fixture's row count
    qtbot.waitUntil(lambda: tab.model.text(0, 6) == "train000000", timeout=20_000)  # stems read from the shard
    row, member = image_rows("train_0001.tar")[0]
    select_row(qtbot, window, row)
    truth = member_bytes("train_0001.tar", member)
    assert bytes(window.preview.payload.data) == truth
    expected = np.asarray(Image.open(BytesIO(truth)).convert("RGB"))
    assert np.array_equal(shown_pixels(window.preview), expected)
    # the hex pane shows this row's 32-byte record of the remote index, as the local file holds it
    hex_widget = window.hex_pane.hex
    assert hex_widget.loader is not None  # remote pages are read by the pane's worker
    start, end = hex_widget.highlight
    assert end - start == 32
    qtbot.waitUntil(lambda: hex_widget.read(start, 32) is not None, timeout=20_000)
    assert hex_widget.read(start, 32) == (WEBDS / "train.taridx").read_bytes()[start:end]


def test_flipping_back_to_a_row_is_served_from_the_cache(qtbot, window, http_server):
    url = http_server.serve(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, None)
    (a, member_a), (b, _) = image_rows("train_0002.tar")[:2]
    select_row(qtbot, window, a)
    select_row(qtbot, window, b)
    gets = len(http_server.requests("GET", "train_0002.tar"))
    with qtbot.waitSignal(window.previewSettled, timeout=5_000):
        window.go_to_row(a)
        assert not window.preview.fetching  # no fetch page: the bytes were at hand
    assert len(http_server.requests("GET", "train_0002.tar")) == gets
    assert bytes(window.preview.payload.data) == member_bytes("train_0002.tar", member_a)


def test_a_slow_server_never_stalls_the_window(qtbot, window, http_server):
    url = http_server.serve(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, None)
    row, member = image_rows("train_0002.tar")[0]
    held = http_server.hold_back(only="train_0002.tar")  # the server sends no payload until released
    with qtbot.waitSignal(window.previewSettled, timeout=30_000):
        window.go_to_row(row)
        qtbot.waitUntil(lambda: window.preview.fetching, timeout=10_000)
        truth = member_bytes("train_0002.tar", member)
        said = f"fetching {human_bytes(len(truth))}…"  # e.g. "fetching 874 B…", once the row's size is read
        qtbot.waitUntil(lambda: window.preview.fetch_label.text() == said, timeout=10_000)
        # the fetch waits on the server, and the window answers the user meanwhile
        assert event_loop_answers(qtbot) and window.preview.fetching
        shot = window.grab()  # the whole window paints, its fetch page up, without waiting for the bytes
        assert not shot.isNull() and window.preview.fetching
        held.set()
    assert bytes(window.preview.payload.data) == truth


def test_cancel_stops_waiting_for_a_slow_fetch(qtbot, window, http_server):
    url = http_server.serve(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, None)
    row, member = image_rows("train_0001.tar")[1]
    held = http_server.hold_back(only="train_0001.tar")
    window.go_to_row(row)
    qtbot.waitUntil(lambda: window.preview.fetching, timeout=5_000)
    with qtbot.waitSignal(window.previewSettled, timeout=1_000):
        click(qtbot, window.preview.cancel_fetch)
    assert not window.preview.fetching and window.preview.payload is None
    assert "cancelled" in window.preview.placeholder.text()
    held.set()
    # the read that was under way ends on its own; its bytes are kept but not shown
    qtbot.waitUntil(lambda: len(window.remote.cache) >= 1 and window.remote.pool.activeThreadCount() == 0,
                    timeout=30_000)
    qtbot.wait(100)
    assert window.preview.payload is None and "cancelled" in window.preview.placeholder.text()
    http_server.reset()
    select_row(qtbot, window, row - 1)
    select_row(qtbot, window, row)
    assert bytes(window.preview.payload.data) == member_bytes("train_0001.tar", member)


def test_a_dead_server_gives_an_error_naming_url_and_range(qtbot, window, http_server):
    url = http_server.serve(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, None)
    (first, _), (row, _) = image_rows("train_0002.tar")[:2]
    select_row(qtbot, window, first)  # the shard is open (its size known): what fails next is a ranged read
    http_server.fails_n_times(404, 100, only="train_0002.tar")
    select_row(qtbot, window, row)
    text = window.preview.placeholder.text()
    assert window.preview.payload is None
    from itarcore.dataset import Dataset

    with Dataset.open(WEBDS / "train.taridx") as local:  # the payload's byte range, from the local index
        start = int(local.rows["offset"][row]) + 512
        end = start + int(local.rows["size"][row])
    assert "Could not fetch the payload" in text and "train_0002.tar" in text
    assert f"bytes [{start}, {end})" in text and "404" in text  # URL, range and what the server said


def test_samples_panel_on_a_remote_fold_shows_members_as_the_local_shards_hold_them(qtbot, s3_server):
    from app.views.formats.taridx.samples_panel import SamplesPanel
    from itarcore.dataset import Dataset
    from itarcore.document import Document

    url = s3_server.upload(WEBDS) + "/train.taridx"
    dataset = Dataset.open(url, storage_options=s3_server.storage_options)
    panel = SamplesPanel(Document(url, "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(panel)
    panel.resize(1000, 420)
    try:
        assert panel._worker is None and panel.groups is None
        with qtbot.waitSignal(panel.sampleShown, timeout=30_000):
            panel.show()
        assert panel.model.background  # names come from a worker
        qtbot.waitUntil(lambda: panel.model.names.get(0) == "train000000", timeout=20_000)
        with qtbot.waitSignal(panel.sampleShown, timeout=30_000):
            panel.go_to_sample(1)
        with Dataset.open(WEBDS / "train.taridx") as local:
            rows = panel.groups.rows_of(1)
            names = local.member_names(rows)
            shard = local.shard_name(int(local.rows["fid"][rows[0]]))
        assert [c.member.name for c in panel.cards.cards] == list(names)
        for card, name in zip(panel.cards.cards, names):
            assert card.member.data == member_bytes(shard, name) and not card.member.error
        # an exact stem search reads keys from the server: in a worker, the answer as a signal
        with Dataset.open(WEBDS / "train.taridx") as local:
            want = int(panel.groups.sample_of_row(int(local.lookup_stem("train000003")[0])))
        with qtbot.waitSignal(panel.sampleFound, timeout=30_000) as found:
            assert panel.find("train000003") == -1
        assert found.args == [want] and panel.current == want
    finally:
        panel.shutdown()
        dataset.close()


def test_audit_panel_checks_a_remote_fold_with_the_options_it_was_opened_with(qtbot, window, s3_server):
    from itarcore.audit import quick_check

    url = s3_server.upload(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, s3_server.storage_options)
    panel = next(p for p in window.panels if p.title == "Audit")
    with qtbot.waitSignal(panel.statusMessage, timeout=60_000):
        panel.start(full=False)
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    local = quick_check(WEBDS / "train.taridx")  # the same fold on disk: the same findings
    assert panel.report is not None and panel.report.n_rows == local.n_rows == 738
    assert [(f.kind, f.severity) for f in panel.report.findings] == [(f.kind, f.severity) for f in local.findings]
    assert not panel.rebuild_button.isVisible()


def test_compare_a_remote_fold_with_a_local_one(qtbot, window, s3_server, tmp_path):
    """File → Compare with… on an s3:// index uses the options it was opened with; counts equal the local diff."""
    import sys

    from app.views.formats.taridx.diff_view import compare_with
    from itarcore.diff import diff_indexes

    sys.path.insert(0, str(Path(__file__).parents[1] / "itarcore"))
    from diff_fixtures import build_modified_train

    injected = build_modified_train(WEBDS, tmp_path / "new")
    new = tmp_path / "new" / "train.taridx"
    url = s3_server.upload(WEBDS) + "/train.taridx"
    open_url(qtbot, window, url, s3_server.storage_options)
    view = compare_with(window, str(new))
    assert view is not None and view.old_path == str(new) and view.new_path == url  # the open index is "new"
    qtbot.waitUntil(lambda: view.worker is None and view.diff is not None, timeout=60_000)
    truth = diff_indexes(new, WEBDS / "train.taridx")  # the same two folds, both on disk
    assert view.diff.totals == truth.totals
    for column, counts in truth.shard_counts.items():
        assert view.diff.shard_counts[column].tolist() == counts.tolist(), column
    assert sorted(s for s in view.diff.stems if s) == sorted(s for s in truth.stems if s)
    assert injected["size"] in view.diff.stems
