"""Hostile tar shards: both scan routes agree on every mutant, and only ItarErrors escape.

The corpus is ``tar_mutants.mutant(seed)`` (byte flips with checksums recomputed, odd
names, sizes and pax records, GNU long names, truncations, zero blocks). The big run
(thousands, compiled route in a child process) is ``python tests/itarcore/tar_mutants.py``.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tar_mutants import mutant, outcome

from itarcore.indexing import jit

N_MUTANTS = 240


@pytest.mark.skipif(not jit.available(), reason="numba (the 'fast' extra) is not installed: one route only")
def test_both_routes_agree_on_every_mutant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ITARCORE_JIT", "0")  # outcome() sets it per route; restored afterwards
    tally: Counter[str] = Counter()
    for seed in range(N_MUTANTS):
        kind, raw = mutant(seed)
        path = tmp_path / f"m{seed:04d}_0000.tar"
        path.write_bytes(raw)
        compiled = outcome(str(path), compiled=True, convert_to=str(tmp_path / "c.tbl"))
        vectorised = outcome(str(path), compiled=False, convert_to=str(tmp_path / "v.tbl"))
        assert compiled == vectorised, (seed, kind)
        for stage, value in compiled.items():
            tally[f"{stage} {'refused' if isinstance(value, tuple) and value[0] == 'refused' else 'done'}"] += 1
    # the corpus exercises both sides of every stage, not only refusals
    assert all(tally[f"{stage} {end}"] >= N_MUTANTS // 10 for stage in ("scan", "index", "convert")
               for end in ("done", "refused")), tally


def test_refusals_name_the_shard_and_an_offset_inside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ITARCORE_JIT", "0")
    seen = 0
    for seed in range(0, 4 * N_MUTANTS, 4):  # other seeds than the test above
        _, raw = mutant(seed + 1)
        path = tmp_path / f"m{seed:04d}_0000.tar"
        path.write_bytes(raw)
        for value in outcome(str(path), compiled=False).values():
            if isinstance(value, tuple) and value[0] == "refused":
                seen += 1
                message = value[2]
                assert message.startswith(f"{path}: field '"), message
                offset = int(message.split(" at offset ", 1)[1].split(":", 1)[0])
                assert 0 <= offset <= len(raw), message
    assert seen > 20
