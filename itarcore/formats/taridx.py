"""TARIDX (.taridx): the index of a fold of tar shards.

Layout (little-endian): a 64-byte header, the extension block and the crash-stem
block (UTF-8, joined by ``\\n``), then 32-byte row records to the end of the file.
Rows are a zero-copy numpy view over a read-only mmap, so a multi-GB index opens
without being read. NOTES.md wins over the spec: blocks split on ``\\n`` only, and
``n_ext``/``n_crash`` resolve the single-empty-string case.
"""
from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import FormatError, TruncatedError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .taridx_header import (  # noqa: F401 - re-exported: the header lives in a numpy-free module
    FIELD_LAYOUT,
    FLAG_CONTIGUOUS,
    HEADER_FIELD_TYPES,
    HEADER_SIZE,
    MAGIC,
    MAJOR,
    MINOR,
    RECORD_SIZE,
    TaridxHeader,
    encode_header,
    parse_header,
    parse_tables,
    read_head_and_tables,
    split_block,
    write_taridx_records,
)
from .taridx_rows import LazyRows, RowBlockCache

if TYPE_CHECKING:
    from typing_extensions import Self

    from ..storage import LocalSource, RangedSource

HEADER_DTYPE = np.dtype([
    ("magic", "S8"), ("major", "<u2"), ("minor", "<u2"), ("rec_size", "<u2"), ("hdr_size", "<u2"),
    ("n_stems", "<u8"), ("n_rows", "<u8"), ("n_ext", "<u4"), ("n_crash", "<u4"),
    ("off_crash", "<u8"), ("off_arr", "<u8"), ("flags", "u1"), ("reserved", "V7"),
])
ROW_DTYPE = np.dtype([
    ("fid", "<u2"), ("offset", "<u8"), ("size", "<u8"), ("extid", "<u2"), ("crashid", "<u4"), ("keyhash", "<u8"),
])
assert HEADER_DTYPE.itemsize == HEADER_SIZE and ROW_DTYPE.itemsize == RECORD_SIZE
assert [(n, off) for n, _, off, _ in FIELD_LAYOUT] == [(n, HEADER_DTYPE.fields[n][1]) for n in HEADER_DTYPE.names]
# Rows are checked at open when the row region is at most this big; bigger indexes
# open instantly and are checked by `check_rows` (the CLI's verify, a GUI worker).
EAGER_ROW_CHECK_BYTES = 256 << 20


