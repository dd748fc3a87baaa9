"""`itarcore info` on TACO archives (the JSON contract) and `itarcore taco update|create`."""
from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest
import tacozip

from itarcore import cli

TACO = Path(__file__).parents[1] / "data" / "taco"
MANIFEST = json.loads((TACO / "manifest.json").read_text())
FIXTURES = ["taco_0entries.tacozip", "taco_3entries.tacozip", "taco_3entries_before_update.tacozip"]


@pytest.fixture
def run(monkeypatch, capsys):
    # only the taco commands: other formats' modules are not this test's concern
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("taco",))

    def call(*argv: str) -> tuple[int, str, str]:
        code = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.mark.parametrize("name", FIXTURES)
def test_info_json_contract(run, name: str) -> None:
    code, out, _ = run("info", "--json", TACO / name)
    d = json.loads(out)
    assert code == 0 and d["format"] == "taco"
    assert d["entries"] == MANIFEST[name]["entries"]
    assert [m["name"] for m in d["members"]] == MANIFEST[name]["members"]
    with zipfile.ZipFile(TACO / name) as zf:
        for m, info in zip(d["members"], zf.infolist()):
            assert set(m) == {"name", "data_offset", "compressed_size", "size", "crc32", "method"}
            assert (m["compressed_size"], m["size"], m["crc32"], m["method"]) == (
                info.compress_size, info.file_size, info.CRC, info.compress_type)
            assert m["data_offset"] == info.header_offset + 30 + len(info.filename)
    assert f"0x{d['header']['crc32']:08x}" == MANIFEST[name]["header_crc"]


def test_info_text_lists_entries_and_members(run) -> None:
    code, out, _ = run("info", TACO / "taco_3entries.tacozip")
    assert code == 0
    assert "entries: 3 of 7" in out
    assert "whole member: METADATA/level1.parquet" in out
    assert "@         4,106     70 B  crc 0ca7054a  stored  COLLECTION.json" in out


def test_update_command_matches_fixture(run, tmp_path: Path) -> None:
    p = tmp_path / "u.tacozip"
    shutil.copyfile(TACO / "taco_3entries_before_update.tacozip", p)
    pairs = [f"{o}:{n}" for o, n in MANIFEST["taco_3entries.tacozip"]["entries"]]
    code, out, _ = run("taco", "update", p, *pairs, "--json")
    assert code == 0 and json.loads(out)["entries"] == MANIFEST["taco_3entries.tacozip"]["entries"]
    assert p.read_bytes() == (TACO / "taco_3entries.tacozip").read_bytes()


@pytest.mark.parametrize("pairs, message", [
    (["1:1"] * 8, "at most 7"),
    ([f"{2**64}:1"], "outside the u64 range"),
    (["12"], "expected OFFSET:LENGTH"),
    (["999999:5"], "past end of file"),
])
def test_update_command_refuses_without_writing(run, tmp_path: Path, pairs: list[str], message: str) -> None:
    p = tmp_path / "u.tacozip"
    shutil.copyfile(TACO / "taco_3entries.tacozip", p)
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    code, out, err = run("taco", "update", p, *pairs)
    assert code == 2 and message in err and err.count("\n") == 1 and out == ""
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before


def test_update_force_writes_and_reports_findings(run, tmp_path: Path) -> None:
    p = tmp_path / "u.tacozip"
    shutil.copyfile(TACO / "taco_3entries.tacozip", p)
    code, _, _ = run("taco", "update", p, "999999:5", "--force")
    assert code == 1 and tacozip.read_header(str(p)) == [(999999, 5)]


def test_create_command_names_members_from_folders(run, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    (ds / "DATA").mkdir(parents=True)
    (ds / "METADATA").mkdir()
    (ds / "DATA" / "a.bin").write_bytes(b"abc" * 100)
    (ds / "METADATA" / "level0.parquet").write_bytes(b"PAR1data")
    (ds / "COLLECTION.json").write_text('{"id": "x"}')
    out = tmp_path / "o.tacozip"
    code, text, _ = run("taco", "create", out, ds / "DATA", ds / "METADATA", ds / "COLLECTION.json",
                        "--entry", "METADATA/level0.parquet", "--entry", "COLLECTION.json", "--json")
    assert code == 0
    d = json.loads(text)
    with zipfile.ZipFile(out) as zf:
        assert zf.namelist() == ["TACO_HEADER", "DATA/a.bin", "METADATA/level0.parquet", "COLLECTION.json"]
        blob = out.read_bytes()
        entries = tacozip.read_header(str(out))
        assert [list(e) for e in entries] == d["entries"]
        assert blob[entries[1][0]:entries[1][0] + entries[1][1]] == zf.read("COLLECTION.json")
    out2 = tmp_path / "o2.tacozip"
    code, _, _ = run("taco", "create", out2, "--root", ds, ds / "COLLECTION.json", ds / "DATA")
    with zipfile.ZipFile(out2) as zf:
        assert code == 0 and zf.namelist() == ["TACO_HEADER", "COLLECTION.json", "DATA/a.bin"]
    code, _, err = run("taco", "create", tmp_path / "o3.tacozip", "--root", ds / "DATA", ds / "COLLECTION.json")
    assert code == 2 and "not inside --root" in err and not (tmp_path / "o3.tacozip").exists()


def test_info_on_damaged_archive_is_one_line_error(run, tmp_path: Path) -> None:
    p = tmp_path / "bad.tacozip"
    data = bytearray((TACO / "taco_3entries.tacozip").read_bytes())
    data[41] = 9
    p.write_bytes(bytes(data))
    code, out, err = run("info", "--json", p)
    assert code == 2 and out == "" and str(p) in err and err.count("\n") == 1
