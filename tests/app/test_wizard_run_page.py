"""The wizard's run page: one Cancel, words at once instead of "Starting…", an existing index kept as a backup."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QWizard

from app.views.formats.taridx.wizard import OPTIONS, RUN, BuildIndexWizard
from itarcore.jobs import index_fold


@pytest.fixture
def shards(webds: Path) -> Path:
    for p in webds.glob("*.taridx"):
        p.unlink()
    return webds


@pytest.fixture
def wizard(qtbot) -> BuildIndexWizard:
    w = BuildIndexWizard()
    qtbot.addWidget(w)
    w.show()
    yield w
    w.run_page.stop_and_wait()


def next_page(qtbot, wizard: BuildIndexWizard) -> None:
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.NextButton), Qt.MouseButton.LeftButton)


def visible_cancels(wizard: BuildIndexWizard) -> list[QAbstractButton]:
    return [b for b in wizard.findChildren(QAbstractButton) if b.isVisible() and b.text().replace("&", "") == "Cancel"]


def test_an_existing_index_is_kept_as_a_backup_by_default(qtbot, wizard, shards: Path) -> None:
    old = b"an index the user had"
    (shards / "val.taridx").write_bytes(old)
    wizard.source_page.set_folder(shards)
    next_page(qtbot, wizard)
    assert wizard.currentId() == OPTIONS
    assert wizard.options_page.if_exists.currentData() == "backup"
    assert "val.taridx will be backed up" in wizard.options_page.warnings.text()
    wizard.options_page.set_folds(["val"])
    next_page(qtbot, wizard)
    qtbot.waitUntil(lambda: wizard.run_page.state == "done", timeout=30_000)
    backups = [p for p in shards.iterdir() if p.name.startswith("val") and p.read_bytes() == old]
    assert len(backups) == 1 and backups[0].name != "val.taridx"


def test_one_cancel_that_stops_the_run_and_words_at_once(qtbot, wizard, shards: Path) -> None:
    wizard.source_page.set_folder(shards)
    next_page(qtbot, wizard)
    wizard.options_page.set_folds(["train"])
    run = wizard.run_page
    reported, release = threading.Event(), threading.Event()
    first = []

    def hold(progress) -> None:  # the worker waits inside its first report until the test has looked
        first.append(progress)
        reported.set()
        release.wait(10)

    next_page(qtbot, wizard)
    assert wizard.currentId() == RUN
    # before the worker has said anything, the page already says what it is doing
    assert "Starting" not in run.rate.text()
    assert "Reading the tar headers of 3 shard(s)" in run.rate.text()
    assert run.shard_label.text() == "train_0000.tar and 2 more"
    run.worker.progressed.connect(hold, Qt.ConnectionType.DirectConnection)
    qtbot.waitUntil(reported.is_set)
    assert first[0].done < first[0].total and first[0].message  # words before the first shard is read
    cancels = visible_cancels(wizard)
    assert len(cancels) == 1 and cancels[0] is wizard.button(QWizard.WizardButton.CancelButton)
    qtbot.mouseClick(cancels[0], Qt.MouseButton.LeftButton)
    release.set()
    qtbot.waitUntil(lambda: run.state == "cancelled")
    assert wizard.isVisible()  # Cancel stopped the run; the wizard stays for Back
    assert list(shards.glob("*.taridx")) == []
    qtbot.mouseClick(cancels[0], Qt.MouseButton.LeftButton)  # now it closes the wizard
    assert not wizard.isVisible()


def test_the_index_job_names_its_first_shard_before_reading_it(shards: Path, tmp_path: Path) -> None:
    seen = []
    index_fold(sorted(shards.glob("train_*.tar")), tmp_path / "train.taridx", fold="train", progress=seen.append)
    assert seen[0].done == 0 and seen[0].current == "train_0000.tar" and "reading tar headers" in seen[0].message
    assert (tmp_path / "train.taridx").read_bytes() == (Path(__file__).parents[1] / "data" / "taridx" / "webds"
                                                        / "train.taridx").read_bytes()
