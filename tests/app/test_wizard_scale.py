"""The Build index wizard's executor choice and its shard-table counts (reused from the cache / scanned)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from gui_helpers import click
from PySide6.QtWidgets import QWizard

from app.views.formats.taridx.wizard import OPTIONS, RUN, SUMMARY

FOLDS = ["mixed", "train", "val"]


def test_options_page_spells_each_executor(qtbot, wizard) -> None:
    options = wizard.options_page
    assert options.executor_spec() == "threads" and not options.dask_address.isEnabled()
    options.set_executor("processes")
    options.jobs.setValue(2)
    assert options.executor_spec() == "processes:2" and options.jobs.isEnabled()
    options.set_executor("dask")
    assert options.executor_spec() == "dask" and options.dask_address.isEnabled() and not options.jobs.isEnabled()
    options.dask_address.setText(" tcp://127.0.0.1:8786 ")
    assert options.executor_spec() == "dask:tcp://127.0.0.1:8786"


def test_processes_then_a_rerun_that_reuses_every_shard(qtbot, wizard, webds: Path, data_dir: Path,
                                                         tmp_path: Path) -> None:
    for p in webds.glob("*.taridx"):
        p.unlink()
    wizard.source_page.set_folder(webds)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    assert wizard.currentId() == OPTIONS
    wizard.options_page.set_executor("processes")
    wizard.options_page.jobs.setValue(2)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    run = wizard.run_page
    qtbot.waitUntil(lambda: run.state == "done", timeout=60_000)
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    assert run.tables_label.text() == "0 reused from the cache, 6 scanned"
    assert "executor processes:2" in run.log.toPlainText()
    assert "train: 738 rows, 186 stems" in run.log.toPlainText() and "shards 0 reused, 3 scanned" in run.log.toPlainText()

    qtbot.waitUntil(lambda: run.worker is None)
    click(qtbot, wizard.button(QWizard.WizardButton.BackButton))
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))  # the same run again: every table is cached now
    assert wizard.currentId() == RUN
    qtbot.waitUntil(lambda: run.state == "done", timeout=60_000)
    assert run.tables_label.text() == "6 reused from the cache, 0 scanned"
    assert "shards 3 reused, 0 scanned" in run.log.toPlainText()
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    run.grab().save(str(tmp_path / "run_reused.png"))

    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    assert wizard.currentId() == SUMMARY
    summary = wizard.summary_page
    summary.fold_choice.setCurrentIndex(FOLDS.index("train"))
    items = {summary.tree.topLevelItem(i).text(0): summary.tree.topLevelItem(i).text(1)
             for i in range(summary.tree.topLevelItemCount())}
    assert items["Shard tables"] == "3 reused from the cache, 0 scanned"


def test_without_the_cache_every_shard_is_scanned(qtbot, wizard, webds: Path) -> None:
    wizard.source_page.set_folder(webds)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    wizard.options_page.set_folds(["val"])
    run = wizard.run_page
    for _ in range(2):
        wizard.options_page.use_cache.setChecked(False)
        click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
        qtbot.waitUntil(lambda: run.state == "done", timeout=30_000)
        assert run.tables_label.text() == "0 reused from the cache, 1 scanned"
        assert "no cache" in run.log.toPlainText()
        qtbot.waitUntil(lambda: run.worker is None)
        click(qtbot, wizard.button(QWizard.WizardButton.BackButton))
