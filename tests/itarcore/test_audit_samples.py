"""The audit's sample checks through the key index give the same findings as the in-memory sort.

Truth: the in-memory route (whose findings the fixture tests in test_audit.py pin down
against tarfile) and, for generated folds, a plain-Python grouping of the rows written
here (dicts and lists, no numpy).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from test_keyindex import generated_rows

from itarcore import Cancelled, CancelToken
from itarcore.audit import audit_index
from itarcore.audit.report import Finding
from itarcore.audit.samples import MAJORITY, sample_checks, sample_findings
from itarcore.formats.taridx import read_taridx, write_taridx
from itarcore.keyindex import KeyIndex, build_key_index

FOLDS = ("train", "val", "mixed")
EXTS = ["jpg", "cls", "", "json"]  # "" is the extension of a README-like member


def python_truth(rows: np.ndarray, exts: list[str]) -> dict[str, list[int]]:
    """Rows named by each sample finding, computed with dicts and lists."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r, (kh, cid) in enumerate(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())):
        groups[(kh, cid)].append(r)
    extid = rows["extid"].tolist()
    found: dict[str, list[int]] = defaultdict(list)
    has = {}
    for key, members in groups.items():
        counts = Counter(extid[r] for r in members)
        found["duplicate_member"] += [r for r in members if counts[extid[r]] > 1]
        if members[-1] - members[0] + 1 != len(members):
            found["split_samples"] += members
        valid = {e for e in counts if e < len(exts)}
        if valid and all(exts[e] == "" for e in valid):
            found["no_extension"] += members
        else:
            has[key] = valid
    n_samples = len(has)
    common = [e for e, name in enumerate(exts)
              if name and MAJORITY * n_samples < sum(e in v for v in has.values()) < n_samples]
    for key, valid in has.items():
        if common and not set(common) <= valid:
            found["missing_extension"] += groups[key]
    return {kind: sorted(r) for kind, r in found.items() if r}


def rows_by_kind(findings: list[Finding]) -> dict[str, list[int]]:
    return {f.kind: f.rows for f in findings}


def all_routes(path: Path, cache: Path, chunk_rows: int) -> list[list[Finding]]:
    """In memory; through a key index built beforehand; through one the audit builds (index 'too big')."""
    with read_taridx(path) as index:
        in_memory = sample_findings(index, cache_dir=cache / "none")
        built = sample_findings(index, cache_dir=cache / "audit", in_memory_rows=0, chunk_rows=chunk_rows)
        assert KeyIndex.open_cached(index, cache / "audit") is not None  # built into the cache, kept for later
        key_index = build_key_index(index, cache / "ahead", chunk_rows=chunk_rows)
        try:
            through_keys = sample_findings(index, key_index=key_index, chunk_rows=chunk_rows)
        finally:
            key_index.close()
        cached = sample_findings(index, cache_dir=cache / "ahead", chunk_rows=chunk_rows)  # found in the cache
    return [in_memory, built, through_keys, cached]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("chunk_rows", [5, 1 << 20])
def test_fixture_folds_same_findings(data_dir: Path, tmp_path: Path, fold: str, chunk_rows: int) -> None:
    path = data_dir / "taridx" / "webds" / f"{fold}.taridx"
    routes = all_routes(path, tmp_path, chunk_rows)
    assert all(r == routes[0] for r in routes[1:])
    with read_taridx(path) as index:
        assert rows_by_kind(routes[0]) == python_truth(index.rows, index.extensions)
    expected = {"train": {"no_extension"}, "mixed": {"split_samples"}}.get(fold, set())
    assert expected <= {f.kind for f in routes[0]}


def generated_fold(path: Path, seed: int, in_key_order: bool = False) -> np.ndarray:
    """Samples with duplicates, split members, README-like members, missing extensions and crash ids."""
    rng = np.random.default_rng(seed)
    rows = generated_rows(3000, 600, seed)
    rows["extid"] = rng.choice([0, 0, 1, 1, 3, 2], len(rows))  # mostly jpg/cls, some json and bare members
    rows = rows[np.lexsort((rows["crashid"], rows["keyhash"]))]  # samples adjacent...
    moved = rng.choice(len(rows), 40, replace=False)  # ...but some members moved elsewhere: split samples
    order = np.delete(np.arange(len(rows)), moved)
    order = np.insert(order, rng.integers(0, len(order), len(moved)), moved)
    if not in_key_order:
        rows = rows[order]
    n_stems = len(set(zip(rows["keyhash"].tolist(), rows["crashid"].tolist())))
    write_taridx(path, rows, EXTS, ["c1", "c2"], n_stems=n_stems)
    return rows


