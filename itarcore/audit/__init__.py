"""Checking a TARIDX index against its shards.

``fold`` runs the quick check and the full audit of one index; ``rows`` checks the tar
header behind every row of one shard; ``samples`` finds per-sample problems (split,
duplicate or incomplete samples); ``report`` holds the findings and their text/JSON forms.
"""
from .fold import audit_index, quick_check
from .report import AuditReport, Finding

__all__ = ["AuditReport", "Finding", "audit_index", "quick_check"]
