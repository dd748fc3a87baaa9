"""Key index files: where they live, what index they belong to, and lookups through them.

File layout (little-endian), version 2::

    0      header (128 bytes, ``FILE_HEADER``), then the index path (UTF-8)
    keys   n_rows x u64: the keyhash column in (keyhash, crashid, row) order   } "sorted" files only
    order  n_rows x u32/u64: the row at each position of that order            }
    coll   n_collisions x u64: keyhashes of rows with a crash id (sorted)
    fence  ceil(n_rows / FENCE_STRIDE) x u64: every FENCE_STRIDE-th key of the order

An "in order" file has no keys or order: the index's own rows are already in key order,
so lookups search the index itself (its collisions and fence are kept all the same).

Lookups never map the big columns: the fence (8 bytes a 1024 rows) is read at open,
and a lookup reads one 8 KiB block of keys and the few order entries it needs with
``pread``. Binary search over a memory-mapped column would fault ~27 pages at random,
each pulling in a whole read-ahead window (8 MiB here) when cold, and grow the
resident size by megabytes a lookup.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from ..cachedir import CACHE_ENV, cache_root  # noqa: F401 - CACHE_ENV re-exported
from ..formats.taridx import TaridxIndex
from ..storage.buffers import read_buffer

MAGIC = b"ITARKEYS"
VERSION = 2
FENCE_STRIDE = 1024
KIND_SORTED, KIND_IN_ORDER = 1, 2
KIND_NAMES = {KIND_SORTED: "sorted", KIND_IN_ORDER: "in_order"}
FILE_HEADER = np.dtype([
    ("magic", "S8"), ("version", "<u4"), ("kind", "<u4"), ("n_rows", "<u8"), ("row_bytes", "<u4"),
    ("path_len", "<u4"), ("index_size", "<u8"), ("index_mtime_ns", "<i8"), ("index_inode", "<u8"),
    ("fingerprint", "<u8"), ("n_collisions", "<u8"), ("off_keys", "<u8"), ("fence_stride", "<u4"),
    ("reserved", "V44"),
])
assert FILE_HEADER.itemsize == 128
SUFFIX = ".keys"
_FINGERPRINT_ROWS = 64


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
        digest = xxhash.xxh64()
        digest.update(repr(sorted(index.header.as_dict().items())).encode())
        digest.update("\n".join(index.extensions).encode("utf-8", "surrogateescape") + b"\0")
        digest.update("\n".join(index.crash_stems).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(index.rows[:_FINGERPRINT_ROWS].tobytes())
        digest.update(index.rows[-_FINGERPRINT_ROWS:].tobytes())
        if index.is_remote:  # a URL: its size and ETag (or modification time) stand for the stat
            name, size, tag = index.source.identity
            return cls(name, size, xxhash.xxh64_intdigest(tag.encode()) >> 1, 0, digest.intdigest())
        st = index.stat if index.stat is not None else os.stat(index.path)
        return cls(cls.path_of(index), st.st_size, st.st_mtime_ns, st.st_ino, digest.intdigest())

    @staticmethod
    def path_of(index: TaridxIndex) -> str:
        """The index's path (real path) or URL (without secrets): what names its key file."""
        return index.source.identity[0] if index.is_remote else os.path.realpath(index.path)


