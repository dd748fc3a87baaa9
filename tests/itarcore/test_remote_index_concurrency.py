"""Remote shards scanned several at a time: fid order in the index, failures named, cancel, progress totals.

Truth: the local index of the same shards. Concurrency is proven, not timed: a scan is
held until other scans have finished (or until two scans wait together at a barrier),
which only threads running side by side can get past. The waits carry a generous guard
(a broken build fails the test instead of hanging it); no outcome depends on time.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_remote_index import write_video_fold

from itarcore.errors import Cancelled, FormatError
from itarcore.formats.read_plan import REMOTE_JOBS
from itarcore.indexing import build
from itarcore.indexing.cache import ShardCache
from itarcore.indexing.remote import default_jobs
from itarcore.jobs import index_folds
from itarcore.progress import CancelToken
from itarcore.storage import join

GUARD = 60.0  # seconds: only a broken build ever waits this long


def fold_and_reference(tmp_path: Path, shards: int) -> tuple[Path, bytes]:
    write_video_fold(tmp_path / "clips", shards=shards, samples=3, big=200_000)
    (tmp_path / "local").mkdir()
    (tmp_path / "out").mkdir()  # where the remote index goes
    (local,) = index_folds(tmp_path / "clips", output_dir=tmp_path / "local")
    return tmp_path / "clips", Path(local.path).read_bytes()


def shard_of(url: str) -> int:
    return int(url.rsplit("_", 1)[1].removesuffix(".tar"))


def test_default_jobs() -> None:
    assert default_jobs(None, "s3://bucket/ds/") == default_jobs(None, ["https://h/a_0.tar"]) == REMOTE_JOBS > 1
    assert default_jobs(None, "/data/ds") == 1 and default_jobs(3, "s3://bucket/ds/") == 3


def test_shards_finish_out_of_order_and_merge_in_fid_order(http_server, tmp_path: Path, monkeypatch) -> None:
    folder, reference = fold_and_reference(tmp_path, shards=4)
    url = http_server.serve(folder)
    real, finished, others_done = build.remote_members, [], threading.Event()

    def held_first(shard, options, cancel=None, progress=None):
        fid = shard_of(shard.url)
        if fid == 0:  # the first shard is read last: only after every other scan has returned
            assert others_done.wait(GUARD), "the other shards were not scanned while the first one waited"
        table = real(shard, options, cancel, progress)
        finished.append(fid)
        if len(finished) == 3:
            others_done.set()
        return table

    monkeypatch.setattr(build, "remote_members", held_first)
    (result,) = index_folds(url, output_dir=tmp_path / "out")  # jobs not given: remote shards run side by side
    assert finished[-1] == 0 and sorted(finished) == [0, 1, 2, 3]
    assert Path(result.path).read_bytes() == reference
    assert result.shards == [join(url, f"clips_{i:04d}.tar") for i in range(4)]


def test_a_failing_shard_is_named_and_the_others_are_kept(http_server, tmp_path: Path) -> None:
    folder, reference = fold_and_reference(tmp_path, shards=4)
    whole = (folder / "clips_0002.tar").read_bytes()
    (folder / "clips_0002.tar").write_bytes(whole[: len(whole) // 2])  # cut inside a payload
    with pytest.raises(FormatError) as local:
        index_folds(folder, output_dir=tmp_path / "local", jobs=4)
    url = http_server.serve(folder)
    bad = join(url, "clips_0002.tar")
    with pytest.raises(FormatError) as err:  # no cache: the first failure ends the run
        index_folds(url, output_dir=tmp_path / "out", jobs=4)
    assert str(err.value) == str(local.value).replace(str(folder / "clips_0002.tar"), bad)
    assert not list((tmp_path / "out").glob("*.taridx*"))
    cache = ShardCache(tmp_path / "cache")
    with pytest.raises(build.ShardsFailed) as failed:  # with a cache, the other shards are scanned and kept
        index_folds(url, output_dir=tmp_path / "out", jobs=4, cache=cache)
    assert [name for name, _ in failed.value.failures] == [bad] and bad in str(failed.value)
    assert (failed.value.counts.scanned, failed.value.counts.failed) == (3, 1)
    (http_server.root / url.rsplit("/", 1)[1] / "clips_0002.tar").write_bytes(whole)
    (result,) = index_folds(url, output_dir=tmp_path / "out", jobs=4, cache=cache)
    assert (result.counts.reused, result.counts.scanned) == (3, 1)
    assert Path(result.path).read_bytes() == reference


def test_cancel_stops_the_shards_not_yet_started(http_server, tmp_path: Path, monkeypatch) -> None:
    folder, _ = fold_and_reference(tmp_path, shards=6)
    url = http_server.serve(folder)
    cancel = CancelToken()
    both_running = threading.Barrier(2, action=cancel.cancel, timeout=GUARD)  # cancel while shards 0 and 1 run
    real, started = build.remote_members, []

    def cancelled_midway(shard, options, cancel=None, progress=None):
        started.append(shard_of(shard.url))
        both_running.wait()
        return real(shard, options, cancel, progress)

    monkeypatch.setattr(build, "remote_members", cancelled_midway)
    with pytest.raises(Cancelled):
        index_folds(url, output_dir=tmp_path / "out", jobs=2, cancel=cancel)
    # the four queued shards never began: the runner drops queued tasks, and one that a free thread
    # picks up after the cancel reads nothing
    assert sorted(started) == [0, 1]
    read = {shard_of(path) for _, path, _ in http_server.requests("GET", ".tar")}
    assert read <= {0, 1}
    assert not list((tmp_path / "out").glob("*.taridx*"))


def test_progress_counts_every_shard_once(http_server, tmp_path: Path) -> None:
    folder, reference = fold_and_reference(tmp_path, shards=5)
    url = http_server.serve(folder)
    seen = []
    (result,) = index_folds(url, output_dir=tmp_path / "out", jobs=3, progress=seen.append)
    total = sum(p.stat().st_size for p in folder.glob("*.tar"))
    assert Path(result.path).read_bytes() == reference
    assert {p.total for p in seen} == {total} and seen[-1].done == total
    done = [p.done for p in seen]
    assert done == sorted(done) and max(done) == total  # never backwards, never past the fold
    assert seen[-1].message.endswith("(0 reused, 5 scanned)") or "0 reused, 5 scanned" in seen[-1].message
