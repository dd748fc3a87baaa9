"""Open a local path or a URL for ranged reads: the one door to storage.

Local paths keep the zero-copy mmap route (:meth:`RangedSource.buffer` is the whole
file). URLs (``s3://``, ``https://``, ``gs://``, ``hf://`` …) go through fsspec, which is
imported only when a URL is opened, so the core runs without the ``remote`` extra.
Every error names the URL (credentials stripped), the byte range and what the server
said; storage options are never printed.

    with open_source("s3://bucket/ds/train_0000.tar", {"anon": True}) as src:
        header = src.read(0, 512)                     # exact length or StorageError
        parts = src.read_ranges([(512, 100), (4096, 10)])   # one batched round trip
        src.stats.as_dict()                           # bytes fetched, requests, seconds
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .names import (
    StorageError,
    absolute,
    basename,
    display_name,
    is_url,
    join,
    local_path,
    parent,
    parse_storage_options,
    scrub,
    secret_values,
)
from .retry import RETRIES, call_with_retries, describe_failure, is_transient
from .sources import FetchStats, LocalSource, RangedSource, RemoteSource, merge_ranges

if TYPE_CHECKING:
    from ..progress import CancelToken, ProgressCallback

__all__ = ["FetchStats", "LocalSource", "RangedSource", "RemoteSource", "StorageError", "absolute", "basename",
           "call_with_retries", "describe_failure", "display_name", "fetch_to_file", "filesystem", "is_transient",
           "is_url", "join", "list_files", "local_copy", "local_path", "merge_ranges", "open_source", "parent",
           "parse_storage_options", "remote_call", "scrub", "secret_values", "write_atomic"]
COPY_CHUNK = 16 << 20  # bytes per ranged read when a whole remote file is fetched


def filesystem(url: str, storage_options: dict | None = None) -> tuple[Any, str]:
    """(fsspec filesystem, path) for ``url``; a clear error when the ``remote`` extra is missing."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise StorageError(f"{display_name(url)}: reading URLs needs fsspec: pip install 'itar-browser[remote]'") \
            from None
    try:
        return url_to_fs(url, **_http_options(url, storage_options or {}))
    except (ImportError, ValueError) as exc:
        said = scrub(str(exc), (url,), display_name(url), secret_values(storage_options))
        raise StorageError(f"{display_name(url)}: cannot open this kind of URL: {said}") from None


def _http_options(url: str, options: dict) -> dict:
    """Options fit for HTTP(S): ``anon`` dropped (HTTP is anonymous unless headers say otherwise, and
    aiohttp refuses the keyword), and without a timeout of the caller's, a server that stops answering
    fails (and is retried) after ``ITARCORE_HTTP_TIMEOUT`` seconds of silence (default 60), instead of
    aiohttp's 5 minutes."""
    if not url.lower().startswith(("http://", "https://")):
        return options
    options = {k: v for k, v in options.items() if k != "anon"}
    if "timeout" in options.get("client_kwargs", {}):
        return options
    import aiohttp

    seconds = float(os.environ.get("ITARCORE_HTTP_TIMEOUT") or 60)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)
    return {**options, "client_kwargs": {**options.get("client_kwargs", {}), "timeout": timeout}}


def remote_call(url: str, storage_options: dict | None, what: str, call: Any, retries: int = RETRIES) -> Any:
    """``call()`` with retries; failures become one StorageError naming the URL and ``what`` was tried."""
    secrets = secret_values(storage_options)

    def error(exc: BaseException) -> StorageError:
        said = scrub(describe_failure(exc), (url,), display_name(url), secrets)
        return StorageError(f"{display_name(url)}: {what}: {said}")

    return call_with_retries(call, retries, error)


def open_source(path_or_url: str | os.PathLike[str], storage_options: dict | None = None, *,
                retries: int = RETRIES) -> RangedSource:
    """Open a local file (mmap) or a URL (fsspec) for ranged reads."""
    text = os.fspath(path_or_url)
    if not is_url(text):
        return LocalSource(local_path(text))
    fs, path = filesystem(text, storage_options)
    info = remote_call(text, storage_options, "cannot stat", lambda: fs.info(path), retries)
    if info.get("type") == "directory":
        raise StorageError(f"{display_name(text)}: is a folder, not a file")
    return RemoteSource(text, fs, path, info, retries, secret_values(storage_options))


