"""The full audit with its per-shard checks run elsewhere: the same findings, in the same order, as a local run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from itarcore.audit import audit_index
from itarcore.cli import main
from itarcore.errors import Cancelled
from itarcore.progress import CancelToken


@pytest.fixture
def corrupted(webds: Path) -> Path:
    """train with a header byte flipped in one shard and another shard cut in half."""
    raw = bytearray((webds / "train_0001.tar").read_bytes())
    raw[512 * 3 + 7] ^= 0xFF
    (webds / "train_0001.tar").write_bytes(bytes(raw))
    cut = webds / "train_0002.tar"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2 + 100])
    return webds / "train.taridx"


@pytest.mark.parametrize("executor, jobs", [("threads", 2), ("processes:2", 1)])
def test_findings_equal_a_local_run(corrupted: Path, executor: str, jobs: int) -> None:
    local = audit_index(corrupted)
    seen = []
    remote = audit_index(corrupted, executor=executor, jobs=jobs, progress=seen.append)
    assert remote.to_json() == local.to_json()
    kinds = [f["kind"] for f in local.to_json()["findings"]]
    assert "bad_header" in kinds and "truncated_shard" in kinds
    assert seen[-1].done == seen[-1].total == 738


def test_cli_verify_json_is_identical_with_processes(corrupted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(corrupted), "--full", "--json"]) == 1
    local = capsys.readouterr().out
    assert main(["verify", str(corrupted), "--full", "--json", "--executor", "processes:2"]) == 1
    assert capsys.readouterr().out == local
    assert json.loads(local)["findings"]


def test_cancel_stops_an_audit_in_processes(corrupted: Path) -> None:
    token = CancelToken()
    seen = []

    def on_progress(p) -> None:
        seen.append(p.done)
        token.cancel()  # after the first shard's checks came back

    with pytest.raises(Cancelled):
        audit_index(corrupted, executor="processes:2", cancel=token, progress=on_progress)
    assert len(seen) == 1 and 0 < seen[0] < 738
