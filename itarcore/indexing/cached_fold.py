"""A fold whose every shard table is cached, merged without numpy.

Rerunning ``itarcore index`` on a fold whose shards have not changed is start-up, a
merge and a write; importing numpy alone took longer than the merge. When the fold is
the usual webdataset case, this module merges the cached tables with byte copies (each
entry holds its shard's rows as TARIDX records, see :mod:`itarcore.indexing.cache`) and one
``set`` of the runs' keyhashes, and numpy is never imported. The usual case:

* every shard's table is in the cache, and the fold has between 1 and 65,536 shards;
* each shard's extensions, in first-appearance order, are a prefix of the fold's (their
  local ids are the fold's ids), and a shard has fewer than 256 of them;
* no two runs of rows (``run_starts``) share a keyhash: every sample's rows are adjacent,
  and no two stems collide, so there are no crash ids, the stem count is the run count,
  and the fold is contiguous (``--contiguous`` then keeps the order, as in the numpy merge).

The last condition is what the fold's stem count, crash stems and contiguity rest on, and
the one that costs (a ``set`` of every run's keyhash): :meth:`CachedFold.check_runs` checks
it while the written index's fsync waits on the disk and remembers a pass; a failure
discards that file. A fold found unusual before or then goes to the numpy route
(:func:`itarcore.indexing.indexer.merge_shards`), which gives the same bytes in every case
(the tests compare both).
"""
from __future__ import annotations

import math
import mmap
import os
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..atomic import atomic_write
from ..formats.taridx_header import RECORD_SIZE
from .cache import ENTRY_ARRAYS, ShardCache, ShardIdentity, drop_other_versions, entry_header
from .discover import MAX_SHARDS

_U16_PER_ROW = RECORD_SIZE // 2  # fid is a row's first u16
_EXTID = 18  # byte offset of a row's u16 extid
_MAX_LOCAL_EXTENSIONS = 255  # local ids fit the low byte of each code (counted with bytes.count)


@dataclass
class _Table:
    """One cached shard table, as views of its mapped entry."""

    records: memoryview  # n 32-byte rows: fid 0, local extension ids, crash id 0
    run_keyhash: memoryview  # "Q": the keyhash of each run of rows
    ext_names: list[str]
    file_size: int


@dataclass
class CachedFold:
    """A fold merged from cached tables: what ``FoldIndex`` holds, its rows made a shard at a time.

    Its stem count, crash stems and contiguity hold once :meth:`check_runs` passes, and its
    extension counts once :meth:`record_pieces` has given every piece.
    """

    tables: list[_Table]  # fid order
    extensions: list[str]
    mark: str  # where a passed check is remembered for these tables (ShardCache.fold_mark)
    contiguous: bool = True
    crash_stems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.n_rows = sum(len(t.records) for t in self.tables) // RECORD_SIZE
        self.n_stems = sum(len(t.run_keyhash) for t in self.tables)  # one a run, once check_runs passes
        self.shard_sizes = [t.file_size for t in self.tables]
        self.extension_counts = [0] * len(self.extensions)  # rows per extension, in id order

    def record_pieces(self) -> Iterator[bytes | bytearray | memoryview]:
        """The fold's rows, a piece per shard: its cached records with its fid (crash ids 0).

        Raises :class:`UnusualFold` at a shard with an extension id out of range. Each piece is
        valid until the next is asked for (one buffer serves every shard: fresh memory per shard
        would be faulted in page by page).
        """
        buffer = bytearray(max((len(t.records) for t in self.tables[1:]), default=0))
        for fid, table in enumerate(self.tables):
            self._count_extensions(table)
            if not fid:  # the cache holds them with fid 0: written straight from the mapped entry
                yield table.records
                continue
            piece = memoryview(buffer)[: len(table.records)]
            piece[:] = table.records
            fids = piece.cast("H")[::_U16_PER_ROW]
            fids[:] = memoryview(array("H", [fid]) * len(fids))
            yield piece

    def _count_extensions(self, table: _Table) -> None:
        low = bytes(table.records[_EXTID::RECORD_SIZE])
        if low.translate(None, bytes(range(len(table.ext_names)))) or bytes(
                table.records[_EXTID + 1 :: RECORD_SIZE]).strip(b"\0"):
            raise UnusualFold("an extension id out of range")
        for ext in range(len(table.ext_names)):  # local ids are the fold's (merge_cached checked)
            self.extension_counts[ext] += low.count(ext)

    def check_runs(self) -> None:
        """Raise :class:`UnusualFold` unless no two runs of rows share a keyhash (see the module).

        A pass is remembered beside the shard tables: the set costs more than the rest of the merge.
        """
        if _read_mark(self.mark) == self.n_stems:
            return
        distinct: set[int] = set()
        for table in self.tables:
            distinct.update(table.run_keyhash.tolist())
        if len(distinct) != self.n_stems:
            raise UnusualFold("a stem's rows are not adjacent, or two stems share a keyhash")
        _write_mark(self.mark, self.n_stems)


