"""Ranged reads of one file: local through a read-only mmap (zero copy), remote through fsspec.

Remote reads are retried with backoff on transient failures (5xx, timeouts, resets,
short reads); a server that ignores ``Range`` is detected, never taken for the bytes
asked for (a small file is then kept whole and sliced, a big one refused).
"""
from __future__ import annotations

import bisect
import mmap
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .names import StorageError, display_name, scrub
from .retry import call_with_retries, describe_failure

if TYPE_CHECKING:
    from typing_extensions import Self

# a server that ignores Range sends the whole file; files up to this size are then kept and sliced
WHOLE_BODY_LIMIT = 64 << 20
# read_ranges merges ranges closer than this into one request, up to MERGED_LIMIT bytes
MERGE_GAP, MERGED_LIMIT = 64 << 10, 16 << 20


@dataclass
class FetchStats:
    """What remote reads cost: bytes received, requests made, seconds spent waiting (thread-safe)."""

    bytes_fetched: int = 0
    requests: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, nbytes: int = 0, requests: int = 0, seconds: float = 0.0) -> None:
        with self._lock:
            self.bytes_fetched += nbytes
            self.requests += requests
            self.seconds += seconds

    def as_dict(self) -> dict[str, float | int]:
        rate = self.bytes_fetched / self.seconds if self.seconds > 0 else 0.0
        return {"bytes_fetched": self.bytes_fetched, "requests": self.requests, "seconds": round(self.seconds, 3),
                "bytes_per_second": round(rate)}


class RangedSource(ABC):
    """One open file, local (mmap) or remote (fsspec), read by byte ranges. Use :func:`open_source`."""

    name: str
    size: int
    identity: tuple
    stats: FetchStats
    is_remote = False

    @abstractmethod
    def read(self, offset: int, length: int) -> bytes | memoryview:
        """Exactly ``length`` bytes at ``offset``, or :class:`StorageError`."""

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes | memoryview]:
        """The bytes of each ``(offset, length)``, in order (one batched round trip for remote files)."""
        return [self.read(offset, length) for offset, length in ranges]

    def buffer(self) -> memoryview | None:
        """The whole file as a zero-copy view for local files; None for remote ones."""
        return None

    def release(self, offset: int, length: int) -> None:
        """Drop ``[offset, offset+length)`` from this process's resident memory (local mmap only)."""

    def close(self) -> None:
        pass

    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise StorageError(f"{self.name}: bytes [{offset}, {offset + length}) lie outside the file "
                               f"({self.size} bytes)")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalSource(RangedSource):
    """A local file over a read-only mmap: reads are zero-copy slices."""

    def __init__(self, path: str) -> None:
        self.name = path
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            self.size = st.st_size
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        self.stat = st
        self.identity = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        self.stats = FetchStats()

    @property
    def mapping(self) -> mmap.mmap | None:
        return self._map

    def read(self, offset: int, length: int) -> memoryview:
        self._check_range(offset, length)
        return self.buffer()[offset : offset + length]

    def buffer(self) -> memoryview:
        if self._map is None:
            if self.size:
                raise StorageError(f"{self.name}: read after close")
            return memoryview(b"")
        return memoryview(self._map)

    def release(self, offset: int, length: int) -> None:
        mapping = self._map
        if mapping is None or length <= 0 or not hasattr(mapping, "madvise"):
            return
        first = offset // mmap.PAGESIZE * mmap.PAGESIZE
        end = min(len(mapping), offset + length)
        if end > first:
            mapping.madvise(mmap.MADV_DONTNEED, first, end - first)

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a caller still holds a view; the map closes when it is collected
                return
            self._map = None


