"""The Dask executor: one LocalCluster (2 worker processes, 1 thread each, loopback) shared by the module."""
from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

import scale_fold
from scale_fold import wait_for_gate

from itarcore.cli import main
from itarcore.errors import Cancelled
from itarcore.executors import DaskRunner
from itarcore.indexing import build
from itarcore.indexing.cache import ShardCache
from itarcore.jobs import index_fold, index_folds
from itarcore.progress import CancelToken

FOLDS = ("mixed", "train", "val")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as local:
        yield local


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        c.submit(os.getpid, pure=False).result()  # the client's own threads exist before any test starts
        yield c


@pytest.fixture
def runner(client) -> DaskRunner:
    return DaskRunner(client)  # borrows the module's client: closes nothing


def threads_bytes(shards: list[Path], tmp_path: Path) -> bytes:
    """The reference: the default threads executor, no cache."""
    out = tmp_path / "threads" / "ref.taridx"
    out.parent.mkdir(exist_ok=True)
    index_fold(shards, out, jobs=2)
    return out.read_bytes()


def test_dask_gives_the_bytes_of_threads_on_the_fixture_folds(webds: Path, data_dir: Path, runner) -> None:
    for p in webds.glob("*.taridx"):
        p.unlink()
    results = index_folds(webds, executor=runner)
    assert [r.counts.scanned for r in results] == [2, 3, 1]
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()


def test_dask_gives_the_bytes_of_threads_on_64_shards(fold64: Path, tmp_path: Path, runner) -> None:
    seen = []
    (result,) = index_folds(fold64, executor=runner, cache=ShardCache(tmp_path / "cache"), progress=seen.append)
    assert result.counts.scanned == 64
    shards = sorted(fold64.glob("big_*.tar"))
    assert (fold64 / "big.taridx").read_bytes() == threads_bytes(shards, tmp_path)
    done = [p.done for p in seen]
    assert done == sorted(done) and done[-1] == sum(p.stat().st_size for p in shards)
    # before any byte counts, only announcements (what is being done: cache checks, the first shard to read)
    first = next(i for i, d in enumerate(done) if d > 0)
    assert all(p.message for p in seen[:first])
    assert 0 < done[first] < done[-1]  # the first counted report came with the first finished shard, not at the end
    assert seen[-1].message == "0 reused, 64 scanned"


def test_a_worker_killed_mid_task_is_replaced_and_the_bytes_are_the_same(fold64: Path, tmp_path: Path, runner,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "attempts"
    markers.mkdir()
    victim = "big_0009.tar"
    monkeypatch.setattr(build, "scan_shard", functools.partial(scale_fold.scan_or_die, str(markers), victim))
    (result,) = index_folds(fold64, executor=runner)
    attempts = sorted(markers.iterdir())
    assert [p.name for p in attempts] == ["attempt-1", "attempt-2"]
    assert attempts[0].read_text() != attempts[1].read_text()  # the retry ran in another worker process
    assert result.counts.scanned == 64 and result.counts.failed == 0
    assert (fold64 / "big.taridx").read_bytes() == threads_bytes(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_cancel_cancels_the_pending_futures(runner, tmp_path: Path) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    started.mkdir()
    token = CancelToken()
    results = runner.run(wait_for_gate, [(str(gate), str(started), n) for n in range(40)], token)
    try:
        scale_fold.wait_until(lambda: len(list(started.iterdir())) == 2)  # both workers busy; 38 tasks wait
        token.cancel()
        with pytest.raises(Cancelled):
            next(results)
        # the workers have dropped whatever they had queued before the running tasks may finish
        scale_fold.wait_until(lambda: sum(runner.client.run(scale_fold.queued_on_worker).values()) == 0)
    finally:
        gate.write_text("open")
        results.close()
    # Submitted after the 40, this runs once whatever was still queued ran: only cancelled tasks never do.
    runner.client.submit(os.getpid, pure=False).result()
    assert len(list(started.iterdir())) == 2


def test_cancelled_index_run_writes_nothing(fold64: Path, runner) -> None:
    token = CancelToken()

    def on_progress(p) -> None:
        if p.done > 0:
            token.cancel()

    with pytest.raises(Cancelled):
        index_folds(fold64, executor=runner, progress=on_progress, cancel=token)
    assert not (fold64 / "big.taridx").exists()


def test_cli_index_and_verify_on_the_cluster_address(webds: Path, data_dir: Path, cluster, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    address = f"dask:{cluster.scheduler_address}"
    assert address.startswith("dask:tcp://127.0.0.1:")
    for p in webds.glob("*.taridx"):
        p.unlink()
    assert main(["index", str(webds), "--executor", address, "--no-cache", "--json"]) == 0
    capsys.readouterr()
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    # a corrupted copy: a byte flipped in a header of one shard, another shard cut short
    shard = webds / "train_0001.tar"
    raw = bytearray(shard.read_bytes())
    raw[512 * 3 + 7] ^= 0xFF
    shard.write_bytes(bytes(raw))
    with open(webds / "train_0002.tar", "r+b") as fh:
        fh.truncate(os.path.getsize(webds / "train_0002.tar") // 2 + 100)
    assert main(["verify", str(webds / "train.taridx"), "--full", "--json"]) == 1
    local = capsys.readouterr().out
    assert main(["verify", str(webds / "train.taridx"), "--full", "--json", "--executor", address]) == 1
    remote = capsys.readouterr().out
    assert remote == local
    kinds = {f["kind"] for f in json.loads(local)["findings"]}
    assert {"bad_header", "truncated_shard"} <= kinds


def test_cli_local_cluster_is_started_and_closed(webds: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    import psutil  # a dependency of distributed

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}  # the module's cluster
    for p in webds.glob("*.taridx"):
        p.unlink()
    assert main(["index", str(webds), "--executor", "dask", "--no-cache", "--json"]) == 0
    assert [json.loads(line)["scanned"] for line in capsys.readouterr().out.splitlines()] == [2, 3, 1]
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    left = [p for p in me.children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []  # its LocalCluster's scheduler, nannies and workers are gone
