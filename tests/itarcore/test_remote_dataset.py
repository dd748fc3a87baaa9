"""Remote indexes and shards through Dataset: rows on demand, batched payloads, long names, faulty servers.

Truth: the same files read locally (mmap, numpy views of the file's bytes), ``tarfile``, and the bytes
each test wrote itself. Loopback servers only (tests/remote_servers.py).
"""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
from synthetic import NEEDLE, write_index

from itarcore.cli import main
from itarcore.dataset import Dataset
from itarcore.formats.taridx import HEADER_SIZE, ROW_DTYPE, read_taridx, write_taridx
from itarcore.indexing import index_shards
from itarcore.storage import StorageError

N_ROWS = 200_000  # 6.4 MB of rows: reading one must not fetch them all


@pytest.fixture(scope="module")
def big_index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("big-index")
    write_index(folder / "big.taridx", N_ROWS, seed=3)
    return folder


def test_remote_rows_read_on_demand_and_match_numpy(http_server, big_index: Path, monkeypatch):
    monkeypatch.setattr("itarcore.formats.taridx_rows.CACHE_BYTES", 4 << 20)  # 4 blocks: eviction happens
    path = big_index / "big.taridx"
    raw = path.read_bytes()
    off_arr = int.from_bytes(raw[40:48], "little")
    truth = np.frombuffer(raw, ROW_DTYPE, offset=off_arr)
    index = read_taridx(f"{http_server.serve(big_index)}/big.taridx")
    try:
        stats = index.source.stats
        assert index.n_rows == N_ROWS and index.is_remote and index.extensions == ["jpg", "cls", "json"]
        assert stats.bytes_fetched < 70_000  # header and tables: one small read
        rows = index.rows
        assert rows[150_001] == truth[150_001] and rows[-1] == truth[-1]
        last_block = (N_ROWS % 32_768) * 32
        assert stats.bytes_fetched < (1 << 20) + last_block + 70_000  # two blocks of rows, not 6.4 MB
        picks = np.array([5, 199_999, 70_000, 5, 131_072, 32_767, 32_768])
        assert np.array_equal(rows[picks], truth[picks])
        assert np.array_equal(rows[100:50_000:7], truth[100:50_000:7])
        assert np.array_equal(rows["keyhash"][picks], truth["keyhash"][picks])
        assert int(rows["size"][12_345]) == int(truth["size"][12_345])
        assert np.array_equal(rows[90_000:90_010]["offset"], truth[90_000:90_010]["offset"])
        mask = np.zeros(N_ROWS, bool)
        mask[[3, 77_777]] = True
        assert np.array_equal(rows[mask], truth[mask])
        assert len(index.rows._cache._blocks) <= 4  # the cache stays within its budget
        with pytest.raises(IndexError):
            rows[N_ROWS]
        assert np.array_equal(np.asarray(rows["fid"]), truth["fid"])  # asked for every row: reads them all
    finally:
        index.close()


def test_remote_stem_lookup_equals_local(http_server, big_index: Path):
    with Dataset.open(big_index / "big.taridx") as here, \
            Dataset.open(f"{http_server.serve(big_index)}/big.taridx") as there:
        assert np.array_equal(there.lookup_stem(NEEDLE), here.lookup_stem(NEEDLE))
        assert len(here.lookup_stem(NEEDLE)) == 1