class TaridxIndex:
    """An opened .taridx: header, extension and crash tables, and the rows as a numpy view."""

    def __init__(self, path: str, header: TaridxHeader, extensions: list[str], crash_stems: list[str],
                 rows: np.ndarray, mapping: mmap.mmap | None) -> None:
        self.path = path
        self.header = header
        self.extensions = extensions
        self.crash_stems = crash_stems
        self.rows = rows
        self._mapping = mapping
        self.rows_checked = False
        self.stat: os.stat_result | None = None  # of the file as opened (its identity for caches)
        self.source: RangedSource | None = None  # where the bytes come from (local mmap or remote)

    @property
    def is_remote(self) -> bool:
        return self.source is not None and self.source.is_remote

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def contiguous(self) -> bool:
        return self.header.contiguous

    def check_rows(self, progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                   chunk: int = 1 << 22, release: bool = False) -> None:
        """Check every row's extid and crashid against the tables (chunked, cancellable).

        ``release``: drop each chunk's pages behind it (a pass over a big index, not the check at open)."""
        reporter = ProgressReporter(progress, self.n_rows, "rows", cancel)
        n_ext, n_crash = self.header.n_ext, self.header.n_crash
        for start in range(0, self.n_rows, chunk):
            part = self.rows[start : start + chunk]
            bad = np.flatnonzero(part["extid"] >= n_ext)
            if len(bad):
                row = start + int(bad[0])
                raise FormatError(self.path, "extid", self.header.off_arr + row * RECORD_SIZE + 18,
                                  f"row {row}: extension id out of range", expected=f"< {n_ext}",
                                  found=int(part["extid"][bad[0]]))
            bad = np.flatnonzero(part["crashid"] > n_crash)
            if len(bad):
                row = start + int(bad[0])
                raise FormatError(self.path, "crashid", self.header.off_arr + row * RECORD_SIZE + 20,
                                  f"row {row}: crash id not in the crash table", expected=f"<= {n_crash}",
                                  found=int(part["crashid"][bad[0]]))
            if release:
                self.release_rows(start, min(self.n_rows, start + chunk))
            reporter.update(min(self.n_rows, start + chunk))
        self.rows_checked = True

    def release_rows(self, start: int, stop: int) -> None:
        """Drop rows ``start..stop`` from this process's resident memory (the page cache keeps them).

        Passes over every row call this behind them, so a 32 GB index never becomes
        32 GB of resident memory; a later read of those rows just maps the pages again.
        """
        if self.source is not None and stop > start:
            self.source.release(self.header.off_arr + start * RECORD_SIZE, (stop - start) * RECORD_SIZE)

    def close(self) -> None:
        self.rows = self.rows[:0].copy()
        if self.source is not None:
            self.source.close()  # a local one closes its map unless a caller still holds a view
        self._mapping = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_taridx(path: str | os.PathLike[str], check_rows: bool | None = None,
                storage_options: dict | None = None, source: RangedSource | None = None) -> TaridxIndex:
    """Open and validate a .taridx (a local path or a URL).

    ``check_rows=None`` checks rows now only for local indexes up to 256 MiB; a remote
    index reads its rows on demand (see :mod:`itarcore.formats.taridx_rows`), so rows
    are checked at open only when asked (``check_rows=True``). ``source``: ``path`` already
    open (a URL whose first bytes were read to tell its format); the index takes it over.
    """
    from ..storage import open_source

    if source is None:
        source = open_source(path, storage_options)
    try:
        if source.size < HEADER_SIZE:
            raise TruncatedError(source.name, "header", 0, "file shorter than the header",
                                 expected=f"{HEADER_SIZE} bytes", found=f"{source.size} bytes")
        index = _parse_remote(source, check_rows) if source.is_remote else _parse(source, check_rows)
    except BaseException:
        source.close()
        raise
    return index


def _parse(source: LocalSource, check_rows: bool | None) -> TaridxIndex:
    path, mapping, size = source.name, source.mapping, source.size
    header = parse_header(path, mapping[:HEADER_SIZE], size)
    extensions, crash_stems = parse_tables(path, header, mapping)
    rows = np.frombuffer(mapping, ROW_DTYPE, count=header.n_rows, offset=header.off_arr)
    index = TaridxIndex(path, header, extensions, crash_stems, rows, mapping)
    index.stat, index.source = source.stat, source
    region = size - header.off_arr
    if check_rows or (check_rows is None and region <= EAGER_ROW_CHECK_BYTES):
        try:
            index.check_rows()
        except FormatError:
            index.rows = rows = rows[:0].copy()  # drop the view so the map can close
            raise
    return index


def _parse_remote(source: RangedSource, check_rows: bool | None) -> TaridxIndex:
    header, extensions, crash_stems = read_head_and_tables(source)
    rows = LazyRows(RowBlockCache(source, header.off_arr, header.n_rows, ROW_DTYPE))
    index = TaridxIndex(source.name, header, extensions, crash_stems, rows, None)  # type: ignore[arg-type]
    index.source = source
    if check_rows:
        index.check_rows()
    return index


def contiguous_runs(keyhash: np.ndarray, crashid: np.ndarray) -> int:
    """Number of runs of equal (keyhash, crashid) among adjacent rows."""
    if len(keyhash) == 0:
        return 0
    change = (keyhash[1:] != keyhash[:-1]) | (crashid[1:] != crashid[:-1])
    return 1 + int(np.count_nonzero(change))


def write_taridx(path: str | os.PathLike[str], rows: np.ndarray, extensions: Sequence[str],
                 crash_stems: Sequence[str], n_stems: int, contiguous: bool | None = None) -> None:
    """Write a .taridx exactly as the reference does, atomically (temp file, fsync, rename)."""
    rows = np.ascontiguousarray(rows, dtype=ROW_DTYPE)
    if contiguous is None:
        contiguous = contiguous_runs(rows["keyhash"], rows["crashid"]) == n_stems
    write_taridx_records(path, [memoryview(rows).cast("B")], len(rows), extensions, crash_stems, n_stems, contiguous)
