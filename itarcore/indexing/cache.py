"""Per-shard member tables cached on disk, so a rerun scans only new or changed shards.

A shard's entry is keyed by its identity: absolute path, size and mtime (nanoseconds); a
remote shard's by its URL (credentials stripped), size and version (ETag or Last-Modified).
Any change to one of them is a different key, so a stale entry is never read; storing
a shard's new table removes the entries of its older versions. Entries are written atomically (temporary file + rename), so a
killed run leaves only whole entries, and every entry it finished is reused by the next.

File layout (version 1), little endian, chosen over ``.npz`` because a fold of 10^5
shards loads one small file per shard and zip parsing would dominate:

    magic  b"ITARSHC" + version byte
    u32    length of the JSON header that follows
    JSON   {"path", "size", "mtime_ns", "version", "file_size", "ext_names", "arrays": [[name, dtype, shape, offset]...]}
    arrays raw bytes, each at an 8-byte aligned offset from the start of the file

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from .. import __version__
from ..cachedir import cache_root
from .indexer import ShardMembers

CACHE_VERSION = 1  # bump when the file layout, or what a scan puts in a shard's table, changes
MAGIC = b"ITARSHC" + bytes([CACHE_VERSION])
SUBFOLDER = "shards"  # beside other caches of the same folder
_ARRAYS = {  # ShardMembers field -> dtype on disk (what the scan produces)
    "header_offsets": "<i8", "sizes": "<i8", "keyhash": "<u8", "stems": "|u1", "stem_lengths": "<i8",
    "ext_codes": "<i8", "run_starts": "<i8",
}
_HEAD = struct.Struct("<8sI")


def default_cache_dir() -> Path:
    """Where shard tables go by default: ``shards`` in :func:`cache_root`."""
    return cache_root() / SUBFOLDER


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

    def load(self, identity: ShardIdentity) -> ShardMembers | None:
        """The cached table of this exact shard version, or None (absent, unreadable, or not this shard)."""
        try:
            with open(self._entry(identity), "rb", buffering=0) as fh:
                # Mapped, not read: no zeroed buffer to fault in and copy into (a fifth of a cached
                # fold's index time). Copy-on-write, so the arrays are writable as before; entries
                # are only ever replaced by a rename, so the mapped file never shrinks under us.
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
            return _decode(data, identity)
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            return None

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
        self._drop_older_versions(target, identity.path_key)
        return target

    def _drop_older_versions(self, kept: Path, path_key: str) -> None:
        """Entries of earlier versions of the same shard: never read again, so the cache does not grow."""
        prefix = path_key + "-"
        with os.scandir(kept.parent) as found:
            stale = [e.path for e in found if e.name.startswith(prefix) and e.name != kept.name]
        for path in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def entries(self) -> list[Path]:
        """Every entry file of this cache version (for tests, pruning and counts)."""
        root = self.folder / f"v{CACHE_VERSION}"
        return sorted(root.glob("*/*.members")) if root.is_dir() else []


def _encode(identity: ShardIdentity, members: ShardMembers) -> bytes:
    arrays = {name: np.ascontiguousarray(getattr(members, name), dtype) for name, dtype in _ARRAYS.items()}
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


def _decode(data: bytearray | mmap.mmap, identity: ShardIdentity) -> ShardMembers | None:
    magic, head_len = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        return None
    header = json.loads(data[_HEAD.size : _HEAD.size + head_len])
    found = (header["path"], header["size"], header["mtime_ns"], header.get("version", ""))
    if found != (identity.path, identity.size, identity.mtime_ns, identity.version):
        return None
    start = _HEAD.size + head_len
    start += -start % 8
    arrays = {}
    for name, dtype, shape, at in header["arrays"]:
        if name not in _ARRAYS or np.dtype(dtype) != np.dtype(_ARRAYS[name]):
            return None
        arr = np.frombuffer(data, dtype, math.prod(shape), start + at).reshape(shape)  # ValueError when cut short
        arrays[name] = arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))
    if set(arrays) != set(_ARRAYS):
        return None
    n = len(arrays["keyhash"])
    if any(len(arrays[k]) != n for k in ("header_offsets", "sizes", "stems", "stem_lengths", "ext_codes")):
        return None
    if arrays["stems"].ndim != 2 or (n and not 0 <= int(arrays["ext_codes"].min()) <= int(
            arrays["ext_codes"].max()) < len(header["ext_names"])):
        return None
    runs = arrays["run_starts"]
    if len(runs) > n or (len(runs) and (int(runs.min()) < 0 or int(runs.max()) >= n)):
        return None
    return ShardMembers(identity.path, arrays["header_offsets"], arrays["sizes"], arrays["keyhash"],
                        arrays["stems"], arrays["stem_lengths"], arrays["ext_codes"], list(header["ext_names"]),
                        int(header["file_size"]), arrays["run_starts"])
