"""`itarcore index URL`: remote folds (loopback S3 and HTTP) index byte for byte as the reference does.

Truth: the reference indexes in tests/data/taridx/webds (written by the reference
implementation from the same shards), and for generated folds the local index of the
same files. Skipping is proven from the fetch statistics, never from time.
"""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from test_storage import remote_folder  # noqa: F401 - the (URL, options) fixture on S3 and on HTTP

from itarcore.cli import main
from itarcore.errors import FormatError, WriteError
from itarcore.formats.read_plan import ReadPlan
from itarcore.indexing.cache import ShardCache
from itarcore.indexing.remote import RemoteOptions, discover_remote_folds
from itarcore.jobs import index_folds
from itarcore.storage import StorageError, display_name, join

FOLDS = ("train", "val", "mixed")
DATA = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"


def reference(fold: str) -> bytes:
    return (DATA / f"{fold}.taridx").read_bytes()


@pytest.mark.parametrize("plan", [ReadPlan(), ReadPlan(4096, 1024)], ids=["default", "small-blocks"])
def test_remote_folds_index_as_the_reference(remote_folder, tmp_path: Path, plan: ReadPlan) -> None:  # noqa: F811
    url, options = remote_folder
    results = index_folds(url, output_dir=tmp_path, remote=RemoteOptions(options or {}, plan))
    assert sorted(r.fold for r in results) == sorted(FOLDS)
    for r in results:
        assert Path(r.path).read_bytes() == reference(r.fold), r.fold
        assert r.route == "remote" and r.shards == [display_name(join(url, p.name))
                                                     for p in sorted(DATA.glob(f"{r.fold}_*.tar"))]
        assert r.total_bytes == sum(p.stat().st_size for p in DATA.glob(f"{r.fold}_*.tar"))
        if plan == ReadPlan():  # shards smaller than a block: each is read whole, once
            assert r.fetched.bytes_fetched == r.total_bytes
        else:  # small blocks: the rest of a payload cut by a block's end is not fetched
            assert 0.5 * r.total_bytes < r.fetched.bytes_fetched <= r.total_bytes
        assert r.fetched.requests >= len(r.shards)  # at least one read each (sizes come from the listing)


