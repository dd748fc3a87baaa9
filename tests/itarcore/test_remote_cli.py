"""The read commands on URLs (loopback S3 and HTTP) print exactly what they print for the same local files.

Truth: the local route (mmap), which tests/itarcore/test_cli.py holds to the reference fixtures, ``tarfile``
and ``struct``. Remote output differs from local output only by the file's name (URL for path).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from itarcore.cli import main
from itarcore.formats.taridx import read_taridx

DATA = Path(__file__).parents[1] / "data"
WEBDS = DATA / "taridx" / "webds"


def run(capsysbinary, argv: list[str]) -> tuple[int, bytes, str]:
    code = main([str(a) for a in argv])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def members_of(fold: str) -> list[tuple[str, str]]:
    """(stem, extension) of each shard's first and last member (by tarfile)."""
    import tarfile

    picked = []
    for shard in sorted(WEBDS.glob(f"{fold}_*.tar")):
        with tarfile.open(shard) as tf:
            names = [m.name for m in tf.getmembers() if m.isfile()]
        picked += [tuple(name.rsplit("/", 1)[-1].split(".", 1)) for name in (names[0], names[-1])]
    return picked


def stems_of(fold: str) -> list[str]:
    """Stems from each shard's start and end, and every crash stem (they need the crash table)."""
    return list(read_taridx(WEBDS / f"{fold}.taridx").crash_stems) + [s for s, _ in members_of(fold)]


COMMANDS = [
    ["info"], ["info", "--json"], ["rows"], ["rows", "--json", "--start", "7", "--limit", "30"],
    ["verify"], ["verify", "--json"], ["verify", "--full"], ["verify", "--full", "--json"],
]


@pytest.fixture(params=["s3", "http"])
def remote(request, webds: Path):
    """(URL prefix of a copy of the webds folder, extra CLI arguments for its storage options)."""
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        return server.upload(webds), s3_args(server.storage_options)
    return request.getfixturevalue("http_server").serve(webds), []


