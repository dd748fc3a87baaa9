"""Compare two TARIDX indexes by sample: added, removed, changed and moved, per shard and in total."""
from __future__ import annotations

from .compare import ADDED as ADDED
from .compare import CHANGED as CHANGED
from .compare import DIFF_SAMPLE_DTYPE as DIFF_SAMPLE_DTYPE
from .compare import FLAG_EXTENSIONS as FLAG_EXTENSIONS
from .compare import FLAG_SHARD as FLAG_SHARD
from .compare import FLAG_SIZE as FLAG_SIZE
from .compare import KIND_NAMES as KIND_NAMES
from .compare import MOVED as MOVED
from .compare import REMOVED as REMOVED
from .compare import SHARD_COLUMNS as SHARD_COLUMNS
from .compare import DiffSide as DiffSide
from .compare import IndexDiff as IndexDiff
from .compare import diff_indexes as diff_indexes
from .compare import flag_names as flag_names
from .members import MemberSizes as MemberSizes
from .members import kept_rows as kept_rows
from .members import member_sizes as member_sizes
from .report import diff_json as diff_json
from .report import diff_text as diff_text
