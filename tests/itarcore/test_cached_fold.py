"""The cached-fold route of `itarcore index`: a rerun whose shard tables are all cached merges without numpy.

Truth is the numpy route: every fold, usual or not, is indexed again from the cache and must
give the bytes (and summary) of a clean index without any cache; the tests also say which
route served, so a fold meant for the numpy-free merge cannot quietly fall back.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from scale_fold import add_member, collision_pairs

from itarcore.atomic import atomic_write
from itarcore.cli import main
from itarcore.cli import taridx as cli_taridx
from itarcore.indexing.cache import FOLD_MARKS, ShardCache, ShardIdentity, entry_header
from itarcore.indexing.cached_fold import UnusualFold, merge_cached
from itarcore.jobs import index_fold

VARYING = {"seconds", "reused", "scanned", "route", "route_reason"}


def write_shard(path: Path, members: list[tuple[str, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            add_member(tar, name, data)
    return path


def sample(stem: str, exts: tuple[str, ...] = ("jpg", "cls", "json")) -> list[tuple[str, bytes]]:
    return [(f"{stem}.{ext}", f"{stem} {ext}".encode() * (1 + len(stem) % 5)) for ext in exts]


def usual_fold(folder: Path) -> list[Path]:
    """Adjacent samples, no collisions; folders in names, upper case, a multi-dot and a missing
    extension (each new one after the earlier shards' extensions), and an empty shard."""
    shard0 = [m for i in range(40) for m in sample(f"s0_{i:03d}")]
    shard1 = [m for i in range(30) for m in sample(f"dir/s1_{i:03d}", ("JPG", "cls", "json", "left.jpg"))]
    shard3 = [m for i in range(25) for m in sample(f"s3_{i:03d}", ("jpg", "cls", "json", "left.jpg")[: 4 if i == 0 else 3])]
    shard3.append(("README", b"no extension"))
    return [write_shard(folder / "fold_0000.tar", shard0), write_shard(folder / "fold_0001.tar", shard1),
            write_shard(folder / "fold_0002.tar", []), write_shard(folder / "fold_0003.tar", shard3)]


def unusual_folds(folder: Path) -> dict[str, list[Path]]:
    """Folds the numpy-free merge must hand to the numpy route, each for one reason."""
    a, b = collision_pairs()[0]
    cases = {
        "split": ([m for i in range(4) for m in sample(f"x{i}")] + sample("x4", ("cls", "json")),
                  sample("x4", ("jpg",)) + sample("y0")),
        "collision": (sample(a) + sample("p0"), sample("q0") + sample(b)),
        "apart": (sample("r0") + sample("r1") + sample("r0", ("txt",)), sample("r2")),
        "order": (sample("t0"), sample("t1", ("cls", "jpg", "json"))),
    }
    return {name: [write_shard(folder / f"{name}_{i:04d}.tar", members) for i, members in enumerate(shards)]
            for name, shards in cases.items()}


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per CLI run, whether the cached-fold route gave its results."""
    runs: list[bool] = []
    original = cli_taridx._index_from_cache

    def watched(args, bar):
        results = original(args, bar)
        runs.append(results is not None)
        return results

    monkeypatch.setattr(cli_taridx, "_index_from_cache", watched)
    return runs


def index_json(folder: Path, fold: str, output: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["index", str(folder), "--fold", fold, "--output", str(output), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def clean(shards: list[Path], output: Path) -> tuple[bytes, dict]:
    result = index_fold(shards, output)
    return output.read_bytes(), {"rows": result.n_rows, "stems": result.n_stems, "contiguous": result.contiguous,
                                 "extensions": dict(result.extensions), "crash_stems": result.crash_stems}


@pytest.mark.parametrize("contiguous", [False, True])
def test_usual_fold_rerun_is_served_without_numpy_merge_and_gives_the_clean_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: list[bool], contiguous: bool) -> None:
    shards = usual_fold(tmp_path / "shards")
    extra = ("--contiguous",) if contiguous else ()
    first = index_json(tmp_path / "shards", "fold", tmp_path / "first.taridx", capsys, *extra)
    second = index_json(tmp_path / "shards", "fold", tmp_path / "second.taridx", capsys, *extra)
    third = index_json(tmp_path / "shards", "fold", tmp_path / "third.taridx", capsys, *extra)  # the mark is used
    assert served == [False, True, True]
    assert (first["scanned"], second["reused"], second["route"]) == (4, 4, "cache")
    want_bytes, want = clean(shards, tmp_path / "clean.taridx")
    assert want["contiguous"] and not want["crash_stems"] and want["stems"] == 96
    assert want["extensions"] == {"jpg": 95, "cls": 95, "json": 95, "left.jpg": 31, "": 1}
    for run, name in ((second, "second"), (third, "third")):
        assert (tmp_path / f"{name}.taridx").read_bytes() == want_bytes
        assert {k: v for k, v in run.items() if k not in VARYING | {"path"}} == {
            k: v for k, v in first.items() if k not in VARYING | {"path"}}
        assert {k: run[k] for k in want} == want


@pytest.mark.parametrize("name", ["split", "collision", "apart", "order"])
def test_unusual_folds_go_to_the_numpy_route_with_the_same_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: list[bool], name: str) -> None:
    shards = unusual_folds(tmp_path / "shards")[name]
    index_json(tmp_path / "shards", name, tmp_path / "first.taridx", capsys)
    again = index_json(tmp_path / "shards", name, tmp_path / "again.taridx", capsys)
    assert served == [False, False]
    assert (again["reused"], again["route"]) == (2, "cache")  # the numpy merge of the cached tables
    want_bytes, want = clean(shards, tmp_path / "clean.taridx")
    assert (tmp_path / "again.taridx").read_bytes() == want_bytes
    assert {k: again[k] for k in want} == want
    assert not list((tmp_path / "shards").glob(".*.tmp-*"))
    if name == "order":  # refused before anything is written
        assert merge_cached(shards, ShardCache()) is None
    else:  # refused by the check, which leaves no mark
        with pytest.raises(UnusualFold):
            merge_cached(shards, ShardCache()).check_runs()
        assert not (ShardCache().folder / "v2" / FOLD_MARKS).exists()


def test_the_check_trusts_a_mark_only_for_the_same_tables_and_count(tmp_path: Path) -> None:
    shards = unusual_folds(tmp_path)["split"]
    for shard in shards:
        index_fold([shard], tmp_path / f"{shard.stem}.taridx", cache=ShardCache())  # both tables cached
    merged = merge_cached(shards, ShardCache())
    Path(merged.mark).parent.mkdir(parents=True)
    Path(merged.mark).write_text(str(merged.n_stems + 1))  # a count from other tables
    with pytest.raises(UnusualFold):
        merged.check_runs()
    identities = [ShardIdentity.of(s) for s in shards]
    os.utime(shards[1], ns=(0, shards[1].stat().st_mtime_ns + 1))
    assert ShardCache().fold_mark([ShardIdentity.of(s) for s in shards]) != ShardCache().fold_mark(identities)
    assert ShardCache().fold_mark(identities[::-1]) != ShardCache().fold_mark(identities)


def test_a_changed_shard_gets_a_new_mark_and_the_old_one_goes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              served: list[bool]) -> None:
    shards = usual_fold(tmp_path / "shards")
    out = tmp_path / "out.taridx"
    for _ in range(2):
        index_json(tmp_path / "shards", "fold", out, capsys)
    marks = ShardCache().folder / "v2" / FOLD_MARKS
    (before,) = marks.iterdir()
    write_shard(shards[3], sample("s3_new") + sample("s3_more"))
    index_json(tmp_path / "shards", "fold", out, capsys)  # scans the changed shard
    index_json(tmp_path / "shards", "fold", out, capsys)
    assert served == [False, True, False, True]
    (after,) = marks.iterdir()
    assert after.name != before.name and after.name.split("-")[0] == before.name.split("-")[0]
    assert out.read_bytes() == clean(shards, tmp_path / "clean.taridx")[0]


def test_a_rerun_of_a_usual_fold_never_imports_numpy(tmp_path: Path) -> None:
    usual_fold(tmp_path / "shards")
    argv = ["index", str(tmp_path / "shards"), "--output", str(tmp_path / "fold.taridx"), "--json"]
    script = ("import sys; from itarcore.cli import main; code = main(sys.argv[1:]); "
              "print('numpy' in sys.modules, code, file=sys.stderr)")
    runs = [subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert [r.stderr.split() for r in runs] == [["True", "0"], ["False", "0"]]
    assert json.loads(runs[1].stdout)["route"] == "cache"


def test_while_syncing_failure_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "kept.bin"
    target.write_bytes(b"old")

    def refuse() -> None:
        raise UnusualFold("no")

    with pytest.raises(UnusualFold), atomic_write(target, while_syncing=refuse) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["kept.bin"]
    with atomic_write(target, while_syncing=lambda: None) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["kept.bin"]


def test_records_in_pieces_give_the_bytes_of_one_piece_and_a_short_total_writes_nothing(tmp_path: Path) -> None:
    from itarcore.formats.taridx_header import write_taridx_records

    rows = bytes(range(256)) * 3  # 24 records of 32 bytes
    args = (24, ["jpg", "cls"], ["crash"], 20, False)
    write_taridx_records(tmp_path / "one.taridx", [rows], *args)
    write_taridx_records(tmp_path / "pieces.taridx", iter([rows[:32], bytearray(rows[32:320]), memoryview(rows)[320:]]),
                         *args)
    assert (tmp_path / "pieces.taridx").read_bytes() == (tmp_path / "one.taridx").read_bytes()
    assert (tmp_path / "one.taridx").read_bytes().endswith(rows)
    with pytest.raises(ValueError, match="24 rows need 768 bytes"):
        write_taridx_records(tmp_path / "short.taridx", [rows[:-32]], *args)
    assert sorted(os.listdir(tmp_path)) == ["one.taridx", "pieces.taridx"]


def test_an_entry_whose_records_hold_a_bad_extension_id_goes_to_the_numpy_route(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: list[bool]) -> None:
    shards = usual_fold(tmp_path / "shards")
    index_json(tmp_path / "shards", "fold", tmp_path / "first.taridx", capsys)
    identity = ShardIdentity.of(shards[3])
    entry = ShardCache().entry_path(identity)
    data = bytearray(entry.read_bytes())
    header, start = entry_header(data, identity)
    (at,) = [at for name, _, _, at in header["arrays"] if name == "records"]
    data[start + at + 5 * 32 + 18] = 9  # row 5's extid: shard 3 has 5 extensions
    entry.write_bytes(bytes(data))
    index_json(tmp_path / "shards", "fold", tmp_path / "again.taridx", capsys)
    assert served == [False, False]
    assert (tmp_path / "again.taridx").read_bytes() == clean(shards, tmp_path / "clean.taridx")[0]
    assert not list((tmp_path / "shards").glob(".*.tmp-*")) and not list(tmp_path.glob(".*.tmp-*"))


def test_a_table_whose_extension_ids_do_not_fit_a_row_is_not_cached(tmp_path: Path) -> None:
    from itarcore.indexing.indexer import shard_members

    (shard,) = unusual_folds(tmp_path)["order"][:1]
    members = shard_members(shard)
    members.ext_names = members.ext_names + [f"e{i}" for i in range(1 << 16)]
    with pytest.raises(ValueError, match="65,536"):
        ShardCache().store(ShardIdentity.of(shard), members)
    assert ShardCache().load(ShardIdentity.of(shard)) is None


def test_a_background_fsync_that_fails_raises_where_it_is_waited_for() -> None:
    from itarcore.atomic import BackgroundSync

    read_end, write_end = os.pipe()  # fsync of a pipe fails (EINVAL), as a failing disk would
    with os.fdopen(read_end, "rb"), os.fdopen(write_end, "wb") as fh:
        with pytest.raises(OSError), BackgroundSync(fh) as syncing:
            fh.write(b"x")
            syncing.kick()
        syncing.wait()  # the error was raised once, and the thread has ended
