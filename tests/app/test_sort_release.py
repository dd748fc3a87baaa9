"""Sorting a mapped index releases the pages behind its pass: RSS of the mapping stays small (issue 15).

RSS is read from /proc/self/smaps for the index's own mapping (not a timer, not the whole process);
the orders are compared with numpy's stable argsort of the rows read from the file by numpy alone.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from app.models import sorting
from app.models.sorting import SortKey, first_window, full_order
from itarcore.document import open_document

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc/self/smaps")

N_ROWS = 400_000  # 12.8 MB of rows


def mapping_rss(address: int) -> int:
    """Resident bytes of the mapping holding ``address`` in this process (smaps' Rss line)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "Rss:":
            return int(line.split()[1]) * 1024
    raise AssertionError("no mapping holds the address")


def file_rows(path: Path) -> np.ndarray:
    from synthetic import ROW_DT

    raw = path.read_bytes()
    return np.frombuffer(raw, ROW_DT, offset=struct.unpack_from("<Q", raw, 48)[0])


@pytest.fixture
def index(tmp_path, monkeypatch):
    from synthetic import write_index

    path = tmp_path / "sort.taridx"
    write_index(path, N_ROWS, max_size=10**9)
    monkeypatch.setattr(sorting, "CHUNK", 1 << 14)  # many chunks and buckets on a small file
    monkeypatch.setattr(sorting, "SMALL", 1 << 12)
    doc = open_document(str(path))
    yield doc, file_rows(path)
    doc.close()


@pytest.mark.parametrize(("title", "field", "descending"),
                         [("Size", "size", False), ("Keyhash", "keyhash", True), ("Offset", "offset", False)])
def test_a_full_sort_leaves_little_of_the_index_resident(index, title, field, descending):
    doc, truth = index
    table = doc.table("rows")
    values = table.column(title).values
    address = values.ctypes.data
    int(values.astype(np.uint64).sum())  # every page of the rows mapped in, as after a scroll through them
    size = N_ROWS * 32
    assert mapping_rss(address) > size * 0.9
    order = full_order(table, SortKey(title, descending), None)
    assert mapping_rss(address) < size * 0.1  # only pages near the last chunks read, if any
    expected = np.argsort(~truth[field] if descending else truth[field], kind="stable")  # u64: ~ reverses
    assert np.array_equal(order, expected)


def test_the_first_window_and_a_filtered_sort_release_too(index):
    doc, truth = index
    table = doc.table("rows")
    values = table.column("Size").values
    int(values.sum())
    assert mapping_rss(values.ctypes.data) > N_ROWS * 32 * 0.9
    first = first_window(table, SortKey("Size"), None, 100)
    assert mapping_rss(values.ctypes.data) < N_ROWS * 32 * 0.1
    assert np.array_equal(first, np.argsort(truth["size"], kind="stable")[:100])
    rows = np.arange(0, N_ROWS, 3, dtype=np.int64)
    int(values.sum())
    order = full_order(table, SortKey("Size", descending=True), rows)
    assert mapping_rss(values.ctypes.data) < N_ROWS * 32 * 0.1
    sizes = truth["size"][rows].astype(np.int64)
    assert np.array_equal(order, rows[np.argsort(-sizes, kind="stable")])


def test_scattered_keys_are_read_a_chunk_of_rows_at_a_time(index, monkeypatch):
    """A sample or a bucket spans the whole file: its pages go after each chunk, not after the whole read."""
    doc, truth = index
    released: list[tuple[int, int]] = []
    monkeypatch.setattr(sorting, "release_elements", lambda values, lo, hi: released.append((lo, hi)))
    keys = sorting.SortKeys(doc.table("rows"), SortKey("Size"), None)
    pos = np.arange(5, N_ROWS, 7)
    assert np.array_equal(keys.keys_at(pos), truth["size"][pos])
    assert len(released) == -(-N_ROWS // sorting.CHUNK)
    assert all(hi - lo <= sorting.CHUNK for lo, hi in released)
    assert released[0][0] == 5 and released[-1][1] == int(pos[-1]) + 1


@pytest.mark.parametrize(("title", "field"), [("Size", "size"), ("Keyhash", "keyhash")])
def test_a_full_sort_reads_the_column_once(index, monkeypatch, title, field):
    """One pass over a 32 GB index from disk is a quarter of a minute: the keys are read once, chunk by chunk
    (packed sizes and hashes too wide to pack alike), and never again while the order is worked out."""
    doc, truth = index
    released: list[tuple[int, int]] = []
    monkeypatch.setattr(sorting, "release_elements", lambda values, lo, hi: released.append((lo, hi)))
    order = full_order(doc.table("rows"), SortKey(title), None)
    assert np.array_equal(order, np.argsort(truth[field], kind="stable"))
    read = sorted((lo, hi) for lo, hi in released if hi > lo)  # a read of no rows (its dtype) reads nothing
    assert read == [(i, min(N_ROWS, i + sorting.CHUNK)) for i in range(0, N_ROWS, sorting.CHUNK)]


@pytest.mark.parametrize(("title", "field", "descending"), [("Size", "size", False), ("Keyhash", "keyhash", True)])
def test_the_first_screen_and_the_full_order_share_one_read(index, monkeypatch, title, field, descending):
    """A header click on a huge index: the pass that finds the first screen keeps the keys, and the full
    order sorts them without reading the column a second time."""
    from app.models.row_selection import RowFilter, compute_view

    doc, truth = index
    released: list[tuple[int, int]] = []
    monkeypatch.setattr(sorting, "release_elements", lambda values, lo, hi: released.append((lo, hi)))
    heads: list[np.ndarray] = []
    order = compute_view(doc.table("rows"), RowFilter(), SortKey(title, descending), first=100, two_step_rows=1,
                         partial=lambda what, rows, n: heads.append(rows))
    expected = np.argsort(~truth[field], kind="stable") if descending else np.argsort(truth[field], kind="stable")
    assert np.array_equal(order, expected)
    assert len(heads) == 1 and np.array_equal(heads[0], expected[:100])
    read = sorted((lo, hi) for lo, hi in released if hi > lo)
    assert read == [(i, min(N_ROWS, i + sorting.CHUNK)) for i in range(0, N_ROWS, sorting.CHUNK)]
