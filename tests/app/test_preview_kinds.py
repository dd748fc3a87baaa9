"""Previews that do not mislead: tskit metadata as JSON, seg masks one colour per label, JSON strings quoted."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
from gui_helpers import show_payload

from app.views.preview_widgets import ArrayView, JsonTree
from app.views.preview_widgets.array import LABEL_PALETTE
from itarcore.document import Payload, open_document

TREES = Path(__file__).resolve().parents[1] / "data" / "kastore" / "example.trees"


def test_tskit_metadata_bytes_are_a_json_tree_not_a_line_plot(qtbot, preview, tmp_path):
    kastore = pytest.importorskip("kastore")
    truth = kastore.load(str(TREES))
    doc = open_document(str(TREES))
    try:
        items = doc.table("items")
        keys = [str(v) for v in items.column("key").values]
        # the tables' metadata schemas: JSON text stored in int8/uint8 arrays
        key = next(k for k in keys if k.endswith("metadata_schema") and len(truth[k]) > 2)
        show_payload(qtbot, preview, items.payload(keys.index(key)))
    finally:
        doc.close()
    expected = json.loads(truth[key].tobytes().decode("utf-8"))
    assert isinstance(preview.content, JsonTree), type(preview.content)
    assert preview.content.top_keys() == list(expected)
    preview.grab().save(str(tmp_path / "metadata_schema.png"))


def test_seg_mask_has_one_colour_per_label_and_black_background(qtbot, preview, tmp_path):
    mask = np.zeros((40, 60), np.uint8)
    mask[5:20, 5:25] = 1
    mask[20:35, 30:55] = 2
    mask[0:4, 50:60] = 23  # wraps around the palette
    buf = io.BytesIO()
    Image.fromarray(mask).save(buf, format="PNG")
    show_payload(qtbot, preview, Payload(buf.getvalue(), "seg8", "sample.seg8"))
    view = preview.content
    assert isinstance(view, ArrayView) and view.kind == "labels"
    assert "4 labels: 0, 1, 2, 23" in view.summary.text()
    image = view.image.qitem.qimage  # what is painted, pixel for pixel
    assert (image.width(), image.height()) == (60, 40)

    def colour_of(label: int) -> tuple[int, int, int]:
        y, x = np.argwhere(mask == label)[0]
        c = image.pixelColor(int(x), int(y))
        return c.red(), c.green(), c.blue()

    colours = {v: colour_of(v) for v in (0, 1, 2, 23)}
    assert colours[0] == (0, 0, 0)
    assert colours[1] == tuple(LABEL_PALETTE[0]) and colours[2] == tuple(LABEL_PALETTE[1])
    assert colours[23] == tuple(LABEL_PALETTE[(23 - 1) % len(LABEL_PALETTE)])
    assert len(set(colours.values())) == 4  # one colour per label
    assert np.array_equal(view.image.values, mask)  # the readout still gives the label ids
    preview.grab().save(str(tmp_path / "seg.png"))


def test_json_strings_are_shown_in_json_quotes(qtbot, preview):
    doc = {"caption": 'a "quoted" cat\non a mat', "path": "it's/here", "n": 3, "ok": True, "none": None}
    show_payload(qtbot, preview, Payload(json.dumps(doc).encode(), "json", "x.json"))
    tree = preview.content
    values = {tree.invisibleRootItem().child(i).text(0): tree.invisibleRootItem().child(i).text(1)
              for i in range(tree.invisibleRootItem().childCount())}
    assert values == {"caption": '"a \\"quoted\\" cat\\non a mat"', "path": '"it\'s/here"', "n": "3",
                      "ok": "true", "none": "null"}
