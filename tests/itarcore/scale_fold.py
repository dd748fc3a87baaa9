"""Helpers of the scale-out tests: a generated many-shard fold, and tasks that misbehave on purpose.

A plain module (not a test file) so that worker processes (a process pool, Dask workers)
can import the task functions by name.
"""
from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path

COLLISIONS = Path(__file__).resolve().parents[1] / "data" / "taridx" / "collisions.txt"


def collision_pairs() -> list[tuple[str, str]]:
    lines = [ln for ln in COLLISIONS.read_text().splitlines() if ln and not ln.startswith("#")]
    return [tuple(ln.split("\t")) for ln in lines]


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    tar.addfile(info, io.BytesIO(data))


def write_fold(folder: Path, fold: str = "big", n_shards: int = 64, samples: int = 5) -> list[Path]:
    """``<fold>_0000.tar`` ... : webdataset samples plus the awkward cases the merge must get right.

    Stems that collide in xxh64 sit in different shards (crash ids are fold-wide), one
    sample is split over two shards (not contiguous), and names carry folders, upper-case
    and multi-dot extensions and a member without extension.
    """
    folder.mkdir(parents=True, exist_ok=True)
    pairs = collision_pairs()
    paths = []
    for s in range(n_shards):
        path = folder / f"{fold}_{s:04d}.tar"
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(samples):
                stem = f"sample{s:03d}{i:03d}"
                add_member(tar, f"{stem}.jpg", bytes([s % 256, i]) * (50 + 37 * i))
                add_member(tar, f"{stem}.cls", str((s + i) % 7).encode())
                add_member(tar, f"{stem}.json", b'{"s": %d, "i": %d}' % (s, i))
            if s % 9 == 4:
                add_member(tar, f"dir{s}/sample{s:03d}000.LEFT.JPG", b"left view")
            if s == 3:
                add_member(tar, f"{pairs[0][0]}.txt", b"first of a colliding pair")
            if s == n_shards - 2:
                add_member(tar, f"{pairs[0][1]}.txt", b"second of a colliding pair")
                add_member(tar, "sample000001.extra", b"a sample split across shards")
            if s == n_shards // 2:
                add_member(tar, "README", b"no extension")
        paths.append(path)
    return paths


def append_member(path: Path, name: str, data: bytes) -> int:
    """Append a member to an existing shard; returns the offset of its header (tarfile's own count)."""
    with tarfile.open(path, "a", format=tarfile.USTAR_FORMAT) as tar:
        add_member(tar, name, data)
    with tarfile.open(path) as tar:
        return tar.getmember(name).offset


def scan_or_die(marker_dir: str, victim: str, path: str, compiled: bool, threads: int | None):
    """The index scan task, except that the first attempt at ``victim`` kills its own worker process."""
    from itarcore.indexing.build import scan_shard

    if os.path.basename(path) == victim:
        attempt = len(os.listdir(marker_dir)) + 1
        Path(marker_dir, f"attempt-{attempt}").write_text(str(os.getpid()))
        if attempt == 1:
            os._exit(1)
    return scan_shard(path, compiled, threads)


def wait_until(condition, limit_seconds: float = 60) -> None:
    """Poll ``condition`` until it holds; fail after ``limit_seconds`` (a bound, not a measurement)."""
    deadline = time.monotonic() + limit_seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def wait_for_gate(gate: str, started_dir: str, n: int) -> int:
    """A task that records that it started, then waits (bounded) for the gate file to appear."""
    Path(started_dir, f"task-{n}").write_text(str(os.getpid()))
    wait_until(lambda: os.path.exists(gate))
    return n


def queued_on_worker(dask_worker) -> int:
    """Tasks a Dask worker holds but has not started (run on each worker by ``Client.run``)."""
    return sum(1 for ts in dask_worker.state.tasks.values() if ts.state in ("ready", "constrained", "waiting"))
