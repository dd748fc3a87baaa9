"""Samples panel on the train fixture: stem search (crash stems too), navigation, member cards."""
from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from app.views.formats.taridx.samples_panel import SamplesPanel
from itarcore.dataset import Dataset
from itarcore.document import Document

DATA = Path(__file__).parents[1] / "data" / "taridx"
INDEX = DATA / "webds" / "train.taridx"
PAIRS = [tuple(line.split("\t")) for line in (DATA / "collisions.txt").read_text().splitlines()
         if line and not line.startswith("#")]


def tar_names_by_offset() -> dict[int, dict[int, str]]:
    out = {}
    for fid in range(3):
        with tarfile.open(DATA / "webds" / f"train_{fid:04d}.tar") as tar:
            out[fid] = {m.offset: m.name for m in tar.getmembers()}
    return out


@pytest.fixture
def panel(qtbot):
    dataset = Dataset.open(INDEX)
    doc = Document(str(INDEX), "taridx", "TARIDX", [], [], source=dataset)
    w = SamplesPanel(doc)
    qtbot.addWidget(w)
    w.resize(1000, 420)
    with qtbot.waitSignal(w.sampleShown, timeout=5000):
        w.show()
    yield w
    w.shutdown()
    dataset.close()


def test_grouping_starts_only_when_the_panel_is_shown(qtbot):
    dataset = Dataset.open(INDEX)
    w = SamplesPanel(Document(str(INDEX), "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(w)
    assert w._worker is None and w.groups is None  # nothing runs for a panel nobody looks at
    with qtbot.waitSignal(w.samplesReady, timeout=5000):
        w.show()
    keys = set(zip(dataset.rows["keyhash"].tolist(), dataset.rows["crashid"].tolist()))
    assert w.groups.n_samples == len(keys)
    w.shutdown()
    dataset.close()


def stems_of_current(panel) -> set[str]:
    names = tar_names_by_offset()
    rows = panel.dataset.index.rows[panel.groups.rows_of(panel.current)]
    return {names[int(r["fid"])][int(r["offset"])].split(".", 1)[0] for r in rows}


@pytest.mark.parametrize("stem", [s for pair in PAIRS for s in pair])
def test_search_collision_stems_lands_on_their_sample(qtbot, panel, stem):
    with qtbot.waitSignal(panel.sampleShown, timeout=5000):
        panel.search.setText(stem)
        qtbot.keyClick(panel.search, Qt.Key.Key_Return)
    assert stems_of_current(panel) == {stem}
    assert [c.member.name.split(".", 1)[0] for c in panel.cards.cards] == [stem] * len(panel.cards.cards)
    assert stem in panel.cards.header.text()


def test_crash_stem_sample_has_crash_id_and_shares_the_hash(qtbot, panel, tmp_path):
    canonical, crash = PAIRS[0]
    a = panel.find(canonical)
    with qtbot.waitSignal(panel.sampleShown, timeout=5000):
        b = panel.find(crash)
    assert a != b
    assert panel.groups.keyhash[a] == panel.groups.keyhash[b]
    assert (int(panel.groups.crashid[a]), int(panel.groups.crashid[b])) == (0, 1)
    panel.grab().save(str(tmp_path / "samples_crash.png"))


def test_cards_show_every_member_decoded(qtbot, panel, tmp_path):
    names = tar_names_by_offset()
    rows = panel.groups.rows_of(panel.current)
    expected = [names[int(r["fid"])][int(r["offset"])] for r in panel.dataset.index.rows[rows]]
    assert [c.member.name for c in panel.cards.cards] == expected
    assert all(not c.member.error for c in panel.cards.cards)
    kinds = {c.member.ext: c.member.decoded.kind for c in panel.cards.cards}
    assert kinds["cls"] == "label" and kinds["json"] == "json" and kinds["jpg"] == "image"
    panel.grab().save(str(tmp_path / "samples_first.png"))


def test_keyboard_and_buttons_step_through_samples(qtbot, panel):
    assert panel.current == 0
    with qtbot.waitSignal(panel.selectRows, timeout=2000) as sig:
        qtbot.keyClick(panel.list, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert panel.current == 1
    table, rows = sig.args
    assert table == "rows"
    np.testing.assert_array_equal(rows, panel.groups.rows_of(1))
    qtbot.keyClick(panel.list, Qt.Key.Key_N)
    assert panel.current == 2
    qtbot.mouseClick(panel.prev_button, Qt.MouseButton.LeftButton)
    qtbot.keyClick(panel.list, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert panel.current == 0
    qtbot.keyClick(panel.list, Qt.Key.Key_P)
    assert panel.current == 0  # stays on the first sample
    assert panel.list.currentIndex().row() == 0


def test_follows_the_grids_row(qtbot, panel):
    names = tar_names_by_offset()
    row = 250  # first row of shard 1
    r = panel.dataset.index.rows[row]
    stem = names[int(r["fid"])][int(r["offset"])].split(".", 1)[0]
    with qtbot.assertNotEmitted(panel.selectRows):
        panel.on_row_selected("rows", row)
    assert row in panel.groups.rows_of(panel.current).tolist()
    assert stems_of_current(panel) == {stem}
    current = panel.current
    panel.on_row_selected("extensions", 1)  # other tables are not rows of samples
    assert panel.current == current


def test_prefix_search_among_listed_names(qtbot, panel):
    panel.model.resolve(range(panel.model.n_samples))
    sample = panel.find("train00013")
    assert panel.model.stem(sample) == "train000130"
    assert panel.find("train00013") == sample + 1  # Enter again walks to the next match
    assert panel.find("no-such-stem") == -1


def test_card_click_selects_that_row(qtbot, panel):
    card = panel.cards.cards[1]
    with qtbot.waitSignal(panel.selectRows, timeout=2000) as sig:
        qtbot.mouseClick(card.title, Qt.MouseButton.LeftButton)
    assert sig.args[0] == "rows" and sig.args[1].tolist() == [card.member.row]


def test_missing_shard_shows_errors_not_crash(qtbot, webds, tmp_path):
    (webds / "train_0001.tar").unlink()
    dataset = Dataset.open(webds / "train.taridx")
    w = SamplesPanel(Document(str(webds / "train.taridx"), "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.sampleShown, timeout=5000):
        w.show()
    assert "1 shard(s) missing" in w.message.text()
    with qtbot.waitSignal(w.sampleShown, timeout=5000):
        w.on_row_selected("rows", 250)
    assert w.cards.cards and all(c.member.error for c in w.cards.cards)
    assert "train_0001.tar" in w.cards.cards[0].member.error
    w.grab().save(str(tmp_path / "samples_missing.png"))
    w.shutdown()
    dataset.close()


def test_a_cold_local_folds_names_and_members_are_read_by_workers(qtbot, monkeypatch, tmp_path):
    """Pages not in RAM (forced here; the answer is checked against the kernel in test_residency.py):
    the list says "…" and the cards "loading…" while workers read; the GUI thread reads no name."""
    from off_gui_thread import OffGuiThread, event_loop_answers

    from itarcore import dataset as dataset_module

    monkeypatch.setattr(dataset_module, "mapping_range_resident", lambda *a: False)
    spy = OffGuiThread(monkeypatch)
    spy.watch_method(Dataset, "stem_names", hold=True)
    spy.watch_method(Dataset, "member_names", hold=True)
    dataset = Dataset.open(INDEX)
    w = SamplesPanel(Document(str(INDEX), "taridx", "TARIDX", [], [], source=dataset))
    qtbot.addWidget(w)
    w.resize(1000, 420)
    try:
        with qtbot.waitSignal(w.samplesReady, timeout=10_000):
            w.show()
        w.list.viewport().repaint()  # the list asks for its visible names
        spy.wait_held(qtbot)
        assert w.model.data(w.model.index(0)).endswith("…")
        assert w.cards.header.text().endswith("loading…")
        assert event_loop_answers(qtbot)
        with qtbot.waitSignal(w.sampleShown, timeout=10_000):
            spy.release()
        qtbot.waitUntil(lambda: 0 in w.model.names, timeout=10_000)
        spy.assert_none_on_gui_thread()
        names = tar_names_by_offset()
        rows = w.groups.rows_of(0)
        expected = [names[int(r["fid"])][int(r["offset"])] for r in dataset.index.rows[rows]]
        assert [c.member.name for c in w.cards.cards] == expected
        stem = expected[0].rsplit("/", 1)[-1].partition(".")[0]
        assert w.model.names[0] == stem and w.cards.header.text().startswith(f"<b>{stem}</b>")
        assert w.model.data(w.model.index(0)) == f"0  {w.model.names[0]}"
        w.grab().save(str(tmp_path / "samples_cold.png"))
    finally:
        spy.release()
        w.shutdown()
        dataset.close()


def test_a_stem_search_without_a_key_index_scans_in_a_worker(qtbot, panel, monkeypatch):
    """Without the key index a lookup scans every row's key (seconds at 1B rows): never on the GUI thread."""
    from off_gui_thread import OffGuiThread, event_loop_answers

    from app.views.formats.taridx import samples_panel

    stem = PAIRS[0][1]
    monkeypatch.setattr(samples_panel, "SYNC_SCAN_ROWS", panel.dataset.n_rows - 1)  # a fold "too large" to scan here
    spy = OffGuiThread(monkeypatch)
    spy.watch_method(Dataset, "scan_key", hold=True)
    try:
        panel.dataset.key_index = None  # as while it builds, or where none could be written
        assert panel.find(stem) == -1  # the answer follows in sampleFound
        spy.wait_held(qtbot)
        assert event_loop_answers(qtbot)
        with qtbot.waitSignal(panel.sampleFound, timeout=10_000) as found:
            spy.release()
        spy.assert_none_on_gui_thread()
        assert found.args[0] == panel.current >= 0
        assert stems_of_current(panel) == {stem}
    finally:
        spy.release()


def test_an_older_stem_searchs_late_answer_does_not_move_the_panel(qtbot, panel, monkeypatch):
    """Search A (slow), then B: B's sample stays even when A's answer arrives last."""
    import threading

    from app.views.formats.taridx import samples_panel

    first_stem, second_stem = PAIRS[0][0], PAIRS[1][0]
    monkeypatch.setattr(samples_panel, "SYNC_SCAN_ROWS", panel.dataset.n_rows - 1)
    panel.dataset.key_index = None
    gates = {first_stem: threading.Event(), second_stem: threading.Event()}
    real_lookup = samples_panel._lookup

    def gated_lookup(dataset, query):
        assert gates[query].wait(60)
        return real_lookup(dataset, query)

    monkeypatch.setattr(samples_panel, "_lookup", gated_lookup)
    answered: list[str] = []
    real_answered = SamplesPanel._lookup_answered
    monkeypatch.setattr(SamplesPanel, "_lookup_answered",
                        lambda self, answer: (answered.append(answer[0]), real_answered(self, answer)))
    assert panel.find(first_stem) == -1 and panel.find(second_stem) == -1
    with qtbot.waitSignal(panel.sampleFound, timeout=10_000):
        gates[second_stem].set()
    assert stems_of_current(panel) == {second_stem}
    gates[first_stem].set()
    qtbot.waitUntil(lambda: answered == [second_stem, first_stem], timeout=10_000)
    assert stems_of_current(panel) == {second_stem}
