"""A bigger fuzz campaign, locally: thousands of mutants, each in a pool worker with a timeout.

    python tests/fuzz_campaign.py --mutants 2000 --rows 6000 --timeout 30 --jobs 2

Prints the escapes (exceptions outside ItarError), the hangs (cases that outlive the
timeout) and the workers' peak RSS; a case that raises its worker's peak by 64 MiB or more
is reported as well. Exit 1 when anything was found.
"""
from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# run as a script: the repository's itarcore, not the tests/itarcore folder beside this file
sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from fuzzing import (
    FIXTURES,
    Mutator,
    exercise_cli_info,
    exercise_document,
    exercise_fold,
    mutate_rows,
    place_mutant,
    reuse_cli_parser,
)

RSS_JUMP_KIB = 64 << 10  # a case that raises its worker's peak RSS by this much is reported


def _campaign_case(case: tuple[str, str, bytes, list[int], Path]) -> tuple[list[str], int]:
    """Run one mutant in a pool worker; return its escapes (as text) and the worker's peak RSS in KiB."""
    import resource

    from itarcore import cli

    if cli.build_parser.__name__ != "built_once":  # once per worker process
        cli.build_parser = reuse_cli_parser()
    name, what, data, rows, work = case
    folder = work / str(os.getpid())
    path = place_mutant("taridx" if name == "rows" else name, data, folder / name)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    escapes = exercise_fold(path, rows) if name == "rows" else exercise_document(path) + exercise_cli_info(path)
    found = [f"[{name}] {what}\n{e}" for e in escapes]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if peak - before > RSS_JUMP_KIB:
        found.append(f"[{name}] {what}\nmemory: peak RSS rose from {before >> 10} to {peak >> 10} MiB")
    return found, peak


def _campaign_cases(mutants: int, row_mutants: int, seed: int,
                    work: Path) -> Iterator[tuple[str, str, bytes, list[int], Path]]:
    for name, src in FIXTURES.items():
        for what, data in Mutator(src, seed).mutants(mutants):
            yield name, what, data, [], work
    rng = random.Random(seed)
    original = FIXTURES["taridx"].read_bytes()
    for _ in range(row_mutants):
        what, data, rows = mutate_rows(original, rng)
        yield "rows", what, data, rows, work


def campaign(mutants: int, row_mutants: int, seed: int, timeout: float, jobs: int) -> int:
    """Every case in a worker pool; a case that outlives ``timeout`` is a hang and restarts the pool."""
    work = Path(tempfile.mkdtemp(prefix="itarcore-fuzz-"))
    try:
        return _run(mutants, row_mutants, seed, timeout, jobs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(mutants: int, row_mutants: int, seed: int, timeout: float, jobs: int, work: Path) -> int:
    import itertools
    import multiprocessing

    total = mutants * len(FIXTURES) + row_mutants
    escapes: list[str] = []
    hangs: list[str] = []
    peak_kib = done = 0
    while done < total:
        # Cases are made lazily (a list of them would sit in the parent's memory), by the pool's feeder
        # thread, which imports and opens files: workers come from a fork server, never from a fork of
        # this process while that thread may hold the import lock (a child would wait on it forever).
        cases = itertools.islice(_campaign_cases(mutants, row_mutants, seed, work), done, None)
        with multiprocessing.get_context("forkserver").Pool(jobs, maxtasksperchild=500) as pool:
            results = pool.imap(_campaign_case, cases, chunksize=1)
            try:
                for _ in range(total - done):
                    found, rss = results.next(timeout)
                    escapes += found
                    peak_kib = max(peak_kib, rss)
                    done += 1
                    if done % 1000 == 0:
                        print(f"{done}/{total} cases, {len(escapes)} escapes, {len(hangs)} hangs", flush=True)
            except multiprocessing.TimeoutError:
                hung = next(itertools.islice(_campaign_cases(mutants, row_mutants, seed, work), done, None))
                hangs.append(f"[{hung[0]}] {hung[1]}")
                done += 1
                pool.terminate()
    print(f"{total} cases ({mutants} per fixture x {len(FIXTURES)} fixtures + {row_mutants} damaged-row "
          f"indexes), seed {seed}: {len(escapes)} escapes, {len(hangs)} hangs (> {timeout:g} s), "
          f"peak worker RSS {peak_kib / 1024:.0f} MiB")
    for text in escapes[:20] + hangs[:20]:
        print("\n" + text)
    return 1 if escapes or hangs else 0


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--mutants", type=int, default=2000, help="mutants per fixture (default 2000)")
    cli.add_argument("--rows", type=int, default=5000, help="damaged-row indexes against intact shards")
    cli.add_argument("--seed", type=int, default=1)
    cli.add_argument("--timeout", type=float, default=30.0, help="seconds before a case counts as a hang")
    cli.add_argument("--jobs", type=int, default=2)
    opts = cli.parse_args()
    raise SystemExit(campaign(opts.mutants, opts.rows, opts.seed, opts.timeout, opts.jobs))
