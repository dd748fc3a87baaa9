"""`diff_indexes` and `itarcore diff` on the train fixture fold against a copy with known edits."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import xxhash
from diff_fixtures import SHARDS, build_modified_train, copy_indexes_only, expected_diff, samples_of

from itarcore.cli import main
from itarcore.diff import KIND_NAMES, SHARD_COLUMNS, diff_indexes, flag_names
from itarcore.errors import Cancelled
from itarcore.progress import CancelToken


@pytest.fixture
def folds(webds: Path, tmp_path: Path) -> tuple[Path, Path, dict]:
    injected = build_modified_train(webds, tmp_path / "new")
    return webds / "train.taridx", tmp_path / "new" / "train.taridx", injected


def listed(diff) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {name: {} for name in KIND_NAMES.values()}
    for kind, name in KIND_NAMES.items():
        for pos in diff.of_kind(kind).tolist():
            out[name][diff.stems[pos]] = sorted(flag_names(int(diff.samples["flags"][pos])))
    return out


def test_diff_lists_exactly_the_injected_changes(folds, webds: Path) -> None:
    old, new, injected = folds
    truth = expected_diff(samples_of(webds), samples_of(new.parent))
    # the truth from tarfile is what was injected, and nothing else (the swapped colliding pair is no change)
    assert truth == {
        "added": {"zz_added": []},
        "removed": {"train000005": [], "sample_3781adf6e49e": []},
        "changed": {injected["size"]: ["size"], injected["extension"]: ["extensions"]},
        "moved": {injected["moved"]: ["shard"]},
    }
    diff = diff_indexes(old, new)
    assert listed(diff) == truth
    t = diff.totals
    assert (t["added"], t["removed"], t["changed"], t["moved"]) == (1, 2, 2, 1)
    assert (t["changed_size"], t["changed_extensions"]) == (1, 1)
    assert t["unchanged"] == len(samples_of(webds)) - 2 - 2 - 1
    assert diff.n_differences == 6 and diff.unresolved_hashes == 0 and not diff.warnings
    assert (diff.old.n_samples, diff.new.n_samples) == (186, 185)


def test_per_shard_counts_match_tarfile(folds, webds: Path) -> None:
    old, new, _ = folds
    before, after = samples_of(webds), samples_of(new.parent)
    truth = expected_diff(before, after)
    diff = diff_indexes(old, new)
    assert diff.shard_names == list(SHARDS)
    want = {c: np.zeros(3, np.int64) for c in SHARD_COLUMNS}
    for shard, _ in before.values():
        want["old_samples"][SHARDS.index(shard)] += 1
    for shard, _ in after.values():
        want["new_samples"][SHARDS.index(shard)] += 1
    for stem in truth["added"]:
        want["added"][SHARDS.index(after[stem][0])] += 1
    for stem in truth["removed"]:
        want["removed"][SHARDS.index(before[stem][0])] += 1
    for stem in truth["changed"]:
        want["changed"][SHARDS.index(after[stem][0])] += 1
    for stem in before.keys() & after.keys():
        if before[stem][0] != after[stem][0]:
            want["moved_out"][SHARDS.index(before[stem][0])] += 1
            want["moved_in"][SHARDS.index(after[stem][0])] += 1
    for column in SHARD_COLUMNS:
        assert diff.shard_counts[column].tolist() == want[column].tolist(), column


def test_many_passes_and_small_chunks_give_the_same_diff(folds) -> None:
    old, new, _ = folds
    one = diff_indexes(old, new)
    many = diff_indexes(old, new, memory_budget=8_000, chunk=37)  # 8 key ranges, chunks cutting samples
    assert listed(many) == listed(one) and many.totals == one.totals
    for column in SHARD_COLUMNS:
        assert many.shard_counts[column].tolist() == one.shard_counts[column].tolist()
    assert np.array_equal(many.samples, one.samples)


def test_keep_limits_the_list_not_the_counts(folds, webds: Path) -> None:
    old, new, injected = folds
    diff = diff_indexes(old, new, keep=1)
    assert diff.totals["removed"] == 2 and len(diff.of_kind(2)) == 1
    # the one kept is the first removed sample in the old fold's file order
    in_file_order = list(samples_of(webds))
    first = min(injected["removed"], key=in_file_order.index)
    assert diff.stems[int(diff.of_kind(2)[0])] == first


def test_identical_indexes_and_a_reversed_diff(folds, webds: Path) -> None:
    old, new, _ = folds
    same = diff_indexes(old, webds / "train.taridx")
    assert same.n_differences == 0 and same.totals["unchanged"] == 186 and len(same.samples) == 0
    back = listed(diff_indexes(new, old))
    assert set(back["added"]) == {"train000005", "sample_3781adf6e49e"} and set(back["removed"]) == {"zz_added"}


def test_without_shards_hashes_stand_in_for_stems(folds, tmp_path: Path, webds: Path) -> None:
    old, new, _ = folds
    bare_old = copy_indexes_only(webds, tmp_path / "bare_old")
    bare_new = copy_indexes_only(new.parent, tmp_path / "bare_new")
    with_shards = diff_indexes(old, new)
    bare = diff_indexes(bare_old, bare_new)
    assert bare.old.missing_shards == list(SHARDS) and len(bare.warnings) == 3
    # the two colliding hashes whose first stem changed cannot be named without shards: they are reported, and
    # every other sample is matched exactly as with the shards
    assert bare.unresolved_hashes == 2
    moved_crash = {xxhash.xxh64_intdigest(s.encode()) for s in ("sample_3781adf6e49e", "sample_f1a3638e3c02")}
    for kind, name in KIND_NAMES.items():
        got = {int(k) for k in bare.samples["keyhash"][bare.of_kind(kind)]} - moved_crash
        want = {int(k) for k in with_shards.samples["keyhash"][with_shards.of_kind(kind)]} - moved_crash
        assert got == want, name
    # crash stems are still named from the crash table; others show their hash
    labels = [bare.stem_label(p) for p in range(len(bare.samples))]
    assert "#$w{lSfF" in labels and any(label.startswith("? (xxh64 ") for label in labels)


def test_cancel_stops_the_diff(folds) -> None:
    old, new, _ = folds
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        diff_indexes(old, new, cancel=token)
    token, seen = CancelToken(), []

    def cancel_on_first(p) -> None:
        seen.append(p.done)
        token.cancel()

    with pytest.raises(Cancelled):
        diff_indexes(old, new, chunk=16, progress=cancel_on_first, cancel=token)
    assert seen and seen[0] < 738 * 2


def test_cli_text_json_and_exit_codes(folds, webds: Path, capsys, tmp_path: Path) -> None:
    old, new, injected = folds
    assert main(["diff", str(old), str(webds / "train.taridx")]) == 0
    assert "No differences" in capsys.readouterr().out
    assert main(["diff", str(old), str(new), "--limit", "5"]) == 1
    text = capsys.readouterr().out
    assert "1 added, 2 removed, 2 changed" in text and "zz_added  train_0002.tar" in text
    assert "train000119  train_0001.tar -> train_0002.tar" in text
    assert main(["diff", str(old), str(new), "--json", "--limit", "1"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"old", "new", "differences", "totals", "shards", "samples", "listed_per_kind",
                        "unresolved_hashes", "warnings"}
    assert out["differences"] == 6 and out["totals"]["added"] == 1 and out["listed_per_kind"] == 1
    assert [s["shard"] for s in out["shards"]] == list(SHARDS)
    assert {k: len(v) for k, v in out["samples"].items()} == {"added": 1, "removed": 1, "changed": 1, "moved": 1}
    changed = out["samples"]["changed"][0]
    assert changed["stem"] == injected["size"] and changed["changes"] == ["size"]
    grown = [m for m in changed["members"] if m["old_size"] != m["new_size"]]
    assert [(m["ext"], m["new_size"] - m["old_size"]) for m in grown] == [("json", len(b"grown!"))]
    assert out["samples"]["added"][0] == {
        "stem": "zz_added", "keyhash": out["samples"]["added"][0]["keyhash"], "new_shard": "train_0002.tar",
        "new_first_row": out["samples"]["added"][0]["new_first_row"],
        "members": [{"ext": "cls", "old_size": None, "new_size": 1}, {"ext": "jpg", "old_size": None, "new_size": 6}]}
    not_taridx = tmp_path / "x.taridx"
    not_taridx.write_bytes(b"not an index at all" * 4)
    for argv in (["diff", str(old), str(tmp_path / "missing.taridx")], ["diff", str(not_taridx), str(new)],
                 ["diff", str(old), str(new), "--limit", "-1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("itarcore: error:")


MIXED = ("mixed_0000.tar", "mixed_0001.tar")


def test_interleaved_fold_row_order_does_not_matter(webds: Path, tmp_path: Path) -> None:
    from itarcore.formats.taridx import read_taridx
    from itarcore.jobs import index_fold

    # the reference index of the mixed fold interleaves samples; a contiguous re-index orders rows by sample
    regrouped = tmp_path / "regrouped" / "mixed.taridx"
    regrouped.parent.mkdir()
    index_fold([webds / s for s in MIXED], regrouped, contiguous=True)
    with read_taridx(webds / "mixed.taridx") as a, read_taridx(regrouped) as b:
        assert not a.contiguous and b.contiguous and not np.array_equal(a.rows, b.rows)
    same = diff_indexes(webds / "mixed.taridx", regrouped)
    assert same.n_differences == 0 and same.totals["unchanged"] == same.old.n_samples == 42


def test_interleaved_fold_changes_and_members(webds: Path, tmp_path: Path) -> None:
    from diff_fixtures import read_members, write_members

    from itarcore.diff import member_sizes
    from itarcore.jobs import index_fold

    new = tmp_path / "new"
    new.mkdir()
    for shard in MIXED:
        members = [(i, p + b"++" if i.name == "mixed000003.cls" else p) for i, p in read_members(webds / shard)
                   if i.name != "mixed000007.json"]
        write_members(new / shard, members)
    index_fold([new / s for s in MIXED], new / "mixed.taridx")
    truth = expected_diff(samples_of(webds, MIXED), samples_of(new, MIXED))
    assert truth == {"added": {}, "removed": {}, "changed": {"mixed000003": ["size"], "mixed000007": ["extensions"]},
                     "moved": {}}
    diff = diff_indexes(webds / "mixed.taridx", new / "mixed.taridx")
    assert listed(diff) == truth
    positions = diff.of_kind(3).tolist()
    sizes = dict(zip([diff.stems[p] for p in positions], member_sizes(diff, positions)))
    assert [(m.ext, m.new_size - m.old_size) for m in sizes["mixed000003"] if m.differs] == [("cls", 2)]
    assert [(m.ext, m.new_size) for m in sizes["mixed000007"] if m.differs] == [("json", None)]


def test_names_come_from_the_row_headers_without_scanning_shards(folds, monkeypatch) -> None:
    from itarcore.dataset import Dataset

    old, new, injected = folds
    scanned = []
    real = Dataset._long_names_of
    monkeypatch.setattr(Dataset, "_long_names_of", lambda self, fid: scanned.append(fid) or real(self, fid))
    diff = diff_indexes(old, new)
    assert set(diff.stems) >= {"zz_added", injected["size"], injected["moved"]} and scanned == []


def test_long_member_names_are_named_through_the_full_scan(tmp_path: Path) -> None:
    from diff_fixtures import member

    from itarcore.jobs import index_fold

    long_stem = "s" * 120  # in a pax record: the member's own header holds a cut name
    for fold, members in (("a", [member("short.jpg", b"1")]),
                          ("b", [member("short.jpg", b"1"), member(f"{'deep/' * 30}{long_stem}.jpg", b"22")])):
        (tmp_path / fold).mkdir()
        with tarfile.open(tmp_path / fold / "f_0000.tar", "w", format=tarfile.PAX_FORMAT) as tf:
            for info, payload in members:
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
        index_fold([tmp_path / fold / "f_0000.tar"], tmp_path / fold / "f.taridx")
    diff = diff_indexes(tmp_path / "a" / "f.taridx", tmp_path / "b" / "f.taridx")
    assert diff.totals["added"] == 1 and diff.stems == [long_stem]
