"""Content findings of the full audit (``verify --full --content``): duplicate payloads and split leaks.

The index is compared with itself and with every other fold indexed beside it (e.g.
``train.taridx`` with ``val.taridx`` and ``test.taridx``): a payload of this fold that
another fold also holds is a leak between splits (an error); identical payloads within
this fold are a warning. See :mod:`itarcore.content.dedup` for what is compared.
"""
from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

from ..content.dedup import DuplicateGroup, find_duplicates
from ..dataset import Dataset
from ..errors import ItarError
from ..progress import CancelToken, ProgressCallback
from .report import SHOWN, Finding


def _examples(groups: list[DuplicateGroup], folds: list[str]) -> str:
    shown = []
    for g in groups[:SHOWN]:
        names = " = ".join(f"{folds[m.fold]}/{m.stem}.{g.ext}" for m in g.members[:3])
        shown.append(names + (" …" if len(g.members) > 3 else ""))
    return "; ".join(shown) + (f"; … {len(groups) - SHOWN} more group(s)" if len(groups) > SHOWN else "")


def content_findings(index_path: str | os.PathLike[str], progress: ProgressCallback | None = None,
                     cancel: CancelToken | None = None) -> list[Finding]:
    here = Path(index_path).resolve()
    findings = []
    with ExitStack() as stack:
        opened = [stack.enter_context(Dataset.open(index_path))]
        for sibling in sorted(here.parent.glob("*.taridx")):
            if sibling.resolve() == here:
                continue
            try:
                opened.append(stack.enter_context(Dataset.open(sibling)))
            except ItarError as exc:
                findings.append(Finding("content_fold_skipped", "info", f"{sibling.name} was not compared: {exc}"))
        report = find_duplicates(opened, progress=progress, cancel=cancel)
    folds = report.folds
    leaks = [g for g in report.groups if g.cross_fold and 0 in g.folds]
    if leaks:
        rows = sorted(m.row for g in leaks for m in g.members if m.fold == 0)
        others = sorted({folds[m.fold] for g in leaks for m in g.members if m.fold != 0})
        findings.append(Finding("split_leak", "error", f"{len(rows)} payload(s) of {folds[0]} also appear in "
                                f"{', '.join(others)} ({len(leaks)} group(s) of identical payloads): "
                                f"{_examples(leaks, folds)}", rows, sorted({m.shard for g in leaks
                                                                            for m in g.members if m.fold == 0})))
    within = [g for g in report.groups if sum(m.fold == 0 for m in g.members) > 1]
    if within:
        rows = sorted(m.row for g in within for m in g.members if m.fold == 0)
        findings.append(Finding("duplicate_payload", "warning", f"{len(within)} group(s) of identical payloads "
                                f"within {folds[0]} ({len(rows)} members): {_examples(within, folds)}", rows,
                                sorted({m.shard for g in within for m in g.members if m.fold == 0})))
    return findings
