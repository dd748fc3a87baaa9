"""Per-shard tables cached on disk: reuse, invalidation, --update, resume after SIGKILL, failure isolation."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from children import python_child, sigkill
from scale_fold import append_member

from itarcore.cli import main
from itarcore.dataset import Dataset
from itarcore.errors import FormatError
from itarcore.indexing import build
from itarcore.indexing.build import ShardsFailed, build_fold
from itarcore.indexing.cache import ShardCache, ShardIdentity
from itarcore.indexing.indexer import shard_members
from itarcore.jobs import index_fold, index_folds, update_index

FOLDS = ("mixed", "train", "val")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the shards actually scanned (the threads executor's scan call), in the test's process."""
    seen: list[str] = []

    def counting(path, *args, **kwargs):
        seen.append(os.path.basename(path))
        return shard_members(path, *args, **kwargs)

    monkeypatch.setattr(build, "shard_members", counting)
    return seen


def clean_index(shards: list[Path], tmp_path: Path) -> bytes:
    """A full index of ``shards`` without any cache, the independent reference."""
    out = tmp_path / "clean" / "ref.taridx"
    out.parent.mkdir(exist_ok=True)
    index_fold(shards, out)
    return out.read_bytes()


def test_cached_table_equals_the_scan(webds: Path, tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    for shard in sorted(webds.glob("*.tar")):
        scanned = shard_members(shard)
        identity = ShardIdentity.of(shard)
        assert cache.load(identity) is None
        cache.store(identity, scanned)
        loaded = cache.load(identity)
        for name in ("header_offsets", "sizes", "keyhash", "stems", "stem_lengths", "ext_codes", "run_starts"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(scanned, name), err_msg=name)
        assert loaded.ext_names == scanned.ext_names and loaded.file_size == scanned.file_size
    assert len(cache.entries()) == 6
    assert not list((tmp_path / "cache").rglob(".*.tmp-*"))  # atomic writes leave no temporaries


def test_rerun_reuses_every_shard_and_writes_the_same_bytes(webds: Path, data_dir: Path, tmp_path: Path,
                                                             scans: list[str]) -> None:
    for p in webds.glob("*.taridx"):
        p.unlink()
    cache = ShardCache(tmp_path / "cache")
    first = index_folds(webds, cache=cache)
    assert [(r.counts.reused, r.counts.scanned) for r in first] == [(0, 2), (0, 3), (0, 1)]
    assert len(scans) == 6
    scans.clear()
    for p in webds.glob("*.taridx"):
        p.unlink()
    second = index_folds(webds, cache=cache)
    assert scans == []
    assert [(r.counts.reused, r.counts.scanned, r.counts.failed) for r in second] == [(2, 0, 0), (3, 0, 0), (1, 0, 0)]
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()


def test_changed_identity_or_damaged_entry_means_a_rescan(webds: Path, data_dir: Path, tmp_path: Path,
                                                          scans: list[str]) -> None:
    cache = ShardCache(tmp_path / "cache")
    shards = sorted(webds.glob("train_*.tar"))
    index_fold(shards, tmp_path / "a.taridx", cache=cache)
    os.utime(shards[1], ns=(0, shards[1].stat().st_mtime_ns + 1))  # one nanosecond later: another version
    entry = cache.entry_path(ShardIdentity.of(shards[2]))
    entry.write_bytes(entry.read_bytes()[:300])  # cut short, as a full disk might leave it
    scans.clear()
    result = index_fold(shards, tmp_path / "b.taridx", cache=cache)
    assert sorted(scans) == ["train_0001.tar", "train_0002.tar"]
    assert (result.counts.reused, result.counts.scanned) == (1, 2)
    assert (tmp_path / "b.taridx").read_bytes() == (data_dir / "taridx" / "webds" / "train.taridx").read_bytes()


def test_update_after_touching_one_of_64_shards_scans_exactly_that_one(fold64: Path, tmp_path: Path,
                                                                        scans: list[str]) -> None:
    cache = ShardCache(tmp_path / "cache")
    (first,) = index_folds(fold64, cache=cache)
    assert first.counts.scanned == 64 and len(cache.entries()) == 64
    before = (fold64 / "big.taridx").read_bytes()
    touched = fold64 / "big_0017.tar"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))
    scans.clear()
    entries = set(cache.entries())
    result = update_index(fold64 / "big.taridx", cache=cache)
    assert scans == ["big_0017.tar"]
    new = set(cache.entries())
    assert len(new - entries) == 1 and len(entries - new) == 1  # one new table replaced its shard's old one
    assert len(new) == 64
    assert (result.counts.reused, result.counts.scanned) == (63, 1)
    after = (fold64 / "big.taridx").read_bytes()
    assert after == before == clean_index(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_update_after_appending_a_member_indexes_it(fold64: Path, tmp_path: Path, scans: list[str]) -> None:
    cache = ShardCache(tmp_path / "cache")
    index_folds(fold64, cache=cache)
    offset = append_member(fold64 / "big_0040.tar", "late_sample.webp", b"appended after indexing" * 9)
    scans.clear()
    update_index(fold64 / "big.taridx", cache=cache)
    assert scans == ["big_0040.tar"]
    with Dataset.open(fold64 / "big.taridx") as ds:
        (row,) = ds.lookup_stem("late_sample").tolist()
        rec = ds.rows[row]
        assert (int(rec["fid"]), int(rec["offset"]), int(rec["size"])) == (40, offset, 23 * 9)
        assert ds.ext_of(row) == "webp"
        assert ds.read_payload(row) == b"appended after indexing" * 9
    assert (fold64 / "big.taridx").read_bytes() == clean_index(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_a_failing_shard_does_not_stop_the_others_with_a_cache(fold64: Path, tmp_path: Path,
                                                                scans: list[str]) -> None:
    cache = ShardCache(tmp_path / "cache")
    shards = sorted(fold64.glob("big_*.tar"))
    good = shards[5].read_bytes()
    shards[5].write_bytes(good[:1500])  # ends inside a member
    with pytest.raises(ShardsFailed) as info:
        build_fold(shards, cache=cache, jobs=2)
    err = info.value
    assert [p for p, _ in err.failures] == [str(shards[5])]
    assert isinstance(err.failures[0][1], FormatError)
    assert (err.counts.reused, err.counts.scanned, err.counts.failed) == (0, 63, 1)
    assert "63 scanned, 1 failed" in str(err) and str(shards[5]) in str(err)
    assert len(cache.entries()) == 63
    shards[5].write_bytes(good)  # repaired: the rerun scans only it
    scans.clear()
    rebuilt = build_fold(shards, cache=cache)
    assert scans == ["big_0005.tar"]
    assert (rebuilt.counts.reused, rebuilt.counts.scanned) == (63, 1)


def test_an_unwritable_cache_still_gives_the_index(webds: Path, data_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    result = index_fold(sorted(webds.glob("val_*.tar")), tmp_path / "val.taridx", cache=ShardCache(blocker))
    assert (tmp_path / "val.taridx").read_bytes() == (data_dir / "taridx" / "webds" / "val.taridx").read_bytes()
    assert len(result.warnings) == 1 and "could not write the shard cache" in result.warnings[0]


def cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(argv) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_cli_reports_reused_and_scanned_and_honours_cache_options(webds: Path, data_dir: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    out = cli_json(["index", str(webds), "--fold", "train", "--cache", str(cache), "--json"], capsys)
    assert [(o["reused"], o["scanned"], o["failed"]) for o in out] == [(0, 3, 0)]
    assert len(list(cache.rglob("*.members"))) == 3
    out = cli_json(["index", str(webds), "--fold", "train", "--cache", str(cache), "--json"], capsys)
    assert [(o["reused"], o["scanned"], o["failed"]) for o in out] == [(3, 0, 0)]
    assert main(["index", str(webds), "--fold", "val", "--cache", str(cache)]) == 0
    assert "1 shards (0 reused, 1 scanned)" in capsys.readouterr().out
    default_cache = ShardCache()  # the tests' stand-in for the user cache folder
    before = default_cache.entries()
    out = cli_json(["index", str(webds), "--fold", "mixed", "--no-cache", "--json"], capsys)
    assert [(o["reused"], o["scanned"]) for o in out] == [(0, 2)]
    assert default_cache.entries() == before
    out = cli_json(["index", str(webds), "--fold", "mixed", "--json"], capsys)  # default: the user cache
    assert [(o["reused"], o["scanned"]) for o in out] == [(0, 2)]
    assert len(default_cache.entries()) == len(before) + 2
    assert (webds / "mixed.taridx").read_bytes() == (data_dir / "taridx" / "webds" / "mixed.taridx").read_bytes()


def test_cli_update(fold64: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = str(tmp_path / "cache")
    cli_json(["index", str(fold64), "--cache", cache, "--json"], capsys)
    append_member(fold64 / "big_0063.tar", "tail.txt", b"new")
    (out,) = cli_json(["index", "--update", str(fold64 / "big.taridx"), "--cache", cache, "--json"], capsys)
    assert (out["reused"], out["scanned"], out["shards"]) == (63, 1, 64)
    assert (fold64 / "big.taridx").read_bytes() == clean_index(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_cli_names_failed_shards_and_the_rerun_scans_only_them(fold64: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    cache = str(tmp_path / "cache")
    bad = fold64 / "big_0030.tar"
    good = bad.read_bytes()
    bad.write_bytes(good[:2000])
    assert main(["index", str(fold64), "--cache", cache, "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of 64 shard(s) could not be indexed (0 reused, 63 scanned, 1 failed" in err[0]
    assert "big_0030.tar" in err[0] and not (fold64 / "big.taridx").exists()
    bad.write_bytes(good)
    (out,) = cli_json(["index", str(fold64), "--cache", cache, "--json"], capsys)
    assert (out["reused"], out["scanned"], out["failed"]) == (63, 1, 0)


@pytest.mark.parametrize("argv", [["index", "--update", "x.taridx", "--no-cache"], ["index", "r", "--update", "x"],
                                  ["index", "r", "--executor", "cluster"], ["index", "r", "--executor", "processes:0"],
                                  ["verify", "x.taridx", "--executor", "dask"]])
def test_cli_rejects_bad_scale_options(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1 and "Traceback" not in err


# The child runs the real CLI; after a chosen number of tables are cached it says so and
# blocks on stdin (a stand-in for a slow shard), so "midway" is exact without sleeping.
CHILD = textwrap.dedent("""
    import sys
    from itarcore.cli import main
    from itarcore.indexing import cache
    real_store = cache.ShardCache.store
    stored = 0
    def store(self, identity, members):
        global stored
        path = real_store(self, identity, members)
        stored += 1
        if stored == int(sys.argv[3]):
            print("stored", stored, flush=True)
            sys.stdin.readline()
        return path
    cache.ShardCache.store = store
    main(["index", sys.argv[1], "--cache", sys.argv[2], "--jobs", "2"])
""")


def test_sigkill_midway_then_rerun_resumes(fold64: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with python_child(CHILD, str(fold64), str(cache), "20") as child:
        assert child.stdout.readline().split() == ["stored", "20"]
        sigkill(child)
    assert not (fold64 / "big.taridx").exists()
    kept = set(cache.rglob("*.members"))
    assert len(kept) == 20
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", "from itarcore.cli import entry_point; entry_point()", "index",
                           str(fold64), "--cache", str(cache), "--json"], capture_output=True, text=True, env=env,
                          check=True)
    (out,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert (out["reused"], out["scanned"], out["failed"]) == (20, 44, 0)
    written = set(cache.rglob("*.members")) - kept
    assert len(written) == 44  # counted independently: the tables this run scanned and stored (64 - 20)
    assert (fold64 / "big.taridx").read_bytes() == clean_index(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_processes_executor_gives_the_same_bytes(webds: Path, data_dir: Path, fold64: Path, tmp_path: Path) -> None:
    for p in webds.glob("*.taridx"):
        p.unlink()
    index_folds(webds, executor="processes:2")
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == (data_dir / "taridx" / "webds" / f"{fold}.taridx").read_bytes()
    (result,) = index_folds(fold64, executor="processes:2", cache=ShardCache(tmp_path / "cache"))
    assert result.counts.scanned == 64
    assert (fold64 / "big.taridx").read_bytes() == clean_index(sorted(fold64.glob("big_*.tar")), tmp_path)


def test_processes_executor_reports_progress_and_cancels(fold64: Path) -> None:
    from itarcore.errors import Cancelled
    from itarcore.progress import CancelToken

    token = CancelToken()
    seen = []

    def on_progress(p) -> None:
        seen.append(p)
        if p.done > 0:
            token.cancel()

    with pytest.raises(Cancelled):
        index_folds(fold64, executor="processes:2", progress=on_progress, cancel=token)
    assert seen and 0 < seen[-1].done < seen[-1].total
    assert not (fold64 / "big.taridx").exists()


def test_tar_members_of_fold64_match_tarfile(fold64: Path) -> None:
    """The generated fold is what the other tests think it is (tarfile as the independent reader)."""
    index_folds(fold64)
    with Dataset.open(fold64 / "big.taridx") as ds:
        members = 0
        for p in sorted(fold64.glob("big_*.tar")):
            with tarfile.open(p) as tar:
                members += len(tar.getmembers())
        assert ds.n_rows == members
        assert len(ds.index.crash_stems) == 1 and not ds.index.header.contiguous


def test_loaded_tables_are_private_copies_of_the_entry(webds: Path, tmp_path: Path) -> None:
    """Entries are mapped copy-on-write: a loaded table may be changed in memory, the entry on disk never is,
    and an entry replaced (renamed over) while a table of it is in use leaves that table as it was."""
    cache = ShardCache(tmp_path / "cache")
    shard = min(webds.glob("train_*.tar"))
    identity = ShardIdentity.of(shard)
    cache.store(identity, shard_members(shard))
    entry = cache.entry_path(identity)
    before = entry.read_bytes()
    loaded = cache.load(identity)
    keyhash = loaded.keyhash.copy()
    loaded.keyhash[:] = 0
    loaded.stems[:] = 0
    assert entry.read_bytes() == before
    again = cache.load(identity)
    np.testing.assert_array_equal(again.keyhash, keyhash)
    cache.store(identity, shard_members(sorted(webds.glob("train_*.tar"))[1]))  # same key, another table
    np.testing.assert_array_equal(again.keyhash, keyhash)


def test_empty_entry_reads_as_absent(webds: Path, tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    shard = min(webds.glob("train_*.tar"))
    identity = ShardIdentity.of(shard)
    cache.store(identity, shard_members(shard))
    cache.entry_path(identity).write_bytes(b"")
    assert cache.load(identity) is None
