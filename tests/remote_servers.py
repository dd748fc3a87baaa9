"""Loopback test servers for remote storage: moto's S3 and a plain HTTP range server with faults.

Both listen on 127.0.0.1 on a free port and are started once per test session (the
fixtures in tests/conftest.py). Tests isolate themselves by prefix / sub-folder
(:meth:`S3Server.upload`, :meth:`RangeHTTPServer.serve`) and set faults per test; the
fixture resets faults after each test. This is test scaffolding, not product code:
itarcore itself talks to both through fsspec only.
"""
from __future__ import annotations

import os
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BUCKET = "itar-test"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class S3Server:
    """moto's ThreadedMotoServer on 127.0.0.1:<free port>, with one bucket."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.bucket = BUCKET
        self.storage_options: dict[str, Any] = {
            "key": "testing", "secret": "testing-secret-key",
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"},
        }
        import boto3  # s3fs's mkdir sends a location constraint moto refuses for us-east-1

        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing-secret-key").create_bucket(Bucket=self.bucket)

    def fs(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(**self.storage_options)

    def url(self, *parts: str) -> str:
        return "s3://" + "/".join([self.bucket, *[p.strip("/") for p in parts if p]])

    def upload(self, folder: str | os.PathLike[str], prefix: str | None = None,
               names: list[str] | None = None) -> str:
        """Upload the files of ``folder`` (or just ``names``) under a new prefix; returns its s3:// URL."""
        prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
        fs = self.fs()
        for path in sorted(Path(folder).iterdir()):
            if path.is_file() and (names is None or path.name in names):
                fs.put_file(str(path), f"{self.bucket}/{prefix}/{path.name}")
        fs.invalidate_cache()
        return self.url(prefix)

    def stop(self) -> None:
        self._server.stop()


HOLD_LIMIT_S = 60  # a held body goes out by itself after this, so a forgotten release cannot hang a run


@dataclass
class Faults:
    """What the HTTP server does wrong, for requests whose path ends with ``only`` (all when empty)."""

    only: str = ""
    ignores_range: bool = False
    fail_status: int = 503
    fail_times: int = 0  # answer fail_status to this many requests, then serve normally
    cut_short_times: int = 0  # send half the promised body to this many GETs, then close
    delay: float = 0.0  # seconds to wait before each body (GET)
    held: threading.Event | None = None  # GET bodies wait until this is set (at most HOLD_LIMIT_S)
    no_listing: bool = False  # folders answer 404, as most static web hosts do
    log: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Range header)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def applies(self, path: str) -> bool:
        return not self.only or path.endswith(self.only)


class _Handler(SimpleHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _serve(self, head: bool) -> None:
        faults = self.server.faults
        path = self.path.split("?", 1)[0]
        with faults.lock:
            faults.log.append(("HEAD" if head else "GET", path, self.headers.get("Range", "")))
            hit = faults.applies(path)
            if hit and faults.fail_times > 0:
                faults.fail_times -= 1
                self.send_error(faults.fail_status)
                return
            cut = hit and not head and faults.cut_short_times > 0
            if cut:
                faults.cut_short_times -= 1
        local = Path(self.translate_path(path))
        if local.is_dir() and faults.no_listing:
            self.send_error(404)
            return
        if local.is_dir() or not local.is_file():
            super().do_HEAD() if head else super().do_GET()
            return
        stat = local.stat()
        size = stat.st_size
        start, end, status = 0, size, 200
        wanted = self.headers.get("Range")
        if wanted and not (hit and faults.ignores_range):
            m = _RANGE.match(wanted.strip())
            if not m or (not m[1] and not m[2]):
                self.send_error(416)
                return
            if m[1]:
                start, end = int(m[1]), min(size, int(m[2]) + 1 if m[2] else size)
            else:
                start = max(0, size - int(m[2]))
            if start >= size or start >= end:
                self.send_error(416)
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{stat.st_mtime_ns:x}-{size:x}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        if cut:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if head:
            return
        if hit and faults.delay:
            time.sleep(faults.delay)
        if hit and faults.held is not None:
            faults.held.wait(HOLD_LIMIT_S)
        with open(local, "rb") as fh:  # only the bytes asked for, as a store does: a request costs its range
            fh.seek(start)
            body = fh.read(end - start)
        self.wfile.write(body[: len(body) // 2] if cut else body)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    faults: Faults


class RangeHTTPServer:
    """http.server over a folder on 127.0.0.1:<free port>, with Range support and switchable faults.

    A ranged GET reads only its range from the file, so its cost does not grow with the
    file's size, as on a real object store (moto's does: it copies the whole object per GET).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        root_str = str(self.root)

        class Handler(_Handler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=root_str, **kwargs)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.faults = Faults()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="range-http", daemon=True)
        self._thread.start()

    @property
    def faults(self) -> Faults:
        return self._server.faults

    def serve(self, folder: str | os.PathLike[str], names: list[str] | None = None) -> str:
        """Copy ``folder``'s files (or just ``names``) into a new sub-folder; returns its URL."""
        sub = f"t-{uuid.uuid4().hex[:12]}"
        (self.root / sub).mkdir()
        for path in sorted(Path(folder).iterdir()):
            if path.is_file() and (names is None or path.name in names):
                shutil.copyfile(path, self.root / sub / path.name)
        return f"{self.url}/{sub}"

    # faulty variants (reset after each test by the fixture)
    def ignores_range(self, only: str = "") -> None:
        self.faults.ignores_range, self.faults.only = True, only

    def fails_n_times(self, status: int, n: int, only: str = "") -> None:
        self.faults.fail_status, self.faults.fail_times, self.faults.only = status, n, only

    def cuts_short(self, n: int = 1, only: str = "") -> None:
        self.faults.cut_short_times, self.faults.only = n, only

    def slow(self, seconds: float, only: str = "") -> None:
        self.faults.delay, self.faults.only = seconds, only

    def hold_back(self, only: str = "") -> threading.Event:
        """GET bodies wait until the returned event is set: a server that is slow for as long as a test needs."""
        self.faults.held, self.faults.only = threading.Event(), only
        return self.faults.held

    def no_listing(self) -> None:
        self.faults.no_listing = True

    def reset(self) -> None:
        if self.faults.held is not None:
            self.faults.held.set()
        self._server.faults = Faults()

    def requests(self, method: str = "GET", suffix: str = "") -> list[tuple[str, str, str]]:
        return [r for r in self.faults.log if r[0] == method and r[1].endswith(suffix)]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
