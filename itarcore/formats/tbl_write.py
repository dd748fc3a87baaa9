"""TBL v1 and v2 writers (layouts in specs/NOTES.md), streaming and atomic.

The number of samples is given up front, so the data region starts at the known
``header_size`` and samples stream straight to disk, each batch's index entries to their
place in the index region (so memory does not grow with the sample count); the header is
written last, then the temp file ``.<name>.tmp-<pid>`` is fsynced and renamed over the
target. ``durable=False`` skips the fsync: the rename is still atomic for other readers,
but a power cut soon after may leave an empty or partial file. v2 samples are
LZ4-compressed (when asked) only when that makes them smaller, like turboloader's own writer.
"""
from __future__ import annotations

import os
import struct
import tempfile
import zlib
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from ..errors import WriteError
from .tbl import (
    ENTRY_COMPRESSED,
    ENTRY_HAS_METADATA,
    FILE_COMPRESSED,
    FILE_HAS_CHECKSUMS,
    FILE_HAS_METADATA,
    FORMAT_CODES,
    MAGIC_V1,
    MAGIC_V2,
    META_TYPE_CODES,
    V1_ENTRY,
    V1_HEADER_SIZE,
    V2_ENTRY,
    V2_HEADER_SIZE,
)
from .tbl_crc import crc16_modbus_many
from .tbl_dims import image_size

if TYPE_CHECKING:
    from typing_extensions import Self

# file extension (lower case, no dot) -> SampleFormat code, as turboloader's extension_to_format
EXT_FORMATS = {
    "jpg": 1, "jpeg": 1, "png": 2, "webp": 3, "bmp": 4, "tif": 5, "tiff": 5, "mp4": 6, "avi": 7,
}
_U32_MAX = 0xFFFF_FFFF
_IOV_MAX = min(1024, os.sysconf("SC_IOV_MAX")) if hasattr(os, "sysconf") else 1024
_WRITEBACK_STEP = 16 << 20  # bytes written between two early-writeback requests


def format_for_name(name: str) -> int:
    """SampleFormat code for a member name, by its last extension (0 = UNKNOWN)."""
    base = name.rsplit("/", 1)[-1]
    return EXT_FORMATS.get(base.rsplit(".", 1)[-1].lower(), 0) if "." in base else 0


# Known extensions as integers: their bytes left-aligned in _EXT_MAX bytes, big-endian (so "jpg" != "jpeg")
_EXT_MAX = max(map(len, EXT_FORMATS))
_EXT_KEYS, _EXT_CODES = (np.array(c) for c in zip(*sorted(
    (int.from_bytes(ext.encode().ljust(_EXT_MAX, b"\0"), "big"), code) for ext, code in EXT_FORMATS.items())))
_TAIL = _EXT_MAX + 1  # a dot and the longest known extension
_TAIL_WEIGHTS = 256 ** np.arange(_TAIL - 1, -1, -1, dtype=np.int64)
_ROWS_PER_PASS = 1 << 16  # bounds the (rows, width) temporaries whatever the member count


def formats_for_name_fields(fields: np.ndarray) -> np.ndarray:
    """:func:`format_for_name` of every row of (n, w) NUL-padded raw name bytes, without decoding names."""
    codes = np.zeros(len(fields), np.uint8)
    for start in range(0, len(fields), _ROWS_PER_PASS):
        codes[start : start + _ROWS_PER_PASS] = _formats_pass(fields[start : start + _ROWS_PER_PASS])
    return codes


def _last_true(mask: np.ndarray) -> np.ndarray:
    """Column of the last True of each row, -1 if none."""
    return np.where(mask.any(axis=1), mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1), -1)


def _name_tails(fields: np.ndarray) -> np.ndarray:
    """The last _TAIL bytes of each NUL-terminated name, zeros in front of short names."""
    n, width = fields.shape
    if width == 0:  # every name empty
        return np.zeros((n, _TAIL), fields.dtype)
    nul = fields == 0
    length = nul.argmax(axis=1)  # the name ends at its first NUL ...
    length[~nul[np.arange(n), length]] = width  # ... or fills the field
    at = length[:, None] + np.arange(-_TAIL, 0)
    tails = np.ascontiguousarray(fields).reshape(-1)[np.arange(0, n * width, width)[:, None] + np.maximum(at, 0)]
    tails[at < 0] = 0
    return tails


