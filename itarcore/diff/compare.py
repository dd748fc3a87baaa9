"""The diff job: two TARIDX indexes -> samples added, removed, changed and moved, per shard and in total.

Samples are compared by identity (see ``identity``) and by their member sums (see
``signatures``): *changed* means the extension set differs (a member added or
removed: flag ``extensions``) or, with the same extensions, a member's size differs
(flag ``size``). A sample whose shard differs but whose members do not is *moved*; a
changed sample that also changed shard carries the flag ``shard``. A sample's shard
is the shard of its first row.

Memory is bounded: when the two sample tables would not fit ``memory_budget``, the
keyhash space is cut into ranges and each range is one pass over both indexes
(xxh64 spreads samples evenly). Only the first ``keep`` samples of each kind (in
file order) are kept with their stem names; the counts are always complete.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from ..dataset import Dataset
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .identity import ShardLabels, StemReader, colliding_hashes, match_keys
from .signatures import CHUNK_ROWS, SampleTable, sample_table

ADDED, REMOVED, CHANGED, MOVED = 1, 2, 3, 4
KIND_NAMES = {ADDED: "added", REMOVED: "removed", CHANGED: "changed", MOVED: "moved"}
FLAG_SIZE, FLAG_EXTENSIONS, FLAG_SHARD = 1, 2, 4
FLAG_NAMES = ((FLAG_EXTENSIONS, "extensions"), (FLAG_SIZE, "size"), (FLAG_SHARD, "shard"))
SHARD_COLUMNS = ("old_samples", "new_samples", "added", "removed", "changed", "moved_in", "moved_out")

DIFF_SAMPLE_DTYPE = np.dtype([
    ("kind", "u1"), ("flags", "u1"), ("keyhash", "<u8"), ("old_crashid", "<u4"), ("new_crashid", "<u4"),
    ("old_row", "<i8"), ("new_row", "<i8"), ("old_shard", "<i8"), ("new_shard", "<i8"),
    ("old_members", "<u4"), ("new_members", "<u4"),
])
# the sample tables, their chunk partials and the join's sort keys, per sample of both indexes
BYTES_PER_SAMPLE = 160
DEFAULT_MEMORY_BUDGET = 2 << 30


def flag_names(flags: int) -> list[str]:
    return [name for bit, name in FLAG_NAMES if flags & bit]


@dataclass
class DiffSide:
    path: str
    fold: str
    n_rows: int
    n_samples: int
    missing_shards: list[str]


@dataclass
class IndexDiff:
    old: DiffSide
    new: DiffSide
    shard_names: list[str]  # shards of both folds, matched by suffix, in suffix order ("old → new" if renamed)
    shard_side_names: tuple[list[str | None], list[str | None]]  # each fold's own name of each shard
    shard_counts: dict[str, np.ndarray]  # SHARD_COLUMNS -> int64 per shard
    totals: dict[str, int]  # added, removed, changed, changed_size, changed_extensions, moved, unchanged
    samples: np.ndarray  # DIFF_SAMPLE_DTYPE: the first `keep` of each kind, by kind then file order
    stems: list[str | None]  # per kept sample; None when its shard is missing
    keep: int
    unresolved_hashes: int = 0
    warnings: list[str] = field(default_factory=list)
    storage_options: dict | None = field(default=None, repr=False)  # to reopen URLs (may hold secrets)

    @property
    def n_differences(self) -> int:
        return sum(self.totals[k] for k in ("added", "removed", "changed", "moved"))

    def of_kind(self, kind: int) -> np.ndarray:
        """Positions in ``samples`` of the kept samples of one kind."""
        return np.flatnonzero(self.samples["kind"] == kind)

    def stem_label(self, pos: int) -> str:
        stem = self.stems[pos]
        return stem if stem is not None else f"? (xxh64 {int(self.samples['keyhash'][pos]):016x})"

    def shard_label(self, shard: int, side: str = "") -> str:
        """A shard's name in the old or new fold (side "old"/"new"), or its table label."""
        if shard < 0:
            return ""
        if side:
            name = self.shard_side_names[0 if side == "old" else 1][shard]
            if name is not None:
                return name
        return self.shard_names[shard]


