"""The payload preview shows what Pillow, numpy and json say about fixture payloads."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")

from gui_helpers import show_payload
from PySide6.QtCore import QPointF, Qt

from app.views.preview import PayloadPreview, safe_file_name
from app.views.preview_widgets import ArrayView, HexView, ImagePane, JsonTree, LabelView, TextView
from app.views.preview_widgets.hexview import hex_dump
from itarcore.document import Payload

WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"


def member(shard: str, name: str) -> Payload:
    with tarfile.open(WEBDS / shard) as tar:
        data = tar.extractfile(name).read()
    base = name.rsplit("/", 1)[-1]
    ext = base.split(".", 1)[1].lower() if "." in base else ""
    return Payload(data, ext, name)


def show(qtbot, w: PayloadPreview, payload: Payload) -> None:
    show_payload(qtbot, w, payload)


def test_jpeg_shows_size_and_pixel_values(qtbot, preview, tmp_path):
    payload = member("train_0000.tar", "train000000.jpg")
    truth = Image.open(io.BytesIO(payload.data))
    show(qtbot, preview, payload)
    pane = preview.content
    assert isinstance(pane, ImagePane)
    assert pane.image_size() == truth.size
    assert f"{truth.width}×{truth.height}" in preview.description.text()
    assert f"{len(payload.data):,} bytes" in preview.description.text()
    rgb = np.asarray(truth.convert("RGB"))
    assert pane.value_at(3, 2) == f"x 3, y 2: ({rgb[2, 3, 0]}, {rgb[2, 3, 1]}, {rgb[2, 3, 2]})"
    assert pane.value_at(truth.width, 0) is None
    # hovering the pixel's centre reads it out under the view
    pane._on_mouse_moved(pane.viewbox.mapViewToScene(QPointF(5.5, 7.5)))
    assert pane.readout.text() == pane.value_at(5, 7)
    preview.grab().save(str(tmp_path / "preview_jpeg.png"))


def test_webp_and_png(qtbot, preview):
    for shard, name in (("train_0000.tar", "train000004.webp"), ("train_0000.tar", "train000000.png")):
        payload = member(shard, name)
        truth = Image.open(io.BytesIO(payload.data))
        show(qtbot, preview, payload)
        assert isinstance(preview.content, ImagePane)
        assert preview.content.image_size() == truth.size


def test_json_tree_has_the_documents_keys(qtbot, preview, tmp_path):
    payload = member("train_0000.tar", "train000000.json")
    truth = json.loads(payload.data)
    show(qtbot, preview, payload)
    tree = preview.content
    assert isinstance(tree, JsonTree)
    assert tree.top_keys() == list(truth)
    first = tree.invisibleRootItem().child(0)
    value = truth[first.text(0)]
    # strings as JSON writes them ("double quotes"), numbers as they are
    assert first.text(1) == (json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value))
    preview.grab().save(str(tmp_path / "preview_json.png"))


def test_npy_2d_is_an_image_with_shape_and_dtype(qtbot, preview, tmp_path):
    payload = member("train_0000.tar", "train000001.npy")
    truth = np.load(io.BytesIO(payload.data))
    show(qtbot, preview, payload)
    view = preview.content
    assert isinstance(view, ArrayView)
    assert view.array.shape == truth.shape and view.array.dtype == truth.dtype
    assert f"{truth.dtype} {truth.shape}" in view.summary.text()
    assert view.kind == "image"
    assert view.image.value_at(1, 2) == f"x 1, y 2: {truth[2, 1]:.6g}"
    preview.grab().save(str(tmp_path / "preview_npy.png"))


def test_npy_1d_is_a_plot(qtbot, preview):
    arr = np.sin(np.linspace(0, 6, 50)).astype(np.float64)
    buf = io.BytesIO()
    np.save(buf, arr)
    show(qtbot, preview, Payload(buf.getvalue(), "npy", "wave.npy"))
    view = preview.content
    assert view.kind == "plot"
    (curve,) = view.plot.getPlotItem().listDataItems()
    np.testing.assert_array_equal(curve.yData, arr)


def test_cls_is_a_big_label(qtbot, preview):
    payload = member("train_0000.tar", "train000001.cls")
    show(qtbot, preview, payload)
    assert isinstance(preview.content, LabelView)
    assert preview.content.text() == payload.data.decode().strip()


def test_text_and_unknown_bytes(qtbot, preview):
    payload = member("train_0000.tar", "sample_3781adf6e49e.txt")
    show(qtbot, preview, payload)
    assert isinstance(preview.content, TextView)
    assert preview.content.toPlainText() == payload.data.decode("utf-8")
    readme = member("train_0000.tar", "README")  # no extension, but text: shown as text, hex on request
    show(qtbot, preview, readme)
    assert isinstance(preview.content, TextView)
    assert preview.content.toPlainText() == readme.data.decode("utf-8")
    preview.hex_button.setChecked(True)
    assert preview.stack.currentWidget() is preview.hex_view
    assert preview.hex_view.text() == hex_dump(readme.data)
    preview.hex_button.setChecked(False)
    binary = Payload(bytes(range(256)), "", "blob")  # no extension and not text: hex only
    show(qtbot, preview, binary)
    assert preview.content is None and preview.stack.currentWidget() is preview.hex_view


def test_hex_toggle_for_any_payload(qtbot, preview):
    payload = member("train_0000.tar", "train000000.json")
    show(qtbot, preview, payload)
    assert preview.stack.currentWidget() is preview.content
    qtbot.mouseClick(preview.hex_button, Qt.MouseButton.LeftButton)
    assert preview.stack.currentWidget() is preview.hex_view
    first = preview.hex_view.text().splitlines()[0]
    assert first.startswith("00000000  " + " ".join(f"{b:02x}" for b in payload.data[:8]))
    assert first.endswith("|" + payload.data[:16].decode("ascii") + "|")
    preview.hex_button.setChecked(False)
    assert preview.stack.currentWidget() is preview.content


def test_decode_error_is_inline_and_names_the_payload(qtbot, preview, tmp_path):
    show(qtbot, preview, Payload(b"\xff\xd8 not really a jpeg", "jpg", "broken000.jpg"))
    assert not preview.error_label.isHidden()
    assert "broken000.jpg" in preview.error_label.text()
    assert preview.error
    assert preview.stack.currentWidget() is preview.hex_view  # the bytes are still there to look at
    preview.grab().save(str(tmp_path / "preview_error.png"))


def test_fast_selection_only_shows_the_last_payload(qtbot, preview):
    names = [f"train00000{i}.json" for i in range(5)]
    payloads = [member("train_0000.tar", n) for n in names]
    with qtbot.waitSignal(preview.previewReady, timeout=5000):
        for p in payloads:
            preview.show_payload(p)
    assert preview.payload is payloads[-1]
    assert preview.content.top_keys() == list(json.loads(payloads[-1].data))
    assert preview.title.text() == names[-1]


def test_stale_result_is_dropped(qtbot, preview):
    jpg = member("train_0000.tar", "train000000.jpg")
    show(qtbot, preview, jpg)
    cls = member("train_0000.tar", "train000000.cls")
    preview._on_decoded(preview._generation - 1, cls, None, "late")  # an older request finishing last
    assert preview.payload is jpg and not preview.error


def test_save_payload_as_writes_raw_bytes(qtbot, preview, tmp_path, monkeypatch):
    payload = member("train_0000.tar", "train000000.jpg")
    show(qtbot, preview, payload)
    target = tmp_path / "out.jpg"
    seen = {}

    def fake_dialog(parent, title, default):
        seen["default"] = default
        return str(target), ""

    monkeypatch.setattr("app.views.preview.QFileDialog.getSaveFileName", fake_dialog)
    preview.save_as()
    assert seen["default"] == "train000000.jpg"
    assert target.read_bytes() == payload.data


def test_clear_and_unavailable(qtbot, preview):
    show(qtbot, preview, member("train_0000.tar", "train000000.cls"))
    preview.show_payload(None)
    assert preview.payload is None and not preview.save_button.isEnabled()
    preview.show_unavailable("rows row 3", "Preview disabled: shard missing")
    assert preview.placeholder.text() == "Preview disabled: shard missing"


@pytest.mark.parametrize("name, expected", [
    ("train000000.jpg", "train000000.jpg"),
    ("a/b/c/../x.npy", "x.npy"),
    ("..\\..\\evil.txt", "evil.txt"),
    ('we:ird<na>me?.json', "we_ird_na_me_.json"),
    ("", "payload.bin"),
    ("..", "payload.bin"),
    ("CON.txt", "_CON.txt"),
])
def test_safe_file_name(name, expected):
    assert safe_file_name(name) == expected


def test_table_view_for_parquet(qtbot, preview):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    show(qtbot, preview, Payload(buf.getvalue(), "parquet", "t.parquet"))
    view = preview.content.table
    assert (view.rowCount(), view.columnCount()) == (3, 2)
    assert [view.horizontalHeaderItem(c).text() for c in range(2)] == ["id", "name"]
    assert view.item(2, 1).text() == "c"


def test_hex_dump_limit(qtbot):
    data = bytes(range(256)) * 600
    view = HexView()
    qtbot.addWidget(view)
    view.set_data(data)
    assert len(view.text().splitlines()) == 64 * 1024 // 16
    assert not view.note.isHidden()


def test_dark_palette_screenshot(qtbot, tmp_path):
    from PySide6.QtWidgets import QApplication

    from app.style import dark_palette

    app = QApplication.instance()
    old = app.palette()
    app.setPalette(dark_palette())
    try:
        w = PayloadPreview(debounce_ms=5)
        qtbot.addWidget(w)
        w.resize(640, 420)
        w.show()
        show(qtbot, w, Payload(b"\xff\xd8 not really a jpeg", "jpg", "broken000.jpg"))
        assert w.error_label.styleSheet() == "color: #ff7b72;"  # the light-on-dark red
        show(qtbot, w, member("train_0000.tar", "train000001.npy"))
        w.grab().save(str(tmp_path / "preview_npy_dark.png"))
        w.shutdown()
    finally:
        app.setPalette(old)
