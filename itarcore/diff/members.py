"""The rows and members of a few diffed samples, for listings and for selecting them in a grid."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..formats.taridx import TaridxIndex, read_taridx
from .compare import IndexDiff
from .signatures import CHUNK_ROWS

_RUN_WINDOW = 256


def sample_rows(index: TaridxIndex, samples: Sequence[tuple[int, int, int]], chunk: int = CHUNK_ROWS) -> list[np.ndarray]:
    """Rows of each ``(first_row, keyhash, crashid)`` sample: its run when the index is contiguous, else one scan."""
    if not samples:
        return []
    if index.contiguous:
        out = []
        for first, keyhash, crashid in samples:
            stop = first
            while stop < index.n_rows:
                part = index.rows[stop : stop + _RUN_WINDOW]
                same = (part["keyhash"] == np.uint64(keyhash)) & (part["crashid"] == crashid)
                if same.all():
                    stop += len(part)
                    continue
                stop += int(np.argmin(same))
                break
            out.append(np.arange(first, stop, dtype=np.int64))
        return out
    targets = np.unique(np.array([s[1] for s in samples], dtype=np.uint64))
    found = []
    for start in range(0, index.n_rows, chunk):
        keyhash = index.rows["keyhash"][start : start + chunk]
        found.append(np.flatnonzero(np.isin(keyhash, targets)) + start)
    rows = np.concatenate(found).astype(np.int64)
    keyhash, crashid = index.rows["keyhash"][rows], index.rows["crashid"][rows]
    return [rows[(keyhash == np.uint64(kh)) & (crashid == cid)] for _, kh, cid in samples]


def kept_rows(index: TaridxIndex, diff: IndexDiff, positions: Sequence[int], side: str) -> list[np.ndarray]:
    """Rows in ``index`` (the ``side`` "old" or "new" of ``diff``) of kept samples; empty where absent there."""
    recs = diff.samples[np.asarray(positions, dtype=np.int64)]
    present = [i for i, r in enumerate(recs) if r[f"{side}_row"] >= 0]
    found = sample_rows(index, [(int(recs[i][f"{side}_row"]), int(recs[i]["keyhash"]), int(recs[i][f"{side}_crashid"]))
                                for i in present])
    out = [np.zeros(0, np.int64) for _ in range(len(recs))]
    for i, rows in zip(present, found):
        out[i] = rows
    return out


@dataclass(frozen=True)
class MemberSizes:
    ext: str
    old_size: int | None  # None: no such member in the old index
    new_size: int | None

    @property
    def differs(self) -> bool:
        return self.old_size != self.new_size


def _by_extension(index: TaridxIndex, rows: np.ndarray) -> dict[str, list[int]]:
    members: dict[str, list[int]] = {}
    recs = index.rows[rows]
    for extid, size in zip(recs["extid"].tolist(), recs["size"].tolist()):
        members.setdefault(index.extensions[extid], []).append(size)
    return members


def member_sizes(diff: IndexDiff, positions: Sequence[int]) -> list[list[MemberSizes]]:
    """Every member of each kept sample, old size beside new size (extensions sorted)."""
    options = diff.storage_options
    with read_taridx(diff.old.path, check_rows=False, storage_options=options) as old, \
            read_taridx(diff.new.path, check_rows=False, storage_options=options) as new:
        old_rows, new_rows = kept_rows(old, diff, positions, "old"), kept_rows(new, diff, positions, "new")
        out = []
        for o_rows, n_rows in zip(old_rows, new_rows):
            before, after = _by_extension(old, o_rows), _by_extension(new, n_rows)
            members = []
            for ext in sorted(before.keys() | after.keys()):
                a, b = sorted(before.get(ext, [])), sorted(after.get(ext, []))
                for i in range(max(len(a), len(b))):  # a duplicated (stem, ext) pairs up by size
                    members.append(MemberSizes(ext, a[i] if i < len(a) else None, b[i] if i < len(b) else None))
            out.append(members)
        del old_rows, new_rows
    return out
