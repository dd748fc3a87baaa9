"""Seeded mutation fuzzing: whatever the damage, only ItarError comes out (helpers in tests/fuzzing.py).

Each format's reference fixture is mutated a few hundred times (bit and byte flips, truncations,
boundary values written over header counts, offsets and sizes and over record fields) and
every mutant goes through open_document, every header field, the first and last row of each
table, their payloads' decoding, and `itarcore info --json`. A second fuzz damages the rows of
an intact TARIDX (offsets, sizes, fids, extension ids, crash ids, stem hashes) and runs the
Dataset, decoding, the quick check and the full audit against the real shards.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from fuzzing import (
    FIXTURES,
    Mutator,
    exercise_cli_info,
    exercise_decode,
    exercise_document,
    exercise_fold,
    fixture_payloads,
    mutate_payload,
    mutate_rows,
    place_mutant,
    reuse_cli_parser,
)

from itarcore import cli

SEED = 17
MUTANTS = {"taridx": 300, "taco": 300, "kastore": 250, "kastore-multi": 100, "tbl-v1": 200, "tbl-v2": 250,
           "tszip": 200}
ROW_MUTANTS = 150
PAYLOAD_MUTANTS = 100  # per payload extension of the fixtures: images, labels, JSON, text, arrays, masks, parquet


@pytest.fixture(autouse=True)
def _parser_built_once(monkeypatch) -> None:
    monkeypatch.setattr(cli, "build_parser", reuse_cli_parser())  # main() itself still runs for every mutant


def report(escapes: list[tuple[str, object]]) -> str:
    shown = "\n\n".join(f"mutant: {what}\n{escape}" for what, escape in escapes[:5])
    return f"{len(escapes)} escape(s) outside ItarError; the first:\n{shown}"


@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutants_raise_only_itar_errors(name: str, tmp_path: Path) -> None:
    mutator = Mutator(FIXTURES[name], SEED)
    assert mutator.scalars  # the field-aware overwrites have fields to aim at
    escapes = []
    for what, data in mutator.mutants(MUTANTS[name]):
        path = place_mutant(name, data, tmp_path)
        escapes += [(what, e) for e in exercise_document(path) + exercise_cli_info(path)]
    assert not escapes, report(escapes)


def test_intact_fixtures_exercise_cleanly(tmp_path: Path) -> None:
    """The harness itself: the unmutated files pass every step (so a mutant's escape is the mutant's)."""
    for name, src in FIXTURES.items():
        path = place_mutant(name, src.read_bytes(), tmp_path / name)
        assert exercise_document(path) + exercise_cli_info(path) == []
    index = place_mutant("taridx", FIXTURES["taridx"].read_bytes(), tmp_path / "rows")
    assert exercise_fold(index, [0, 100, 737]) == []


def test_damaged_rows_against_intact_shards(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    original = FIXTURES["taridx"].read_bytes()
    escapes = []
    for _ in range(ROW_MUTANTS):
        what, data, rows = mutate_rows(original, rng)
        path = place_mutant("taridx", data, tmp_path)
        escapes += [(what, e) for e in exercise_fold(path, rows)]
    assert not escapes, report(escapes)


@pytest.mark.filterwarnings("ignore::UserWarning:PIL")  # Pillow warns about the damage it survives
def test_damaged_payloads_decode_or_raise_decode_error() -> None:
    """Every kind of payload the fixtures hold, damaged: decode() returns, or raises DecodeError, only."""
    rng = random.Random(SEED)
    by_ext: dict[str, list[tuple[bytes, dict]]] = {}
    for name in FIXTURES:
        for ext, data, meta in fixture_payloads(FIXTURES[name]):
            by_ext.setdefault(ext, []).append((data, meta))
    assert {"jpg", "png", "webp", "cls", "json", "txt", "npy", "seg8", "parquet", "kastore"} <= set(by_ext)
    escapes = []
    for ext, payloads in by_ext.items():
        for i in range(PAYLOAD_MUTANTS):
            data, meta = payloads[i % len(payloads)]
            what, damaged = mutate_payload(data, rng)
            escapes += [(f"{ext} payload, {what}", e) for e in exercise_decode(ext, damaged, meta)]
    assert not escapes, report(escapes)