class RemoteSource(RangedSource):
    """A file behind an fsspec filesystem, read with ranged requests."""

    is_remote = True

    def __init__(self, url: str, fs: Any, path: str, info: dict, retries: int, secrets: Sequence[str]) -> None:
        self.url, self.name, self.fs, self.path = url, display_name(url), fs, path
        self.retries, self._secrets = retries, tuple(secrets)
        size = info.get("size")
        if size is None:
            raise StorageError(f"{self.name}: the server did not say how big the file is (no Content-Length)")
        self.size = int(size)
        tag = next((info[k] for k in ("ETag", "etag", "LastModified", "Last-Modified", "mtime", "last_modified")
                    if info.get(k) is not None), "")
        self.identity = (self.name, self.size, str(tag))
        self.stats = FetchStats()
        self._whole: bytes | None = None  # the whole body, once a server ignored Range on a small file

    def _fetch(self, offset: int, length: int) -> bytes:
        if self._whole is not None:
            return self._whole[offset : offset + length]
        started = time.perf_counter()
        data = self.fs.cat_file(self.path, start=offset, end=offset + length)
        self.stats.add(len(data), 1, time.perf_counter() - started)
        return self._checked(data, offset, length)

    def _checked(self, data: bytes, offset: int, length: int) -> bytes:
        if len(data) == length:
            return data
        if len(data) == self.size and length < self.size:  # 200 with the whole file: Range ignored
            if self.size > WHOLE_BODY_LIMIT:
                raise StorageError(f"{self.name}: bytes [{offset}, {offset + length}): the server ignored the "
                                   f"Range header and sent the whole {self.size}-byte file; refusing to download "
                                   "it for every read")
            self._whole = bytes(data)
            return self._whole[offset : offset + length]
        raise ShortReadError(f"short read: got {len(data)} of {length} bytes")

    def read(self, offset: int, length: int) -> bytes:
        self._check_range(offset, length)
        if length == 0:
            return b""
        return call_with_retries(lambda: self._fetch(offset, length), self.retries,
                                 lambda exc: self._error(exc, offset, length))

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        for offset, length in ranges:
            self._check_range(offset, length)
        if self._whole is not None or len(ranges) <= 1:
            return [self.read(o, n) for o, n in ranges]
        spans = merge_ranges(ranges)
        started = time.perf_counter()
        try:
            got = self.fs.cat_ranges([self.path] * len(spans), [s for s, _ in spans], [e for _, e in spans],
                                     on_error="return")
        except Exception as exc:  # noqa: BLE001 - the batch failed whole: each span is retried (and reported) alone
            got = [exc] * len(spans)
        self.stats.add(sum(len(g) for g in got if isinstance(g, bytes)), len(spans), time.perf_counter() - started)
        blobs = {}
        for (start, end), data in zip(spans, got):
            try:
                if not isinstance(data, bytes):
                    raise data
                blobs[start] = self._checked(data, start, end - start)
            except Exception:  # noqa: BLE001 - retried (and reported) one span at a time below
                blobs[start] = self.read(start, end - start)
        starts = [s for s, _ in spans]
        out: list[bytes | memoryview] = []
        for offset, length in ranges:
            if not length:
                out.append(b"")
                continue
            start = starts[bisect.bisect_right(starts, offset) - 1]
            out.append(memoryview(blobs[start])[offset - start : offset - start + length])
        return out

    def _error(self, exc: BaseException, offset: int, length: int) -> StorageError:
        said = scrub(describe_failure(exc), (self.url, self.path), self.name, self._secrets)
        return StorageError(f"{self.name}: bytes [{offset}, {offset + length}): {said}")


class ShortReadError(OSError):
    """A response held fewer (or other) bytes than the range asked for (retried)."""


def merge_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted (start, end) spans covering every non-empty range; near ranges share a span."""
    spans: list[list[int]] = []
    for offset, length in sorted(r for r in ranges if r[1] > 0):
        end = offset + length
        if spans and offset - spans[-1][1] <= MERGE_GAP and end - spans[-1][0] <= MERGED_LIMIT:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([offset, end])
    return [(s, e) for s, e in spans]