def _long_name_shard(folder: Path) -> list[tuple[str, bytes]]:
    """One GNU and one pax shard with long names, plain names between them."""
    members = [("a" * 120 + "/x.jpg", b"gnu-long"), ("short.cls", b"1"), ("d" * 90 + "/" + "e" * 80 + ".json",
                                                                          b"{}"), ("plain.txt", b"t" * 700)]
    for i, fmt in enumerate((tarfile.GNU_FORMAT, tarfile.PAX_FORMAT)):
        with tarfile.open(folder / f"long_{i:04d}.tar", "w", format=fmt) as tf:
            for name, data in members:
                info = tarfile.TarInfo(f"{i}{name}" if i else name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return members


def test_remote_long_names_equal_tarfile(http_server, tmp_path: Path):
    _long_name_shard(tmp_path)
    fold = index_shards(sorted(tmp_path.glob("long_*.tar")))
    write_taridx(tmp_path / "long.taridx", fold.rows, fold.extensions, fold.crash_stems, fold.n_stems)
    names = []
    for shard in sorted(tmp_path.glob("long_*.tar")):
        with tarfile.open(shard) as tf:
            names += [m.name for m in tf.getmembers() if m.isfile()]
    with Dataset.open(tmp_path / "long.taridx") as here, \
            Dataset.open(f"{http_server.serve(tmp_path)}/long.taridx") as there:
        rows = np.arange(here.n_rows)
        assert here.member_names(rows) == names
        assert there.member_names(rows) == names
        assert there.read_payloads(rows) == [here.read_payload(r) for r in rows.tolist()]


def test_read_payloads_batch_one_request_per_shard(http_server, webds: Path):
    url = http_server.serve(webds)
    with Dataset.open(webds / "train.taridx") as here, Dataset.open(f"{url}/train.taridx") as there:
        rows = np.concatenate([here.rows_of_sample(r) for r in (0, 1, 2, 300, 301, 700)])
        there.read_payload(int(rows[0]))  # opens the shards this batch needs
        there.read_payload(int(rows[-1]))
        there.read_payload(int(here.rows_of_sample(300)[0]))
        before = len(http_server.requests("GET", ".tar"))
        assert there.read_payloads(rows) == [here.read_payload(r) for r in rows.tolist()]
        n_shards = len({int(here.rows[r]["fid"]) for r in rows.tolist()})
        assert len(http_server.requests("GET", ".tar")) - before == n_shards


def _cli(capsysbinary, *argv) -> tuple[int, bytes, str]:
    code = main([str(a) for a in argv])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def _last_member(webds: Path, shard: str) -> tuple[str, str, bytes, int]:
    with tarfile.open(webds / shard) as tf:
        m = [m for m in tf.getmembers() if m.isfile()][-1]
        stem, ext = m.name.split(".", 1)
        return stem, ext, tf.extractfile(m).read(), m.offset_data


@pytest.mark.parametrize("fault", ["fails_twice", "cuts_short", "ignores_range"])
def test_transient_faults_still_give_the_right_bytes(capsysbinary, http_server, webds: Path, fault: str):
    url = http_server.serve(webds)
    stem, ext, data, _ = _last_member(webds, "train_0001.tar")
    {"fails_twice": lambda: http_server.fails_n_times(503, 2, only=".tar"),
     "cuts_short": lambda: http_server.cuts_short(2, only=".tar"),
     "ignores_range": lambda: http_server.ignores_range(only=".tar")}[fault]()
    assert _cli(capsysbinary, "cat", f"{url}/train.taridx", stem, ext) == (0, data, "")
    assert _cli(capsysbinary, "stem", f"{url}/train.taridx", stem)[1] == \
        _cli(capsysbinary, "stem", webds / "train.taridx", stem)[1]


def test_faults_that_persist_give_one_error_naming_url_and_range(capsysbinary, http_server, webds: Path,
                                                                 monkeypatch):
    url = http_server.serve(webds)
    stem, ext, data, offset = _last_member(webds, "train_0001.tar")
    where = f"{url}/train_0001.tar: bytes [{offset}, {offset + len(data)})"
    http_server.fails_n_times(503, 100, only="train_0001.tar")
    code, out, err = _cli(capsysbinary, "cat", f"{url}/train.taridx", stem, ext)
    assert (code, out) == (2, b"") and err.count("\n") == 1
    assert url + "/train_0001.tar" in err and "503" in err and "4 attempts" in err
    http_server.reset()
    http_server.cuts_short(100, only=".tar")
    code, out, err = _cli(capsysbinary, "cat", f"{url}/train.taridx", stem, ext)
    assert (code, out) == (2, b"") and where in err and "cut short" in err
    http_server.reset()
    http_server.ignores_range(only=".tar")
    monkeypatch.setattr("itarcore.storage.sources.WHOLE_BODY_LIMIT", 1000)
    code, out, err = _cli(capsysbinary, "cat", f"{url}/train.taridx", stem, ext)
    assert (code, out) == (2, b"") and where in err and "ignored the Range header" in err


def test_truncated_remote_shard_never_gives_a_wrong_row(capsysbinary, http_server, webds: Path):
    stem, ext, data, offset = _last_member(webds, "train_0002.tar")
    shard = webds / "train_0002.tar"
    shard.write_bytes(shard.read_bytes()[: offset + len(data) // 2])  # cut inside the last payload
    stamp = (webds / "train.taridx").stat()
    os.utime(shard, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # remote audits compare no mtimes: nor does this
    url = http_server.serve(webds)
    code, out, err = _cli(capsysbinary, "cat", f"{url}/train.taridx", stem, ext)
    assert (code, out) == (2, b"") and f"{url}/train_0002.tar" in err and f"[{offset}, " in err
    for argv in (["verify", "--json"], ["verify", "--full", "--json"]):
        here = _cli(capsysbinary, argv[0], webds / "train.taridx", *argv[1:])
        there = _cli(capsysbinary, argv[0], f"{url}/train.taridx", *argv[1:])
        assert here[0] == there[0] == 1
        assert (b"truncated_shard" if "--full" in argv else b"outside_shard") in here[1]
        assert there[1] == here[1].replace(str(webds / "train.taridx").encode(), f"{url}/train.taridx".encode())


def test_remote_index_faults(capsysbinary, http_server, webds: Path):
    url = http_server.serve(webds)
    local = _cli(capsysbinary, "info", webds / "val.taridx")
    http_server.fails_n_times(503, 2, only=".taridx")
    assert _cli(capsysbinary, "info", f"{url}/val.taridx")[1] == \
        local[1].replace(str(webds / "val.taridx").encode(), f"{url}/val.taridx".encode())
    cut = webds / "short.taridx"
    cut.write_bytes((webds / "val.taridx").read_bytes()[:-40])  # 40 bytes: not a whole row
    url = http_server.serve(webds, names=["short.taridx"])
    code, out, err = _cli(capsysbinary, "rows", f"{url}/short.taridx")
    assert (code, out) == (2, b"") and f"{url}/short.taridx: field 'rows'" in err
    with pytest.raises(StorageError, match="not found"):
        read_taridx(f"{url}/nothing.taridx")
    assert HEADER_SIZE == 64


SECRET = "SUPERSECRET-0123456789"


def test_secrets_never_printed(capsysbinary, http_server, s3_server, webds: Path):
    url = http_server.serve(webds)
    header = ["--storage-option", f'headers={{"Authorization": "Bearer {SECRET}"}}']
    for argv in (["info", f"{url}/val.taridx"], ["rows", f"{url}/val.taridx", "--limit", "3"],
                 ["verify", "--full", f"{url}/val.taridx"], ["info", f"{url}/missing.taridx"],
                 ["info", f"{url}/missing.taridx", "--debug"],
                 ["info", url.replace("http://", f"http://user:{SECRET}@") + "/missing.taridx"],
                 ["rows", f"{url}/val.taridx", "--storage-option", f"bad-option-without-value{SECRET}"]):
        code, out, err = _cli(capsysbinary, *argv, *header)
        assert SECRET not in out.decode("latin-1") + err, argv
        if "missing" in argv[1] or "bad-option" in argv[-1]:
            assert code == 2 and "itarcore: error: " in err, (argv, err)
        else:
            assert code in (0, 1) and out, (argv, err)
    prefix = s3_server.upload(webds, names=["val.taridx"])
    options = [f"--storage-option=key={SECRET}", f"--storage-option=secret={SECRET}x",
               "--storage-option=client_kwargs=" + json.dumps({"endpoint_url": s3_server.endpoint})]
    for argv in (["info", f"{prefix}/val.taridx"], ["info", f"{prefix}/nope.taridx", "--debug"]):
        code, out, err = _cli(capsysbinary, *argv, *options)
        assert SECRET not in out.decode("latin-1") + err, argv


def test_remote_key_index_is_cached_by_url_size_and_etag(http_server, webds: Path):
    url = http_server.serve(webds)
    stem = "train000179"
    with Dataset.open(webds / "train.taridx", key_index=False) as here:
        truth = here.lookup_stem(stem)
    with Dataset.open(f"{url}/train.taridx") as there:
        assert there.key_index_state == "none"
        there.build_key_index()
        assert np.array_equal(there.lookup_stem(stem), truth)
    with Dataset.open(f"{url}/train.taridx") as there:
        assert there.key_index_state == "ready" and np.array_equal(there.lookup_stem(stem), truth)
    served = http_server.root / url.rsplit("/", 1)[-1] / "train.taridx"
    os.utime(served, ns=(1, 1))  # same bytes, another ETag: the cached key index is not trusted
    with Dataset.open(f"{url}/train.taridx") as there:
        assert there.key_index_state == "none" and np.array_equal(there.lookup_stem(stem), truth)


def test_a_screen_of_remote_names_is_one_request_per_shard(http_server, webds: Path):
    url = http_server.serve(webds)
    with Dataset.open(webds / "train.taridx") as here, Dataset.open(f"{url}/train.taridx") as there:
        rows = np.arange(240, 262)  # a screen of rows across the end of shard 0 and the start of shard 1
        fids = {int(f) for f in here.rows[rows]["fid"]}
        there.read_payload(240), there.read_payload(261)  # shards opened: only name reads are counted below
        before = len(http_server.requests("GET", ".tar"))
        assert there.stem_names(rows) == here.stem_names(rows) and len(fids) == 2
        assert there.member_names(rows) == here.member_names(rows)
        assert len(http_server.requests("GET", ".tar")) - before == len(fids)


def test_stale_remote_row_shows_no_name(http_server, webds: Path):
    """As tests/itarcore/test_dataset_stale_rows.py, through a remote index and shards."""
    import struct

    index = webds / "train.taridx"
    raw = bytearray(index.read_bytes())
    field = struct.unpack_from("<Q", raw, 48)[0] + 32 * 5 + 2  # row 5's offset, moved into its payload
    struct.pack_into("<Q", raw, field, struct.unpack_from("<Q", raw, field)[0] + 512)
    index.write_bytes(bytes(raw))
    with tarfile.open(webds / "train_0000.tar") as tar:
        truth = [m.name for m in tar.getmembers()]
    with Dataset.open(f"{http_server.serve(webds)}/train.taridx") as ds:
        assert ds.member_names([4, 5, 6]) == [truth[4], "", truth[6]]
        assert ds.stem_names([5]) == [""]
