"""The tar shards of a fold: found beside the index (or under ``--shards``), opened for ranged reads.

Shards are ``<fold>_<suffix>.tar`` in a folder or under a URL prefix. The reference maps
fid to the position of the sorted suffix; when every suffix is a same-width number
starting at 0, fid ``k`` is the shard numbered ``k``, so a deleted middle shard shows as
missing instead of silently shifting every later fid. Local shards are read through
mmap (zero copy), remote ones with ranged reads, batched when many payloads are wanted.
"""
from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import DatasetError, MissingShardError
from .storage import (
    RangedSource,
    StorageError,
    basename,
    filesystem,
    is_transient,
    is_url,
    list_files,
    local_path,
    open_source,
    remote_call,
)

MAX_SHARDS = 1 << 16  # fid is a u16
_PROBE_BATCH = 64


def fold_name(index_path: str | os.PathLike[str]) -> str:
    return basename(index_path).removesuffix(".taridx")


def find_shards(folder: str | os.PathLike[str], fold: str,
                storage_options: dict | None = None) -> dict[int, Path | str]:
    """fid -> shard (a Path, or a URL under a URL prefix) of the fold's ``<fold>_<suffix>.tar`` files."""
    pattern = re.compile(rf"^{re.escape(fold)}_(?P<suffix>[^_/]+)\.tar$")
    if is_url(folder):
        prefix = os.fspath(folder).rstrip("/")
        try:
            names = [name for name, _ in list_files(prefix, storage_options, suffix=".tar", sizes=False)]
        except StorageError:
            if not prefix.lower().startswith(("http://", "https://")):
                raise
            names = []  # a web server that shows no folder pages: look for numbered shards below
        found: list[tuple[str, Path | str]] = sorted(
            (m["suffix"], f"{prefix}/{name}") for name in names if (m := pattern.match(name)))
        if not found and prefix.lower().startswith(("http://", "https://")):
            return probe_numbered_shards(prefix, fold, storage_options)
    else:
        found = sorted((m["suffix"], Path(e.path)) for e in os.scandir(local_path(folder))
                       if (m := pattern.match(e.name)) and e.is_file())
    suffixes = [s for s, _ in found]
    numeric = suffixes and all(s.isdigit() and len(s) == len(suffixes[0]) for s in suffixes)
    if numeric and int(suffixes[0]) == 0:
        return {int(s): p for s, p in found}
    return {fid: p for fid, (_, p) in enumerate(found)}


def probe_numbered_shards(prefix: str, fold: str, storage_options: dict | None = None) -> dict[int, str]:
    """fid -> URL of ``<fold>_0000.tar``, ``<fold>_0001.tar`` … that exist, up to the first that does not.

    For HTTP servers without folder listings: the shards are asked for by name (a HEAD each,
    64 at a time), with the width of the first number found (4, 5 or 6 digits).
    """
    fs, _ = filesystem(prefix, storage_options)
    for width in (4, 5, 6):
        if _exist(fs, prefix, storage_options, [f"{prefix}/{fold}_{0:0{width}d}.tar"])[0]:
            break
    else:
        return {}
    found: dict[int, str] = {}
    for start in range(0, MAX_SHARDS, _PROBE_BATCH):
        urls = [f"{prefix}/{fold}_{k:0{width}d}.tar" for k in range(start, min(MAX_SHARDS, start + _PROBE_BATCH))]
        for k, (url, there) in enumerate(zip(urls, _exist(fs, prefix, storage_options, urls)), start=start):
            if not there:
                return found
            found[k] = url
    return found


def _exist(fs: Any, prefix: str, storage_options: dict | None, urls: list[str]) -> list[bool]:
    """Whether each URL exists: HEAD requests sent together; transient failures retried, others raised."""

    def ask() -> list[bool]:
        import asyncio

        from fsspec.asyn import sync

        async def gather() -> list:
            return await asyncio.gather(*[fs._info(u) for u in urls], return_exceptions=True)

        answers = sync(fs.loop, gather)
        for answer in answers:
            if isinstance(answer, BaseException) and (not isinstance(answer, FileNotFoundError)
                                                      or is_transient(answer)):
                raise answer
        return [not isinstance(a, BaseException) for a in answers]

    return remote_call(prefix, storage_options, "cannot look for numbered shards", ask)


def shard_name_for(fold: str, fid: int, known: dict[int, Path | str]) -> str:
    """The file name a fid's shard should have (used to name missing shards)."""
    if fid in known:
        return basename(known[fid])
    widths = {len(basename(p).removesuffix(".tar").rsplit("_", 1)[-1]) for p in known.values()} or {4}
    return f"{fold}_{fid:0{max(widths)}d}.tar"


class ShardSet:
    """A fold's shards, each opened on first use and kept open until :meth:`close`."""

    def __init__(self, index_path: str, fold: str, paths: dict[int, Path | str],
                 storage_options: dict | None = None) -> None:
        self.index_path, self.fold, self.paths = index_path, fold, paths
        self.storage_options = storage_options
        self._sources: dict[int, RangedSource] = {}
        self._lock = threading.Lock()

    def name(self, fid: int) -> str:
        return shard_name_for(self.fold, fid, self.paths)

    def opened(self, fid: int) -> RangedSource | None:
        """Shard ``fid`` if it is open already (asking for it opens nothing), else None."""
        return self._sources.get(fid)

    def source(self, fid: int) -> RangedSource:
        """The open shard ``fid``; MissingShardError when there is none, DatasetError when it cannot be read."""
        opened = self._sources.get(fid)  # a dict read is atomic: the lock guards only the insert
        if opened is not None:
            return opened
        path = self.paths.get(fid)
        if path is None:
            raise MissingShardError(self.index_path, [self.name(fid)])
        try:
            opened = open_source(path, self.storage_options)
        except FileNotFoundError:  # deleted or renamed since the fold was opened
            raise MissingShardError(self.index_path, [self.name(fid)]) from None
        except StorageError:
            raise
        except OSError as exc:
            raise DatasetError(f"{path}: cannot read the shard: {exc.strerror or exc}") from None
        if opened.size == 0:
            opened.close()
            raise DatasetError(f"{opened.name}: shard is empty")
        with self._lock:
            if fid in self._sources:  # another thread opened it meanwhile
                opened.close()
            else:
                self._sources[fid] = opened
            return self._sources[fid]

    def read_many(self, fid: int, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of each (offset, length) of shard ``fid``; remote shards in one batched round trip."""
        return [bytes(b) for b in self.source(fid).read_ranges(ranges)]

    def close(self) -> None:
        with self._lock:
            sources, self._sources = list(self._sources.values()), {}
        for source in sources:
            source.close()
