"""A fold: one .taridx plus its tar shards -> stems, samples and payloads.

Shards are found beside the index as ``<fold>_<suffix>.tar``. The reference maps
fid to the position of the sorted suffix; when every suffix is a same-width
number starting at 0, fid ``k`` is the shard numbered ``k``, so a deleted middle
shard shows as missing instead of silently shifting every later fid.
"""
from __future__ import annotations

import mmap
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from .errors import DatasetError, FormatError, MissingShardError
from .formats.tar import NAME_LEN, decode_name, scan_tar
from .formats.tar_fields import BLOCK, header_checksum_ok
from .formats.taridx import RECORD_SIZE, ROW_DTYPE, TaridxIndex, read_taridx
from .indexing.indexer import split_name
from .keyindex import KeyIndex, build_key_index
from .progress import CancelToken, ProgressCallback
from .rowpass import iter_row_chunks
from .samples import SampleGroups, group_samples

if TYPE_CHECKING:
    from typing_extensions import Self

_NAME_CACHE_LIMIT = 1 << 20


def fold_name(index_path: str | os.PathLike[str]) -> str:
    return Path(index_path).name.removesuffix(".taridx")


def find_shards(folder: str | os.PathLike[str], fold: str) -> dict[int, Path]:
    """fid -> shard path for the fold's ``<fold>_<suffix>.tar`` files in ``folder``."""
    pattern = re.compile(rf"^{re.escape(fold)}_(?P<suffix>[^_/]+)\.tar$")
    found = sorted((m["suffix"], Path(e.path)) for e in os.scandir(folder)
                   if (m := pattern.match(e.name)) and e.is_file())
    suffixes = [s for s, _ in found]
    numeric = suffixes and all(s.isdigit() and len(s) == len(suffixes[0]) for s in suffixes)
    if numeric and int(suffixes[0]) == 0:
        return {int(s): p for s, p in found}
    return {fid: p for fid, (_, p) in enumerate(found)}


def shard_name_for(fold: str, fid: int, known: dict[int, Path]) -> str:
    """The file name a fid's shard should have (used to name missing shards)."""
    if fid in known:
        return known[fid].name
    widths = {len(p.stem.rsplit("_", 1)[-1]) for p in known.values()} or {4}
    return f"{fold}_{fid:0{max(widths)}d}.tar"


