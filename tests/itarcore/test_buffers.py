"""Buffers that reads fill sit where the file's data sits within a page (the kernel's copy is 5x slower
1-31 bytes past that on AMD Zen)."""
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
from itarcore.storage.buffers import read_buffer

PAGE = mmap.PAGESIZE


@pytest.mark.parametrize(("shape", "dtype"), [(1, np.uint8), (4096, "<u4"), ((3, 512), np.uint8), (12345, np.int64),
                                              (np.int64(7), "<u8"), ((np.uint32(2), 3), np.uint8)])
def test_read_buffer_has_the_shape_dtype_and_alignment_asked(shape, dtype) -> None:
    a = read_buffer(shape, dtype)
    assert a.shape == ((int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape))
    assert a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % PAGE == 0
    a[...] = 7  # its own memory, the whole of it writable
    assert (a == 7).all()


@pytest.mark.parametrize("file_offset", [0, 3, 100, PAGE - 1, PAGE, 10 * PAGE + 2000])
def test_read_buffer_sits_where_the_file_offset_sits_in_a_page(file_offset: int) -> None:
    a = read_buffer(1000, np.uint8, file_offset)
    assert a.ctypes.data % PAGE == file_offset % PAGE and a.shape == (1000,)


def test_read_buffer_keeps_the_dtype_aligned_for_an_odd_file_offset() -> None:
    a = read_buffer(10, "<u8", 4099)
    assert a.flags.aligned and a.ctypes.data % PAGE == 4096 % PAGE  # 3 bytes before the data's place


def test_read_buffer_refuses_negative_sizes_and_allows_empty_ones() -> None:
    with pytest.raises(ValueError, match="negative"):
        read_buffer(-1)
    with pytest.raises(ValueError, match="negative"):
        read_buffer((2, -3))
    assert read_buffer((0, 512)).shape == (0, 512)


def test_the_tar_scan_reads_into_page_aligned_buffers(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(40):
            info = tarfile.TarInfo(f"s{i:03d}.bin")
            info.size = i * 100
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    monkeypatch.setattr(tar_mod, "_SCAN_CHUNK_BLOCKS", 8)
    reads: list[tuple[int, int]] = []
    real = tar_mod.os.preadv

    def watching(fd, views, offset):
        reads.append((np.asarray(views[0]).ctypes.data, offset))
        return real(fd, views, offset)

    monkeypatch.setattr(tar_mod.os, "preadv", watching)
    for threads in (1, 2):
        scan = scan_tar(path, compiled=False, threads=threads)
        assert scan.method == "vectorised" and len(scan.names) == 40
    assert len(reads) > 2 and all(dst % PAGE == offset % PAGE == 0 for dst, offset in reads)


def test_pread_array_reads_the_bytes_into_a_buffer_placed_like_the_file_offset(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    truth = np.arange(100_000, dtype="<u8")
    path.write_bytes(b"x" * 104 + truth.tobytes())
    fd = os.open(path, os.O_RDONLY)
    try:
        got = store.pread_array(fd, "<u8", len(truth), 104)
    finally:
        os.close(fd)
    assert got.ctypes.data % PAGE == 104
    assert np.array_equal(got, truth)
