"""Per-shard member tables cached on disk, so a rerun scans only new or changed shards.

A shard's entry is keyed by its identity: absolute path, size and mtime (nanoseconds); a
remote shard's by its URL (credentials stripped), size and version (ETag or Last-Modified).
Any change to one of them is a different key, so a stale entry is never read; storing
a shard's new table removes the entries of its older versions. Entries are written atomically (temporary file + rename), so a
killed run leaves only whole entries, and every entry it finished is reused by the next.

File layout (version 2), little endian, chosen over ``.npz`` because a fold of 10^5
shards loads one small file per shard and zip parsing would dominate:

    magic  b"ITARSHC" + version byte
    u32    length of the JSON header that follows
    JSON   {"path", "size", "mtime_ns", "version", "file_size", "ext_names", "arrays": [[name, dtype, shape, offset]...]}
    arrays raw bytes, each at an 8-byte aligned offset from the start of the file

Version 2 stores the shard's rows as the fold's index holds them (32-byte TARIDX records;
fid 0, local extension ids, crash id 0; they hold the table's offsets, sizes, keyhashes and
extension ids), its stems, its runs of equal stems and each run's keyhash, so a fold of
cached shards merges with byte copies, without numpy (:mod:`itarcore.indexing.cached_fold`).

An entry that cannot be read for any reason (truncated, another version, another
identity under the same key) counts as absent: the shard is scanned again.
"""
from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from .. import __version__
from ..cachedir import cache_root
from ..formats.taridx_header import RECORD_SIZE

if TYPE_CHECKING:  # numpy and the indexer load only when a table is decoded or encoded (see cached_fold)
    from .indexer import ShardMembers

CACHE_VERSION = 2  # bump when the file layout, or what a scan puts in a shard's table, changes
MAGIC = b"ITARSHC" + bytes([CACHE_VERSION])
SUBFOLDER = "shards"  # beside other caches of the same folder
FOLD_MARKS = "folds"  # beside the entries' folders: facts about a fold's tables together
# on disk: the shard's rows as TARIDX records (fid 0, local extension ids, crash id 0) hold its header
# offsets, sizes, keyhashes and extension ids; beside them the stems and the runs of equal stems
ENTRY_ARRAYS = {"records": "|u1", "stems": "|u1", "stem_lengths": "<i8", "run_starts": "<i8", "run_keyhash": "<u8"}
_FROM_RECORDS = {"header_offsets": "offset", "sizes": "size", "keyhash": "keyhash", "ext_codes": "extid"}
_COLUMN_DTYPES = {"header_offsets": "<i8", "sizes": "<i8", "keyhash": "<u8", "ext_codes": "<i8"}  # as a scan gives
_HEAD = struct.Struct("<8sI")
ROUTE_REASON = "every shard's table came from the cache"  # a build's route_reason when nothing was scanned


def default_cache_dir() -> Path:
    """Where shard tables go by default: ``shards`` in :func:`cache_root`."""
    return cache_root() / SUBFOLDER


@dataclass
class ShardCounts:
    """How each shard's member table was obtained in one run."""

    reused: int = 0  # loaded from the cache
    scanned: int = 0
    failed: int = 0

    def text(self) -> str:
        return f"{self.reused} reused, {self.scanned} scanned" + (f", {self.failed} failed" if self.failed else "")


@dataclass(frozen=True)
class ShardIdentity:
    """What makes a cached table valid for a shard: the same absolute path (or URL), size and mtime (or version)."""

    path: str
    size: int
    mtime_ns: int
    version: str = ""  # remote shards: ETag or Last-Modified (mtime_ns is 0)

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> ShardIdentity:
        full = os.path.abspath(path)  # not realpath: resolving links costs a stat per path component
        st = os.stat(full)
        return cls(full, st.st_size, st.st_mtime_ns)

    @property
    def path_key(self) -> str:
        return xxhash.xxh3_64_hexdigest(self.path.encode("utf-8", "surrogateescape"))

    @property
    def key(self) -> str:
        """``<path key>-<version key>``: entries of one shard share the prefix, so older versions can go."""
        # itarcore's version too: a release that splits names differently must not reuse older tables
        text = f"v{CACHE_VERSION}\0{__version__}\0{self.path}\0{self.size}\0{self.mtime_ns}"
        if self.version:  # local keys stay as they were, so existing entries are still found
            text += f"\0{self.version}"
        return f"{self.path_key}-{xxhash.xxh3_64_hexdigest(text.encode('utf-8', 'surrogateescape'))}"


