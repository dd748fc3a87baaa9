"""Duplicates view: planted duplicates within train and a train/val leak are listed, and nothing else."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import Qt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "itarcore"))
from content_folds import jpeg, write_fold
from gui_helpers import taridx_panel

from app.views.formats.taridx.dedup_panel import DuplicatesPanel


def sample(stem: str, picture: bytes, caption: str) -> list[tuple[str, bytes]]:
    return [(f"{stem}.jpg", picture), (f"{stem}.cls", b"1"), (f"{stem}.txt", caption.encode())]


@pytest.fixture
def folds(tmp_path):
    pics = [jpeg(32, 24, seed) for seed in range(1, 9)]
    train = [sample(f"t{i}", pics[i], f"caption {i}") for i in range(6)]
    train[4] = sample("t4", pics[1], "caption 4")  # t1 and t4: the same picture (within train)
    val = [sample("v0", pics[3], "caption val 0"), sample("v1", pics[7], "caption 1")]  # v0 = t3's picture: leak
    def flat(samples):
        return [m for s in samples for m in s]

    train_index = write_fold(tmp_path, "train", [flat(train[:3]), flat(train[3:])])
    val_index = write_fold(tmp_path, "val", [flat(val)])
    return train_index, val_index


@pytest.fixture
def panel(qtbot, folds):
    with taridx_panel(qtbot, DuplicatesPanel, folds[0], (900, 600)) as w:
        yield w


def groups_shown(panel) -> dict[tuple[str, str], set[str]]:
    out = {}
    for i in range(panel.tree.topLevelItemCount()):
        item = panel.tree.topLevelItem(i)
        stems = {item.child(c).text(4).split()[0] for c in range(item.childCount())}
        out[(item.text(0).split(" · ")[0], item.text(1))] = stems
    return out


def test_planted_duplicates_and_the_leak_are_listed_and_nothing_else(qtbot, panel, folds):
    panel.add_other(folds[1])
    panel.add_other(folds[0])  # the fold itself is never added twice
    assert panel.other_paths() == [str(folds[1])]
    panel.start()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    assert groups_shown(panel) == {("leak", "jpg"): {"t3", "v0"}, ("leak", "txt"): {"t1", "v1"},
                                   ("duplicate", "jpg"): {"t1", "t4"}}
    assert "3 group(s)" in panel.summary.text() and "2 leak(s)" in panel.summary.text()
    # clicking the within-train group selects both members' rows of this fold
    asked = []
    panel.selectRows.connect(lambda name, rows: asked.append((name, rows)))
    item = next(panel.tree.topLevelItem(i) for i in range(panel.tree.topLevelItemCount())
                if panel.tree.topLevelItem(i).text(0).startswith("duplicate"))
    rect = panel.tree.visualItemRect(item)
    qtbot.mouseClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    name, rows = asked[-1]
    assert name == "rows"
    assert sorted(panel.dataset.member_names(np.asarray(rows))) == ["t1.jpg", "t4.jpg"]
    # a member of the other fold is named, not selected
    messages = []
    panel.statusMessage.connect(messages.append)
    leak = next(panel.tree.topLevelItem(i) for i in range(panel.tree.topLevelItemCount())
                if panel.tree.topLevelItem(i).text(1) == "jpg" and panel.tree.topLevelItem(i).text(0).startswith("leak"))
    val_member = next(leak.child(c) for c in range(leak.childCount()) if leak.child(c).text(0).startswith("val"))
    panel._on_clicked(val_member)
    assert messages[-1].startswith("in val: row") and "v0" in messages[-1]


def test_without_other_folds_only_within_fold_duplicates(qtbot, panel):
    panel.start()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=60_000)
    assert groups_shown(panel) == {("duplicate", "jpg"): {"t1", "t4"}}
