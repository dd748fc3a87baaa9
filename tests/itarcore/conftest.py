"""Fixtures shared by the core's tests: a generated 64-shard fold (see scale_fold.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scale_fold import write_fold


@pytest.fixture(scope="module")
def fold64_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fold64")
    write_fold(folder)
    return folder


@pytest.fixture
def fold64(fold64_master: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "fold64"
    shutil.copytree(fold64_master, folder)
    return folder
