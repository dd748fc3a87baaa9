"""Gallery items (pure numpy) against a plain-Python walk of the rows: representatives, labels, marks."""
from __future__ import annotations

import numpy as np
import pytest

from app.models.gallery_items import AUTO, gallery_rows, marked_items, member_rows

EXTS = ["json", "jpg", "cls", "png", "txt"]  # image extensions: jpg, png
ROW_DT = np.dtype([("extid", "<u2"), ("crashid", "<u4"), ("keyhash", "<u8")])


def random_rows(seed: int, n: int = 3000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = np.zeros(n, ROW_DT)
    rows["keyhash"] = rng.integers(0, 400, n)  # ~400 samples, members scattered
    rows["crashid"] = rng.integers(0, 2, n) * (rows["keyhash"] % 7 == 0)  # a few colliding stems
    rows["extid"] = rng.integers(0, len(EXTS), n)
    return rows


def walk(rows: np.ndarray, view: list[int], ext: str) -> list[int]:
    """One item per sample in order of first appearance in the view: its first image (or ``ext``) member."""
    order, chosen, records = [], {}, rows.tolist()
    for r in view:
        extid, crashid, keyhash = records[r]
        key, e = (keyhash, crashid), EXTS[extid]
        good = e in ("jpg", "png") if ext == AUTO else e == ext
        if ext != AUTO and not good:
            continue
        if key not in chosen:
            order.append(key)
            chosen[key] = (r, good)
        elif good and not chosen[key][1]:
            chosen[key] = (r, good)
    return [chosen[k][0] for k in order]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("ext", [AUTO, "png", "txt"])
def test_items_follow_the_views_order_and_pick_the_first_image(seed, ext):
    rows = random_rows(seed)
    rng = np.random.default_rng(seed + 10)
    for view in (None, rng.permutation(len(rows))[:2000], np.argsort(rng.random(len(rows)))):
        order = list(range(len(rows))) if view is None else view.tolist()
        assert gallery_rows(rows, EXTS, view, ext).tolist() == walk(rows, order, ext)


def test_label_members_and_marks_per_sample():
    rows = random_rows(7)
    items = gallery_rows(rows, EXTS, None, AUTO)
    labels = member_rows(rows, items, EXTS.index("cls"))
    cls_rows: dict[tuple[int, int], list[int]] = {}
    for r, rec in enumerate(rows.tolist()):
        if EXTS[rec[0]] == "cls":
            cls_rows.setdefault((rec[2], rec[1]), []).append(r)
    for item, label in zip(items.tolist(), labels.tolist()):
        same = cls_rows.get((int(rows[item]["keyhash"]), int(rows[item]["crashid"])), [])
        assert (label in same) if same else label == -1
    flagged = np.array([5, 17, 900])
    keys = {(int(rows[r]["keyhash"]), int(rows[r]["crashid"])) for r in flagged}
    marks = marked_items(rows, items, flagged)
    assert marks.tolist() == [(int(rows[i]["keyhash"]), int(rows[i]["crashid"])) in keys for i in items.tolist()]
    assert marks.sum() == len(keys)
