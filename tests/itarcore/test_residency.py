"""mincore's answer (itarcore.storage.residency) against the kernel's own: a read that must not wait."""
from __future__ import annotations

import mmap
import os

import numpy as np
import pytest

from itarcore.storage.residency import (
    element_pages,
    in_file_mapping,
    mapping_range_resident,
    pages_resident,
    populate,
    populate_range,
    read_if_cached,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="needs Linux preadv2(RWF_NOWAIT)")


def cached_by_kernel(path, offset: int) -> bool:
    """Whether the byte at ``offset`` reads without waiting for the disk (preadv2 with RWF_NOWAIT)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT) == 1
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def evict(path, mapping: mmap.mmap) -> None:
    mapping.madvise(mmap.MADV_DONTNEED)  # out of this process
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache
    finally:
        os.close(fd)


def test_residency_agrees_with_the_kernel_before_and_after_eviction_and_populate(tmp_path):
    path = tmp_path / "rows.bin"
    values = np.arange(1 << 20, dtype=np.uint64)  # 8 MiB: many pages
    values.tofile(path)
    with open(path, "rb") as fh:
        mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        column = np.frombuffer(mapping, np.uint64)
        assert in_file_mapping(column[::2]) and not in_file_mapping(values)
        index = np.array([7, 300_000, 1_000_000])
        pages = element_pages(column, index)
        assert len(pages) == 3 and all(p % mmap.PAGESIZE == 0 for p in pages.tolist())
        assert pages_resident(pages)  # just written: in the page cache
        assert read_if_cached(path, 8 * 300_000, 16) == values[300_000:300_002].tobytes()
        assert read_if_cached(path, len(values) * 8 - 4, 100) == values[-1:].tobytes()[4:]  # clipped at the end
        evict(path, mapping)
        gone = pages_resident(pages)
        assert gone == cached_by_kernel(path, 300_000 * 8)  # the kernel agrees (tmpfs keeps pages: both True)
        populate(pages)
        assert pages_resident(pages)
        assert column[index].tolist() == values[index].tolist()
    finally:
        del column
        mapping.close()


def test_a_mapped_byte_range_is_resident_as_the_kernel_says(tmp_path):
    path = tmp_path / "member.bin"
    path.write_bytes(os.urandom(3 << 20))  # a 3 MiB payload
    with open(path, "rb") as fh:
        mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        assert mapping_range_resident(mapping, 5, 2 << 20)  # just written: in the page cache
        assert mapping_range_resident(mapping, len(mapping), 10)  # nothing to read
        evict(path, mapping)
        for offset in (0, 1 << 20, (3 << 20) - 1):  # one answer for the range: every page of it
            if not cached_by_kernel(path, offset):
                assert not mapping_range_resident(mapping, 0, 3 << 20)
        assert mapping_range_resident(mapping, 4096, 100) == cached_by_kernel(path, 4096)
        populate_range(mapping, 1 << 20, 1 << 20)  # read in without the GIL
        assert mapping_range_resident(mapping, 1 << 20, 1 << 20) and cached_by_kernel(path, (2 << 20) - 1)
        bytes(mapping[:])  # read in
        assert mapping_range_resident(mapping, 0, 3 << 20)
    finally:
        mapping.close()


def test_without_rwf_nowait_nothing_is_read_and_the_caller_goes_to_its_worker(tmp_path, monkeypatch):
    """Windows and macOS have no RWF_NOWAIT (Windows not even pread): "cannot tell" must not read on the caller's thread."""
    path = tmp_path / "bytes.bin"
    path.write_bytes(bytes(range(256)) * 64)
    assert read_if_cached(path, 10, 4) == bytes(range(10, 14))  # just written: in the page cache
    monkeypatch.delattr(os, "RWF_NOWAIT")
    monkeypatch.delattr(os, "pread")
    assert read_if_cached(path, 10, 4) is None
