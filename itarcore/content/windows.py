"""Reading only the bytes of payloads a pass looks at: the first and last bytes of each, packed into a buffer.

A pass that looks at a few hundred bytes of each payload (image headers, labels, dedup's
fingerprints) pays, through the shard's mmap, for every page of the run: a page fault maps
the pages around the one touched (fault-around), and dropping them from the process costs
about as much again, together more than ``cat`` takes to copy the same bytes. Where the
shard is in the page cache, ``preadv`` of just those bytes costs a fraction of either:
windows less than ``MERGE_GAP`` apart are read in one call (a call costs about what copying
a few KiB does), packed one after the other into a reused buffer, so a run holds the windows
of thousands of payloads and the numpy work on them is done in few, large batches. On a cold
page cache each small read would wait for the disk, so there the mmap route, read ahead in
large runs, stays.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..storage.sources import LocalSource

MERGE_GAP = 4096  # windows this close are read in one call
SPAN_SHARE = 4  # a read (merged windows) is cut near 1/SPAN_SHARE of the buffer, so a run holds several


@dataclass
class ShardFile:
    """A shard opened for ``preadv``: the same file its mmap shows."""

    fd: int
    name: str

    @classmethod
    def open(cls, ds: Dataset, fid: int) -> ShardFile | None:
        """The shard's file, or None when it is not a local file, or no longer the one mapped (replaced).

        Raises ``DatasetError`` when the file was cut short since it was mapped."""
        if not hasattr(os, "preadv"):
            return None
        source = ds.shard_set.source(fid)
        if not isinstance(source, LocalSource):
            return None
        try:
            fd = os.open(source.name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        st, mapped = os.fstat(fd), source.stat
        if (st.st_dev, st.st_ino) != (mapped.st_dev, mapped.st_ino):  # replaced: the mapping still shows the old
            os.close(fd)
            return None
        if st.st_size < mapped.st_size:
            os.close(fd)
            raise DatasetError(f"{source.name}: the shard was cut short from {mapped.st_size} to {st.st_size} bytes "
                               "since it was opened")
        return cls(fd, source.name)

    def close(self) -> None:
        os.close(self.fd)

    def read_spans(self, plan: WindowPlan, s0: int, s1: int, into: memoryview) -> memoryview:
        """Reads ``s0 .. s1 - 1`` of ``plan``, packed one after the other at the start of ``into``."""
        packed = plan.packed[s0 : s1 + 1] - plan.packed[s0]
        parts = [[into[at:to]] for at, to in zip(packed[:-1].tolist(), packed[1:].tolist())]
        try:  # the loop runs in C; into a reused buffer, as fresh memory for each run costs page faults
            got = sum(map(os.preadv, repeat(self.fd, len(parts)), parts, plan.starts[s0:s1].tolist()))
        except OSError as exc:
            raise DatasetError(f"{self.name}: cannot read the shard near offset {int(plan.starts[s0])}: "
                               f"{exc.strerror or exc}") from None
        if got != packed[-1]:
            raise DatasetError(f"{self.name}: {got} of {int(packed[-1])} bytes read from offsets "
                               f"{int(plan.starts[s0])} to {int(plan.ends[s1 - 1])}: the shard was cut short while "
                               "it was read")
        return into[: int(packed[-1])]


@dataclass
class WindowPlan:
    """The reads covering the windows of a shard's rows (ascending by offset), packed one after the other.

    ``starts``/``ends``: the reads in the file; ``packed``: where each read goes in the packed
    bytes (one more entry: the total). ``row_start``/``row_end``: where each row's first byte and
    its end would be in the packed bytes (the end is exact where its tail window was read, and
    where the head window covers the whole payload). ``runs``: ``(i, j, s0, s1)``, rows ``i:j``
    whose windows lie in reads ``s0:s1``, at most ``buffer_size`` packed bytes; a row that does not
    fit alone is a run with ``s0 == s1 == -1``, to be read through the mmap.
    """

    starts: np.ndarray
    ends: np.ndarray
    packed: np.ndarray
    row_start: np.ndarray
    row_end: np.ndarray
    runs: list[tuple[int, int, int, int]]

    @classmethod
    def build(cls, begin: np.ndarray, head_end: np.ndarray, tail_begin: np.ndarray, end: np.ndarray,
              buffer_size: int, gap: int = MERGE_GAP) -> WindowPlan:
        starts, ends = _merged_reads(begin, head_end, tail_begin, end, gap, max(1, buffer_size // SPAN_SHARE))
        packed = np.r_[0, np.cumsum(ends - starts)]
        if not len(starts):  # empty payloads only: nothing to read
            nowhere = np.zeros(len(begin), np.int64)
            return cls(starts, ends, packed, nowhere, nowhere, [(0, len(begin), 0, 0)] if len(begin) else [])
        last = len(starts) - 1
        # the read holding each row's first byte, and the one holding its tail (its head's, without a tail)
        head_read = np.clip(np.searchsorted(starts, begin, side="right") - 1, 0, last)
        has_tail = tail_begin < end
        tail_read = np.clip(np.searchsorted(starts, np.where(has_tail, tail_begin, begin), side="right") - 1, 0, last)
        row_start = packed[head_read] + np.maximum(begin - starts[head_read], 0)
        row_end = np.where(has_tail, packed[tail_read] + end - starts[tail_read], row_start + (end - begin))
        return cls(starts, ends, packed, row_start, row_end,
                   _cut_runs(packed, head_read, np.maximum.accumulate(tail_read) + 1, buffer_size))


def _merged_reads(begin: np.ndarray, head_end: np.ndarray, tail_begin: np.ndarray, end: np.ndarray, gap: int,
                  cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the reads covering ``[begin, head_end)`` and ``[tail_begin, end)`` of every row,
    ascending: windows less than ``gap`` apart are merged, and a merged read is cut at the first window
    starting ``cap`` or more bytes past its start (reads overlap only where windows do, in a damaged index)."""
    # each row's head then its tail: ascending already unless payloads overlap (a damaged index)
    starts, ends = np.stack([begin, tail_begin], axis=1).ravel(), np.stack([head_end, end], axis=1).ravel()
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return starts, ends
    if (np.diff(starts) < 0).any():
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new_read = np.r_[True, starts[1:] > reach[:-1] + gap]
    read_first = starts[new_read][np.cumsum(new_read) - 1]
    piece = (starts - read_first) // cap
    firsts = np.flatnonzero(new_read | np.r_[True, piece[1:] != piece[:-1]])
    return starts[firsts], reach[np.r_[firsts[1:], len(starts)] - 1]


def _cut_runs(packed: np.ndarray, first_read: np.ndarray, stop_read: np.ndarray,
              buffer_size: int) -> list[tuple[int, int, int, int]]:
    """Runs of consecutive rows whose reads ``first_read[i] .. stop_read[j - 1]`` fit in ``buffer_size``."""
    runs, i, n = [], 0, len(first_read)
    reach = packed[stop_read]  # packed end of the reads of rows 0..k (ascending)
    while i < n:
        s0 = int(first_read[i])
        j = int(np.searchsorted(reach, packed[s0] + buffer_size, side="right"))
        if j <= i:
            runs.append((i, i + 1, -1, -1))
            i += 1
            continue
        runs.append((i, j, s0, int(stop_read[j - 1])))
        i = j
    return runs
