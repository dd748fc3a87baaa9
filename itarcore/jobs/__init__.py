"""Long-running tasks (conversions, builds, audits) taking ``progress=None, cancel=None`` keywords."""
from __future__ import annotations

from .convert_tbl import convert_tar_to_tbl as convert_tar_to_tbl
