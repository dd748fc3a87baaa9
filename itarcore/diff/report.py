"""An IndexDiff as one JSON object or as text (the CLI's two outputs)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .compare import KIND_NAMES, SHARD_COLUMNS, IndexDiff, flag_names
from .members import MemberSizes, member_sizes

TOTAL_KEYS = ("added", "removed", "changed", "changed_size", "changed_extensions", "moved", "unchanged")


def _listed(diff: IndexDiff, limit: int) -> dict[int, np.ndarray]:
    return {kind: diff.of_kind(kind)[: max(0, limit)] for kind in KIND_NAMES}


def _member_json(members: list[MemberSizes]) -> list[dict[str, Any]]:
    return [{"ext": m.ext, "old_size": m.old_size, "new_size": m.new_size} for m in members]


def diff_json(diff: IndexDiff, limit: int) -> dict[str, Any]:
    """One object: both indexes, totals, a row per shard, and the first ``limit`` samples of each kind."""
    listed = _listed(diff, limit)
    positions = np.concatenate(list(listed.values())).tolist()
    members = dict(zip(positions, member_sizes(diff, positions)))
    samples: dict[str, list[dict[str, Any]]] = {}
    for kind, name in KIND_NAMES.items():
        out = []
        for pos in listed[kind].tolist():
            rec = diff.samples[pos]
            entry: dict[str, Any] = {"stem": diff.stems[pos], "keyhash": int(rec["keyhash"])}
            for side in ("old", "new"):
                if rec[f"{side}_row"] >= 0:
                    entry[f"{side}_shard"] = diff.shard_label(int(rec[f"{side}_shard"]), side)
                    entry[f"{side}_first_row"] = int(rec[f"{side}_row"])
            if kind in (3, 4):
                entry["changes"] = flag_names(int(rec["flags"]))
            entry["members"] = _member_json(members[pos])
            out.append(entry)
        samples[name] = out
    return {
        "old": _side_json(diff, "old"),
        "new": _side_json(diff, "new"),
        "differences": diff.n_differences,
        "totals": {k: diff.totals[k] for k in TOTAL_KEYS},
        "shards": [{"shard": name, **{c: int(diff.shard_counts[c][i]) for c in SHARD_COLUMNS}}
                   for i, name in enumerate(diff.shard_names)],
        "samples": samples,
        "listed_per_kind": max(0, limit),
        "unresolved_hashes": diff.unresolved_hashes,
        "warnings": list(diff.warnings),
    }


def _side_json(diff: IndexDiff, side: str) -> dict[str, Any]:
    s = diff.old if side == "old" else diff.new
    return {"path": s.path, "fold": s.fold, "rows": s.n_rows, "samples": s.n_samples, "missing_shards": s.missing_shards}


def _size(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _describe(members: list[MemberSizes], kind: int) -> str:
    if kind == 1:
        return ", ".join(f"{m.ext or '(none)'} {_size(m.new_size)}" for m in members)
    if kind == 2:
        return ", ".join(f"{m.ext or '(none)'} {_size(m.old_size)}" for m in members)
    parts = []
    for m in members:
        if m.old_size is None:
            parts.append(f"+{m.ext or '(none)'} {_size(m.new_size)}")
        elif m.new_size is None:
            parts.append(f"-{m.ext or '(none)'} {_size(m.old_size)}")
        elif m.differs:
            parts.append(f"{m.ext or '(none)'} {m.old_size:,} -> {m.new_size:,}")
    return ", ".join(parts)


def diff_text(diff: IndexDiff, limit: int) -> str:
    t = diff.totals
    lines = [f"old: {diff.old.path} ({diff.old.n_samples:,} samples, {diff.old.n_rows:,} rows)",
             f"new: {diff.new.path} ({diff.new.n_samples:,} samples, {diff.new.n_rows:,} rows)", ""]
    if not diff.n_differences:
        lines.append(f"No differences: {t['unchanged']:,} samples are the same.")
    else:
        lines.append(f"{t['added']:,} added, {t['removed']:,} removed, {t['changed']:,} changed "
                     f"({t['changed_extensions']:,} extension set, {t['changed_size']:,} size only), "
                     f"{t['moved']:,} moved to another shard, {t['unchanged']:,} unchanged.")
    lines += [f"warning: {w}" for w in diff.warnings]
    width = max([len("shard")] + [len(n) for n in diff.shard_names])
    heads = ("old", "new", "added", "removed", "changed", "moved in", "moved out")
    lines += ["", f"{'shard':<{width}}" + "".join(f" {h:>10}" for h in heads)]
    for i, name in enumerate(diff.shard_names):
        lines.append(f"{name:<{width}}" + "".join(f" {int(diff.shard_counts[c][i]):>10,}" for c in SHARD_COLUMNS))
    listed = _listed(diff, limit)
    positions = np.concatenate(list(listed.values())).tolist()
    members = dict(zip(positions, member_sizes(diff, positions)))
    for kind, name in KIND_NAMES.items():
        shown, total = listed[kind], t[name]
        if not total:
            continue
        more = f" (first {len(shown):,})" if len(shown) < total else ""
        lines += ["", f"{name.capitalize()} samples: {total:,}{more}"]
        for pos in shown.tolist():
            rec = diff.samples[pos]
            side = "old" if kind == 2 else "new"
            where = diff.shard_label(int(rec[f"{side}_shard"]), side)
            if kind in (3, 4) and rec["old_shard"] != rec["new_shard"]:
                where = f"{diff.shard_label(int(rec['old_shard']), 'old')} -> {where}"
            what = f" [{', '.join(flag_names(int(rec['flags'])))}]" if kind == 3 else ""
            detail = _describe(members[pos], kind)
            lines.append(f"  {diff.stem_label(pos)}  {where}{what}" + (f"  {detail}" if detail else ""))
    return "\n".join(lines)
