"""The audit against injected corruptions: each is reported exactly once, naming the right rows.

Truth comes from Python's ``tarfile`` (member offsets and sizes) and from the clean
fixture's own report: a corruption must add exactly one finding to that baseline.
"""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.audit import AuditReport, Finding, audit_index, quick_check
from itarcore.errors import Cancelled, FormatError
from itarcore.formats.taridx import HEADER_SIZE, ROW_DTYPE, read_taridx
from itarcore.progress import CancelToken

FOLDS = ("train", "val", "mixed")


def members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tf:
        return tf.getmembers()


def rows_of(index_path: Path) -> np.ndarray:
    with read_taridx(index_path) as idx:
        return idx.rows.copy()


def row_at(index_path: Path, fid: int, offset: int) -> int:
    rows = rows_of(index_path)
    hit = np.flatnonzero((rows["fid"] == fid) & (rows["offset"] == offset))
    assert len(hit) == 1
    return int(hit[0])


def edit_row(index_path: Path, row: int, field: str, value: int) -> None:
    off_arr = read_taridx(index_path).header.off_arr
    data = bytearray(index_path.read_bytes())
    start = off_arr + row * ROW_DTYPE.itemsize + ROW_DTYPE.fields[field][1]
    width = ROW_DTYPE.fields[field][0].itemsize
    data[start : start + width] = int(value).to_bytes(width, "little")
    index_path.write_bytes(bytes(data))


def new_findings(report: AuditReport, baseline: AuditReport) -> list[Finding]:
    seen = [json.dumps(f.to_json(), sort_keys=True) for f in baseline.findings]
    return [f for f in report.findings if json.dumps(f.to_json(), sort_keys=True) not in seen]


def assert_one_new(report: AuditReport, baseline: AuditReport, kind: str) -> Finding:
    added = new_findings(report, baseline)
    assert [f.kind for f in added] == [kind], report.summary_text()
    assert [f for f in report.findings if f.severity == "error" and f not in added] == []
    return added[0]


@pytest.fixture
def baseline(webds: Path) -> AuditReport:
    return audit_index(webds / "train.taridx")


@pytest.mark.parametrize("fold", FOLDS)
def test_clean_fixtures_have_no_errors(data_dir: Path, fold: str) -> None:
    report = audit_index(data_dir / "taridx" / "webds" / f"{fold}.taridx")
    assert [f for f in report.findings if f.severity == "error"] == []
    assert not report.stale
    for f in report.findings:
        if f.kind in ("missing_extension", "split_samples"):
            assert f.severity == "warning"
    quick = quick_check(data_dir / "taridx" / "webds" / f"{fold}.taridx")
    assert quick.findings == [] and quick.exit_code == 0


def test_readme_member_is_info(data_dir: Path) -> None:
    path = data_dir / "taridx" / "webds" / "train.taridx"
    report = audit_index(path)
    readme = [i for i, m in enumerate(members(path.with_name("train_0000.tar"))) if m.name == "README"]
    found = [f for f in report.findings if f.kind == "no_extension"]
    assert len(found) == 1 and found[0].severity == "info"
    assert found[0].rows == readme  # shard 0 rows are its members in order


def test_mixed_reports_its_split_samples_once(data_dir: Path) -> None:
    path = data_dir / "taridx" / "webds" / "mixed.taridx"
    report = audit_index(path)
    split = [f for f in report.findings if f.kind == "split_samples"]
    assert len(split) == 1
    # Truth from tarfile: stems whose members are not one run in archive order (across both shards).
    names = [m.name for s in ("mixed_0000.tar", "mixed_0001.tar") for m in members(path.with_name(s))]
    stems = [n.split("/")[-1].split(".", 1)[0] for n in names]
    runs: dict[str, int] = {}
    for i, s in enumerate(stems):
        if i == 0 or stems[i - 1] != s:
            runs[s] = runs.get(s, 0) + 1
    expected = [i for i, s in enumerate(stems) if runs[s] > 1]
    assert split[0].rows == expected and len(expected) > 0
    assert report.exit_code == 1


