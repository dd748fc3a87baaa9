"""Shared test setup: headless Qt, fixture paths, and a check that no test leaks threads."""
from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

# Set before anything imports Qt: tests never need a screen. Offscreen's default screen is 800×800;
# a 1920×1080 one is what the window's 1440×900 default size is meant for.
if "QT_QPA_PLATFORM" not in os.environ:
    from app.main import offscreen_with_screen

    os.environ["QT_QPA_PLATFORM"] = offscreen_with_screen(1920, 1080)

DATA = Path(__file__).parent / "data"
# bench/synthetic.py (synthetic indexes, page-cache eviction, the GUI stall meter) serves tests too
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


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


# -- remote storage: loopback S3 (moto) and HTTP range servers, started once per session ------------------
@pytest.fixture(scope="session")
def _s3_server_session():
    pytest.importorskip("moto.server", reason="the 'test' extra (moto[server]) runs the loopback S3 server")
    pytest.importorskip("s3fs", reason="the 'remote' extra (s3fs) reads S3")
    from remote_servers import S3Server

    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_server(_s3_server_session):
    """moto S3 on 127.0.0.1: ``.storage_options`` for s3fs, ``.upload(folder) -> s3://bucket/prefix``."""
    return _s3_server_session


@pytest.fixture(scope="session")
def _http_server_session(tmp_path_factory):
    pytest.importorskip("aiohttp", reason="the 'remote' extra (fsspec + aiohttp) reads HTTP")
    from remote_servers import RangeHTTPServer

    server = RangeHTTPServer(tmp_path_factory.mktemp("http-root"))
    yield server
    server.stop()


@pytest.fixture
def http_server(_http_server_session):
    """A Range-capable HTTP server on 127.0.0.1: ``.serve(folder) -> URL``; faults (``.ignores_range()``,
    ``.fails_n_times(503, n)``, ``.cuts_short()``, ``.slow(seconds)``) last until the test ends."""
    _http_server_session.reset()
    yield _http_server_session
    _http_server_session.reset()
