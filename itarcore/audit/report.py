"""Audit results: findings (what, how bad, which rows and shards) and the report that holds them."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
SHOWN = 5  # rows or members named in a message


@dataclass
class Finding:
    kind: str
    severity: str  # "error" | "warning" | "info"
    message: str
    rows: list[int] = field(default_factory=list)
    shards: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "message": self.message,
                "rows": [int(r) for r in self.rows], "shards": list(self.shards)}


# Kinds that mean the index no longer describes its shards: rebuilding would fix them.
STALE_KINDS = {"extra_shard", "unindexed_member", "shard_modified", "contiguity_flag", "stem_count",
               "size_mismatch", "name_mismatch", "bad_header", "outside_shard", "misaligned_offset",
               "row_mismatch"}


@dataclass
class AuditReport:
    index_path: str
    findings: list[Finding] = field(default_factory=list)
    full: bool = False
    n_rows: int = 0
    n_shards: int = 0

    @property
    def stale(self) -> bool:
        return any(f.kind in STALE_KINDS for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity in ("error", "warning") for f in self.findings) else 0

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def to_json(self) -> dict:
        return {"findings": [f.to_json() for f in self.findings]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=1)

    def summary_text(self) -> str:
        what = "full audit" if self.full else "quick check"
        head = (f"{self.index_path}: {what} of {self.n_rows:,} rows in {self.n_shards} shard(s): "
                f"{self.count('error')} error(s), {self.count('warning')} warning(s), {self.count('info')} info")
        lines = [head]
        lines += [f"  [{f.severity}] {f.kind}: {f.message}" for f in self.findings]
        if self.stale:
            lines.append("  The index is stale: rebuild it with `itarcore index` (or Rebuild index… in the app).")
        elif not self.findings:
            lines.append("  No problems found.")
        return "\n".join(lines)


def rows_text(rows: list[int]) -> str:
    shown = ", ".join(str(r) for r in rows[:SHOWN])
    return shown + (f" … ({len(rows)} rows)" if len(rows) > SHOWN else "")
