"""Shared test setup: headless Qt, fixture paths, and a check that no test leaks threads."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

# Set before anything imports Qt: tests never need a screen.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def webds(tmp_path: Path) -> Path:
    """A writable copy of the webdataset fixture folder (shards + reference indexes)."""
    dst = tmp_path / "webds"
    shutil.copytree(DATA / "taridx" / "webds", dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets an empty itarcore cache (key indexes), never the user's."""
    folder = tmp_path_factory.mktemp("itarcore-cache")
    monkeypatch.setenv("ITARCORE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _no_leaked_threads():
    """Fail any test that leaves a Python thread or Qt pool task running (as napari does)."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    for t in leaked:
        t.join(timeout=5)
    still = [t.name for t in leaked if t.is_alive()]
    assert not still, f"test leaked running threads: {still}"
    try:
        from PySide6.QtCore import QThreadPool
    except ImportError:
        return
    import sys

    if "PySide6.QtWidgets" in sys.modules:
        pool = QThreadPool.globalInstance()
        assert pool.waitForDone(10_000), "test left QThreadPool tasks running"


@pytest.fixture(params=["compiled", "numpy"])
def scan_route(request, monkeypatch) -> str:
    """Run a test once per fast route: compiled kernels (the ``fast`` extra) and pure numpy."""
    from itarcore.indexing import jit

    if request.param == "compiled" and not jit.available():
        pytest.skip("numba is not installed (the 'fast' extra), so there are no compiled kernels")
    monkeypatch.setenv("ITARCORE_JIT", "0" if request.param == "numpy" else "1")
    return request.param