class UnusualFold(Exception):
    """The fold is not the usual case after all: its merge needs the numpy route."""


def merge_cached(shards: Sequence[str | os.PathLike[str]], cache: ShardCache) -> CachedFold | None:
    """The fold of local ``shards`` (fid order) from ``cache`` alone, or None when it is not the usual case."""
    if not 0 < len(shards) <= MAX_SHARDS or sys.byteorder != "little":
        return None
    tables, identities = [], [ShardIdentity.of(shard) for shard in shards]
    for identity in identities:
        data = cache.map_entry(identity)
        table = _read_table(data, identity) if data is not None else None
        if table is None:
            return None
        tables.append(table)
    ext_ids: dict[str, int] = {}
    for table in tables:
        for local, name in enumerate(table.ext_names):
            if ext_ids.setdefault(name, len(ext_ids)) != local:
                return None
    fold = CachedFold(tables, list(ext_ids), cache.fold_mark(identities))
    return fold if fold.n_stems else None


def _read_table(data: mmap.mmap, identity: ShardIdentity) -> _Table | None:
    """The entry's merge-ready arrays, or None; their extension ids are checked as they are written."""
    try:
        found = entry_header(data, identity)
        if found is None:
            return None
        header, start = found
        columns, shapes = {}, {}
        for name, dtype, shape, at in header["arrays"]:
            if dtype != ENTRY_ARRAYS[name]:
                return None
            nbytes = math.prod(shape) * int(dtype[2:])
            if start + at + nbytes > len(data):
                return None
            columns[name], shapes[name] = memoryview(data)[start + at : start + at + nbytes], shape
        ext_names = list(header["ext_names"])
        file_size = int(header["file_size"])
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    if set(columns) != set(ENTRY_ARRAYS):
        return None
    n = shapes["records"][0]
    runs = columns["run_starts"].cast("q")
    if shapes["records"] != [n, RECORD_SIZE] or shapes["run_keyhash"] != [len(runs)] or len(runs) > n:
        return None
    if len(shapes["stems"]) != 2 or shapes["stems"][0] != n or shapes["stem_lengths"] != [n]:
        return None
    if (len(runs) == 0) != (n == 0) or (n and (runs[0] != 0 or runs[-1] >= n)):  # ascending, as stored
        return None
    if len(ext_names) > _MAX_LOCAL_EXTENSIONS:
        return None
    return _Table(columns["records"], columns["run_keyhash"].cast("Q"), ext_names, file_size)


def _read_mark(path: str) -> int | None:
    try:
        with open(path, "rb") as fh:
            return int(fh.read(32))
    except (OSError, ValueError):
        return None


def _write_mark(path: str, n_runs: int) -> None:
    """Remember a passed check; drop the marks of the fold's earlier tables (same first shard)."""
    folder, name = os.path.split(path)
    prefix = name.split("-", 1)[0] + "-"
    try:
        os.makedirs(folder, exist_ok=True)
        with atomic_write(path, durable=False) as fh:
            fh.write(b"%d" % n_runs)
        drop_other_versions(folder, prefix, name)
    except OSError:  # only the next run's head start is lost
        pass


__all__ = ["CachedFold", "UnusualFold", "merge_cached"]