@pytest.mark.parametrize("chunk_rows", [3, 64, 1 << 20])
@pytest.mark.parametrize("in_key_order", [False, True])
def test_generated_fold_same_findings(tmp_path: Path, chunk_rows: int, in_key_order: bool) -> None:
    path = tmp_path / "g.taridx"
    rows = generated_fold(path, seed=chunk_rows, in_key_order=in_key_order)
    routes = all_routes(path, tmp_path, chunk_rows)
    assert all(r == routes[0] for r in routes[1:])
    truth = python_truth(rows, EXTS)
    assert rows_by_kind(routes[0]) == truth
    kinds = {"duplicate_member", "no_extension", "missing_extension"} | (set() if in_key_order else {"split_samples"})
    assert kinds <= set(truth)
    with read_taridx(path) as index:
        assert (KeyIndex.open_cached(index, tmp_path / "ahead").kind == "in_order") == in_key_order


def test_key_route_cancel(tmp_path: Path) -> None:
    path = tmp_path / "g.taridx"
    generated_fold(path, seed=1)
    token = CancelToken()
    token.cancel()
    with read_taridx(path) as index, pytest.raises(Cancelled):
        sample_findings(index, token, cache_dir=tmp_path, in_memory_rows=0, chunk_rows=64)


@pytest.mark.parametrize("fold", FOLDS)
def test_full_audit_report_same_with_cached_key_index(webds: Path, fold: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """audit_index picks up the cached key index (the user's cache) and reports exactly the same."""
    from itarcore.audit import samples

    key_passes = []
    tally = samples.tally_samples
    monkeypatch.setattr(samples, "tally_samples", lambda *a, **k: key_passes.append(1) or tally(*a, **k))
    path = webds / f"{fold}.taridx"
    before = audit_index(path)
    assert key_passes == []  # small and no key index: sorted in memory
    with read_taridx(path) as index:
        build_key_index(index).close()  # into $ITARCORE_CACHE_DIR, as `itarcore keys` does
        assert KeyIndex.open_cached(index) is not None
    after = audit_index(path)
    assert key_passes == [1]
    assert after.dumps() == before.dumps() and after.summary_text() == before.summary_text()


@pytest.mark.parametrize("chunk_rows", [3, 1 << 20])
def test_stem_count_from_the_sample_pass(data_dir: Path, tmp_path: Path, chunk_rows: int) -> None:
    """The stem count the full audit takes from the sample checks equals the distinct (keyhash, crashid) pairs."""
    paths = [data_dir / "taridx" / "webds" / f"{fold}.taridx" for fold in FOLDS]
    generated_fold(tmp_path / "g.taridx", seed=3)
    for path in [*paths, tmp_path / "g.taridx"]:
        with read_taridx(path) as index:
            truth = len(set(zip(index.rows["keyhash"].tolist(), index.rows["crashid"].tolist())))
            in_memory = sample_checks(index, cache_dir=tmp_path / "none")[1]
            by_keys = sample_checks(index, cache_dir=tmp_path / "k", in_memory_rows=0, chunk_rows=chunk_rows)[1]
            assert in_memory == by_keys == truth, path.name


def test_full_audit_flags_a_wrong_stem_count_through_the_key_index(webds: Path) -> None:
    index = webds / "val.taridx"
    data = bytearray(index.read_bytes())
    data[16:24] = (33).to_bytes(8, "little")  # n_stems: the rows hold 34
    index.write_bytes(bytes(data))
    with read_taridx(index) as opened:
        build_key_index(opened).close()
    found = [f for f in audit_index(index).findings if f.kind == "stem_count"]
    assert len(found) == 1 and "header n_stems is 33 but the rows hold 34" in found[0].message
