"""The console script's start-up runs without the cyclic collector; every command runs with it.

Truth: ``gc.isenabled`` and ``gc.get_freeze_count`` seen from inside the command, and the command's output.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from itarcore.cli import main, resume_gc


@pytest.fixture
def collector_off() -> Iterator[None]:
    """As the console script starts (entry_point); the test process's collector is restored after."""
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()


def test_resume_gc_enables_the_collector_and_freezes_start_up(collector_off: None) -> None:
    frozen = gc.get_freeze_count()
    resume_gc()
    assert gc.isenabled() and gc.get_freeze_count() > frozen


def test_resume_gc_is_a_no_op_when_the_collector_runs() -> None:
    frozen = gc.get_freeze_count()
    resume_gc()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def collector_state_at(monkeypatch: pytest.MonkeyPatch, module, name: str) -> list[bool]:
    """Whether the collector is on at each call of ``module.name``, as the calls happen."""
    seen: list[bool] = []
    real = getattr(module, name)

    def watching(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, watching)
    return seen


def test_index_runs_with_the_collector_after_its_imports(collector_off: None, webds: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore import jobs

    seen = collector_state_at(monkeypatch, jobs, "index_folds")
    out = tmp_path / "t.taridx"
    assert main(["index", str(webds), "--fold", "train", "--output", str(out), "--no-cache"]) == 0
    assert seen == [True]
    assert out.read_bytes() == (webds / "train.taridx").read_bytes()


def test_other_commands_run_with_the_collector(collector_off: None, webds: Path,
                                               monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from itarcore.cli import taridx

    seen = collector_state_at(monkeypatch, taridx, "info")
    assert main(["info", str(webds / "train.taridx"), "--json"]) == 0
    assert seen == [True] and json.loads(capsys.readouterr().out)["format"] == "taridx"


def test_console_script_indexes_as_main_does(webds: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.taridx"
    done = subprocess.run([sys.executable, "-m", "itarcore", "index", str(webds), "--fold", "val", "--output",
                           str(out), "--no-cache", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["rows"] > 0 and done.stderr == ""
    assert out.read_bytes() == (webds / "val.taridx").read_bytes()


@pytest.mark.parametrize("preset", [None, "3"])
def test_console_script_starts_numpy_without_blas_threads_unless_told(collector_off: None, preset: str | None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from itarcore import cli

    if preset is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", preset)
    seen = []
    monkeypatch.setattr(cli, "main", lambda: seen.append((os.environ.get("OPENBLAS_NUM_THREADS"), gc.isenabled())) or 0)
    with pytest.raises(SystemExit) as stop:
        cli.entry_point()
    assert stop.value.code == 0
    assert seen == [(preset or "1", False)]  # set before any command module (numpy) is imported
