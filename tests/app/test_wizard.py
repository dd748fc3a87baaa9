"""The Build index wizard, driven page by page with pytest-qt on copies of the fixture shards."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from gui_helpers import click
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWizard

from app.views.formats.taridx.wizard import OPTIONS, RUN, SOURCE, SUMMARY, BuildIndexWizard

FOLDS = ["mixed", "train", "val"]


@pytest.fixture
def shards(webds: Path) -> Path:
    for p in webds.glob("*.taridx"):
        p.unlink()
    (webds / "notes.txt").write_text("not a shard")
    (webds / "broken_0000.tar").write_bytes(b"\x01" * 2048)
    return webds


def next_page(qtbot, wizard: BuildIndexWizard) -> None:
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))


def summary_items(summary) -> dict:
    return {summary.tree.topLevelItem(i).text(0): summary.tree.topLevelItem(i)
            for i in range(summary.tree.topLevelItemCount())}


def test_source_and_options_pages_show_what_was_found(qtbot, wizard, shards: Path) -> None:
    assert wizard.currentId() == SOURCE
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    wizard.source_page.set_folder(shards)
    tree = wizard.source_page.tree
    folds = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert folds == ["broken", *FOLDS]
    train = tree.topLevelItem(2)
    assert [train.child(i).text(0) for i in range(train.childCount())] == [f"train_000{i}.tar" for i in range(3)]
    total = sum(p.stat().st_size for p in shards.glob("*.tar"))
    assert "4 fold(s), 7 shard(s)" in wizard.source_page.total.text()
    assert f"({total:,} bytes)" in wizard.source_page.total.text()
    assert "bad checksum" in tree.topLevelItem(0).child(0).text(0)

    next_page(qtbot, wizard)
    page = wizard.options_page
    assert wizard.currentId() == OPTIONS
    assert page.chosen_folds() == ["broken", *FOLDS] and page.output.text() == str(shards)
    text = page.warnings.text()
    assert "broken_0000.tar: does not start with a valid tar header" in text and "notes.txt" in text
    (shards / "val.taridx").write_bytes(b"old")
    page.set_folds(["val"])
    page.set_if_exists("stop")
    assert "val.taridx exist: choose replace or backup" in page.warnings.text()
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    page.set_if_exists("backup")
    assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    page.set_folds([])
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def test_single_tar_source(qtbot, wizard, shards: Path) -> None:
    wizard.source_page.set_files([shards / "val_0000.tar"], single=True)
    assert wizard.source_page.plan.folds == {"val": [shards / "val_0000.tar"]}
    wizard.source_page.set_files([shards / "train_0001.tar", shards / "train_0000.tar", shards / "notes.txt"])
    assert wizard.source_page.plan.folds == {"train": [shards / "train_0000.tar", shards / "train_0001.tar"]}
    assert wizard.source_page.plan.non_tar == [shards / "notes.txt"]


def test_cancel_midway_then_run_to_the_end(qtbot, wizard, shards: Path, data_dir: Path, tmp_path: Path) -> None:
    wizard.source_page.set_folder(shards)
    next_page(qtbot, wizard)
    wizard.options_page.set_folds(FOLDS)
    next_page(qtbot, wizard)
    run = wizard.run_page
    assert wizard.currentId() == RUN and run.worker is not None

    # The worker pauses inside its first progress report until the user has clicked Cancel:
    # "midway" is then exact, and the GUI answering the click proves it stays responsive.
    reported, release = threading.Event(), threading.Event()

    def hold(_progress) -> None:
        reported.set()
        release.wait(10)

    run.worker.progressed.connect(hold, Qt.ConnectionType.DirectConnection)
    qtbot.waitUntil(reported.is_set)
    click(qtbot, run.cancel_button)
    release.set()
    qtbot.waitUntil(lambda: run.state == "cancelled")
    assert list(shards.glob("*.taridx")) == [] and list(shards.glob(".*.tmp-*")) == []
    assert "Cancelled" in run.log.toPlainText()
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()

    click(qtbot, wizard.button(QWizard.WizardButton.BackButton))
    assert wizard.currentId() == OPTIONS
    wizard.options_page.jobs.setValue(2)  # shards scanned two at a time: same bytes
    next_page(qtbot, wizard)
    qtbot.waitUntil(lambda: run.state == "done", timeout=30_000)
    qtbot.waitUntil(lambda: run.worker is None)
    for fold in FOLDS:
        built = (shards / f"{fold}.taridx").read_bytes()
        assert built == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    assert run.overall.value() == run.overall.maximum() and run.shard_bar.value() == 6
    assert "train: 738 rows, 186 stems" in run.log.toPlainText()
    run.grab().save(str(tmp_path / "run.png"))

    next_page(qtbot, wizard)
    summary = wizard.summary_page
    assert wizard.currentId() == SUMMARY
    summary.fold_choice.setCurrentIndex(FOLDS.index("train"))
    items = summary_items(summary)
    assert items["Rows"].text(1) == "738" and items["Stems"].text(1) == "186"
    exts = items["Extensions"]
    counts = {exts.child(i).text(0): exts.child(i).text(1) for i in range(exts.childCount())}
    assert counts[".jpg"] == "184 rows" and counts["(none)"] == "1 rows"
    crash = items["Crash stems"]
    assert [crash.child(i).text(0) for i in range(crash.childCount())] == ["'#$w{lSfF'", "'!DoxIo#m'"]
    assert items["Contiguity"].text(1).startswith("each sample")
    summary.fold_choice.setCurrentIndex(FOLDS.index("mixed"))
    assert "not contiguous" in summary_items(summary)["Contiguity"].text(1)

    with qtbot.waitSignal(wizard.auditRequested) as audit:
        click(qtbot, summary.audit_button)
    assert audit.args == [str(shards / "mixed.taridx")]


def test_open_in_browser_emits_path_and_failure_is_logged(qtbot, wizard, shards: Path) -> None:
    wizard.source_page.set_folder(shards)
    next_page(qtbot, wizard)
    wizard.options_page.set_folds(["broken"])
    next_page(qtbot, wizard)
    qtbot.waitUntil(lambda: wizard.run_page.state == "failed", timeout=30_000)
    assert "Failed" in wizard.run_page.log.toPlainText() and not (shards / "broken.taridx").exists()
    click(qtbot, wizard.button(QWizard.WizardButton.BackButton))
    wizard.options_page.set_folds(["val"])
    next_page(qtbot, wizard)
    qtbot.waitUntil(lambda: wizard.run_page.state == "done", timeout=30_000)
    next_page(qtbot, wizard)
    with qtbot.waitSignal(wizard.indexBuilt) as built:
        click(qtbot, wizard.summary_page.open_button)
    assert built.args == [str(shards / "val.taridx")]