class _Accumulator:
    """Counts and kept samples across passes."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.counts = {c: np.zeros(2 << 16, np.int64) for c in SHARD_COLUMNS}
        self.totals = dict.fromkeys(("added", "removed", "changed", "changed_size", "changed_extensions", "moved",
                                     "unchanged"), 0)
        self.kept = np.zeros(0, DIFF_SAMPLE_DTYPE)
        self.unresolved = 0

    def count(self, column: str, shards: np.ndarray) -> None:
        if len(shards):
            got = np.bincount(shards)
            self.counts[column][: len(got)] += got

    def offer(self, records: np.ndarray) -> None:
        """Keep the first `keep` of each kind (file order: new row, or old row for removed samples)."""
        pool = np.concatenate((self.kept, records))
        position = np.where(pool["kind"] == REMOVED, pool["old_row"], pool["new_row"])
        order = np.lexsort((position, pool["kind"]))
        pool = pool[order]
        kinds = pool["kind"]
        first = np.searchsorted(kinds, kinds, side="left")
        self.kept = pool[np.arange(len(pool)) - first < self.keep].copy()


def _records(kind: int, n: int) -> np.ndarray:
    rec = np.zeros(n, DIFF_SAMPLE_DTYPE)
    rec["kind"] = kind
    for side in ("old", "new"):
        rec[f"{side}_row"] = -1
        rec[f"{side}_shard"] = -1
    return rec


def _fill(rec: np.ndarray, side: str, table: SampleTable, idx: np.ndarray, shards: np.ndarray) -> None:
    rec["keyhash"] = table.keyhash[idx]
    rec[f"{side}_crashid"] = table.crashid[idx]
    rec[f"{side}_row"] = table.first_row[idx]
    rec[f"{side}_shard"] = shards[idx]
    rec[f"{side}_members"] = table.n_members[idx]


def _cut(idx: np.ndarray, position: np.ndarray, keep: int) -> np.ndarray:
    """The `keep` entries of ``idx`` with the smallest positions (the accumulator sorts them)."""
    if len(idx) <= keep:
        return idx
    return idx[np.argpartition(position[idx], keep - 1)[:keep]] if keep else idx[:0]


def _join(old: SampleTable, new: SampleTable, keys: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(old positions, new positions) of the samples present in both.

    Key 0 samples have a keyhash unique on their side (one first stem per hash), and
    both tables are sorted by keyhash: a binary search matches them. Named samples of
    colliding hashes are few and are matched by (keyhash, name id).
    """
    plain_old, plain_new = np.flatnonzero(keys[0] == 0), np.flatnonzero(keys[1] == 0)
    old_kh, new_kh = old.keyhash[plain_old], new.keyhash[plain_new]
    if len(old_kh) and len(new_kh):
        at = np.minimum(np.searchsorted(old_kh, new_kh), len(old_kh) - 1)
        hit = old_kh[at] == new_kh
        old_m, new_m = plain_old[at[hit]], plain_new[hit]
    else:
        old_m = new_m = np.zeros(0, np.int64)
    named_old = {(int(old.keyhash[i]), int(keys[0][i])): i for i in np.flatnonzero(keys[0]).tolist()}
    pairs = [(named_old[k], j) for j in np.flatnonzero(keys[1]).tolist()
             if (k := (int(new.keyhash[j]), int(keys[1][j]))) in named_old]
    if pairs:
        extra = np.array(pairs, dtype=np.int64)
        old_m, new_m = np.concatenate((old_m, extra[:, 0])), np.concatenate((new_m, extra[:, 1]))
    return old_m.astype(np.int64), new_m.astype(np.int64)


def _compare_pass(old: SampleTable, new: SampleTable, keys: tuple[np.ndarray, np.ndarray], labels: ShardLabels,
                  acc: _Accumulator) -> None:
    n_old = len(old)
    old_m, new_m = _join(old, new, keys)
    in_new = np.zeros(len(new), bool)
    in_new[new_m] = True
    in_old = np.zeros(n_old, bool)
    in_old[old_m] = True
    added, removed = np.flatnonzero(~in_new), np.flatnonzero(~in_old)
    old_shard, new_shard = labels.ids(0, old.fid), labels.ids(1, new.fid)

    ext_changed = old.ext_sig[old_m] != new.ext_sig[new_m]
    size_changed = ~ext_changed & (old.size_sig[old_m] != new.size_sig[new_m])
    moved = old_shard[old_m] != new_shard[new_m]
    changed = ext_changed | size_changed
    only_moved = moved & ~changed

    acc.count("old_samples", old_shard)
    acc.count("new_samples", new_shard)
    acc.count("added", new_shard[added])
    acc.count("removed", old_shard[removed])
    acc.count("changed", new_shard[new_m[changed]])
    acc.count("moved_in", new_shard[new_m[moved]])
    acc.count("moved_out", old_shard[old_m[moved]])
    t = acc.totals
    t["added"] += len(added)
    t["removed"] += len(removed)
    t["changed"] += int(changed.sum())
    t["changed_size"] += int(size_changed.sum())
    t["changed_extensions"] += int(ext_changed.sum())
    t["moved"] += int(only_moved.sum())
    t["unchanged"] += int((~changed & ~moved).sum())

    added = _cut(added, new.first_row, acc.keep)
    rec = _records(ADDED, len(added))
    _fill(rec, "new", new, added, new_shard)
    acc.offer(rec)
    removed = _cut(removed, old.first_row, acc.keep)
    rec = _records(REMOVED, len(removed))
    _fill(rec, "old", old, removed, old_shard)
    acc.offer(rec)
    for kind, which in ((CHANGED, changed), (MOVED, only_moved)):
        pick = _cut(np.flatnonzero(which), new.first_row[new_m], acc.keep)
        rec = _records(kind, len(pick))
        _fill(rec, "old", old, old_m[pick], old_shard)
        _fill(rec, "new", new, new_m[pick], new_shard)
        rec["flags"] = (np.where(size_changed[pick], FLAG_SIZE, 0) | np.where(ext_changed[pick], FLAG_EXTENSIONS, 0)
                        | np.where(moved[pick], FLAG_SHARD, 0))
        acc.offer(rec)


