"""One index -> a table of its samples, each reduced to a few numbers that a diff compares.

A sample is the rows sharing ``(keyhash, crashid)``. Each is summarised by two
order-independent 64-bit sums: one over its members' extensions (the extension set),
one over its members' ``(extension, size)`` pairs. Sums of well-mixed 64-bit tokens
commute, so partial sums from chunks (or from rows of a split sample far apart)
add up to the same value, and two samples differ in a sum exactly when their
members differ (up to a 2^-64 chance). Extension tokens hash the extension *text*,
so two indexes with different extension id orders give the same sums.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xxhash

from ..errors import FormatError
from ..formats.taridx import RECORD_SIZE, TaridxIndex

CHUNK_ROWS = 1 << 20
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_SIZE_SALT = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection on uint64 that spreads every input bit (wraps, never warns)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def extension_tokens(extensions: list[str]) -> np.ndarray:
    """One 64-bit token per extension id, from the extension's text (seeded so it is not the stem hash)."""
    return np.array([xxhash.xxh64_intdigest(e.encode("utf-8", "surrogateescape"), seed=0x5EED)
                     for e in extensions], dtype=np.uint64).reshape(-1)


@dataclass
class SampleTable:
    """Samples of one index (or of one key range of it), sorted by (keyhash, crashid)."""

    keyhash: np.ndarray  # uint64
    crashid: np.ndarray  # uint32, this index's own crash ids
    ext_sig: np.ndarray  # uint64 sum of extension tokens
    size_sig: np.ndarray  # uint64 sum of (extension, size) tokens
    n_members: np.ndarray  # uint32
    first_row: np.ndarray  # int64: the sample's first row in file order
    fid: np.ndarray  # uint16: the shard of that first row

    def __len__(self) -> int:
        return len(self.keyhash)

    def take(self, idx: np.ndarray) -> SampleTable:
        return SampleTable(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def _check_chunk(index: TaridxIndex, start: int, extid: np.ndarray, crashid: np.ndarray) -> None:
    """The row checks the reader defers on big indexes, for the rows this chunk uses."""
    n_ext, n_crash = index.header.n_ext, index.header.n_crash
    bad = np.flatnonzero(extid >= n_ext)
    if len(bad):
        row = start + int(bad[0])
        raise FormatError(index.path, "extid", index.header.off_arr + row * RECORD_SIZE + 18,
                          f"row {row}: extension id out of range", expected=f"< {n_ext}", found=int(extid[bad[0]]))
    bad = np.flatnonzero(crashid > n_crash)
    if len(bad):
        row = start + int(bad[0])
        raise FormatError(index.path, "crashid", index.header.off_arr + row * RECORD_SIZE + 20,
                          f"row {row}: crash id not in the crash table", expected=f"<= {n_crash}",
                          found=int(crashid[bad[0]]))


def _chunk_partials(index: TaridxIndex, start: int, stop: int, ext_token: np.ndarray,
                    key_range: tuple[int, int] | None) -> tuple[np.ndarray, ...] | None:
    part = index.rows[start:stop]
    if not index.rows_checked:
        _check_chunk(index, start, part["extid"], part["crashid"])
    keyhash = part["keyhash"]
    rows = None
    if key_range is not None:  # this pass owns keyhash in [lo, hi]; a sample's rows all share its keyhash
        lo, hi = key_range
        rows = np.flatnonzero((keyhash >= np.uint64(lo)) & (keyhash <= np.uint64(hi)))
        if not len(rows):
            return None
        part = part[rows]
        keyhash = part["keyhash"]
    crashid, extid = part["crashid"], part["extid"]
    # runs of equal keys within the chunk; a sample split across runs or chunks is merged later
    change = np.flatnonzero((keyhash[1:] != keyhash[:-1]) | (crashid[1:] != crashid[:-1])) + 1
    starts = np.concatenate(([0], change)).astype(np.int64)
    ext_tok = ext_token[extid]
    member_tok = mix64(ext_tok + mix64(part["size"] ^ _SIZE_SALT))
    first = starts if rows is None else rows[starts]
    return (keyhash[starts].copy(), crashid[starts].copy(), np.add.reduceat(ext_tok, starts),
            np.add.reduceat(member_tok, starts), np.diff(np.append(starts, len(keyhash))).astype(np.uint32),
            first.astype(np.int64) + start, part["fid"][starts].copy())


def sample_table(index: TaridxIndex, on_rows: Callable[[int], None], key_range: tuple[int, int] | None = None,
                 chunk: int = CHUNK_ROWS) -> SampleTable:
    """The samples of ``index`` whose keyhash lies in ``key_range`` (inclusive; None: all), one chunked pass.

    ``on_rows(n)`` is told after every chunk of ``n`` rows (progress; it may raise to cancel).
    """
    ext_token = extension_tokens(index.extensions)
    if not len(ext_token):
        ext_token = np.zeros(1, np.uint64)  # an empty index: nothing will be looked up
    partials = []
    for start in range(0, index.n_rows, chunk):
        stop = min(index.n_rows, start + chunk)
        got = _chunk_partials(index, start, stop, ext_token, key_range)
        if got is not None:
            partials.append(got)
        on_rows(stop - start)
    if not partials:
        empty = [np.zeros(0, t) for t in (np.uint64, np.uint32, np.uint64, np.uint64, np.uint32, np.int64, np.uint16)]
        return SampleTable(*empty)
    cols = [np.concatenate(c) for c in zip(*partials)]
    del partials
    keyhash, crashid = cols[0], cols[1]
    order = key_order(keyhash, crashid)
    keyhash, crashid = keyhash[order], crashid[order]
    bounds = np.flatnonzero((keyhash[1:] != keyhash[:-1]) | (crashid[1:] != crashid[:-1])) + 1
    heads = np.concatenate(([0], bounds)).astype(np.int64)
    # a sample's first row (and its shard) is the smallest of its partials' first rows: one min over
    # row << 16 | fid (rows < 2^47: a TARIDX file is below 2^52 bytes)
    first = np.minimum.reduceat((cols[5][order].astype(np.uint64) << np.uint64(16)) | cols[6][order], heads)
    return SampleTable(keyhash[heads], crashid[heads], np.add.reduceat(cols[2][order], heads),
                       np.add.reduceat(cols[3][order], heads),
                       np.add.reduceat(cols[4][order], heads).astype(np.uint32),
                       (first >> np.uint64(16)).astype(np.int64), (first & np.uint64(0xFFFF)).astype(np.uint16))


def key_order(keyhash: np.ndarray, crashid: np.ndarray) -> np.ndarray:
    """A permutation sorting by (keyhash, crashid).

    A plain quicksort on keyhash (4x faster than a lexsort); only runs of tied keyhash
    (a sample's partials, colliding stems) are then ordered by crashid, in place.
    """
    order = np.argsort(keyhash)
    if len(order) > 1 and crashid.any():
        tied = keyhash[order]
        tie = np.flatnonzero(tied[1:] == tied[:-1])
        if len(tie):
            mark = np.zeros(len(order), bool)
            mark[tie] = True
            mark[tie + 1] = True
            at = np.flatnonzero(mark)  # whole tie runs, each a block of positions with one keyhash
            sub = order[at]
            order[at] = sub[np.lexsort((crashid[sub], keyhash[sub]))]
    return order
