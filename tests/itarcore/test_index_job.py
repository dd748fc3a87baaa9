"""The index job: cancel and SIGKILL leave existing output intact, parallel scans do not change bytes."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from children import python_child, sigkill

from itarcore.errors import Cancelled, WriteError
from itarcore.jobs import index_fold, index_folds
from itarcore.progress import CancelToken

FOLDS = ("mixed", "train", "val")


def temps(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp-*"))


@pytest.fixture
def shards_only(webds: Path, data_dir: Path) -> Path:
    """The fixture shards without their indexes."""
    for p in webds.glob("*.taridx"):
        p.unlink()
    return webds


def fixture_bytes(data_dir: Path, fold: str) -> bytes:
    return (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()


def test_cancel_midway_leaves_nothing(shards_only: Path) -> None:
    token = CancelToken()
    seen = []

    def on_progress(p) -> None:
        seen.append(p)
        if p.done > 0:  # the first shard is read: stop before the rest
            token.cancel()

    with pytest.raises(Cancelled):
        index_folds(shards_only, ["train"], progress=on_progress, cancel=token)
    assert seen and seen[-1].done < seen[-1].total
    assert list(shards_only.glob("*.taridx")) == [] and temps(shards_only) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_output_bytes_equal_fixture_for_any_jobs(shards_only: Path, data_dir: Path, jobs: int) -> None:
    results = index_folds(shards_only, jobs=jobs)
    assert [r.fold for r in results] == list(FOLDS)
    for fold in FOLDS:
        assert (shards_only / f"{fold}.taridx").read_bytes() == fixture_bytes(data_dir, fold)
    assert temps(shards_only) == []


def test_stop_and_backup(webds: Path, data_dir: Path) -> None:
    target = webds / "val.taridx"
    target.write_bytes(b"old index bytes")
    shards = sorted(webds.glob("val_*.tar"))
    with pytest.raises(WriteError):
        index_fold(shards, target, if_exists="stop")
    assert target.read_bytes() == b"old index bytes"
    result = index_fold(shards, target, if_exists="backup")
    assert result.backup is not None and result.backup.read_bytes() == b"old index bytes"
    assert target.read_bytes() == fixture_bytes(data_dir, "val")
    assert result.n_rows == 98 and dict(result.extensions)["jpg"] == 32


# The child blocks at a chosen point (a progress report, or the fsync of the finished
# temporary file) and says so on stdout; the parent then kills it. Blocking on stdin
# stands in for a slow disk and makes "midway" exact without sleeping.
CHILD = textwrap.dedent("""
    import os, sys
    from itarcore.jobs import index_folds
    where = sys.argv[2]
    def hold(tag):
        print(tag, flush=True)
        sys.stdin.readline()
    def progress(p):
        if where == "scan" and p.done > 0:
            hold("progress")
    if where == "write":
        real_fsync = os.fsync
        def fsync(fd):
            hold("writing")
            real_fsync(fd)
        os.fsync = fsync
    index_folds(sys.argv[1], ["train"], progress=progress)
""")


@pytest.mark.parametrize("where", ["scan", "write"])
def test_sigkill_keeps_existing_index(webds: Path, data_dir: Path, where: str) -> None:
    target = webds / "train.taridx"
    (webds / "train_0002.tar").unlink()  # the new index would differ from the one in place
    before = target.read_bytes()
    with python_child(CHILD, str(webds), where) as child:
        line = child.stdout.readline().strip()
        assert line == ("progress" if where == "scan" else "writing")
        leftover = temps(webds)
        if where == "write":  # the complete new index sits in its temporary file, not yet renamed
            assert [p.name for p in leftover] == [f".train.taridx.tmp-{child.pid}"]
        else:
            assert leftover == []
        sigkill(child)
    assert target.read_bytes() == before
    assert temps(webds) == leftover  # nothing cleaned it up yet: it is recognisable by name
    result = index_fold(sorted(webds.glob("train_*.tar")), target)
    assert temps(webds) == [] and result.n_rows == 250 + 248
    assert target.read_bytes() != before
