"""The `itarcore` command line: output contract, exit codes, error lines, help.

Truth: ``struct`` parses of the fixture indexes, ``tarfile`` member lists of their shards, ``xxhash``, ``json``.
"""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import xxhash

from itarcore.cli import build_parser, main

FOLDS = ("train", "val", "mixed")
HDR = struct.Struct("<8sHHHHQQIIQQB7s")
HEADER_FIELDS = ["magic", "major", "minor", "rec_size", "hdr_size", "n_stems", "n_rows", "n_ext", "n_crash",
                 "off_crash", "off_arr", "flags"]
ROW_KEYS = {"row", "fid", "shard", "offset", "size", "extid", "ext", "crashid", "keyhash"}
WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"


def fixture(fold: str) -> Path:
    return WEBDS / f"{fold}.taridx"


def expected_rows(fold: str) -> list[dict]:
    """The rows the reference writes for a fold, rebuilt from tarfile alone (archive order, fid by sorted suffix,
    extension ids and crash ids by first appearance, NOTES.md stem rules)."""
    shards = sorted(WEBDS.glob(f"{fold}_*.tar"), key=lambda p: p.name[len(fold) + 1 : -4])
    ext_ids: dict[str, int] = {}
    canonical: dict[int, str] = {}
    crash_ids: dict[str, int] = {}
    rows = []
    for fid, shard in enumerate(shards):
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if not m.isfile():
                    continue
                stem, _, ext = m.name.rsplit("/", 1)[-1].partition(".")
                ext = ext.lower()
                kh = xxhash.xxh64(stem.encode()).intdigest()
                first = canonical.setdefault(kh, stem)
                crashid = 0 if stem == first else crash_ids.setdefault(stem, len(crash_ids) + 1)
                rows.append({"row": len(rows), "fid": fid, "shard": shard.name, "offset": m.offset_data - 512,
                             "size": m.size, "extid": ext_ids.setdefault(ext, len(ext_ids)), "ext": ext,
                             "crashid": crashid, "keyhash": kh, "_stem": stem, "_data": tf.extractfile(m).read()})
    return rows