def s3_args(options: dict) -> list[str]:
    return [f"--storage-option={k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in options.items()]


@pytest.mark.parametrize("fold", ["train", "val", "mixed"])
def test_read_commands_match_local(capsysbinary, remote, webds: Path, fold: str):
    url, extra = remote
    local_index, remote_index = webds / f"{fold}.taridx", f"{url}/{fold}.taridx"
    calls = [c[:1] + [None] + c[1:] for c in COMMANDS]
    calls += [["stem", None, s] for s in stems_of(fold)] + [["stem", None, stems_of(fold)[-1], "--json"]]
    calls += [["cat", None, stem, ext] for stem, ext in members_of(fold)] + [["cat", None, "no-such-stem", "jpg"]]
    for call in calls:
        here = run(capsysbinary, [local_index if a is None else a for a in call])
        there = run(capsysbinary, [remote_index if a is None else a for a in call] + extra)
        assert here[0] == there[0], (call, there[2])
        assert here[0] == 0 or call[0] == "verify" or call[2] == "no-such-stem", (call, here[2])
        assert there[1] == here[1].replace(str(local_index).encode(), remote_index.encode()), call
        assert there[2] == here[2].replace(str(local_index), remote_index), call


def test_local_index_with_remote_shards_and_the_reverse(capsysbinary, remote, webds: Path, tmp_path: Path):
    url, extra = remote
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(webds / "train.taridx", alone / "train.taridx")
    stem, ext = members_of("train")[-1]
    for call in (["rows", "--json"], ["stem", stem], ["cat", stem, ext], ["verify", "--full", "--json"]):
        args = call[:1] + [None] + call[1:]
        here = run(capsysbinary, [webds / "train.taridx" if a is None else a for a in args])
        mixed = run(capsysbinary, [alone / "train.taridx" if a is None else a for a in args] + ["--shards", url]
                    + extra)
        reverse = run(capsysbinary, [f"{url}/train.taridx" if a is None else a for a in args]
                      + ["--shards", str(webds)] + extra)
        assert here[0] == mixed[0] == reverse[0], (call, mixed[2], reverse[2])
        assert here[0] == 0 or call[0] == "verify"
        local = str(webds / "train.taridx").encode()
        assert mixed[1] == here[1].replace(local, str(alone / "train.taridx").encode()), call
        assert reverse[1] == here[1].replace(local, f"{url}/train.taridx".encode()), call
    # without --shards the lone index finds none: its payloads cannot be read
    code, _, err = run(capsysbinary, ["cat", alone / "train.taridx", stem, ext])
    assert code == 2 and "missing" in err


@pytest.mark.parametrize(("folder", "name", "extra"), [
    ("taco", "taco_3entries.tacozip", []), ("kastore", "example.trees", []), ("kastore", "multi_store.kas",
                                                                                ["--store", "1"]),
    ("tbl", "v2_lz4_meta.tbl", []), ("tbl", "v1_independent.tbl", []),
])
def test_small_header_formats_on_urls(capsysbinary, http_server, folder: str, name: str, extra: list[str]):
    url = f"{http_server.serve(DATA / folder, names=[name])}/{name}"
    local = DATA / folder / name
    for flags in ([], ["--json"]):
        here = run(capsysbinary, ["info", local, *flags, *extra])
        there = run(capsysbinary, ["info", url, *flags, *extra])
        assert here[0] == there[0] == 0, there[2]
        assert there[1] == here[1].replace(str(local).encode(), url.encode())


def test_kastore_dump_and_tbl_cat_verify_on_urls(capsysbinary, s3_server):
    url = s3_server.upload(DATA / "kastore", names=["example.trees"]) + "/example.trees"
    extra = s3_args(s3_server.storage_options)
    local = DATA / "kastore" / "example.trees"
    for key, flags in [("edges/left", []), ("edges/left", ["--json"]), ("provenances/record", []), ("nope", [])]:
        here = run(capsysbinary, ["kastore", "dump", local, key, *flags])
        there = run(capsysbinary, ["kastore", "dump", url, key, *flags, *extra])
        assert there == (here[0], here[1], here[2].replace(str(local), url))
        assert here[0] == (2 if key == "nope" else 0) and (key == "nope" or here[1])
    local = DATA / "tbl" / "v2_lz4_meta.tbl"
    url = s3_server.upload(DATA / "tbl", names=[local.name]) + "/" + local.name
    for n in (0, 1):
        assert run(capsysbinary, ["tbl", "cat", url, n, *extra]) == run(capsysbinary, ["tbl", "cat", local, n])
    here = run(capsysbinary, ["tbl", "verify", local, "--json"])
    there = run(capsysbinary, ["tbl", "verify", url, "--json", *extra])
    assert there[1] == here[1].replace(str(local).encode(), url.encode()) and there[0] == here[0] == 0


def test_remote_copy_limit_refuses_before_fetching(capsysbinary, http_server, monkeypatch):
    url = f"{http_server.serve(DATA / 'tbl', names=['v2_lz4_meta.tbl'])}/v2_lz4_meta.tbl"
    monkeypatch.setattr("itarcore.cli.remote.REMOTE_COPY_LIMIT", 100)
    code, out, err = run(capsysbinary, ["tbl", "cat", url, "0"])
    assert code == 2 and not out and url in err and "more than the 100" in err
    assert not http_server.requests("GET", ".tbl")  # refused from the size alone


def test_info_of_a_remote_shard_or_tszip_says_what_it_is(capsysbinary, http_server, webds: Path):
    url = http_server.serve(webds, names=["val_0000.tar"])
    local = run(capsysbinary, ["info", webds / "val_0000.tar"])
    there = run(capsysbinary, ["info", f"{url}/val_0000.tar"])
    assert there[0] == local[0] == 2 and there[2] == local[2].replace(str(webds / "val_0000.tar"),
                                                                      f"{url}/val_0000.tar")
    assert len(http_server.requests("GET", ".tar")) == 1  # the magic bytes only, not the shard
    tsz = DATA / "kastore" / "example.trees.tsz"
    url = http_server.serve(tsz.parent, names=[tsz.name])
    local = run(capsysbinary, ["info", tsz])
    assert run(capsysbinary, ["info", f"{url}/{tsz.name}"]) == (2, b"", local[2].replace(str(tsz),
                                                                                          f"{url}/{tsz.name}"))


def test_web_server_without_folder_pages(capsysbinary, http_server, webds: Path):
    """No listing: the numbered shards are found by name, and the output is the local output."""
    url = http_server.serve(webds)
    http_server.no_listing()
    stem, ext = members_of("train")[-1]
    for call in (["rows", "--json"], ["cat", stem, ext], ["verify", "--json"], ["verify", "--full", "--json"]):
        here = run(capsysbinary, [call[0], webds / "train.taridx", *call[1:]])
        there = run(capsysbinary, [call[0], f"{url}/train.taridx", *call[1:]])
        assert there == (here[0], here[1].replace(str(webds / "train.taridx").encode(), f"{url}/train.taridx".encode()),
                         here[2]), call
    heads = {r[1].rsplit("/", 1)[-1] for r in http_server.requests("HEAD", ".tar")}
    assert {"train_0000.tar", "train_0001.tar", "train_0002.tar", "train_0003.tar"} <= heads
    assert max(heads) < "train_0064.tar"  # probing stops with the batch of 64 holding the first gap


def test_anon_goes_to_the_store_without_credentials(capsysbinary, s3_server, webds: Path):
    url = s3_server.upload(webds, names=["val.taridx"]) + "/val.taridx"
    endpoint = "--storage-option=client_kwargs=" + json.dumps(s3_server.storage_options["client_kwargs"])
    assert run(capsysbinary, ["info", url, *s3_args(s3_server.storage_options)])[0] == 0
    code, out, err = run(capsysbinary, ["info", url, "--anon", endpoint])  # unsigned: the private bucket refuses
    assert (code, out) == (2, b"") and err == f"itarcore: error: {url}: cannot stat: access denied (403)\n"


def test_anon_on_http_reads_as_without_it(capsysbinary, http_server, webds: Path):
    """HTTP is anonymous already: --anon must not reach aiohttp (which refuses an ``anon`` keyword)."""
    url = http_server.serve(webds)
    plain = run(capsysbinary, ["info", f"{url}/val.taridx"])
    assert plain[0] == 0
    assert run(capsysbinary, ["info", f"{url}/val.taridx", "--anon"]) == plain


def test_diff_of_two_remote_folds_matches_the_local_diff(capsysbinary, request, webds: Path, tmp_path: Path):
    """`diff` over URLs (the stems of listed samples read from remote shards) prints what it prints locally."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from diff_fixtures import build_modified_train

    build_modified_train(webds, tmp_path / "new")
    old_local, new_local = webds / "train.taridx", tmp_path / "new" / "train.taridx"
    here = run(capsysbinary, ["diff", old_local, new_local, "--json", "--limit", "3"])
    assert here[0] == 1  # the fixture's injected changes are differences
    for kind in ("s3", "http"):
        if kind == "s3":
            server = request.getfixturevalue("s3_server")
            old_url, new_url = server.upload(webds), server.upload(tmp_path / "new")
            extra = s3_args(server.storage_options)
        else:
            server = request.getfixturevalue("http_server")
            old_url, new_url = server.serve(webds), server.serve(tmp_path / "new")
            extra = []
        there = run(capsysbinary, ["diff", f"{old_url}/train.taridx", f"{new_url}/train.taridx",
                                   "--json", "--limit", "3", *extra])
        assert there[0] == here[0], there[2]
        local, remote = json.loads(here[1]), json.loads(there[1])
        for side, url in (("old", f"{old_url}/train.taridx"), ("new", f"{new_url}/train.taridx")):
            assert remote[side].pop("path") == url
            local[side].pop("path")
        assert remote == local


def test_info_opens_a_url_once(capsysbinary, http_server, webds: Path):
    """One stat and one read for an index whose header and tables fit in the first read; one stat for a copy."""
    url = http_server.serve(webds, names=["val.taridx"])
    local = run(capsysbinary, ["info", "--json", webds / "val.taridx"])
    there = run(capsysbinary, ["info", "--json", f"{url}/val.taridx"])
    assert there == (0, local[1].replace(str(webds / "val.taridx").encode(), f"{url}/val.taridx".encode()), "")
    assert len(http_server.requests("HEAD", "val.taridx")) == 1
    size = (webds / "val.taridx").stat().st_size  # < 64 KiB: the first read is the whole file
    assert [r[2] for r in http_server.requests("GET", "val.taridx")] == [f"bytes=0-{size - 1}"]
    tbl = DATA / "tbl" / "v2_lz4_meta.tbl"
    url = http_server.serve(tbl.parent, names=[tbl.name])
    local = run(capsysbinary, ["info", "--json", tbl])
    assert run(capsysbinary, ["info", "--json", f"{url}/{tbl.name}"]) == (
        0, local[1].replace(str(tbl).encode(), f"{url}/{tbl.name}".encode()), "")
    assert len(http_server.requests("HEAD", tbl.name)) == 1