class ShardCache:
    """Cached shard tables in ``<root>/shards`` (root: ``--cache DIR``, default :func:`cache_root`)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.folder = (Path(root) if root is not None else cache_root()) / SUBFOLDER
        self._versioned = os.fspath(self.folder / f"v{CACHE_VERSION}")

    def entry_path(self, identity: ShardIdentity) -> Path:
        return Path(self._entry(identity))

    def _entry(self, identity: ShardIdentity) -> str:  # plain strings: pathlib costs more than the read here
        key = identity.key
        return os.path.join(self._versioned, key[:2], key + ".members")

    def map_entry(self, identity: ShardIdentity) -> mmap.mmap | None:
        """The entry file of this shard version, mapped, or None when there is none (or it is empty)."""
        try:
            with open(self._entry(identity), "rb", buffering=0) as fh:
                # Mapped, not read: no zeroed buffer to fault in and copy into (a fifth of a cached
                # fold's index time). Copy-on-write, so the arrays are writable as before; entries
                # are only ever replaced by a rename, so the mapped file never shrinks under us.
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError):
            return None

    def load(self, identity: ShardIdentity) -> ShardMembers | None:
        """The cached table of this exact shard version, or None (absent, unreadable, or not this shard)."""
        data = self.map_entry(identity)
        try:
            return None if data is None else _decode(data, identity)
        except (ValueError, KeyError, TypeError, struct.error):
            return None

    def fold_mark(self, identities: Sequence[ShardIdentity]) -> str:
        """A file about these shards' cached tables together, in this order (see ``cached_fold``).

        Named ``<first shard's path key>-<key of every identity>``: a changed shard is another name.
        """
        fold_key = xxhash.xxh3_64_hexdigest("\0".join(i.key for i in identities).encode("ascii"))
        return os.path.join(self._versioned, FOLD_MARKS, f"{identities[0].path_key}-{fold_key}")

    def store(self, identity: ShardIdentity, members: ShardMembers) -> Path:
        """Write the entry whole or not at all: a temporary file renamed over the entry.

        No fsync: after a crash an entry may be cut short, and a cut entry reads as absent
        (the shard is scanned again), while an fsync per entry would cost more than small
        shards take to scan.
        """
        target = self.entry_path(identity)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            tmp.write_bytes(_encode(identity, members))
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        drop_other_versions(str(target.parent), identity.path_key + "-", target.name)
        return target

    def entries(self) -> list[Path]:
        """Every entry file of this cache version (for tests, pruning and counts)."""
        root = self.folder / f"v{CACHE_VERSION}"
        return sorted(root.glob("*/*.members")) if root.is_dir() else []


def drop_other_versions(folder: str, prefix: str, kept: str) -> None:
    """Files in ``folder`` named ``prefix…`` other than ``kept``: earlier versions of the same shard's (or
    fold's) entry, never read again, so the cache does not grow."""
    with os.scandir(folder) as found:
        stale = [e.path for e in found if e.name.startswith(prefix) and e.name != kept]
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _encode(identity: ShardIdentity, members: ShardMembers) -> bytes:
    import numpy as np

    from ..formats.taridx import ROW_DTYPE

    if len(members.ext_names) > 1 << 16:
        raise ValueError(f"{len(members.ext_names):,} extensions in one shard: a TARIDX row's u16 extid holds 65,536")
    keyhash = np.ascontiguousarray(members.keyhash, "<u8")
    records = np.zeros(len(keyhash), ROW_DTYPE)
    for column, field in _FROM_RECORDS.items():
        records[field] = getattr(members, column)
    arrays = {"records": records.view(np.uint8).reshape(-1, ROW_DTYPE.itemsize), "stems": members.stems,
              "stem_lengths": members.stem_lengths, "run_starts": members.run_starts,
              "run_keyhash": keyhash[members.run_starts]}
    arrays = {name: np.ascontiguousarray(arrays[name], dtype) for name, dtype in ENTRY_ARRAYS.items()}
    layout, offset = [], 0
    for name, arr in arrays.items():
        layout.append([name, arr.dtype.str, list(arr.shape), offset])
        offset += -(-arr.nbytes // 8) * 8
    header = {"path": identity.path, "size": identity.size, "mtime_ns": identity.mtime_ns, "version": identity.version,
              "file_size": int(members.file_size), "ext_names": list(members.ext_names), "arrays": layout}
    head = json.dumps(header).encode("ascii")  # ensure_ascii: lone surrogates of odd names survive as escapes
    start = _HEAD.size + len(head)
    start += -start % 8
    out = bytearray(start + offset)
    _HEAD.pack_into(out, 0, MAGIC, len(head))
    out[_HEAD.size : _HEAD.size + len(head)] = head
    for (_, _, _, at), arr in zip(layout, arrays.values()):
        out[start + at : start + at + arr.nbytes] = arr.tobytes()
    return bytes(out)


def entry_header(data: bytearray | mmap.mmap, identity: ShardIdentity) -> tuple[dict[str, Any], int] | None:
    """An entry's JSON header and where its arrays start, or None when it is not this shard's entry.

    Raises ValueError, KeyError or struct.error on a damaged entry (callers count it as absent).
    """
    magic, head_len = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        return None
    header = json.loads(data[_HEAD.size : _HEAD.size + head_len])
    found = (header["path"], header["size"], header["mtime_ns"], header.get("version", ""))
    if found != (identity.path, identity.size, identity.mtime_ns, identity.version):
        return None
    start = _HEAD.size + head_len
    return header, start + -start % 8


def _decode(data: bytearray | mmap.mmap, identity: ShardIdentity) -> ShardMembers | None:
    import numpy as np

    from .indexer import ShardMembers

    found = entry_header(data, identity)
    if found is None:
        return None
    header, start = found
    arrays = {}
    for name, dtype, shape, at in header["arrays"]:
        if name not in ENTRY_ARRAYS or np.dtype(dtype) != np.dtype(ENTRY_ARRAYS[name]):
            return None
        arr = np.frombuffer(data, dtype, math.prod(shape), start + at).reshape(shape)  # ValueError when cut short
        arrays[name] = arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))
    if set(arrays) != set(ENTRY_ARRAYS):
        return None
    n = len(arrays["records"])
    runs = arrays["run_starts"]
    if arrays["records"].shape != (n, RECORD_SIZE) or arrays["stems"].ndim != 2 or len(arrays["run_keyhash"]) != len(runs):
        return None
    if len(arrays["stems"]) != n or len(arrays["stem_lengths"]) != n:
        return None
    if len(runs) > n or (len(runs) and (int(runs.min()) < 0 or int(runs.max()) >= n)):
        return None
    from ..formats.taridx import ROW_DTYPE

    rows = arrays["records"].view(ROW_DTYPE).ravel()
    columns = {column: rows[field].astype(_COLUMN_DTYPES[column]) for column, field in _FROM_RECORDS.items()}
    if n and int(columns["ext_codes"].max()) >= len(header["ext_names"]):
        return None
    return ShardMembers(identity.path, columns["header_offsets"], columns["sizes"], columns["keyhash"],
                        arrays["stems"], arrays["stem_lengths"], columns["ext_codes"], list(header["ext_names"]),
                        int(header["file_size"]), runs)
