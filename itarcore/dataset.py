"""A fold: one .taridx plus its tar shards -> stems, samples and payloads.

Shards are found beside the index as ``<fold>_<suffix>.tar``. The reference maps
fid to the position of the sorted suffix; when every suffix is a same-width
number starting at 0, fid ``k`` is the shard numbered ``k``, so a deleted middle
shard shows as missing instead of silently shifting every later fid.
"""
from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from .errors import DatasetError, FormatError, MissingShardError
from .formats.tar import NAME_LEN, decode_name
from .formats.tar_fields import BLOCK, header_checksum_ok
from .formats.taridx import RECORD_SIZE, ROW_DTYPE, TaridxIndex, read_taridx
from .indexing.indexer import split_name
from .keyindex import KeyIndex, build_key_index
from .keyscan import SCAN_CHUNK_ROWS, SCAN_THREADS, scan_key_rows
from .progress import CancelToken, ProgressCallback
from .rowpass import iter_row_chunks
from .samples import SampleGroups, group_samples
from .shard_names import RemoteLongNames, long_names_of
from .shards import ShardSet, find_shards, fold_name, shard_name_for
from .storage import RangedSource, is_url, parent
from .storage.residency import (
    element_pages,
    in_file_mapping,
    mapping_range_resident,
    pages_resident,
    populate_range,
)
from .storage.sources import LocalSource

if TYPE_CHECKING:
    from typing_extensions import Self

_NAME_CACHE_LIMIT = 1 << 20


