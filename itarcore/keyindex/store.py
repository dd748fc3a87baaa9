"""Key index files: where they live, what index they belong to, and lookups through them.

File layout (little-endian), version 1::

    0      header (128 bytes, ``FILE_HEADER``), then the index path (UTF-8)
    keys   n_rows x u64: the keyhash column in (keyhash, crashid, row) order   } "sorted" files only
    order  n_rows x u32/u64: the row at each position of that order            }
    coll   n_collisions x u64: keyhashes that carry more than one crash id (sorted)

An "in order" file has no arrays: it records that the index's own rows are already in
key order, so lookups binary-search the index itself.
"""
from __future__ import annotations

import bisect
import mmap
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from ..formats.taridx import TaridxIndex

MAGIC = b"ITARKEYS"
VERSION = 1
KIND_SORTED, KIND_IN_ORDER = 1, 2
KIND_NAMES = {KIND_SORTED: "sorted", KIND_IN_ORDER: "in_order"}
FILE_HEADER = np.dtype([
    ("magic", "S8"), ("version", "<u4"), ("kind", "<u4"), ("n_rows", "<u8"), ("row_bytes", "<u4"),
    ("path_len", "<u4"), ("index_size", "<u8"), ("index_mtime_ns", "<i8"), ("index_inode", "<u8"),
    ("fingerprint", "<u8"), ("n_collisions", "<u8"), ("off_keys", "<u8"), ("reserved", "V48"),
])
assert FILE_HEADER.itemsize == 128
CACHE_ENV = "ITARCORE_CACHE_DIR"
SUFFIX = ".keys"
_FINGERPRINT_ROWS = 64


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The itarcore cache folder: ``cache_dir``, else ``$ITARCORE_CACHE_DIR``, else the user's cache folder."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "itar-browser"


