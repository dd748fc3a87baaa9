"""Remote tar shards (URLs, through fsspec): the folds under a URL, and one shard's scan by ranged reads.

A remote shard is scanned by :func:`itarcore.formats.tar_stream.scan_tar_stream`: large
block reads, payloads it can skip never downloaded. Its member table is the one a local
scan of the same bytes gives, so the fold merge (and the index) is byte-identical.
Everything here is a plain function of picklable arguments: threads, processes and Dask
workers scan remote shards alike (each worker opens its own connection).
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import DatasetError
from ..formats.read_plan import REMOTE_JOBS, ReadPlan
from ..formats.tar_names import check_text_names
from ..formats.tar_stream import BlockReader, scan_tar_stream
from ..progress import CancelToken, ProgressCallback
from ..shards import probe_numbered_shards
from ..storage import (
    FetchStats,
    RemoteSource,
    StorageError,
    basename,
    display_name,
    filesystem,
    is_url,
    join,
    open_source,
    parent,
    remote_call,
    secret_values,
)
from ..storage.retry import RETRIES
from .indexer import SHARD_PATTERN, ShardMembers, members_from_scan

_VERSION_KEYS = ("ETag", "etag", "LastModified", "Last-Modified", "mtime", "last_modified")


@dataclass(frozen=True)
class RemoteShard:
    """A shard at a URL, as listed: its size and version (ETag or Last-Modified) key the shard cache."""

    url: str
    size: int
    version: str = ""  # empty when the server says neither: such a shard is never taken from the cache

    @property
    def name(self) -> str:
        return display_name(self.url)


@dataclass(frozen=True)
class RemoteOptions:
    """How remote shards are read. ``storage_options`` (credentials among them) never appear in a repr."""

    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    plan: ReadPlan = field(default_factory=ReadPlan)
    retries: int = RETRIES


def shard_version(info: dict[str, Any]) -> str:
    return next((str(info[k]) for k in _VERSION_KEYS if info.get(k) is not None), "")


_FILESYSTEMS: dict[tuple[int, str, str], Any] = {}
_FILESYSTEMS_LOCK = threading.Lock()


def shared_filesystem(url: str, storage_options: dict[str, Any] | None) -> tuple[Any, str]:
    """(filesystem, path) for ``url``, one filesystem per process, protocol and options for every thread.

    fsspec caches synchronous filesystems per thread (older releases, async ones too), and a
    new S3 client costs a few hundred ms of CPU: scanning threads share one instead (fsspec's
    async filesystems serve many threads on their one event loop).
    """
    protocol = url.split("://", 1)[0].lower()
    key = (os.getpid(), protocol, json.dumps(storage_options or {}, sort_keys=True, default=repr))
    with _FILESYSTEMS_LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            fs, path = filesystem(url, storage_options)
            _FILESYSTEMS[key] = fs
            return fs, path
    return fs, fs._strip_protocol(url)


def discover_remote_folds(url: str, storage_options: dict[str, Any] | None = None) -> dict[str, list[RemoteShard]]:
    """Folds under ``url``: ``<fold>_<suffix>.tar`` grouped by fold, sorted by suffix (= fid order).

    ``url`` is a folder (``s3://bucket/ds/``) or one fold in it (``s3://bucket/ds/train``:
    only ``train_*.tar``). On a web server that shows no folder pages, a fold's URL still
    works: ``train_0000.tar``, ``train_0001.tar``, … are asked for by name (one stat each).
    """
    folds = _shards_in(url, storage_options, _quiet=True)
    if folds:
        return folds
    fold = basename(url)
    web = url.lower().startswith(("http://", "https://"))
    found = _shards_in(parent(url), storage_options, _quiet=web).get(fold) if fold else None
    if not found and fold and web:  # a web server without folder pages: numbered shards, found by name
        numbered = probe_numbered_shards(parent(url), fold, storage_options)
        found = [remote_shard(numbered[fid], storage_options) for fid in sorted(numbered)]
    if not found:
        raise DatasetError(f"{display_name(url)}: no shards named <fold>_<suffix>.tar in this folder, nor a fold "
                           "of that name beside it")
    return {fold: found}


def _shards_in(url: str, storage_options: dict[str, Any] | None, _quiet: bool = False) -> dict[str, list[RemoteShard]]:
    fs, path = shared_filesystem(url, storage_options)
    try:
        entries = remote_call(url, storage_options, "cannot list", lambda: fs.ls(path, detail=True))
    except StorageError:
        if _quiet:  # not a folder: perhaps a fold's prefix (the caller tries the folder above)
            return {}
        raise
    folds: dict[str, list[tuple[str, RemoteShard]]] = {}
    for entry in entries:
        name = basename(entry["name"])
        match = SHARD_PATTERN.match(name)
        if not match or entry.get("type", "file") != "file":
            continue
        if entry.get("size") is None:  # an HTTP folder page names files without sizes or versions
            entry = remote_call(entry["name"], storage_options, "cannot stat", lambda e=entry: fs.info(e["name"]))
        shard = RemoteShard(join(url, name), int(entry["size"]), shard_version(entry))
        folds.setdefault(match["fold"], []).append((match["suffix"], shard))
    return {fold: [s for _, s in sorted(items)] for fold, items in sorted(folds.items())}


def remote_shard(url: str, storage_options: dict[str, Any] | None = None) -> RemoteShard:
    """One shard named by its URL, as it is now (one stat request)."""
    with open_source(url, storage_options) as source:
        return RemoteShard(url, source.size, str(source.identity[2]))


def remote_members(shard: RemoteShard, options: RemoteOptions, cancel: CancelToken | None = None,
                   progress: ProgressCallback | None = None) -> ShardMembers:
    """A remote shard's member table (as :func:`~itarcore.indexing.indexer.shard_members` for a local one).

    The shard is read as listed (size and version from the listing: no stat request per
    shard; a shard rewritten shorter since then fails on a read past its end). The table
    carries what the reads cost (``fetched``): bytes, requests, seconds spent waiting.
    """
    fs, path = shared_filesystem(shard.url, options.storage_options)
    info = {"size": shard.size, "ETag": shard.version or None}
    with RemoteSource(shard.url, fs, path, info, options.retries, secret_values(options.storage_options)) as source:
        reader = BlockReader(source.read, source.size, source.name, options.plan, source.read_ranges)
        scan = scan_tar_stream(reader, progress, cancel)
        check_text_names(scan, forbidden=b"\0\n")
        members = members_from_scan(scan)
        stats = source.stats
        members.fetched = (stats.bytes_fetched, stats.requests, stats.seconds)
        return members


def total_fetched(tables: list[ShardMembers | None]) -> FetchStats:
    """What scanning these tables cost (tables from the cache cost nothing)."""
    total = FetchStats()
    for table in tables:
        if table is not None and table.fetched is not None:
            total.add(*table.fetched)
    return total


def is_remote(path: str | os.PathLike[str] | RemoteShard) -> bool:
    return isinstance(path, RemoteShard) or is_url(os.fspath(path))


def default_jobs(jobs: int | None, shards_or_root: Any) -> int:
    """``jobs``, or when None: :data:`REMOTE_JOBS` for remote shards (or a URL), 1 for local ones."""
    if jobs is not None:
        return jobs
    items = shards_or_root if isinstance(shards_or_root, (list, tuple)) else [shards_or_root]
    return REMOTE_JOBS if any(is_remote(s) for s in items) else 1


__all__ = ["REMOTE_JOBS", "RemoteOptions", "RemoteShard", "default_jobs", "discover_remote_folds", "is_remote",
           "remote_members", "remote_shard", "shard_version", "total_fetched"]