def key_ranges(n_samples: int, memory_budget: int) -> list[tuple[int, int] | None]:
    """Keyhash ranges, one per pass, so that each pass's tables fit ``memory_budget``."""
    passes = max(1, math.ceil(n_samples * BYTES_PER_SAMPLE / max(1, memory_budget)))
    if passes == 1:
        return [None]
    edges = [(k << 64) // passes for k in range(passes + 1)]
    return [(edges[k], edges[k + 1] - 1) for k in range(passes)]


def _name_kept(kept: np.ndarray, readers: tuple[StemReader, StemReader],
               reporter: ProgressReporter) -> list[str | None]:
    stems: list[str | None] = []
    for done, rec in enumerate(kept.tolist()):
        reporter.update(done)
        keyhash, stem = rec[2], None
        for side, (crash_f, row_f) in ((1, (4, 6)), (0, (3, 5))):  # the new index first: its shards are current
            if stem is None and rec[row_f] >= 0:
                stem = readers[side].stem(rec[row_f], keyhash, rec[crash_f])
        stems.append(stem)
    return stems


def diff_indexes(old_path: str | os.PathLike[str], new_path: str | os.PathLike[str], *, keep: int = 1000,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET, chunk: int = CHUNK_ROWS,
                 progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
                 storage_options: dict | None = None) -> IndexDiff:
    """Compare the samples of two TARIDX indexes (paths or URLs; shards are looked for beside each index,
    for stem names; ``storage_options`` go to fsspec for every URL)."""
    with Dataset.open(old_path, storage_options=storage_options) as old_ds, \
            Dataset.open(new_path, storage_options=storage_options) as new_ds:
        old_ix, new_ix = old_ds.index, new_ds.index
        sizes = [ix.header.n_stems if ix.contiguous else ix.n_rows for ix in (old_ix, new_ix)]
        ranges = key_ranges(sum(sizes), memory_budget)
        reporter = ProgressReporter(progress, len(ranges) * (old_ix.n_rows + new_ix.n_rows), "rows", cancel)
        readers = (StemReader(old_ds), StemReader(new_ds))
        labels = ShardLabels(old_ds, new_ds)
        collisions = colliding_hashes(old_ds, new_ds)
        name_ids: dict[str, int] = {}
        acc = _Accumulator(max(0, keep))
        n_samples = [0, 0]

        def on_rows(n: int) -> None:
            reporter.update(reporter.done + n)

        try:
            for key_range in ranges:
                # one index after the other: two threads showed no clear gain on the shared 2-core VM
                tables = (sample_table(old_ix, on_rows, key_range, chunk), sample_table(new_ix, on_rows, key_range, chunk))
                n_samples[0] += len(tables[0])
                n_samples[1] += len(tables[1])
                keys_old, keys_new, unresolved = match_keys(tables, readers, collisions, name_ids)
                acc.unresolved += unresolved
                _compare_pass(tables[0], tables[1], (keys_old, keys_new), labels, acc)
                del tables, keys_old, keys_new
            reporter.finish()
            stems = _name_kept(acc.kept, readers, ProgressReporter(progress, len(acc.kept), "stems", cancel))
        finally:
            for reader in readers:
                reader.close()
        order = labels.display_order()
        remap = np.empty(len(order), np.int64)
        remap[order] = np.arange(len(order))
        kept = acc.kept
        for side in ("old", "new"):
            known = kept[f"{side}_shard"] >= 0
            kept[f"{side}_shard"][known] = remap[kept[f"{side}_shard"][known]]
        sides = [DiffSide(os.fspath(ds.path), ds.fold, ds.n_rows, n, sorted(missing))
                 for ds, n, missing in zip((old_ds, new_ds), n_samples, labels.missing)]
    warnings = []
    for label, side in (("old", sides[0]), ("new", sides[1])):
        if side.missing_shards:
            warnings.append(f"{label} index {side.path}: {len(side.missing_shards)} shard(s) missing, so the stems "
                            "of their samples are shown as xxh64 hashes")
    if acc.unresolved:
        warnings.append(f"{acc.unresolved} colliding hash(es) could not be named (shards missing): their first "
                        "stems were assumed to be the same sample")
    return IndexDiff(
        old=sides[0], new=sides[1], shard_names=[labels.label(s) for s in order.tolist()],
        shard_side_names=tuple([names[s] for s in order.tolist()] for names in labels.side_names),
        shard_counts={c: a[: len(order)][order].copy() for c, a in acc.counts.items()},
        totals=acc.totals, samples=kept, stems=stems, keep=acc.keep, unresolved_hashes=acc.unresolved,
        warnings=warnings, storage_options=storage_options)
