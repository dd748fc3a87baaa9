"""numpy's scan split over threads: the same members as tarfile finds, errors, progress and cancel in order."""
from __future__ import annotations

import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

from itarcore.errors import Cancelled, ChecksumError
from itarcore.formats import tar as tar_mod
from itarcore.formats.tar import scan_tar
from itarcore.progress import CancelToken


@pytest.fixture
def small_chunks(monkeypatch) -> int:
    """Chunks of 8 blocks (4 KiB), so a small tar spans many chunks and threads share them."""
    monkeypatch.setattr(tar_mod, "_SCAN_CHUNK_BLOCKS", 8)
    return 8


def make_many(path: Path, n: int = 120) -> None:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(n):
            name = f"s{i:04d}.jpg" if i % 7 else "long/" + "n" * 110 + f"{i}.json"  # GNU 'L' records too
            data = bytes([i % 251]) * (i * 37 % 1500)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def many_with_truth(path: Path) -> list[tarfile.TarInfo]:
    """Write the many-member tar; its regular members as tarfile reads them (the truth)."""
    make_many(path)
    with tarfile.open(path) as tf:
        return [m for m in tf.getmembers() if m.isreg()]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_threaded_scan_matches_tarfile(tmp_path: Path, small_chunks: int, threads: int) -> None:
    path = tmp_path / "many.tar"
    truth = many_with_truth(path)
    scan = scan_tar(path, compiled=False, threads=threads)
    assert scan.method == "vectorised"
    assert path.stat().st_size // 512 > 10 * small_chunks  # many chunks, so threads really split the work
    assert scan.names == [m.name for m in truth]
    assert scan.data_offsets.tolist() == [m.offset_data for m in truth]
    assert scan.sizes.tolist() == [m.size for m in truth]


def test_bad_checksum_in_a_late_chunk_is_found_by_a_thread(tmp_path: Path, small_chunks: int) -> None:
    path = tmp_path / "many.tar"
    make_many(path)
    with tarfile.open(path) as tf:
        victim = [m for m in tf.getmembers() if m.isreg()][-3]
    raw = bytearray(path.read_bytes())
    raw[victim.offset + 3] ^= 0x01  # a name bit flipped, the stored checksum kept
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError) as info:
        scan_tar(path, compiled=False, threads=2)
    assert info.value.offset == victim.offset + 148 and str(path) in str(info.value)


def test_threaded_progress_is_ordered_and_cancel_stops_the_pool(tmp_path: Path, small_chunks: int) -> None:
    path = tmp_path / "many.tar"
    make_many(path)
    seen: list[int] = []
    scan_tar(path, lambda p: seen.append(p.done), compiled=False, threads=2)
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size

    token = CancelToken()

    def cancel_at_first(p) -> None:
        token.cancel()

    with pytest.raises(Cancelled):
        scan_tar(path, cancel_at_first, token, compiled=False, threads=2)
    assert not [t for t in threading.enumerate() if t.name.startswith("itar-scan")]


@pytest.mark.parametrize("threads", [1, 3])
def test_scan_without_preadv_copies_from_the_map_and_matches_tarfile(tmp_path: Path, small_chunks: int,
                                                                     monkeypatch, threads: int) -> None:
    """Where os.preadv is missing, each chunk is copied out of the map: the same members."""
    monkeypatch.setattr(tar_mod, "_PREADV", False)
    path = tmp_path / "many.tar"
    truth = many_with_truth(path)
    scan = scan_tar(path, compiled=False, threads=threads)
    assert scan.method == "vectorised"
    assert scan.names == [m.name for m in truth]
    assert scan.data_offsets.tolist() == [m.offset_data for m in truth]


def test_each_thread_reads_into_its_own_reused_buffer(tmp_path: Path, small_chunks: int, monkeypatch) -> None:
    """Chunks of the file are read into one buffer per thread (not one per chunk), and never into another's."""
    buffers: dict[int, set[int]] = {}
    real = tar_mod.os.preadv

    def watching(fd, views, offset):
        buffers.setdefault(threading.get_ident(), set()).add(views[0].ctypes.data)  # where the chunk lands
        return real(fd, views, offset)

    monkeypatch.setattr(tar_mod.os, "preadv", watching)
    path = tmp_path / "many.tar"
    make_many(path)
    scan_tar(path, compiled=False, threads=1)
    assert len(buffers) == 1 and len(next(iter(buffers.values()))) == 1
    buffers.clear()
    scan_tar(path, compiled=False, threads=3)
    starts = [s for seen in buffers.values() for s in seen]
    assert len(starts) == len(set(starts)) == len(buffers) >= 1  # one buffer a thread, none shared


def test_a_file_that_shrinks_during_the_scan_is_a_truncation_error(tmp_path: Path, small_chunks: int,
                                                                   monkeypatch) -> None:
    """A short read (the file cut while being scanned) names the file and where its data ended."""
    from itarcore.errors import TruncatedError

    path = tmp_path / "many.tar"
    make_many(path)
    size = path.stat().st_size
    real = tar_mod.os.preadv

    def cut(fd, views, offset):
        if offset >= size // 2 and path.stat().st_size == size:
            os.truncate(path, offset + 1000)  # inside the chunk about to be read
        return real(fd, views, offset)

    monkeypatch.setattr(tar_mod.os, "preadv", cut)
    with pytest.raises(TruncatedError) as info:
        scan_tar(path, compiled=False, threads=1)
    assert str(path) in str(info.value) and "shrank" in str(info.value)
    assert info.value.offset == path.stat().st_size < size
