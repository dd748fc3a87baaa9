"""Buffers that reads fill start on a page boundary (the kernel's copy is 5x slower 1-31 bytes past one on AMD)."""
from __future__ import annotations

import io
import mmap
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.formats import tar as tar_mod
from itarcore.formats.tar import scan_tar
from itarcore.keyindex import store
from itarcore.storage.buffers import page_aligned_empty


@pytest.mark.parametrize(("shape", "dtype"), [(1, np.uint8), (4096, "<u4"), ((3, 512), np.uint8), (12345, np.int64)])
def test_page_aligned_empty_has_the_shape_dtype_and_alignment_asked(shape, dtype) -> None:
    a = page_aligned_empty(shape, dtype)
    assert a.shape == ((shape,) if isinstance(shape, int) else shape)
    assert a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % mmap.PAGESIZE == 0
    a[...] = 7  # its own memory, the whole of it writable
    assert (a == 7).all()


def test_an_empty_page_aligned_array_has_the_shape_asked() -> None:
    a = page_aligned_empty((0, 512))
    assert a.shape == (0, 512) and a.dtype == np.uint8


def test_the_tar_scan_reads_into_page_aligned_buffers(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(40):
            info = tarfile.TarInfo(f"s{i:03d}.bin")
            info.size = i * 100
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    monkeypatch.setattr(tar_mod, "_SCAN_CHUNK_BLOCKS", 8)
    starts: list[int] = []
    real = tar_mod.os.preadv

    def watching(fd, views, offset):
        starts.append(np.asarray(views[0]).ctypes.data)
        return real(fd, views, offset)

    monkeypatch.setattr(tar_mod.os, "preadv", watching)
    for threads in (1, 2):
        scan = scan_tar(path, compiled=False, threads=threads)
        assert scan.method == "vectorised" and len(scan.names) == 40
    assert starts and all(s % mmap.PAGESIZE == 0 for s in starts)


def test_pread_array_reads_the_bytes_into_a_page_aligned_array(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    truth = np.arange(100_000, dtype="<u8")
    path.write_bytes(b"xyz" + truth.tobytes())

    fd = os.open(path, os.O_RDONLY)
    try:
        got = store.pread_array(fd, "<u8", len(truth), 3)
    finally:
        os.close(fd)
    assert got.ctypes.data % mmap.PAGESIZE == 0
    assert np.array_equal(got, truth)
