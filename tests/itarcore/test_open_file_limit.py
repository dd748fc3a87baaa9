"""A fold with more shards than the soft limit on open files indexes, and reindexes from the cache.

Every shard table and shard is mapped while a fold is merged, and a mapping keeps its file
descriptor: with the soft limit at 64, a 100-shard fold used to fail with "Too many open
files". Truth: tarfile's members, and the same command run without the lowered limit.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

resource = pytest.importorskip("resource")
ROOT = Path(__file__).resolve().parents[2]
SHARDS = 100
LOW = 64


def _write_fold(folder: Path) -> None:
    folder.mkdir()
    for fid in range(SHARDS):
        with tarfile.open(folder / f"train_{fid:04d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for ext in ("cls", "json"):
                data = f"{fid}.{ext}".encode()
                info = tarfile.TarInfo(f"s{fid:04d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def _index(folder: Path, output: Path, cache: Path, soft: int | None, *extra: str) -> subprocess.CompletedProcess:
    def lower_soft_limit() -> None:
        if soft is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    env = {**os.environ, "ITARCORE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "itarcore", "index", str(folder), "--output", str(output), *extra],
                          env=env, capture_output=True, text=True, preexec_fn=lower_soft_limit, check=False)


def test_a_fold_of_more_shards_than_the_soft_limit_indexes_and_reindexes(tmp_path):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 4 * SHARDS:
        pytest.skip(f"the hard limit on open files ({hard}) leaves nothing to lift")
    folder, cache = tmp_path / "fold", tmp_path / "cache"
    _write_fold(folder)
    reference = _index(folder, tmp_path / "reference.taridx", tmp_path / "other-cache", None, "--no-cache")
    assert reference.returncode == 0, reference.stderr
    first = _index(folder, tmp_path / "first.taridx", cache, LOW)  # scans, and fills the shard cache
    assert first.returncode == 0, first.stderr
    rerun = _index(folder, tmp_path / "rerun.taridx", cache, LOW)  # every shard's table from the cache
    assert rerun.returncode == 0, rerun.stderr
    truth = (tmp_path / "reference.taridx").read_bytes()
    assert (tmp_path / "first.taridx").read_bytes() == truth
    assert (tmp_path / "rerun.taridx").read_bytes() == truth
    assert len(list(cache.rglob("*"))) >= SHARDS  # the rerun really had the cache to read


def test_the_soft_limit_is_lifted_to_the_hard_one():
    code = ("import resource; from itarcore.limits import raise_open_file_limit; "
            "got = raise_open_file_limit(); soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE); "
            "print(got == soft, soft == hard or hard == resource.RLIM_INFINITY)")

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LOW, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= LOW:
        pytest.skip("the hard limit is already this low")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, preexec_fn=lower, check=True)
    assert done.stdout.split() == ["True", "True"]
