"""The Build index wizard on a URL source (loopback moto S3): listed off the GUI thread, indexed to a local
folder or back to the store, byte for byte the reference indexes."""
from __future__ import annotations

import json
import shlex
import threading
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QWizard
from test_wizard import next_page, summary_items

from app.views.formats.taridx import wizard_source_page
from app.views.formats.taridx.wizard import OPTIONS, RUN, SUMMARY
from itarcore.formats.read_plan import REMOTE_JOBS

FOLDS = ["mixed", "train", "val"]


@pytest.fixture
def store(s3_server, webds: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(URL of the fixture folds in S3, the storage options as typed in the page); credentials from the
    environment, the fsspec way, so the page never shows them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.storage_options["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.storage_options["secret"])
    for p in webds.glob("*.taridx"):
        p.unlink()
    typed = "client_kwargs=" + shlex.quote(json.dumps(s3_server.storage_options["client_kwargs"]))
    return s3_server.upload(webds), typed


def reference(data_dir: Path, fold: str) -> bytes:
    return (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()


def list_url(qtbot, wizard, url: str, typed: str, monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """Set the URL and wait for its listing; returns the threads the listing ran on."""
    threads: list[threading.Thread] = []
    real = wizard_source_page.plan_url

    def recording(*args):
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(wizard_source_page, "plan_url", recording)
    page = wizard.source_page
    page.set_url(url, typed)
    assert page.total.text().startswith("Listing s3://")  # shown at once; the listing runs meanwhile
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    qtbot.waitUntil(lambda: bool(page.plan.folds) or not page.total.text().startswith("Listing"), timeout=30_000)
    return threads


def test_url_source_lists_off_the_gui_thread_then_indexes_locally(qtbot, wizard, store, data_dir: Path,
                                                                   tmp_path: Path, monkeypatch) -> None:
    url, typed = store
    threads = list_url(qtbot, wizard, url, typed, monkeypatch)
    assert threads and all(t is not threading.main_thread() for t in threads)
    page = wizard.source_page
    tree = page.tree
    assert [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())] == FOLDS
    train = tree.topLevelItem(1)
    assert [train.child(i).text(0) for i in range(train.childCount())] == [f"train_000{i}.tar" for i in range(3)]
    total = sum(p.stat().st_size for p in (data_dir / "taridx" / "webds").glob("*.tar"))
    assert "3 fold(s), 6 shard(s)" in page.total.text() and f"({total:,} bytes)" in page.total.text()
    wizard.grab().save(str(tmp_path / "wizard-url-source.png"))

    next_page(qtbot, wizard)
    options = wizard.options_page
    assert wizard.currentId() == OPTIONS and options.output.text() == url  # default: back beside the shards
    assert "uploaded to " + url in options.warnings.text()
    assert options.jobs.value() == REMOTE_JOBS > options.jobs.minimum()  # scans wait on the network, not a core
    options.output.setText(str(tmp_path))
    next_page(qtbot, wizard)
    run = wizard.run_page
    assert wizard.currentId() == RUN
    qtbot.waitUntil(lambda: run.state == "done", timeout=60_000)
    qtbot.waitUntil(lambda: run.worker is None)
    for fold in FOLDS:
        assert (tmp_path / f"{fold}.taridx").read_bytes() == reference(data_dir, fold), fold
    assert "fetched " in run.log.toPlainText() and "testing" not in run.log.toPlainText()
    next_page(qtbot, wizard)
    assert wizard.currentId() == SUMMARY
    items = summary_items(wizard.summary_page)
    assert items["Fetched"].text(1).startswith("160.0 KiB of 160.0 KiB (100.0%) in ")  # mixed: every byte
    assert "/s of shards indexed" in items["Throughput"].text(1)
    wizard.grab().save(str(tmp_path / "wizard-url-summary.png"))


def test_url_source_writes_the_index_back_to_the_store(qtbot, wizard, store, s3_server, data_dir: Path,
                                                       tmp_path: Path, monkeypatch) -> None:
    url, typed = store
    list_url(qtbot, wizard, url, typed, monkeypatch)
    next_page(qtbot, wizard)
    wizard.options_page.set_folds(["val"])
    wizard.grab().save(str(tmp_path / "wizard-url-options.png"))
    next_page(qtbot, wizard)
    run = wizard.run_page
    qtbot.waitUntil(lambda: run.state == "done", timeout=60_000)
    qtbot.waitUntil(lambda: run.worker is None)
    assert run.results[0].path == url + "/val.taridx"
    assert s3_server.fs().cat_file(url.removeprefix("s3://") + "/val.taridx") == reference(data_dir, "val")


def test_url_problems_are_shown_on_the_page(qtbot, wizard, store, monkeypatch) -> None:
    url, typed = store
    page = wizard.source_page
    list_url(qtbot, wizard, url + "/nothing-here", typed, monkeypatch)
    assert "no shards named <fold>_<suffix>.tar" in page.total.text()
    page.set_url(url, "not-key-value")
    assert page.total.text().startswith("Storage options:") and "KEY=VALUE" in page.total.text()
    page.set_url("/a/local/folder", "")
    assert "not a URL" in page.total.text()
    assert not page.plan.folds and not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
