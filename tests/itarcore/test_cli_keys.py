"""`itarcore keys` and `stem` through the key index; what `--help` and `info` import (a subprocess's sys.modules)."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import xxhash

from itarcore.cli import COMMANDS, build_parser, main
from itarcore.dataset import Dataset

WEBDS = Path(__file__).parents[1] / "data" / "taridx" / "webds"
HEAVY = ("numpy", "xxhash", "PIL", "itarcore.dataset", "itarcore.formats.taridx", "itarcore.indexing.indexer",
         "itarcore.keyindex", "itarcore.jobs", "itarcore.audit")


def tar_members(fold: str) -> dict[str, list[tuple[str, int]]]:
    """stem -> [(shard, header offset)] in fid then archive order, by tarfile."""
    out: dict[str, list[tuple[str, int]]] = {}
    for shard in sorted(WEBDS.glob(f"{fold}_*.tar")):
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    stem = m.name.rsplit("/", 1)[-1].partition(".")[0]
                    out.setdefault(stem, []).append((shard.name, m.offset))
    return out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    assert main(list(argv)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


@pytest.mark.parametrize("fold,kind", [("train", "sorted"), ("mixed", "sorted")])
def test_keys_builds_once_then_reports_cached(webds: Path, tmp_path: Path, fold: str, kind: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    index = str(webds / f"{fold}.taridx")
    cache = str(tmp_path / "shared-cache")
    (first,) = run_json(capsys, "keys", index, "--cache", cache, "--json")
    assert first["built"] is True and first["kind"] == kind and first["rows"] > 0
    key_file = Path(first["key_index"])
    assert key_file.parent == tmp_path / "shared-cache" / "keys" and key_file.stat().st_size == first["bytes"]
    (second,) = run_json(capsys, "keys", index, "--cache", cache, "--json")
    assert second["built"] is False and second["key_index"] == first["key_index"]
    (third,) = run_json(capsys, "keys", index, "--cache", cache, "--json", "--rebuild")
    assert third["built"] is True
    assert main(["keys", index, "--cache", cache]) == 0
    assert "already cached" in capsys.readouterr().out


def test_stem_uses_the_cached_key_index(webds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    index = str(webds / "train.taridx")
    cache = str(tmp_path / "c")
    members = tar_members("train")
    before = {stem: run_json(capsys, "stem", index, stem, "--json", "--cache", cache) for stem in members}
    run_json(capsys, "keys", index, "--cache", cache, "--json")

    def no_scan(*_args: object, **_kw: object) -> None:
        raise AssertionError("scanned although a key index is cached")

    monkeypatch.setattr(Dataset, "scan_key", no_scan)
    for stem, want in members.items():
        got = run_json(capsys, "stem", index, stem, "--json", "--cache", cache)
        assert got == before[stem], stem
        assert [(o["shard"], o["offset"]) for o in got] == want, stem
        assert all(o["keyhash"] == xxhash.xxh64_intdigest(stem.encode()) for o in got)
    assert main(["stem", index, "no_such_stem", "--cache", cache]) == 2


def test_keys_on_missing_or_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", str(tmp_path / "absent.taridx")]) == 2
    bad = tmp_path / "bad.taridx"
    bad.write_bytes(b"not an index at all" * 5)
    assert main(["keys", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "absent.taridx" in err[0] and "bad.taridx" in err[1]


def imported_after(argv: list[str]) -> set[str]:
    script = ("import sys\nfrom itarcore.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
              f"print('\\n'.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True)
    return set(done.stderr.split())


@pytest.mark.parametrize("argv", [["--help"], ["info", str(WEBDS / "train.taridx")],
                                  ["info", "--json", str(WEBDS / "val.taridx")], ["stem", "--help"]])
def test_help_and_info_import_nothing_heavy(argv: list[str]) -> None:
    assert imported_after(argv) == set()


def test_running_a_command_imports_what_it_needs() -> None:
    assert {"numpy", "itarcore.dataset"} <= imported_after(["stem", str(WEBDS / "val.taridx"), "val000000"])


def test_listed_help_lines_match_the_commands() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    registered = {a.dest: a.help for a in sub._choices_actions}
    assert {name: help_line for name, (_, help_line) in COMMANDS.items()} == {
        name: registered[name] for name in COMMANDS}
    assert set(registered) == {"info", *COMMANDS}