def test_changed_size(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    m = members(webds / "train_0001.tar")[7]
    row = row_at(index, 1, m.offset)
    edit_row(index, row, "size", m.size + 3)
    f = assert_one_new(audit_index(index), baseline, "size_mismatch")
    assert f.rows == [row] and f.shards == ["train_0001.tar"] and f.severity == "error"
    assert f"row size {m.size + 3}, header size {m.size}" in f.message


def test_shifted_offset(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    m = members(webds / "train_0002.tar")[10]
    row = row_at(index, 2, m.offset)
    edit_row(index, row, "offset", m.offset + 512)  # into the member's own payload
    report = audit_index(index)
    f = assert_one_new(report, baseline, "bad_header")
    assert f.rows == [row] and f.shards == ["train_0002.tar"]
    assert "other offsets" in f.message  # the member itself is still there: explained, not unindexed
    assert report.stale


def test_misaligned_offset(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    m = members(webds / "train_0000.tar")[30]
    row = row_at(index, 0, m.offset)
    edit_row(index, row, "offset", m.offset + 100)
    f = assert_one_new(audit_index(index), baseline, "misaligned_offset")
    assert f.rows == [row] and f"offset {m.offset + 100} is not a multiple of 512" in f.message


def test_deleted_shard(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    expected = [m.offset for m in members(webds / "train_0001.tar")]
    (webds / "train_0001.tar").unlink()
    report = audit_index(index)
    f = assert_one_new(report, baseline, "missing_shard")
    rows = rows_of(index)
    assert f.shards == ["train_0001.tar"]
    assert rows["offset"][f.rows].tolist() == expected and set(rows["fid"][f.rows].tolist()) == {1}
    quick = quick_check(index)
    assert [g.kind for g in quick.findings] == ["missing_shard"] and quick.findings[0].rows == f.rows


def test_renamed_member(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    shard = webds / "train_0000.tar"
    m = members(shard)[20]
    data = bytearray(shard.read_bytes())
    header = data[m.offset : m.offset + 512]
    header[0:100] = b"renamed_member.xyz".ljust(100, b"\0")
    header[148:156] = b"        "
    header[148:156] = b"%06o\0 " % sum(header)
    data[m.offset : m.offset + 512] = header
    shard.write_bytes(bytes(data))
    assert members(shard)[20].name == "renamed_member.xyz"  # tarfile accepts the repaired header
    f = assert_one_new(audit_index(index), baseline, "name_mismatch")
    assert f.rows == [row_at(index, 0, m.offset)] and "renamed_member.xyz" in f.message
    assert "modified after the index" in f.message  # the mtime note joins, no finding of its own


def test_truncated_shard(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    shard = webds / "train_0002.tar"
    ms = members(shard)
    cut = ms[100].offset_data + 10
    shard.write_bytes(shard.read_bytes()[:cut])
    f = assert_one_new(audit_index(index), baseline, "truncated_shard")
    expected = [row_at(index, 2, m.offset) for m in ms if m.offset_data + m.size > cut]
    assert f.rows == expected and len(expected) == len(ms) - 100


def test_swapped_members(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    shard = webds / "train_0001.tar"
    with tarfile.open(shard) as tf:
        infos = tf.getmembers()
        payloads = [tf.extractfile(i).read() for i in infos]
    order = list(range(len(infos)))
    order[4], order[5] = 5, 4  # a .jpg and its .cls change places: offsets of both move
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as tf:
        for i in order:
            tf.addfile(infos[i], io.BytesIO(payloads[i]))
    report = audit_index(index)
    f = assert_one_new(report, baseline, "row_mismatch")
    assert f.rows == sorted([row_at(index, 1, infos[4].offset), row_at(index, 1, infos[5].offset)])
    assert f.shards == ["train_0001.tar"] and report.stale


def test_appended_member(webds: Path, baseline: AuditReport) -> None:
    index = webds / "train.taridx"
    shard = webds / "train_0000.tar"
    extra = tarfile.TarInfo("extra000999.txt")
    extra.size = 5
    with tarfile.open(shard, "a") as tf:
        tf.addfile(extra, io.BytesIO(b"hello"))
    report = audit_index(index)
    f = assert_one_new(report, baseline, "unindexed_member")
    offset = next(m.offset for m in members(shard) if m.name == "extra000999.txt")
    assert f.rows == [] and f.shards == ["train_0000.tar"]
    assert f"'extra000999.txt' at offset {offset}" in f.message and report.stale
    # its data is invisible to every loader that trusts the index: an error, like the other stale findings
    assert f.severity == "error" and report.exit_code == 1 and report.count("error") == 1


def test_quick_check_flags(webds: Path) -> None:
    index = webds / "val.taridx"
    data = bytearray(index.read_bytes())
    data[HEADER_SIZE - 8] ^= 1  # flags bit 0
    data[16:24] = (33).to_bytes(8, "little")  # n_stems: the rows hold 34
    index.write_bytes(bytes(data))
    kinds = [f.kind for f in quick_check(index).findings]
    assert kinds == ["stem_count", "contiguity_flag"]
    (webds / "val_0001.tar").write_bytes((webds / "val_0000.tar").read_bytes())
    report = quick_check(index)
    assert [f.shards for f in report.findings if f.kind == "extra_shard"] == [["val_0001.tar"]]


def test_bad_index_is_unusable_and_json_contract(webds: Path) -> None:
    (webds / "val.taridx").write_bytes(b"NOTTARIDX" + bytes(100))
    with pytest.raises(FormatError):
        audit_index(webds / "val.taridx")
    report = audit_index(webds / "mixed.taridx")
    doc = json.loads(report.dumps())
    assert list(doc) == ["findings"]
    assert all(list(f) == ["kind", "severity", "message", "rows", "shards"] for f in doc["findings"])
    assert "split_samples" in report.summary_text()


def test_progress_in_rows_and_cancel(data_dir: Path) -> None:
    seen = []
    audit_index(data_dir / "taridx" / "webds" / "train.taridx", progress=seen.append)
    assert seen[-1].unit == "rows" and seen[-1].done == seen[-1].total == 738
    token = CancelToken()

    def stop(p) -> None:
        token.cancel()

    with pytest.raises(Cancelled):
        audit_index(data_dir / "taridx" / "webds" / "train.taridx", progress=stop, cancel=token)
