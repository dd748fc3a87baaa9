"""Which samples of two indexes are the same sample, and which shard each one is in.

A TARIDX row names its stem only by xxh64 plus a crash id, and crash ids are local
to an index: the stem with crash id 0 for a hash is whichever stem with that hash
came first *in that fold*. So across two indexes a sample is identified by
``keyhash`` alone, except for hashes that collide in either index (a hash of a
crash-table name): there the stems are named, crash stems from the crash table
and the first stem from the tar header behind its first row (checked against its
xxh64), and samples are matched by name.
"""
from __future__ import annotations

import mmap
import os

import numpy as np
import xxhash

from ..dataset import Dataset
from ..errors import DatasetError
from ..formats.tar import NAME_LEN
from ..formats.tar_fields import BLOCK, header_checksum_ok
from ..indexing.indexer import split_name
from .signatures import SampleTable


class StemReader:
    """Stem names of one index's samples: the crash table, or the tar header behind a row when its shard is here.

    The row's own 512-byte header is read directly; only when its name field does not
    give the stem (a GNU or pax long name) does it fall back to the dataset, which
    scans that shard once. A diff never scans a shard just to name a short stem.
    """

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.crash_stems = dataset.index.crash_stems
        self._maps: dict[int, mmap.mmap | None] = {}

    def stem(self, row: int, keyhash: int, crashid: int) -> str | None:
        """The stem, or None when it cannot be read (shard missing, or a header that no longer matches the row)."""
        if crashid:
            return self.crash_stems[crashid - 1]
        rec = self.dataset.rows[row]
        raw = self._header_stem(int(rec["fid"]), int(rec["offset"]))
        if raw is None or xxhash.xxh64_intdigest(raw) != keyhash:
            try:
                raw = split_name(self.dataset.member_name_bytes(row))[0]
            except (DatasetError, OSError):
                return None
        if xxhash.xxh64_intdigest(raw) != keyhash:  # a stale row: its header belongs to another member now
            return None
        return raw.decode("utf-8", "surrogateescape")

    def _header_stem(self, fid: int, offset: int) -> bytes | None:
        mapped = self._map(fid)
        if mapped is None or offset + BLOCK > len(mapped):
            return None
        header = mapped[offset : offset + BLOCK]
        if not header_checksum_ok(header):
            return None
        name = header[:NAME_LEN].split(b"\0", 1)[0]
        if header[257:263] == b"ustar\x00" and header[345] != 0:
            name = header[345:500].split(b"\0", 1)[0] + b"/" + name
        return split_name(name)[0]

    def _map(self, fid: int) -> mmap.mmap | None:
        if fid not in self._maps:
            path = self.dataset.shard_paths.get(fid)
            mapped = None
            if path is not None:
                try:
                    with open(path, "rb") as fh:
                        if os.fstat(fh.fileno()).st_size:
                            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                except OSError:
                    mapped = None
            self._maps[fid] = mapped
        return self._maps[fid]

    def close(self) -> None:
        for mapped in self._maps.values():
            if mapped is not None:
                mapped.close()
        self._maps.clear()


def colliding_hashes(*datasets: Dataset) -> np.ndarray:
    """Sorted keyhashes that collide in any of the indexes (those of their crash-table names)."""
    names = {s for ds in datasets for s in ds.index.crash_stems}
    hashes = [xxhash.xxh64_intdigest(s.encode("utf-8", "surrogateescape")) for s in names]
    return np.unique(np.array(hashes, dtype=np.uint64))


def match_keys(tables: tuple[SampleTable, SampleTable], readers: tuple[StemReader, StemReader],
               collisions: np.ndarray, name_ids: dict[str, int]) -> tuple[np.ndarray, np.ndarray, int]:
    """A second key per sample so that (keyhash, key) is the same sample in both indexes.

    0 for samples of non-colliding hashes; a name id (from ``name_ids``, shared across
    passes) for samples of colliding hashes. When the first stem of a colliding hash
    cannot be named on either side, the two first stems are matched to each other
    (key 0) and the hash is counted as unresolved.
    """
    picked, named = [], []
    for table, reader in zip(tables, readers):
        sel = np.flatnonzero(np.isin(table.keyhash, collisions)) if len(collisions) else np.zeros(0, np.int64)
        picked.append(sel)
        named.append([reader.stem(int(table.first_row[i]), int(table.keyhash[i]), int(table.crashid[i]))
                      for i in sel.tolist()])
    unresolved: set[int] = set()
    for table, sel, names in zip(tables, picked, named):
        seen: set[tuple[int, str]] = set()
        for i, name in zip(sel.tolist(), names):
            key = int(table.keyhash[i])
            if name is None or (key, name) in seen:  # unreadable, or a stale header naming a crash stem
                unresolved.add(key)
            else:
                seen.add((key, name))
    keys = []
    for table, sel, names in zip(tables, picked, named):
        key2 = np.zeros(len(table), np.uint32)
        for i, name in zip(sel.tolist(), names):
            if int(table.keyhash[i]) in unresolved and table.crashid[i] == 0:
                continue
            key2[i] = name_ids.setdefault(name, len(name_ids) + 1)
        keys.append(key2)
    return keys[0], keys[1], len(unresolved)


def shard_order_key(suffix: str) -> tuple[int, int | str]:
    return (0, int(suffix)) if suffix.isdigit() else (1, suffix)


class ShardLabels:
    """Shards of both folds as one list, matched by suffix (``train_0003.tar`` in either fold is shard "0003")."""

    def __init__(self, old: Dataset, new: Dataset) -> None:
        self.datasets = (old, new)
        self._lookup = (np.full(1 << 16, -1, np.int64), np.full(1 << 16, -1, np.int64))
        self.suffixes: list[str] = []
        self.side_names: tuple[list[str | None], list[str | None]] = ([], [])  # per shard, None: not in that fold
        self._by_suffix: dict[str, int] = {}
        self.missing: tuple[set[str], set[str]] = (set(), set())

    def ids(self, side: int, fids: np.ndarray) -> np.ndarray:
        """Shard ids (shared by both folds) of ``fids`` of the old (0) or new (1) index."""
        lookup, ds = self._lookup[side], self.datasets[side]
        if len(fids):
            for fid in np.flatnonzero((np.bincount(fids, minlength=1 << 16) > 0) & (lookup < 0)).tolist():
                name = ds.shard_name(fid)
                suffix = name.removeprefix(f"{ds.fold}_").removesuffix(".tar")
                shard = self._by_suffix.get(suffix)
                if shard is None:
                    shard = self._by_suffix[suffix] = len(self.suffixes)
                    self.suffixes.append(suffix)
                    for names in self.side_names:
                        names.append(None)
                self.side_names[side][shard] = name
                lookup[fid] = shard
                if not ds.has_shard(fid):
                    self.missing[side].add(name)
        return lookup[fids]

    def label(self, shard: int) -> str:
        """The shard's name, or both names when the folds name it differently."""
        old, new = self.side_names[0][shard], self.side_names[1][shard]
        return old if new is None or new == old else new if old is None else f"{old} → {new}"

    def display_order(self) -> np.ndarray:
        """Shard ids sorted by suffix (numbers numerically)."""
        return np.array(sorted(range(len(self.suffixes)), key=lambda s: shard_order_key(self.suffixes[s])),
                        dtype=np.int64)