def test_cli_indexes_one_fold_url_with_options_and_reports_the_fetch(s3_server, webds: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    url = s3_server.upload(webds)
    so = s3_server.storage_options
    out = tmp_path / "train.taridx"
    argv = ["index", join(url, "train"), "--output", str(out), "--json", "--block-size", "64k",
            "--storage-option", f"key={so['key']}", "--storage-option", f"secret={so['secret']}",
            "--storage-option", "client_kwargs=" + json.dumps(so["client_kwargs"])]
    assert main(argv) == 0
    printed = capsys.readouterr()
    (result,) = [json.loads(line) for line in printed.out.splitlines()]
    assert out.read_bytes() == reference("train")
    assert result["fold"] == "train" and result["route"] == "remote"
    fold_bytes = sum(p.stat().st_size for p in webds.glob("train_*.tar"))
    fetch = result["fetch"]
    assert fetch["fold_bytes"] == fold_bytes and 0.9 * fold_bytes < fetch["bytes_fetched"] <= fold_bytes
    blocks = sum(-(-p.stat().st_size // 65536) for p in webds.glob("train_*.tar"))  # 64 KiB reads
    assert blocks <= fetch["requests"] <= 2 * blocks
    assert fetch["fraction_fetched"] == pytest.approx(fetch["bytes_fetched"] / fold_bytes, abs=1e-6)
    assert so["secret"] not in printed.out + printed.err
    assert main(argv[:-9] + ["--storage-option", "client_kwargs=" + json.dumps(so["client_kwargs"]),
                             "--storage-option", f"key={so['key']}", "--storage-option", f"secret={so['secret']}",
                             "--if-exists", "backup"]) == 0
    text = capsys.readouterr().out
    # the second run takes every shard's table from the cache (keyed by URL, size and ETag): nothing fetched
    assert "(0 reused, 3 scanned)" not in text and "(3 reused, 0 scanned)" in text
    assert "fetched 0 B of 911.4 kB (0.0%) in 0 requests" in text and so["secret"] not in text
    assert len(list(tmp_path.glob("train.taridx.bak-*"))) == 1


def test_output_to_the_store_is_one_whole_object(s3_server, webds: Path) -> None:
    url = s3_server.upload(webds)
    options = RemoteOptions(s3_server.storage_options)
    target = join(url, "indexes/val.taridx")
    (result,) = index_folds(join(url, "val"), output=target, remote=options)
    assert result.path == target
    fs = s3_server.fs()
    folder = target.removeprefix("s3://").rsplit("/", 1)[0]
    assert fs.cat_file(target.removeprefix("s3://")) == reference("val")
    assert [p.rsplit("/", 1)[1] for p in fs.ls(folder, refresh=True)] == ["val.taridx"]  # no temporary objects
    with pytest.raises(WriteError, match="already exists"):
        index_folds(join(url, "val"), output=target, remote=options, if_exists="stop")
    (again,) = index_folds(join(url, "val"), output=target, remote=options, if_exists="backup")
    assert again.backup is not None and str(again.backup).startswith(target + ".bak-")
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(folder, refresh=True))
    assert names[0] == "val.taridx" and names[1].startswith("val.taridx.bak-") and len(names) == 2
    assert fs.cat_file(f"{folder}/{names[0]}") == fs.cat_file(f"{folder}/{names[1]}") == reference("val")
    # without --output, the index goes beside the shards, in the store
    index_folds(join(url, "mixed"), remote=options)
    assert fs.cat_file(join(url, "mixed.taridx").removeprefix("s3://")) == reference("mixed")


def write_video_fold(folder: Path, shards: int = 3, samples: int = 3, big: int = 4 << 20) -> None:
    """A fold where a few large members (``big`` bytes, like videos) hold nearly all the bytes."""
    folder.mkdir()
    for s in range(shards):
        with tarfile.open(folder / f"clips_{s:04d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(samples):
                for ext, size in (("json", 300 + i), ("mp4", big + 512 * i + 7)):
                    info = tarfile.TarInfo(f"clip{s:02d}{i:03d}.{ext}")
                    info.size = size
                    tar.addfile(info, io.BytesIO(bytes([s * 16 + i]) * size))


def test_large_payloads_are_skipped(s3_server, tmp_path: Path) -> None:
    write_video_fold(tmp_path / "clips")
    (local,) = index_folds(tmp_path / "clips", output_dir=tmp_path)
    url = s3_server.upload(tmp_path / "clips")
    plan = ReadPlan(1 << 20, 256 << 10)
    (tmp_path / "out").mkdir()
    (remote,) = index_folds(url, output_dir=tmp_path / "out", remote=RemoteOptions(s3_server.storage_options, plan))
    assert Path(remote.path).read_bytes() == Path(local.path).read_bytes()
    # per shard: one 1 MiB block, then a 64 KiB probe for each later sample, and the last 64 KiB (the end
    # marker), read beside the first probe
    assert remote.fetched.requests == 3 * (1 + 2 + 1)
    assert remote.fetched.bytes_fetched <= 3 * ((1 << 20) + 3 * (64 << 10))
    assert remote.fetched.bytes_fetched < remote.total_bytes / 8


def test_remote_shards_run_in_worker_processes(s3_server, webds: Path, tmp_path: Path) -> None:
    url = s3_server.upload(webds)
    results = index_folds(url, ["train", "mixed"], output_dir=tmp_path, executor="processes:2",
                          remote=RemoteOptions(s3_server.storage_options))
    for r in results:
        assert Path(r.path).read_bytes() == reference(r.fold)
        assert r.fetched.bytes_fetched == r.total_bytes  # the workers' statistics came back with their tables


def test_cache_keys_remote_shards_by_url_size_and_etag(s3_server, webds: Path, tmp_path: Path) -> None:
    url = s3_server.upload(webds)
    options, cache = RemoteOptions(s3_server.storage_options), ShardCache(tmp_path / "cache")
    (first,) = index_folds(url, ["train"], output_dir=tmp_path, cache=cache, remote=options)
    (second,) = index_folds(url, ["train"], output_dir=tmp_path, cache=cache, remote=options)
    assert (first.counts.scanned, second.counts.reused, second.counts.scanned) == (3, 3, 0)
    assert second.fetched.bytes_fetched == 0 and Path(second.path).read_bytes() == reference("train")
    # the same URL and size with other bytes is another ETag: that shard is scanned again
    swapped = webds / "swapped"
    swapped.mkdir()
    raw = (webds / "train_0001.tar").read_bytes()
    (swapped / "train_0001.tar").write_bytes(raw[:1024] + bytes(512) + raw[1536:])  # a member's data changes
    s3_server.fs().put_file(str(swapped / "train_0001.tar"), join(url, "train_0001.tar").removeprefix("s3://"))
    (third,) = index_folds(url, ["train"], output_dir=tmp_path, cache=cache, remote=options)
    assert (third.counts.reused, third.counts.scanned) == (2, 1)
    assert Path(third.path).read_bytes() == reference("train")  # payload bytes are not in the index


@pytest.mark.parametrize("fault", ["503 twice", "cut short", "Range ignored"])
def test_transient_faults_are_retried_to_the_same_index(http_server, webds: Path, tmp_path: Path,
                                                        fault: str) -> None:
    url = http_server.serve(webds)
    {"503 twice": lambda: http_server.fails_n_times(503, 2, only="train_0001.tar"),
     "cut short": lambda: http_server.cuts_short(1, only="train_0001.tar"),
     "Range ignored": lambda: http_server.ignores_range(only="train_0001.tar")}[fault]()
    (result,) = index_folds(join(url, "train"), output_dir=tmp_path, remote=RemoteOptions(plan=ReadPlan(65536)))
    assert Path(result.path).read_bytes() == reference("train")


def test_a_dead_server_is_one_clear_error_and_no_index(http_server, webds: Path, tmp_path: Path) -> None:
    url = http_server.serve(webds)
    http_server.fails_n_times(503, 1000, only="train_0002.tar")
    with pytest.raises(StorageError) as err:
        index_folds(join(url, "train"), output_dir=tmp_path, remote=RemoteOptions({"headers": {"Authorization":
                                                                                               "Bearer TOKEN-123"}}))
    assert join(url, "train_0002.tar") in str(err.value) and "503" in str(err.value)
    assert "TOKEN-123" not in str(err.value)
    assert not list(tmp_path.glob("*.taridx*")) and not list(tmp_path.glob(".*"))


@pytest.mark.parametrize("server", ["s3", "http"])
def test_a_truncated_remote_shard_is_the_local_format_error(request, webds: Path, tmp_path: Path,
                                                            server: str) -> None:
    raw = (webds / "train_0001.tar").read_bytes()
    with tarfile.open(webds / "train_0001.tar") as tar:
        member = tar.getmembers()[-7]
    cut = member.offset_data + member.size // 2
    (webds / "train_0001.tar").write_bytes(raw[:cut])  # ends inside a member's payload
    with pytest.raises(FormatError) as local:
        index_folds(webds, ["train"], output_dir=tmp_path)
    srv = request.getfixturevalue(f"{server}_server")
    url, options = (srv.upload(webds), srv.storage_options) if server == "s3" else (srv.serve(webds), {})
    with pytest.raises(FormatError) as remote:
        index_folds(url, ["train"], output_dir=tmp_path / "out", remote=RemoteOptions(options))
    shard_url = join(url, "train_0001.tar")
    assert str(remote.value) == str(local.value).replace(str(webds / "train_0001.tar"), shard_url)
    assert remote.value.offset == member.offset_data and remote.value.field == "payload"
    assert not list(tmp_path.glob("*.taridx*")) and not list(tmp_path.glob("out/*"))


def test_listing_names_the_folds_and_refuses_an_empty_url(remote_folder) -> None:  # noqa: F811
    url, options = remote_folder
    folds = discover_remote_folds(url, options)
    assert {f: [s.url for s in shards] for f, shards in folds.items()} == {
        f: [join(url, p.name) for p in sorted(DATA.glob(f"{f}_*.tar"))] for f in FOLDS}
    assert all(s.size == (DATA / s.url.rsplit("/", 1)[1]).stat().st_size and s.version
               for shards in folds.values() for s in shards)
    assert list(discover_remote_folds(join(url, "val"), options)) == ["val"]
    with pytest.raises(Exception, match="no shards named"):
        discover_remote_folds(join(url, "nothing"), options)


def test_a_fold_url_on_a_web_server_without_folder_pages(http_server, webds: Path, tmp_path: Path) -> None:
    url = http_server.serve(webds)
    http_server.no_listing()
    with pytest.raises(Exception, match="no shards named"):
        index_folds(url, output_dir=tmp_path)  # a folder alone cannot be listed
    (result,) = index_folds(join(url, "train"), output_dir=tmp_path)  # a fold's shards are found by name
    assert Path(result.path).read_bytes() == reference("train") and len(result.shards) == 3


def test_read_plan_options(capsys: pytest.CaptureFixture[str]) -> None:
    from itarcore.cli.read_plan import byte_size

    assert [byte_size(t) for t in ("8M", "16MiB", "512k", "1048576", "2G")] == [8 << 20, 16 << 20, 512 << 10,
                                                                                 1 << 20, 2 << 30]
    assert main(["index", "s3://bucket/ds/", "--block-size", "100"]) == 2  # refused before anything is listed
    assert "block size must be at least 512 bytes, not 100" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index", "s3://bucket/ds/", "--skip-threshold", "lots"])
    assert "'lots' is not a size" in capsys.readouterr().err