def _formats_pass(fields: np.ndarray) -> np.ndarray:
    tails = _name_tails(fields)
    # ASCII lower-casing is enough: no other character lower-cases to a letter of a known extension
    tails += ((tails >= ord("A")) & (tails <= ord("Z"))).view(np.uint8) * 32
    dot = _last_true(tails == ord("."))
    has_ext = (dot >= 0) & (_last_true(tails == ord("/")) < dot)  # a '/' after the last dot: no extension
    ext_bits = 8 * (_TAIL - 1 - np.maximum(dot, 0))
    key = ((tails @ _TAIL_WEIGHTS) & ((1 << ext_bits) - 1)) << (8 * _EXT_MAX - ext_bits)  # left-aligned
    at = np.minimum(np.searchsorted(_EXT_KEYS, key), len(_EXT_KEYS) - 1)
    return np.where(has_ext & (_EXT_KEYS[at] == key), _EXT_CODES[at], 0).astype(np.uint8)


def temp_path_for(path: str) -> str:
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.tmp-{os.getpid()}")


class TblWriter:
    """Write ``num_samples`` samples, then :meth:`commit` (or :meth:`abort`). Usable as a context manager.

    Samples go to the file from a writer thread, one batch behind the caller.
    """

    def __init__(self, path: str | os.PathLike[str], num_samples: int, *, version: int = 2,
                 lz4: bool = False, checksums: bool = True, durable: bool = True) -> None:
        if version not in (1, 2):
            raise WriteError(f"{path}: TBL version must be 1 or 2, not {version}")
        if version == 1 and lz4:
            raise WriteError(f"{path}: TBL v1 cannot hold LZ4-compressed samples; use version 2")
        if num_samples < 0:
            raise WriteError(f"{path}: negative sample count {num_samples}")
        self.path = os.fspath(path)
        self.version, self.num_samples, self.lz4, self.checksums = version, int(num_samples), lz4, checksums
        self.durable = durable
        self._compress = None
        if lz4:
            try:
                import lz4.block as lz4_block
            except ImportError:
                raise WriteError("LZ4 compression needs the optional 'lz4' package "
                                 "(pip install 'itar-browser[lz4]')") from None
            self._compress = lz4_block.compress
        fixed, dtype = (V1_HEADER_SIZE, V1_ENTRY) if version == 1 else (V2_HEADER_SIZE, V2_ENTRY)
        self.header_size = fixed + dtype.itemsize * self.num_samples
        if version == 1 and self.header_size > _U32_MAX:
            raise WriteError(f"{path}: {num_samples} samples need a header_size beyond u32")
        self._entry_dtype, self._index_at = dtype, fixed
        self.format_counts = np.zeros(256, np.int64)  # samples written, by format code
        self.compressed = 0  # samples stored as LZ4 blocks
        self.count = 0
        self._pos = self._written_back = self._step_before = self.header_size
        self._any_metadata = False
        self._meta = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - kept until commit; small: RAM; large: disk
        self.temp_path = temp_path_for(self.path)
        try:
            # unbuffered: samples go from the caller's buffers (e.g. a mapped tar) to the file in one copy
            self._fh = open(self.temp_path, "wb", buffering=0)  # noqa: SIM115 - closed in commit/abort
            self._fh.seek(self.header_size)
        except OSError as exc:
            raise WriteError(f"{self.path}: cannot create {self.temp_path}: {exc}") from exc
        # samples are written by one thread (os.writev releases the GIL) while the caller prepares the next batch
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tbl-writer")
        self._pending: Future[None] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def add(self, data: bytes | memoryview, fmt: int | str, width: int = 0, height: int = 0,
            metadata: Sequence[tuple[int | str, bytes]] = ()) -> int:
        """Append one sample (its raw, uncompressed bytes); returns its index."""
        fmt_code = FORMAT_CODES[fmt] if isinstance(fmt, str) else int(fmt)
        return self.add_batch([data], np.array([fmt_code]), np.array([width]), np.array([height]),
                              [list(metadata)] if metadata else None)

    def add_batch(self, datas: Sequence[bytes | memoryview], formats: np.ndarray, widths: np.ndarray | None = None,
                  heights: np.ndarray | None = None, metadata: Sequence[Sequence[tuple[int | str, bytes]]] | None = None,
                  ) -> int:
        """Append many samples at once (CRCs computed together); returns the index of the first.

        The samples are written in the background: their buffers must stay valid until the next
        add_batch, :meth:`wait`, :meth:`commit` or :meth:`abort` returns.
        """
        first, n = self.count, len(datas)
        if first + n > self.num_samples:
            raise WriteError(f"{self.path}: more samples than the {self.num_samples} declared")
        e = np.zeros(n, dtype=self._entry_dtype)
        e["format"] = formats
        raw_sizes = np.fromiter(map(len, datas), dtype=np.int64, count=n)
        if (raw_sizes > _U32_MAX).any():
            raise WriteError(f"{self.path}: a sample is larger than 4 GiB, which TBL sizes (u32) cannot hold")
        if self.version == 2:
            e["uncompressed_size"] = raw_sizes
            e["width"] = 0 if widths is None else widths
            e["height"] = 0 if heights is None else heights
            if self.checksums:
                e["crc16"] = crc16_modbus_many(datas)
        flags = np.zeros(n, dtype=np.uint8)
        stored, stored_sizes = datas, raw_sizes
        if self._compress is not None:
            stored = self._compressed(datas, flags)
            stored_sizes = np.fromiter(map(len, stored), dtype=np.int64, count=n)
        e["offset"] = self._pos + np.concatenate(([0], np.cumsum(stored_sizes)[:-1])) if n else 0
        e["size"] = stored_sizes
        self._pos += int(stored_sizes.sum())
        if metadata is not None:
            for k, blocks in enumerate(metadata):
                for kind, payload in blocks:
                    self._add_metadata(first + k, kind, payload)
                    flags[k] |= ENTRY_HAS_METADATA
        if self.version == 2:
            e["flags"] = flags
        self.wait()
        self._pending = self._io.submit(self._write_samples, stored, self._pos, e,
                                        self._index_at + first * e.itemsize)
        self.format_counts += np.bincount(e["format"], minlength=256)
        self.compressed += int(np.count_nonzero(flags & ENTRY_COMPRESSED))
        self.count += n
        return first

    def _compressed(self, datas: Sequence[bytes | memoryview], flags: np.ndarray) -> list[bytes | memoryview]:
        stored = list(datas)
        for k, data in enumerate(datas):
            if len(data):
                packed = self._compress(data, store_size=False)
                if len(packed) < len(data):  # keep the LZ4 block only when it saves space
                    stored[k] = packed
                    flags[k] |= ENTRY_COMPRESSED
        return stored

    def wait(self) -> None:
        """Return once every sample added so far is in the file (so their buffers may go)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            try:
                pending.result()
            except OSError as exc:
                raise WriteError(f"{self.path}: cannot write: {exc}") from exc

    def _write_samples(self, buffers: Sequence[bytes | memoryview], end: int, entries: np.ndarray,
                       entries_at: int) -> None:
        write_all(self._fh.fileno(), buffers)
        pwrite_all(self._fh.fileno(), entries.view(np.uint8), entries_at)
        self._start_writeback(end)

    def _start_writeback(self, end: int) -> None:
        """Ask the kernel to start writing the file up to ``end``, so commit's fsync has little left to wait for.

        Done when not durable too: a large output then neither piles up dirty pages nor
        pushes other files out of the page cache, and the writer reuses the pages it freed.

        POSIX_FADV_DONTNEED starts writeback of dirty pages without waiting for it and drops
        clean ones; so each request also covers the step before, written back by now.
        """
        if end - self._written_back >= _WRITEBACK_STEP and hasattr(os, "posix_fadvise"):
            os.posix_fadvise(self._fh.fileno(), self._step_before, end - self._step_before, os.POSIX_FADV_DONTNEED)
            self._step_before, self._written_back = self._written_back, end

    def _add_metadata(self, index: int, kind: int | str, payload: bytes) -> None:
        if self.version == 1:
            raise WriteError(f"{self.path}: TBL v1 has no metadata section; use version 2")
        code = META_TYPE_CODES[kind] if isinstance(kind, str) else int(kind)
        self._meta.write(struct.pack("<QIHH", index, len(payload), code, 0))
        self._meta.write(payload)
        self._any_metadata = True

    def _header(self, metadata_size: int) -> bytes:
        if self.version == 1:
            return struct.pack("<4sIQI12x", MAGIC_V1, 1, self.num_samples, self.header_size)
        flags = (FILE_COMPRESSED if self.lz4 else 0) | (FILE_HAS_CHECKSUMS if self.checksums else 0)
        flags |= FILE_HAS_METADATA if self._any_metadata else 0
        meta_offset = self._pos if metadata_size else 0
        head = bytearray(struct.pack("<4sIQI4xQQII16x", MAGIC_V2, 2, self.num_samples, self.header_size,
                                     meta_offset, metadata_size, flags, 0))
        struct.pack_into("<I", head, 44, zlib.crc32(head))
        return bytes(head)

    def commit(self) -> str:
        """Write metadata, index and header; fsync (when durable); rename over the target. Returns the path."""
        try:
            if self.count != self.num_samples:
                raise WriteError(f"{self.path}: {self.count} samples written but {self.num_samples} declared")
            self.wait()
            self._io.shutdown()
            meta_size = self._meta.tell()
            self._meta.seek(0)
            fd = self._fh.fileno()
            while chunk := self._meta.read(8 << 20):
                write_all(fd, [chunk])
            pwrite_all(fd, self._header(meta_size), 0)
            if self.durable:
                os.fsync(fd)
            self._fh.close()
            os.replace(self.temp_path, self.path)
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.path}: cannot write: {exc}") from exc
        except BaseException:
            self.abort()
            raise
        finally:
            self._meta.close()
        return self.path

    def abort(self) -> None:
        """Drop the temp file; the target is left as it was."""
        if self._pending is not None:
            self._pending.exception()  # let a write in flight end before the file closes; its error no longer matters
            self._pending = None
        self._io.shutdown()
        self._meta.close()
        if not self._fh.closed:
            self._fh.close()
        try:
            os.unlink(self.temp_path)
        except FileNotFoundError:
            pass


def write_all(fd: int, buffers: Sequence[bytes | memoryview | np.ndarray]) -> None:
    """Write byte buffers in order with os.writev (IOV_MAX at a time), finishing any short write."""
    for start in range(0, len(buffers), _IOV_MAX):
        group = buffers[start : start + _IOV_MAX]
        done = os.writev(fd, group)
        if done < sum(map(len, group)):  # e.g. Linux caps one call at about 2 GiB
            _write_rest(fd, group, done)


def pwrite_all(fd: int, data: bytes | np.ndarray, offset: int) -> None:
    """Write ``data`` at ``offset`` (the file position is left alone), finishing any short write."""
    view = memoryview(data).cast("B")
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def _write_rest(fd: int, group: Sequence[bytes | memoryview | np.ndarray], done: int) -> None:
    for buf in group:
        view = memoryview(buf).cast("B")
        if done >= len(view):
            done -= len(view)
            continue
        view, done = view[done:], 0
        while view:
            view = view[os.write(fd, view) :]


def write_tbl(path: str | os.PathLike[str], samples: Sequence[tuple[bytes, int | str]], *, version: int = 2,
              lz4: bool = False, metadata: dict[int, list[tuple[int | str, bytes]]] | None = None,
              dims: bool = True) -> str:
    """Write a whole TBL from (data, format) pairs; v2 width/height come from the image headers."""
    with TblWriter(path, len(samples), version=version, lz4=lz4) as writer:
        for i, (data, fmt) in enumerate(samples):
            code = FORMAT_CODES[fmt] if isinstance(fmt, str) else int(fmt)
            w, h = image_size(data, code) if version == 2 and dims else (0, 0)
            writer.add(data, fmt, w, h, (metadata or {}).get(i, ()))
    return os.fspath(path)
