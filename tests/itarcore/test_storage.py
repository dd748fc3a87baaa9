"""itarcore.storage: local mmap and remote (moto S3, loopback HTTP) ranged reads, retries, faults, secrets."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from itarcore.storage import (
    LocalSource,
    StorageError,
    display_name,
    is_url,
    join,
    list_files,
    merge_ranges,
    open_source,
    parse_storage_options,
    write_atomic,
)

SHARD = "train_0001.tar"


def _ranges(size: int) -> list[tuple[int, int]]:
    return [(0, 512), (512, 1), (size - 700, 700), (10_000, 0), (70_000, 5_000), (71_000, 100), (size - 1, 1)]


def test_names_and_options():
    assert is_url("s3://b/k") and is_url("https://h/x") and not is_url("/tmp/x") and not is_url("file:///tmp/x")
    assert display_name("https://user:pw@h.example/a.taridx?X-Amz-Signature=abc&part=1") == \
        "https://h.example/a.taridx?X-Amz-Signature=***&part=1"
    assert parse_storage_options(["anon=true", "client_kwargs={\"a\": 1}", "key=abc"]) == \
        {"anon": True, "client_kwargs": {"a": 1}, "key": "abc"}
    with pytest.raises(StorageError, match="KEY=VALUE"):
        parse_storage_options(["novalue"])
    assert join("s3://b/ds/", "x.tar") == "s3://b/ds/x.tar" and join("/a/b", "x") == os.path.join("/a/b", "x")
    assert merge_ranges([(100, 10), (0, 10), (5, 3), (200_000, 1), (50, 0)]) == [(0, 110), (200_000, 200_001)]


def test_local_source_is_the_mmap(webds: Path):
    path = webds / SHARD
    raw = path.read_bytes()
    with open_source(path) as src:
        assert isinstance(src, LocalSource) and src.size == len(raw) and not src.is_remote
        assert bytes(src.buffer()) == raw
        assert [bytes(b) for b in src.read_ranges(_ranges(len(raw)))] == [raw[o:o + n] for o, n in _ranges(len(raw))]
        with pytest.raises(StorageError, match=r"\[307100, 307300\)"):
            src.read(len(raw) - 100, 200)


@pytest.fixture(params=["s3", "http"])
def remote_folder(request, webds: Path):
    """(URL of a copy of the webds folder, storage options) on each loopback server."""
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        return server.upload(webds), server.storage_options
    server = request.getfixturevalue("http_server")
    return server.serve(webds), None


def test_remote_reads_equal_local_bytes(remote_folder, webds: Path):
    url, options = remote_folder
    raw = (webds / SHARD).read_bytes()
    with open_source(join(url, SHARD), options) as src:
        assert src.is_remote and src.size == len(raw) and src.buffer() is None
        assert src.identity[:2] == (display_name(join(url, SHARD)), len(raw)) and src.identity[2]
        assert bytes(src.read(1000, 3000)) == raw[1000:4000]
        got = src.read_ranges(_ranges(len(raw)))
        assert [bytes(b) for b in got] == [raw[o:o + n] for o, n in _ranges(len(raw))]
        assert src.stats.requests >= 2 and src.stats.bytes_fetched >= 3000
        with pytest.raises(StorageError, match="outside the file"):
            src.read(len(raw), 1)
    listed = dict(list_files(url, options, suffix=".tar"))
    assert listed == {p.name: p.stat().st_size for p in webds.iterdir() if p.name.endswith(".tar")}
    names_only = dict(list_files(url, options, suffix=".tar", sizes=False))
    assert names_only.keys() == listed.keys() and all(names_only[n] in (listed[n], -1) for n in listed)


def test_missing_remote_file_names_the_url(remote_folder):
    url, options = remote_folder
    with pytest.raises(StorageError) as err:
        open_source(join(url, "nope.tar"), options)
    assert display_name(join(url, "nope.tar")) in str(err.value) and "not found" in str(err.value)


def test_write_atomic_local_and_s3(tmp_path: Path, s3_server):
    write_atomic(tmp_path / "a.bin", b"hello")
    assert (tmp_path / "a.bin").read_bytes() == b"hello"
    url = s3_server.url("written", "a.bin")
    write_atomic(url, b"remote bytes", s3_server.storage_options)
    with open_source(url, s3_server.storage_options) as src:
        assert bytes(src.read(0, src.size)) == b"remote bytes"


def test_retries_then_success(http_server, webds: Path):
    raw = (webds / SHARD).read_bytes()
    url = join(http_server.serve(webds), SHARD)
    src = open_source(url)
    http_server.fails_n_times(503, 2)
    assert bytes(src.read(512, 4096)) == raw[512:4608]
    assert len(http_server.requests("GET", SHARD)) == 3
    http_server.cuts_short(2)
    assert bytes(src.read(8192, 20_000)) == raw[8192:28192]


def test_persistent_failure_is_one_clear_error(http_server, webds: Path):
    url = join(http_server.serve(webds), SHARD)
    src = open_source(url, retries=2)
    http_server.fails_n_times(503, 10)
    with pytest.raises(StorageError) as err:
        src.read(1024, 100)
    text = str(err.value)
    assert url in text and "[1024, 1124)" in text and "503" in text and "3 attempts" in text
    http_server.reset()
    http_server.cuts_short(10)
    with pytest.raises(StorageError, match=r"\[2048, 12048\).*3 attempts"):
        src.read(2048, 10_000)


def test_range_ignored_is_detected_not_misread(http_server, webds: Path, monkeypatch):
    raw = (webds / SHARD).read_bytes()
    url = join(http_server.serve(webds), SHARD)
    http_server.ignores_range()
    with open_source(url) as src:  # small file: the whole body is kept and sliced, correctly
        assert bytes(src.read(5000, 100)) == raw[5000:5100]
        assert [bytes(b) for b in src.read_ranges([(0, 10), (300_000, 7)])] == [raw[:10], raw[300_000:300_007]]
    monkeypatch.setattr("itarcore.storage.sources.WHOLE_BODY_LIMIT", 1000)
    with open_source(url) as src, pytest.raises(StorageError, match=r"ignored the Range header.*") as err:
        src.read(5000, 100)
    assert url in str(err.value) and "[5000, 5100)" in str(err.value)


def test_secret_storage_option_never_in_errors(s3_server):
    options = dict(s3_server.storage_options, secret="SUPERSECRET-do-not-print")
    with pytest.raises(StorageError) as err:
        open_source(s3_server.url("no-such", "file.taridx"), options)
    assert "SUPERSECRET" not in str(err.value) and "testing" not in str(err.value)


def test_silent_server_times_out_with_one_clear_error(http_server, webds: Path, monkeypatch):
    monkeypatch.setenv("ITARCORE_HTTP_TIMEOUT", "0.3")
    url = join(http_server.serve(webds), SHARD)
    src = open_source(url, retries=1)
    http_server.slow(1.0, only=".tar")  # each body waits longer than the client listens
    with pytest.raises(StorageError) as err:
        src.read(4096, 512)
    assert url in str(err.value) and "[4096, 4608)" in str(err.value) and "timed out" in str(err.value)
    assert "2 attempts" in str(err.value)
    http_server.reset()
    assert bytes(src.read(4096, 512)) == (webds / SHARD).read_bytes()[4096:4608]


def test_core_runs_without_the_remote_extra(webds: Path):
    """fsspec blocked: local files work as before, and a URL says which extra to install."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import sys
        for name in ("fsspec", "s3fs", "aiohttp"):
            sys.modules[name] = None  # import fails as if not installed
        from itarcore.cli import main
        from itarcore.dataset import Dataset
        with Dataset.open({str(webds / "val.taridx")!r}) as ds:
            assert len(ds.read_payload(0)) == int(ds.rows[0]["size"])
        assert main(["info", {str(webds / "val.taridx")!r}]) == 0
        sys.exit(main(["info", "s3://bucket/ds/val.taridx"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("itarcore: error: s3://bucket/ds/val.taridx: reading URLs needs fsspec: "
                                   "pip install 'itar-browser[remote]'")


def test_batched_reads_survive_a_failing_batch(http_server, webds: Path, monkeypatch):
    raw = (webds / SHARD).read_bytes()
    src = open_source(join(http_server.serve(webds), SHARD))

    def broken(*args, **kwargs):
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(src.fs, "cat_ranges", broken)
    ranges = [(0, 512), (200_000, 300), (300_000, 17)]
    assert [bytes(b) for b in src.read_ranges(ranges)] == [raw[o:o + n] for o, n in ranges]
    http_server.fails_n_times(404, 1)
    with pytest.raises(StorageError, match=r"\[0, 512\).*not found"):
        src.read_ranges(ranges)


def test_opening_urls_reuses_fsspecs_filesystem(s3_server, http_server, webds: Path):
    """fsspec keeps one filesystem per protocol and options: our options (an HTTP timeout made per call among
    them) must not defeat that, or every open would build a client again (a few hundred ms for S3)."""
    import threading

    from itarcore.storage import filesystem

    s3_url = s3_server.upload(webds, names=[SHARD])
    http_url = http_server.serve(webds, names=[SHARD])
    for url, options in ((s3_url, s3_server.storage_options), (http_url, None)):
        first = filesystem(f"{url}/{SHARD}", options)[0]
        copied = {k: dict(v) if isinstance(v, dict) else v for k, v in (options or {}).items()}
        assert filesystem(f"{url}/other.tar", copied)[0] is first
        with open_source(f"{url}/{SHARD}", copied) as source:
            assert source.fs is first
        elsewhere: list = []
        thread = threading.Thread(target=lambda u=url, o=copied, out=elsewhere: out.append(filesystem(f"{u}/{SHARD}", o)[0]))
        thread.start()
        thread.join()
        assert elsewhere == [first]