class Dataset:
    """An opened fold. Use :meth:`open`; close with :meth:`close` or a ``with`` block.

    Stem lookups go through the key index when one is attached (``key_index_state ==
    "ready"``: ``open`` attaches a cached one, ``build_key_index`` builds one), else they
    scan the keyhash column.
    """

    def __init__(self, index: TaridxIndex, shard_paths: dict[int, Path],
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.index = index
        self.path = index.path
        self.fold = fold_name(index.path)
        self._shards = shard_paths
        self._maps: dict[int, mmap.mmap] = {}
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
             key_index: bool = True) -> Dataset:
        """Open a fold; ``key_index`` attaches its cached key index if a fresh one exists (a stat and a header read)."""
        index = read_taridx(index_path, check_rows=check_rows)
        folder = shard_dir if shard_dir is not None else Path(index_path).resolve().parent
        ds = cls(index, find_shards(folder, fold_name(index_path)), cache_dir)
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
    def shard_paths(self) -> dict[int, Path]:
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

    def _map(self, fid: int) -> mmap.mmap:
        mapped = self._maps.get(fid)
        if mapped is None:
            path = self._shards.get(fid)
            if path is None:
                raise MissingShardError(self.path, [self.shard_name(fid)])
            try:
                with open(path, "rb") as fh:
                    if os.fstat(fh.fileno()).st_size == 0:
                        raise DatasetError(f"{path}: shard is empty")
                    mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except FileNotFoundError:  # deleted or renamed since the fold was opened
                raise MissingShardError(self.path, [self.shard_name(fid)]) from None
            except OSError as exc:
                raise DatasetError(f"{path}: cannot read the shard: {exc.strerror or exc}") from None
            self._maps[fid] = mapped
        return mapped

    # -- rows -> bytes and names --------------------------------------------------------------
    def _check_row(self, row: int) -> np.void:
        if not 0 <= row < self.n_rows:
            raise DatasetError(f"{self.path}: row {row} out of range (0..{self.n_rows - 1})")
        return self.rows[row]

    def read_payload(self, row: int) -> bytes:
        rec = self._check_row(row)
        fid, offset, size = int(rec["fid"]), int(rec["offset"]), int(rec["size"])
        mapped = self._map(fid)
        if offset + BLOCK + size > len(mapped):
            raise DatasetError(f"{self._shards[fid]}: row {row} payload [{offset + BLOCK}, {offset + BLOCK + size}) "
                               f"lies past the end of the shard ({len(mapped)} bytes)")
        return bytes(mapped[offset + BLOCK : offset + BLOCK + size])

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
            try:
                scan = scan_tar(self._shards[fid])
                names = {int(scan.header_offsets[r]): full for r, full in scan.full_names.items()}
            except Exception:  # noqa: BLE001 - a damaged shard still shows the names its headers hold
                names = {}
            self._long_names[fid] = names
        return names

    def member_name_bytes(self, row: int) -> bytes:
        cached = self._names.get(row)
        if cached is not None:
            return cached
        rec = self._check_row(row)
        fid, offset = int(rec["fid"]), int(rec["offset"])
        mapped = self._map(fid)
        if offset + BLOCK > len(mapped):
            raise DatasetError(f"{self._shards[fid]}: row {row} header offset {offset} lies past the end of the shard")
        name = self._long_names_of(fid).get(offset)
        if name is None:
            header = bytes(mapped[offset : offset + BLOCK])
            if not header_checksum_ok(header):  # a stale row: show nothing rather than payload bytes
                raise DatasetError(f"{self._shards[fid]}: row {row}: no valid tar header at offset {offset}")
            name = header[:NAME_LEN].split(b"\0", 1)[0]
            if mapped[offset + 257 : offset + 263] == b"ustar\x00":
                prefix = bytes(mapped[offset + 345 : offset + 500]).split(b"\0", 1)[0]
                if prefix:
                    name = prefix + b"/" + name
        if len(self._names) >= _NAME_CACHE_LIMIT:
            self._names.clear()
        self._names[row] = name
        return name

    def member_names(self, rows: np.ndarray | list[int]) -> list[str]:
        """Full member names (read lazily from the tar headers); '' for rows whose shard is missing."""
        out = []
        for row in np.asarray(rows, dtype=np.int64).tolist():
            try:
                out.append(decode_name(self.member_name_bytes(row)))
            except DatasetError:
                out.append("")
        return out

    def stem_names(self, rows: np.ndarray | list[int]) -> list[str]:
        """Stems of ``rows``, from the member names; crash stems come from the crash table when shards are missing."""
        out = []
        for row in np.asarray(rows, dtype=np.int64).tolist():
            try:
                out.append(decode_name(split_name(self.member_name_bytes(row))[0]))
            except DatasetError:
                crashid = int(self.rows[row]["crashid"])
                known = 0 < crashid <= len(self.index.crash_stems)  # an unchecked row may name no crash stem
                out.append(self.index.crash_stems[crashid - 1] if known else "")
        return out

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
    def lookup_stem(self, stem: str, chunk: int = 1 << 22) -> np.ndarray:
        """Rows of the sample whose stem is exactly ``stem`` (empty if none), ascending."""
        return self.lookup_key(*self.stem_key(stem), chunk=chunk)

    def lookup_key(self, keyhash: int, crashid: int, chunk: int = 1 << 22) -> np.ndarray:
        """Rows with this (keyhash, crashid): through the key index when attached, else a scan."""
        key_index = self.key_index
        if key_index is not None:
            return key_index.lookup(keyhash, crashid)
        return self.scan_key(keyhash, crashid, chunk)

    def rows_of_sample(self, row: int) -> np.ndarray:
        """Every row of the sample that ``row`` belongs to, ascending."""
        rec = self._check_row(row)
        return self.lookup_key(int(rec["keyhash"]), int(rec["crashid"]))

    def scan_key(self, keyhash: int, crashid: int, chunk: int = 1 << 22) -> np.ndarray:
        """Rows with this (keyhash, crashid), by a scan of the keyhash column.

        Memory-bound, so chunks go to two threads (numpy releases the GIL while
        comparing) to use both cores on big indexes. Each chunk's pages are released
        behind it, so the resident size stays at a few chunks.
        """
        kh, cid = self.rows["keyhash"], self.rows["crashid"]
        target = np.uint64(keyhash)

        def scan(start: int) -> np.ndarray:
            match = np.flatnonzero(kh[start : start + chunk] == target)
            found = match[cid[start + match] == crashid] + start
            self.index.release_rows(start, start + chunk)  # a scan of a 32 GB index must not stay resident
            return found

        starts = range(0, self.n_rows, chunk)
        if len(starts) > 2:
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="stem-lookup") as pool:
                hits = list(pool.map(scan, starts))
        else:
            hits = [scan(start) for start in starts]
        return np.concatenate(hits).astype(np.int64) if hits else np.zeros(0, np.int64)

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
        for mapped in self._maps.values():
            mapped.close()
        self._maps.clear()
        if self.key_index is not None:
            self.key_index.close()
        self.index.close()
        if self._private_cache is not None:
            shutil.rmtree(self._private_cache, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