class Dataset:
    """An opened fold. Use :meth:`open`; close with :meth:`close` or a ``with`` block.

    Stem lookups go through the key index when one is attached (``key_index_state ==
    "ready"``: ``open`` attaches a cached one, ``build_key_index`` builds one), else they
    scan the keyhash column.
    """

    def __init__(self, index: TaridxIndex, shard_paths: dict[int, Path | str],
                 cache_dir: str | os.PathLike[str] | None = None, storage_options: dict | None = None) -> None:
        self.index = index
        self.path = index.path
        self.fold = fold_name(index.path)
        self._shards = shard_paths
        self.shard_set = ShardSet(self.path, self.fold, shard_paths, storage_options)
        self._long_names: dict[int, dict[int, bytes]] = {}
        self._names: dict[int, bytes] = {}
        self._referenced: np.ndarray | None = None
        self._samples: SampleGroups | None = None
        self.cache_dir = cache_dir  # None: $ITARCORE_CACHE_DIR or the user's cache folder
        self.key_index: KeyIndex | None = None
        self._building_keys = 0
        self._private_cache: str | None = None  # when the cache folder cannot be written

    @classmethod
    def open(cls, index_path: str | os.PathLike[str], shard_dir: str | os.PathLike[str] | None = None,
             check_rows: bool | None = None, cache_dir: str | os.PathLike[str] | None = None,
             key_index: bool = True, storage_options: dict | None = None,
             source: RangedSource | None = None) -> Dataset:
        """Open a fold (paths or URLs); ``key_index`` attaches its cached key index if a fresh one exists.

        Shards are looked for beside the index, or in ``shard_dir`` (a folder or URL prefix);
        ``storage_options`` go to fsspec for every URL. ``source``: the index already open (taken over).
        """
        index = read_taridx(index_path, check_rows=check_rows, storage_options=storage_options, source=source)
        try:
            folder = shard_dir if shard_dir is not None else parent(index_path)
            ds = cls(index, find_shards(folder, fold_name(index_path), storage_options), cache_dir, storage_options)
        except BaseException:
            index.close()
            raise
        if key_index:
            ds.open_key_index()
        return ds

    # -- shards -----------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return self.index.n_rows

    @property
    def rows(self) -> np.ndarray:
        return self.index.rows

    @property
    def extensions(self) -> list[str]:
        return self.index.extensions

    @property
    def shard_paths(self) -> dict[int, Path | str]:
        return dict(self._shards)

    def referenced_fids(self, progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                        chunk: int = 1 << 20) -> np.ndarray:
        if self._referenced is None:
            seen = np.zeros(1 << 16, np.int64)
            # bincount, not np.unique: no sort, and short chunks keep GIL holds to a few ms for the GUI
            for _, part in iter_row_chunks(self.index, chunk, progress=progress, cancel=cancel):
                seen += np.bincount(part["fid"], minlength=1 << 16)
            self._referenced = np.flatnonzero(seen)
        return self._referenced

    def shard_name(self, fid: int) -> str:
        return shard_name_for(self.fold, fid, self._shards)

    @property
    def missing_fids(self) -> list[int]:
        return [int(f) for f in self.referenced_fids() if int(f) not in self._shards]

    @property
    def missing_shards(self) -> list[str]:
        return [self.shard_name(f) for f in self.missing_fids]

    def require_shards(self) -> None:
        if self.missing_fids:
            raise MissingShardError(self.path, self.missing_shards)

    def has_shard(self, fid: int) -> bool:
        return fid in self._shards

    def _source(self, fid: int) -> RangedSource:
        return self.shard_set.source(fid)

    def shard_map(self, fid: int) -> mmap.mmap:
        """A local shard's read-only mmap, for passes that read payloads in place (stats, dedup, export).

        Raises MissingShardError, or DatasetError for an empty or remote shard (those passes read
        local folds; copy remote shards first)."""
        source = self._source(fid)
        if not isinstance(source, LocalSource):
            raise DatasetError(f"{source.name}: the shard is remote; this pass reads local shards in place "
                               "(copy the fold first)")
        if source.mapping is None:
            raise DatasetError(f"{source.name}: shard is empty")
        return source.mapping

    def long_member_names(self, fid: int) -> dict[int, bytes]:
        """Header offset -> full name, for the shard's members whose names do not fit their tar header."""
        names = self._long_names_of(fid)
        if isinstance(names, RemoteLongNames):
            self.shard_map(fid)  # the remote shard's error
        return names

    # -- rows -> bytes and names --------------------------------------------------------------
    def _check_row(self, row: int) -> np.void:
        if not 0 <= row < self.n_rows:
            raise DatasetError(f"{self.path}: row {row} out of range (0..{self.n_rows - 1})")
        return self.rows[row]

    def _payload_range(self, row: int) -> tuple[RangedSource, int, int, int]:
        """(shard, fid, offset, size) of a row's payload, checked against its shard's size."""
        rec = self._check_row(row)
        fid, offset, size = int(rec["fid"]), int(rec["offset"]), int(rec["size"])
        source = self._source(fid)
        if offset + BLOCK + size > source.size:
            raise DatasetError(f"{source.name}: row {row} payload [{offset + BLOCK}, {offset + BLOCK + size}) "
                               f"lies past the end of the shard ({source.size} bytes)")
        return source, fid, offset + BLOCK, size

    def read_payload(self, row: int) -> bytes:
        source, _, start, size = self._payload_range(row)
        if isinstance(source, LocalSource) and source.mapping is not None:
            populate_range(source.mapping, start, size)  # the disk read without the GIL, then the copy
        return bytes(source.read(start, size))

    def rows_in_ram(self, rows: np.ndarray | list[int], payloads: bool = False) -> bool:
        """Whether reading the names (and, with ``payloads``, the payloads) of ``rows`` reads only pages
        already in RAM: their records, their members' headers, the shards' long names. Then a thread
        that must not wait (the GUI) may read them.

        A shard not opened yet, a remote one, or one whose long names are not scanned yet counts as
        not in RAM; a missing shard reads nothing."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[(rows >= 0) & (rows < self.n_rows)]  # the others read nothing: their error comes at once
        if in_file_mapping(self.rows) and len(rows) and not pages_resident(element_pages(self.rows, rows)):
            return False
        recs = self.rows[rows]
        for row, fid, offset, size in zip(rows.tolist(), recs["fid"].tolist(), recs["offset"].tolist(),
                                          recs["size"].tolist()):
            if fid not in self._shards or (not payloads and row in self._names):
                continue
            source = self.shard_set.opened(fid)
            if not isinstance(source, LocalSource) or fid not in self._long_names:
                return False
            mapping = source.mapping
            if mapping is not None and not mapping_range_resident(mapping, offset, BLOCK + (size if payloads else 0)):
                return False
        return True

    def payload_in_ram(self, row: int) -> bool:
        """:meth:`rows_in_ram` of one row's name and payload (the preview's question)."""
        return self.rows_in_ram([row], payloads=True)

    def read_payloads(self, rows: np.ndarray | list[int]) -> list[bytes]:
        """Payloads of many rows: one batched ranged read per remote shard (a sample, an audit's picks)."""
        wanted = [self._payload_range(int(r))[1:] for r in np.asarray(rows, dtype=np.int64).tolist()]
        out: list[bytes] = [b""] * len(wanted)
        for fid in sorted({w[0] for w in wanted}):
            picks = [i for i, w in enumerate(wanted) if w[0] == fid]
            for i, data in zip(picks, self.shard_set.read_many(fid, [wanted[i][1:] for i in picks])):
                out[i] = data
        return out

    def ext_of(self, row: int) -> str:
        extid = int(self._check_row(row)["extid"])
        if extid >= len(self.extensions):  # rows of a big index are checked later (verify), not at open
            at = self.index.header.off_arr + row * RECORD_SIZE + ROW_DTYPE.fields["extid"][1]
            raise FormatError(self.path, "extid", at, f"row {row}: extension id out of range",
                              expected=f"< {len(self.extensions)}", found=extid)
        return self.extensions[extid]

    def _long_names_of(self, fid: int) -> dict[int, bytes]:
        names = self._long_names.get(fid)
        if names is None:
            names = self._long_names[fid] = long_names_of(self._source(fid))
        return names

    def member_name_bytes(self, row: int, header_only: bool = False) -> bytes:
        """The member's full name. ``header_only``: the caller knows that no long-name header
        precedes the member's own (see ``content.names``), so the shard is not scanned for them."""
        cached = self._names.get(row)
        if cached is not None:
            return cached
        rec = self._check_row(row)
        fid, offset = int(rec["fid"]), int(rec["offset"])
        source = self._source(fid)
        if offset + BLOCK > source.size:
            raise DatasetError(f"{source.name}: row {row} header offset {offset} lies past the end of the shard")
        names = {} if header_only else self._long_names_of(fid)
        name = names.get(offset)
        if name is None or isinstance(names, RemoteLongNames):  # a remote long name is checked against its header
            header = names.header(offset) if isinstance(names, RemoteLongNames) else bytes(source.read(offset, BLOCK))
            if not header_checksum_ok(header):  # a stale row: show nothing rather than payload bytes
                raise DatasetError(f"{source.name}: row {row}: no valid tar header at offset {offset}")
        if name is None:
            name = header[:NAME_LEN].split(b"\0", 1)[0]
            if header[257:263] == b"ustar\x00":
                prefix = header[345:500].split(b"\0", 1)[0]
                if prefix:
                    name = prefix + b"/" + name
        if len(self._names) >= _NAME_CACHE_LIMIT:
            self._names.clear()
        self._names[row] = name
        return name

    def member_names(self, rows: np.ndarray | list[int]) -> list[str]:
        """Full member names (read lazily from the tar headers); '' for rows whose shard is missing."""
        rows = np.asarray(rows, dtype=np.int64)
        self._prefetch_names(rows)
        out = []
        for row in rows.tolist():
            try:
                out.append(decode_name(self.member_name_bytes(row)))
            except DatasetError:
                out.append("")
        return out

    def stem_names(self, rows: np.ndarray | list[int]) -> list[str]:
        """Stems of ``rows``, from the member names; crash stems come from the crash table when shards are missing."""
        rows = np.asarray(rows, dtype=np.int64)
        self._prefetch_names(rows)
        out = []
        for row in rows.tolist():
            try:
                out.append(decode_name(split_name(self.member_name_bytes(row))[0]))
            except DatasetError:
                crashid = int(self.rows[row]["crashid"])
                known = 0 < crashid <= len(self.index.crash_stems)  # an unchecked row may name no crash stem
                out.append(self.index.crash_stems[crashid - 1] if known else "")
        return out

    def _prefetch_names(self, rows: np.ndarray) -> None:
        """Remote shards: the headers (and long names) of many rows in one batched read per shard."""
        rows = rows[(rows >= 0) & (rows < self.n_rows)]
        if not len(rows) or not any(is_url(p) for p in self._shards.values()):
            return
        recs = self.rows[rows]
        for fid in np.unique(recs["fid"]).tolist():
            if is_url(self._shards.get(fid, "")):
                try:
                    names = self._long_names_of(fid)
                except DatasetError:
                    continue  # named per row below, as without the prefetch
                names.prefetch(recs["offset"][recs["fid"] == fid].astype(np.int64).tolist())

    # -- stems and samples ------------------------------------------------------------------------
    def stem_key(self, stem: str) -> tuple[int, int]:
        """(keyhash, crashid) of a stem: xxh64, and the crash table for colliding stems."""
        keyhash = xxhash.xxh64_intdigest(stem.encode("utf-8", "surrogateescape"))
        try:
            crashid = self.index.crash_stems.index(stem) + 1
        except ValueError:
            crashid = 0
        return keyhash, crashid

    # -- key index ----------------------------------------------------------------------------------
    @property
    def key_index_state(self) -> str:
        """"ready" (lookups use the key index), "building" (they scan until it is ready) or "none" (they scan)."""
        if self.key_index is not None:
            return "ready"
        return "building" if self._building_keys else "none"

    def open_key_index(self) -> KeyIndex | None:
        """Attach the cached key index of this index if a fresh one exists; returns the attached one or None."""
        if self.key_index is None:
            self.key_index = KeyIndex.open_cached(self.index, self.cache_dir)
        return self.key_index

    def build_key_index(self, progress: ProgressCallback | None = None,
                        cancel: CancelToken | None = None) -> KeyIndex:
        """Build the key index into the cache and attach it (a job: run it in a worker).

        When the cache folder cannot be written (read-only, full, not a folder), the key
        index goes to a private temporary folder removed at :meth:`close`.
        """
        self._building_keys += 1
        try:
            try:
                built = build_key_index(self.index, self._private_cache or self.cache_dir,
                                        progress=progress, cancel=cancel)
            except OSError:
                if self._private_cache is not None:
                    raise
                self._private_cache = self._private_cache or tempfile.mkdtemp(prefix="itar-keys-")
                built = build_key_index(self.index, self._private_cache, progress=progress, cancel=cancel)
        finally:
            self._building_keys -= 1
        old, self.key_index = self.key_index, built
        if old is not None:
            old.close()
        return built

    # -- stems and samples ------------------------------------------------------------------------
    def lookup_stem(self, stem: str, chunk: int = SCAN_CHUNK_ROWS, cancel: CancelToken | None = None,
                    progress: ProgressCallback | None = None) -> np.ndarray:
        """Rows of the sample whose stem is exactly ``stem`` (empty if none), ascending."""
        return self.lookup_key(*self.stem_key(stem), chunk=chunk, cancel=cancel, progress=progress)

    def lookup_key(self, keyhash: int, crashid: int, chunk: int = SCAN_CHUNK_ROWS,
                   cancel: CancelToken | None = None, progress: ProgressCallback | None = None) -> np.ndarray:
        """Rows with this (keyhash, crashid): through the key index when attached, else a scan."""
        key_index = self.key_index
        if key_index is not None:
            return key_index.lookup(keyhash, crashid)
        return self.scan_key(keyhash, crashid, chunk, cancel, progress=progress)

    def rows_of_sample(self, row: int) -> np.ndarray:
        """Every row of the sample that ``row`` belongs to, ascending."""
        rec = self._check_row(row)
        return self.lookup_key(int(rec["keyhash"]), int(rec["crashid"]))

    def scan_key(self, keyhash: int, crashid: int, chunk: int = SCAN_CHUNK_ROWS,
                 cancel: CancelToken | None = None, *, threads: int = SCAN_THREADS,
                 progress: ProgressCallback | None = None) -> np.ndarray:
        """Rows with this (keyhash, crashid), by a scan of the keyhash column (see ``itarcore.keyscan``).

        Chunks go to ``threads`` threads; cancel is checked and progress reported between chunks.
        """
        return scan_key_rows(self.index, keyhash, crashid, chunk, threads, progress, cancel)

    def compute_samples(self, progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                        chunk_rows: int | None = None) -> SampleGroups:
        """Group rows into samples (chunked, cancellable; builds the key index if rows are not adjacent)."""
        if self._samples is None:
            options = {} if chunk_rows is None else {"chunk_rows": chunk_rows}
            source = self.key_index or (lambda p, c: self.build_key_index(progress=p, cancel=c))
            self._samples = group_samples(self.index, source, progress=progress, cancel=cancel, **options)
        return self._samples

    def iter_samples(self) -> Iterator[np.ndarray]:
        groups = self.compute_samples()
        for i in range(groups.n_samples):
            yield groups.rows_of(i)

    def close(self) -> None:
        self.shard_set.close()
        if self.key_index is not None:
            self.key_index.close()
        self.index.close()
        if self._private_cache is not None:
            shutil.rmtree(self._private_cache, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