@dataclass(frozen=True)
class IndexIdentity:
    """What a key index was built from: the index file's path, size, mtime, inode and a content fingerprint.

    The fingerprint (header, tables, first and last rows) catches an index rewritten in
    place within one mtime tick; a key index whose identity differs is never used.
    """

    path: str
    size: int
    mtime_ns: int
    inode: int
    fingerprint: int

    @classmethod
    def of(cls, index: TaridxIndex) -> IndexIdentity:
        st = index.stat if index.stat is not None else os.stat(index.path)
        digest = xxhash.xxh64()
        digest.update(repr(sorted(index.header.as_dict().items())).encode())
        digest.update("\n".join(index.extensions).encode("utf-8", "surrogateescape") + b"\0")
        digest.update("\n".join(index.crash_stems).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(index.rows[:_FINGERPRINT_ROWS].tobytes())
        digest.update(index.rows[-_FINGERPRINT_ROWS:].tobytes())
        return cls(os.path.realpath(index.path), st.st_size, st.st_mtime_ns, st.st_ino, digest.intdigest())


def key_file_path(identity: IndexIdentity, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """One file per index path: a rebuild after the index changed replaces the stale one."""
    name = xxhash.xxh64(identity.path.encode("utf-8", "surrogateescape")).hexdigest()
    return cache_root(cache_dir) / "keys" / (name + SUFFIX)


@dataclass(frozen=True)
class KeyFileLayout:
    kind: int
    n_rows: int
    row_bytes: int
    path_bytes: bytes
    n_collisions: int = 0

    @property
    def off_keys(self) -> int:
        return -(-(FILE_HEADER.itemsize + len(self.path_bytes)) // 4096) * 4096  # page aligned for the mmap

    @property
    def off_order(self) -> int:
        return self.off_keys + 8 * self.n_rows if self.kind == KIND_SORTED else self.off_keys

    @property
    def off_collisions(self) -> int:
        end = self.off_order + self.row_bytes * self.n_rows if self.kind == KIND_SORTED else self.off_order
        return -(-end // 8) * 8

    @property
    def file_size(self) -> int:
        return self.off_collisions + 8 * self.n_collisions

    def header(self, identity: IndexIdentity) -> bytes:
        rec = np.zeros(1, FILE_HEADER)
        rec[0] = (MAGIC, VERSION, self.kind, self.n_rows, self.row_bytes, len(self.path_bytes), identity.size,
                  identity.mtime_ns, identity.inode, identity.fingerprint, self.n_collisions, self.off_keys,
                  bytes(48))
        return rec.tobytes() + self.path_bytes


def row_dtype_for(n_rows: int) -> np.dtype:
    return np.dtype("<u4") if n_rows <= 1 << 32 else np.dtype("<u8")


class KeyIndex:
    """Rows of an index by (keyhash, crashid): ``lookup`` answers in microseconds.

    ``kind`` is ``"sorted"`` (a key column and row order, memory-mapped from the cache)
    or ``"in_order"`` (the index's rows are already in key order: searched directly).
    """

    def __init__(self, index: TaridxIndex, kind: str, keys: np.ndarray | None = None,
                 order: np.ndarray | None = None, collisions: np.ndarray | None = None,
                 path: Path | None = None, mapping: mmap.mmap | None = None) -> None:
        self.index = index
        self.kind = kind
        self.path = path
        self._keys = keys
        self._order = order
        self._collisions = collisions
        self._mapping = mapping
        self._keys_offset = self._order_offset = 0

    @classmethod
    def open_cached(cls, index: TaridxIndex, cache_dir: str | os.PathLike[str] | None = None) -> KeyIndex | None:
        """The cached key index of ``index``, or None when there is none or it is stale or damaged."""
        try:
            identity = IndexIdentity.of(index)
            return cls.open_file(key_file_path(identity, cache_dir), index, identity)
        except OSError:
            return None

    @classmethod
    def open_file(cls, path: Path, index: TaridxIndex, identity: IndexIdentity | None = None) -> KeyIndex | None:
        """Open the key file at ``path`` if it belongs to ``index`` as it is now; else None."""
        identity = identity or IndexIdentity.of(index)
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed below; the map outlives it
        except OSError:
            return None
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if size < FILE_HEADER.itemsize:
                return None
            raw = fh.read(FILE_HEADER.itemsize)
            rec = np.frombuffer(raw, FILE_HEADER, count=1)[0]
            if bytes(rec["magic"]) != MAGIC or int(rec["version"]) != VERSION:
                return None
            path_bytes = fh.read(int(rec["path_len"]))
            layout = KeyFileLayout(int(rec["kind"]), int(rec["n_rows"]), int(rec["row_bytes"]), path_bytes,
                                   int(rec["n_collisions"]))
            stored = IndexIdentity(path_bytes.decode("utf-8", "surrogateescape"), int(rec["index_size"]),
                                   int(rec["index_mtime_ns"]), int(rec["index_inode"]), int(rec["fingerprint"]))
            if (stored != identity or layout.n_rows != index.n_rows or layout.kind not in KIND_NAMES
                    or int(rec["off_keys"]) != layout.off_keys or size != layout.file_size):
                return None
            if layout.kind == KIND_IN_ORDER:
                return cls(index, "in_order", path=path)
            if layout.row_bytes != row_dtype_for(layout.n_rows).itemsize:
                return None
            if layout.n_rows == 0:
                empty = np.zeros(0, np.uint64)
                return cls(index, "sorted", empty, empty.astype(row_dtype_for(0)), empty, path)
            mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        n = layout.n_rows
        keys = np.frombuffer(mapping, "<u8", count=n, offset=layout.off_keys)
        order = np.frombuffer(mapping, row_dtype_for(n), count=n, offset=layout.off_order)
        collisions = np.frombuffer(mapping, "<u8", count=layout.n_collisions, offset=layout.off_collisions)
        opened = cls(index, "sorted", keys, order, collisions, path, mapping)
        opened._keys_offset, opened._order_offset = layout.off_keys, layout.off_order
        return opened

    @property
    def n_rows(self) -> int:
        return self.index.n_rows

    @property
    def collisions(self) -> np.ndarray:
        """Sorted keyhashes that carry more than one crash id ("sorted" files; empty for "in_order")."""
        return self._collisions if self._collisions is not None else np.zeros(0, np.uint64)

    def key_range(self, keyhash: int) -> tuple[int, int]:
        """Positions ``lo, hi`` of the rows with this keyhash in key order."""
        if self.kind == "closed":
            raise ValueError("key index is closed")
        if self._keys is not None:
            target = np.uint64(keyhash)
            return int(self._keys.searchsorted(target, "left")), int(self._keys.searchsorted(target, "right"))
        column = self.index.rows["keyhash"]  # strided: bisect reads ~log2(n) entries, np.searchsorted would copy it
        return bisect.bisect_left(column, keyhash), bisect.bisect_right(column, keyhash)

    def keys_at(self, lo: int, hi: int) -> np.ndarray:
        """The keyhashes at key-order positions ``lo..hi`` (a view)."""
        if self._keys is not None:
            return self._keys[lo:hi]
        return self.index.rows["keyhash"][lo:hi]

    def release(self, lo: int, hi: int) -> None:
        """Drop the pages of positions ``lo..hi`` from resident memory after a pass has read them."""
        if self._order is None or self._mapping is None:
            self.index.release_rows(lo, hi)
            return
        page = mmap.PAGESIZE
        for offset, width in ((self._keys_offset, 8), (self._order_offset, self._order.itemsize)):
            first = (offset + lo * width) // page * page
            end = min(len(self._mapping), offset + hi * width)
            if end > first and hasattr(self._mapping, "madvise"):
                self._mapping.madvise(mmap.MADV_DONTNEED, first, end - first)

    def rows_at(self, lo: int, hi: int) -> np.ndarray:
        """The rows at key-order positions ``lo..hi`` (int64)."""
        if self._order is not None:
            return self._order[lo:hi].astype(np.int64)
        return np.arange(lo, hi, dtype=np.int64)

    def lookup(self, keyhash: int, crashid: int = 0) -> np.ndarray:
        """Rows whose (keyhash, crashid) match, ascending (int64); the same answer as a scan."""
        lo, hi = self.key_range(int(keyhash))
        rows = self.rows_at(lo, hi)
        if len(rows):
            rows = rows[self.index.rows["crashid"][rows] == crashid]
        return rows

    def close(self) -> None:
        self.kind = "closed"
        self._keys = self._order = self._collisions = None
        if self._mapping is not None:
            try:
                self._mapping.close()
            except BufferError:  # a caller still holds a slice; the map closes when it is collected
                pass
            self._mapping = None