def key_file_path(identity: IndexIdentity, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """One file per index path: a rebuild after the index changed replaces the stale one."""
    return key_file_for(identity.path, cache_dir)


def key_file_for(index_path: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    name = xxhash.xxh64(index_path.encode("utf-8", "surrogateescape")).hexdigest()
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
        return -(-(FILE_HEADER.itemsize + len(self.path_bytes)) // 4096) * 4096

    @property
    def off_order(self) -> int:
        return self.off_keys + 8 * self.n_rows if self.kind == KIND_SORTED else self.off_keys

    @property
    def off_collisions(self) -> int:
        end = self.off_order + self.row_bytes * self.n_rows if self.kind == KIND_SORTED else self.off_order
        return -(-end // 8) * 8

    @property
    def n_fence(self) -> int:
        return -(-self.n_rows // FENCE_STRIDE)

    @property
    def off_fence(self) -> int:
        return self.off_collisions + 8 * self.n_collisions

    @property
    def file_size(self) -> int:
        return self.off_fence + 8 * self.n_fence

    def header(self, identity: IndexIdentity) -> bytes:
        rec = np.zeros(1, FILE_HEADER)
        rec[0] = (MAGIC, VERSION, self.kind, self.n_rows, self.row_bytes, len(self.path_bytes), identity.size,
                  identity.mtime_ns, identity.inode, identity.fingerprint, self.n_collisions, self.off_keys,
                  FENCE_STRIDE, bytes(44))
        return rec.tobytes() + self.path_bytes


def pread_array(fd: int, dtype: np.dtype | str, count: int, offset: int) -> np.ndarray:
    """``count`` items at ``offset`` of ``fd``, read into a new array (no mapping stays behind)."""
    out = read_buffer(count, dtype, offset)  # placed for the kernel's copy to run at full speed (storage.buffers)
    view = memoryview(out).cast("B")
    while len(view):
        got = os.preadv(fd, [view], offset)
        if got == 0:
            raise OSError(f"short read at offset {offset}")
        view, offset = view[got:], offset + got
    return out


def row_dtype_for(n_rows: int) -> np.dtype:
    return np.dtype("<u4") if n_rows <= 1 << 32 else np.dtype("<u8")


class KeyIndex:
    """Rows of an index by (keyhash, crashid): ``lookup`` answers in microseconds.

    ``kind`` is ``"sorted"`` (a key column and row order in the cache file, read with
    ``pread``) or ``"in_order"`` (the index's rows are already in key order: searched directly).
    Safe to use from several threads.
    """

    def __init__(self, index: TaridxIndex, kind: str, layout: KeyFileLayout, fence: np.ndarray,
                 collisions: np.ndarray, path: Path | None = None, fd: int | None = None) -> None:
        self.index = index
        self.kind = kind
        self.path = path
        self._layout = layout
        self._fence = fence
        self._collisions = collisions
        self._fd = fd

    @classmethod
    def open_cached(cls, index: TaridxIndex, cache_dir: str | os.PathLike[str] | None = None) -> KeyIndex | None:
        """The cached key index of ``index``, or None when there is none or it is stale or damaged."""
        try:
            if not key_file_for(IndexIdentity.path_of(index), cache_dir).exists():
                return None  # nothing cached: no need to read rows for the fingerprint (a remote index's)
            identity = IndexIdentity.of(index)
            return cls.open_file(key_file_path(identity, cache_dir), index, identity)
        except OSError:
            return None

    @classmethod
    def open_file(cls, path: Path, index: TaridxIndex, identity: IndexIdentity | None = None) -> KeyIndex | None:
        """Open the key file at ``path`` if it belongs to ``index`` as it is now; else None."""
        identity = identity or IndexIdentity.of(index)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            opened = cls._validate(path, fd, index, identity)
        except (OSError, ValueError):
            opened = None
        if opened is None or opened.kind == "in_order":
            os.close(fd)
        return opened

    @classmethod
    def _validate(cls, path: Path, fd: int, index: TaridxIndex, identity: IndexIdentity) -> KeyIndex | None:
        size = os.fstat(fd).st_size
        if size < FILE_HEADER.itemsize:
            return None
        rec = np.frombuffer(os.pread(fd, FILE_HEADER.itemsize, 0), FILE_HEADER, count=1)[0]
        if bytes(rec["magic"]) != MAGIC or int(rec["version"]) != VERSION:
            return None
        path_bytes = os.pread(fd, int(rec["path_len"]), FILE_HEADER.itemsize)
        layout = KeyFileLayout(int(rec["kind"]), int(rec["n_rows"]), int(rec["row_bytes"]), path_bytes,
                               int(rec["n_collisions"]))
        stored = IndexIdentity(path_bytes.decode("utf-8", "surrogateescape"), int(rec["index_size"]),
                               int(rec["index_mtime_ns"]), int(rec["index_inode"]), int(rec["fingerprint"]))
        if (stored != identity or layout.n_rows != index.n_rows or layout.kind not in KIND_NAMES
                or int(rec["off_keys"]) != layout.off_keys or int(rec["fence_stride"]) != FENCE_STRIDE
                or size != layout.file_size):
            return None
        if layout.kind == KIND_SORTED and layout.row_bytes != row_dtype_for(layout.n_rows).itemsize:
            return None
        fence = pread_array(fd, "<u8", layout.n_fence, layout.off_fence)
        collisions = pread_array(fd, "<u8", layout.n_collisions, layout.off_collisions)
        return cls(index, KIND_NAMES[layout.kind], layout, fence, collisions, path,
                   fd if layout.kind == KIND_SORTED else None)

    @property
    def n_rows(self) -> int:
        return self.index.n_rows

    @property
    def collisions(self) -> np.ndarray:
        """Sorted keyhashes of rows with a crash id."""
        return self._collisions

    def keys_at(self, lo: int, hi: int) -> np.ndarray:
        """The keyhashes at key-order positions ``lo..hi``."""
        self._check_open()
        hi = min(hi, self._layout.n_rows)
        if self._fd is None:
            return self.index.rows["keyhash"][lo:hi]
        return pread_array(self._fd, "<u8", max(0, hi - lo), self._layout.off_keys + 8 * lo)

    def rows_at(self, lo: int, hi: int) -> np.ndarray:
        """The rows at key-order positions ``lo..hi`` (int64)."""
        self._check_open()
        hi = min(hi, self._layout.n_rows)
        if self._fd is None:
            return np.arange(lo, hi, dtype=np.int64)
        width = self._layout.row_bytes
        return pread_array(self._fd, row_dtype_for(self.n_rows), max(0, hi - lo),
                           self._layout.off_order + width * lo).astype(np.int64)

    def release(self, lo: int, hi: int) -> None:
        """After a pass has read positions ``lo..hi``: drop the pages it mapped (the index's, for "in_order")."""
        if self._fd is None:
            self.index.release_rows(lo, hi)

    def key_range(self, keyhash: int) -> tuple[int, int]:
        """Positions ``lo, hi`` of the rows with this keyhash in key order."""
        target = np.uint64(keyhash)  # a Python int would make numpy convert the whole array
        left = int(self._fence.searchsorted(target, "left"))
        right = int(self._fence.searchsorted(target, "right"))
        start = max(0, left - 1) * FENCE_STRIDE  # keys before it are <= fence[left - 1] < target
        stop = min(self.n_rows, right * FENCE_STRIDE)  # keys from it on are >= fence[right] > target
        keys = self.keys_at(start, stop)
        return start + int(keys.searchsorted(target, "left")), start + int(keys.searchsorted(target, "right"))

    def lookup(self, keyhash: int, crashid: int = 0) -> np.ndarray:
        """Rows whose (keyhash, crashid) match, ascending (int64); the same answer as a scan.

        Crash ids are read from the index only for colliding keyhashes: the rows of any
        other keyhash all have crash id 0, so most lookups touch no page of the index.
        """
        lo, hi = self.key_range(int(keyhash))
        if not self.is_collision(keyhash):
            return self.rows_at(lo, hi) if crashid == 0 else np.zeros(0, np.int64)
        rows = self.rows_at(lo, hi)
        return rows[self.index.rows["crashid"][rows] == crashid]

    def is_collision(self, keyhash: int) -> bool:
        """Whether some row with this keyhash has a crash id (so its rows may belong to several samples)."""
        target = np.uint64(keyhash)
        at = int(self._collisions.searchsorted(target))
        return at < len(self._collisions) and self._collisions[at] == target

    def _check_open(self) -> None:
        if self.kind == "closed":
            raise ValueError("key index is closed")

    def close(self) -> None:
        self.kind = "closed"
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