def public(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


@pytest.fixture(scope="module")
def truth() -> dict[str, list[dict]]:
    return {fold: expected_rows(fold) for fold in FOLDS}


def json_lines(text: str) -> list[dict]:
    lines = text.splitlines()
    assert all(line.strip() for line in lines)
    return [json.loads(line) for line in lines]


def assert_one_error_line(err: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("itarcore: error: "), err
    assert "Traceback" not in err


# -- info ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fold", FOLDS)
def test_info_json(fold: str, capsys: pytest.CaptureFixture[str]) -> None:
    raw = fixture(fold).read_bytes()
    values = dict(zip(HEADER_FIELDS + ["reserved"], HDR.unpack_from(raw, 0)))
    assert main(["info", str(fixture(fold)), "--json"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    obj = json.loads(out)
    assert obj["format"] == "taridx"
    assert list(obj["header"]) == HEADER_FIELDS
    for name in HEADER_FIELDS[1:]:
        assert obj["header"][name] == values[name], name
    assert obj["header"]["magic"] == values["magic"].rstrip(b"\0").decode()
    ext_block = raw[64 : values["off_crash"]].decode()
    crash_block = raw[values["off_crash"] : values["off_arr"]].decode()
    assert obj["extensions"] == (ext_block.split("\n") if values["n_ext"] else [])
    assert obj["crash_stems"] == (crash_block.split("\n") if values["n_crash"] else [])


def test_info_text_mentions_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(fixture("train"))]) == 0
    out = capsys.readouterr().out
    assert "TARIDX" in out and "#$w{lSfF" in out and "left.jpg" in out and "738" in out


# -- rows and stem -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fold", FOLDS)
def test_rows_json(fold: str, truth, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rows", str(fixture(fold)), "--json"]) == 0
    objs = json_lines(capsys.readouterr().out)
    for obj in objs:
        assert set(obj) == ROW_KEYS
    assert objs == [public(r) for r in truth[fold]]


@pytest.mark.parametrize("start,limit", [(5, 3), (0, 1), (730, 100), (738, 5), (0, 0), (2000, None)])
def test_rows_start_limit(start: int, limit: int | None, truth, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["rows", str(fixture("train")), "--json", "--start", str(start)]
    if limit is not None:
        args += ["--limit", str(limit)]
    assert main(args) == 0
    objs = json_lines(capsys.readouterr().out)
    stop = None if limit is None else start + limit
    assert objs == [public(r) for r in truth["train"][start:stop]]


def test_rows_text(capsys: pytest.CaptureFixture[str], truth) -> None:
    assert main(["rows", str(fixture("val")), "--limit", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3  # a heading and two rows
    assert "val_0000.tar" in out[1] and str(truth["val"][1]["offset"]) in out[2]


@pytest.mark.parametrize("fold", FOLDS)
def test_stem_json_for_every_stem(fold: str, truth, capsys: pytest.CaptureFixture[str]) -> None:
    stems = dict.fromkeys(r["_stem"] for r in truth[fold])
    for stem in stems:
        assert main(["stem", str(fixture(fold)), stem, "--json"]) == 0
        objs = json_lines(capsys.readouterr().out)
        for obj in objs:
            assert set(obj) == ROW_KEYS
        want = [public(r) for r in truth[fold] if r["_stem"] == stem]
        assert sorted(objs, key=lambda o: o["row"]) == want, stem


# -- cat -------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fold", FOLDS)
def test_cat_writes_exact_payload(fold: str, truth, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # one member per (shard, extension), plus every crash-stem member
    picked = {}
    for r in truth[fold]:
        picked.setdefault((r["fid"], r["ext"]), r)
        if r["crashid"]:
            picked[(r["_stem"], r["ext"])] = r
    assert len(picked) >= 5
    for r in picked.values():
        assert main(["cat", str(fixture(fold)), r["_stem"], r["ext"]]) == 0
        assert capsysbinary.readouterr().out == r["_data"], (r["_stem"], r["ext"])


def test_cat_crash_stem_and_readme(truth, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    want = next(r for r in truth["val"] if r["_stem"] == "!DoxIo#m" and r["ext"] == "jpg")
    assert want["crashid"] == 1
    assert main(["cat", str(fixture("val")), "!DoxIo#m", "jpg"]) == 0
    assert capsysbinary.readouterr().out == want["_data"]
    assert main(["cat", str(fixture("val")), "README", ""]) == 0
    assert capsysbinary.readouterr().out == b"member without extension\n"


def test_cat_missing_extension(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["cat", str(fixture("val")), "val000000", "png"]) == 2
    cap = capsysbinary.readouterr()
    assert cap.out == b""
    assert_one_error_line(cap.err.decode())


# -- index -------------------------------------------------------------------------------------------------------------------

def test_index_root_reproduces_fixtures(webds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fold in FOLDS:
        (webds / f"{fold}.taridx").unlink()
    assert main(["index", str(webds)]) == 0
    capsys.readouterr()
    for fold in FOLDS:
        assert (webds / f"{fold}.taridx").read_bytes() == fixture(fold).read_bytes(), fold


def test_index_fold_output_json(webds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "X.taridx"
    assert main(["index", str(webds), "--fold", "val", "--output", str(out), "--json"]) == 0
    assert out.read_bytes() == fixture("val").read_bytes()
    (obj,) = json_lines(capsys.readouterr().out)
    assert (obj["fold"], obj["rows"], obj["stems"], obj["crash_stems"]) == ("val", 98, 34, ["!DoxIo#m"])


def test_index_jobs_two(webds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "train.taridx"
    assert main(["index", str(webds), "--fold", "train", "--output", str(out), "--jobs", "2"]) == 0
    capsys.readouterr()
    assert out.read_bytes() == fixture("train").read_bytes()


def test_index_unknown_fold(webds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(webds), "--fold", "nope"]) == 2
    assert_one_error_line(capsys.readouterr().err)


# -- verify --------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fold", FOLDS)
def test_verify_clean_fixture(webds: Path, fold: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(webds / f"{fold}.taridx")]) == 0
    capsys.readouterr()
    assert main(["verify", str(webds / f"{fold}.taridx"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert isinstance(obj, dict)


def test_verify_unusable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.taridx"
    bad.write_bytes(b"not an index at all" * 10)
    assert main(["verify", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


# -- errors and exit codes -----------------------------------------------------------------------------------------------------

def test_unknown_stem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stem", str(fixture("val")), "no_such_stem"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert_one_error_line(cap.err)
    assert "no_such_stem" in cap.err


@pytest.mark.parametrize("command,extra", [("info", []), ("rows", []), ("stem", ["x"]), ("cat", ["x", "jpg"])])
def test_missing_file(tmp_path: Path, command: str, extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "absent.taridx")
    assert main([command, missing, *extra]) == 2
    cap = capsys.readouterr()
    assert_one_error_line(cap.err)
    assert "absent.taridx" in cap.err


@pytest.mark.parametrize("command", ["info", "rows", "stem", "cat"])
@pytest.mark.parametrize("target", ["val_0000.tar", "empty", "text"])
def test_non_index_file(tmp_path: Path, command: str, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    if target == "val_0000.tar":
        path = WEBDS / target
    else:
        path = tmp_path / f"{target}.taridx"
        path.write_bytes(b"" if target == "empty" else b"hello, this is plain text and not an index\n" * 3)
    extra = {"info": [], "rows": [], "stem": ["val000000"], "cat": ["val000000", "jpg"]}[command]
    assert main([command, str(path), *extra]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert_one_error_line(cap.err)
    assert path.name in cap.err


@pytest.mark.parametrize("argv", [[], ["bogus"], ["rows"], ["stem", "x.taridx"], ["rows", "x", "--limit", "many"],
                                  ["index"], ["index", ".", "--if-exists", "maybe"], ["info", "--nope", "x"]])
def test_bad_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "Traceback" not in cap.err
    errors = [line for line in cap.err.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert re.match(r"^itarcore( [a-z]+)?: error: \S", errors[0]), errors[0]
    others = [line for line in cap.err.splitlines() if line not in errors]
    assert all(line.startswith(("usage:", " ")) for line in others), cap.err


def test_subprocess_error_and_success() -> None:
    bad = subprocess.run([sys.executable, "-m", "itarcore", "stem", str(fixture("val")), "no_such_stem"],
                         check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert_one_error_line(bad.stderr)
    missing = subprocess.run([sys.executable, "-m", "itarcore", "info", "/definitely/not/here.taridx"],
                             check=False, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    assert_one_error_line(missing.stderr)
    ok = subprocess.run([sys.executable, "-m", "itarcore", "info", "--json", str(fixture("val"))],
                        check=False, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["header"]["n_rows"] == 98


# -- help ------------------------------------------------------------------------------------------------------------------------

OPTIONS = {
    "info": ["--json"],
    "index": ["--fold", "--output", "--jobs", "--contiguous", "--if-exists", "--json"],
    "rows": ["--start", "--limit", "--json"],
    "stem": ["--json"],
    "cat": [],
    "verify": ["--json"],
}


def test_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: itarcore")
    for command in OPTIONS:
        assert re.search(rf"^\s+{command}\s+\S", out, re.MULTILINE), command


def _subcommands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)


def test_subcommand_list_includes_taridx_commands() -> None:
    assert set(OPTIONS) <= set(_subcommands())


@pytest.mark.parametrize("command", _subcommands())
def test_subcommand_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: itarcore {command}")
    assert len(out.splitlines()) >= 4  # usage, description, options
    lines = out.splitlines()
    for option in OPTIONS.get(command, []):
        at = next((i for i, ln in enumerate(lines) if ln.strip().startswith(option)), None)
        assert at is not None, f"{command} --help does not list {option}"
        parts = re.split(r"\s{2,}", lines[at].strip(), maxsplit=1)
        help_text = parts[1] if len(parts) > 1 else lines[at + 1].strip()
        assert not help_text.startswith("-") and re.search(r"[a-z]{3,}", help_text), f"{option} has no help text"