def list_files(url_or_dir: str | os.PathLike[str], storage_options: dict | None = None,
               suffix: str | None = None, *, sizes: bool = True) -> list[tuple[str, int]]:
    """(name, size) of the files directly in a folder or under a URL prefix, sorted by name.

    ``sizes=False`` skips what sizes cost beyond the listing (an HTTP folder page has none:
    one HEAD per file); a size the listing lacks is then -1.
    """
    text = os.fspath(url_or_dir)
    if not is_url(text):
        folder = local_path(text)
        found = [(e.name, e.stat().st_size) for e in os.scandir(folder) if e.is_file()]
    else:
        fs, path = filesystem(text, storage_options)
        entries = remote_call(text, storage_options, "cannot list", lambda: fs.ls(path, detail=True))
        found = []
        for e in entries:
            name = basename(e["name"])
            if e.get("type", "file") != "file" or not name or (suffix is not None and not name.endswith(suffix)):
                continue
            size = e.get("size")
            if size is None and not sizes:
                size = -1
            elif size is None:  # an HTTP folder page names files without sizes: ask each one
                size = remote_call(e["name"], storage_options, "cannot stat", lambda e=e: fs.info(e["name"]))["size"]
            found.append((name, int(size if size is not None else 0)))
    return sorted((n, s) for n, s in found if suffix is None or n.endswith(suffix))


def write_atomic(url_or_path: str | os.PathLike[str], data_or_tmp_path: bytes | str | os.PathLike[str],
                 storage_options: dict | None = None) -> None:
    """Write a whole file: local paths via temp file + rename, stores in one upload (readers never see half)."""
    target = os.fspath(url_or_path)
    if not is_url(target):
        from ..atomic import atomic_write

        if isinstance(data_or_tmp_path, (bytes, bytearray, memoryview)):
            with atomic_write(local_path(target)) as fh:
                fh.write(data_or_tmp_path)
        else:
            try:
                os.replace(data_or_tmp_path, local_path(target))
            except OSError:  # another file system: copy into place atomically
                import shutil

                with atomic_write(local_path(target)) as fh, open(data_or_tmp_path, "rb") as src:
                    shutil.copyfileobj(src, fh, COPY_CHUNK)
                os.unlink(data_or_tmp_path)
        return
    fs, path = filesystem(target, storage_options)
    if isinstance(data_or_tmp_path, (bytes, bytearray, memoryview)):
        remote_call(target, storage_options, "cannot upload", lambda: fs.pipe_file(path, bytes(data_or_tmp_path)))
    else:
        source = os.fspath(data_or_tmp_path)
        remote_call(target, storage_options, "cannot upload", lambda: fs.put_file(source, path))


def fetch_to_file(source: RangedSource, out: Any, progress: ProgressCallback | None = None,
                  cancel: CancelToken | None = None, chunk: int = COPY_CHUNK) -> int:
    """Write the whole of ``source`` to the binary file ``out`` in ranged reads (retried); returns bytes."""
    from ..progress import ProgressReporter

    reporter = ProgressReporter(progress, source.size, "bytes", cancel)
    for offset in range(0, source.size, chunk):
        out.write(source.read(offset, min(chunk, source.size - offset)))
        reporter.update(min(source.size, offset + chunk))
    return source.size


@contextlib.contextmanager
def local_copy(path_or_url: str | os.PathLike[str], storage_options: dict | None = None, *,
               limit: int | None = None, source: RangedSource | None = None) -> Iterator[str]:
    """A local path holding the file: the path itself, or a temporary copy of a URL (removed after).

    ``limit`` refuses remote files bigger than that many bytes, before fetching anything.
    ``source``: the URL already open (it is read, not opened again, and left open).
    """
    if not is_url(path_or_url):
        yield local_path(path_or_url)
        return
    opened = contextlib.nullcontext(source) if source is not None else open_source(path_or_url, storage_options)
    with opened as remote:
        if limit is not None and remote.size > limit:
            raise StorageError(f"{remote.name}: {remote.size:,} bytes is more than the {limit:,} this command "
                               "fetches whole (set ITARCORE_REMOTE_COPY_LIMIT to allow more)")
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="itar-remote-")
        try:
            copy = os.path.join(folder, basename(path_or_url) or "remote")
            with open(copy, "wb") as fh:
                fetch_to_file(remote, fh)
            yield copy
        finally:
            shutil.rmtree(folder, ignore_errors=True)
