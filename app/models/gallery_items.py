"""Which row stands for each sample in the gallery, in the row grid's order. Pure numpy (runs in a worker).

A gallery item is one sample of the grid's current view (its filter and sort): the
sample's first image member, or its member of the extension the user picked. Samples
appear in the order their first row appears in the view.
"""
from __future__ import annotations

import numpy as np

from itarcore.decoders import decode_image, decoder_for
from itarcore.progress import CancelToken

AUTO = ""  # ext choice: each sample's first image member (else its first member)
CHUNK = 4_000_000  # rows per step: bounded temporaries, regular cancel points
AUTO_LIMIT = 20_000_000  # views larger than this use their most common image extension (the sort costs ~40 B/row)


def image_ext_ids(extensions: list[str]) -> np.ndarray:
    """A lookup table: extension id -> is an image extension."""
    return np.array([decoder_for(e) is decode_image for e in extensions] + [False], dtype=bool)


def _view(n_rows: int, view_rows: np.ndarray | None, start: int, stop: int) -> np.ndarray:
    return np.arange(start, min(stop, n_rows), dtype=np.int64) if view_rows is None else view_rows[start:stop]


def rows_with_ext(rows: np.ndarray, view_rows: np.ndarray | None, ext_ids: np.ndarray,
                  cancel: CancelToken | None = None) -> np.ndarray:
    """View rows whose extension id is in ``ext_ids``, in view order (chunked)."""
    n = len(rows) if view_rows is None else len(view_rows)
    parts = []
    for start in range(0, n, CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        base = _view(len(rows), view_rows, start, start + CHUNK)
        parts.append(base[np.isin(rows["extid"][base], ext_ids)])
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def most_common_image_ext(rows: np.ndarray, extensions: list[str], cancel: CancelToken | None = None) -> int:
    """The id of the image extension with the most rows (-1 if the fold has none)."""
    counts = np.zeros(len(extensions) + 1, np.int64)
    for start in range(0, len(rows), CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        ids = np.minimum(rows["extid"][start : start + CHUNK], len(extensions))
        counts += np.bincount(ids, minlength=len(counts))
    counts[~image_ext_ids(extensions)] = 0
    return int(np.argmax(counts)) if counts.any() else -1


def gallery_rows(rows: np.ndarray, extensions: list[str], view_rows: np.ndarray | None, ext: str = AUTO,
                 cancel: CancelToken | None = None) -> np.ndarray:
    """The representative row of every sample of the view, in view order (see the module docstring)."""
    n = len(rows) if view_rows is None else len(view_rows)
    if ext != AUTO or n > AUTO_LIMIT:
        ext_id = extensions.index(ext) if ext in extensions else (
            most_common_image_ext(rows, extensions, cancel) if ext == AUTO else -1)
        base = rows_with_ext(rows, view_rows, np.array([ext_id]), cancel)
        # a sample holds one member of an extension, but nothing forbids two: keep its first
        return base if len(base) > AUTO_LIMIT else _first_per_sample(rows, base, None, cancel)
    base = _view(len(rows), view_rows, 0, n)
    not_image = ~image_ext_ids(extensions)[np.minimum(rows["extid"][base], len(extensions))]
    return _first_per_sample(rows, base, not_image, cancel)


def _first_per_sample(rows: np.ndarray, base: np.ndarray, not_preferred: np.ndarray | None,
                      cancel: CancelToken | None) -> np.ndarray:
    """Of ``base`` (view order), each sample's first preferred row (else its first), in order of first appearance."""
    n = len(base)
    if not n:
        return base
    records = rows[base]
    if cancel is not None:
        cancel.raise_if_cancelled()
    pos = np.arange(n, dtype=np.int64)
    keys = (pos,) if not_preferred is None else (pos, not_preferred)
    # by sample, then preferred members first, then view position: each group's first entry is its representative
    order = np.lexsort((*keys, records["crashid"], records["keyhash"]))
    kh, cid = records["keyhash"][order], records["crashid"][order]
    starts = np.flatnonzero(np.r_[True, (kh[1:] != kh[:-1]) | (cid[1:] != cid[:-1])])
    if cancel is not None:
        cancel.raise_if_cancelled()
    first_seen = np.minimum.reduceat(pos[order], starts)
    return base[order[starts][np.argsort(first_seen, kind="stable")]]


def member_rows(rows: np.ndarray, items: np.ndarray, ext_id: int, cancel: CancelToken | None = None) -> np.ndarray:
    """For each item row, the row of the same sample with extension ``ext_id`` (-1 where it has none)."""
    found = np.full(len(items), -1, np.int64)
    if ext_id < 0 or not len(items):
        return found
    candidates = rows_with_ext(rows, None, np.array([ext_id]), cancel)
    keys = rows["keyhash"][candidates]
    order = np.argsort(keys, kind="stable")
    candidates, keys = candidates[order], keys[order]
    item_keys, item_crash = rows["keyhash"][items], rows["crashid"][items]
    lo = np.searchsorted(keys, item_keys, side="left")
    hi = np.searchsorted(keys, item_keys, side="right")
    single = (hi - lo == 1)
    at = np.minimum(lo, max(0, len(candidates) - 1))
    match = single & (rows["crashid"][candidates[at]] == item_crash) if len(candidates) else single & False
    found[match] = candidates[at][match]
    for i in np.flatnonzero(hi - lo > 1):  # colliding stems (several samples share a keyhash): rare
        same = candidates[lo[i]:hi[i]]
        same = same[rows["crashid"][same] == item_crash[i]]
        if len(same):
            found[i] = same[0]
    return found


def marked_items(rows: np.ndarray, items: np.ndarray, flagged_rows: np.ndarray) -> np.ndarray:
    """A mask over items: the item's sample holds one of ``flagged_rows`` (e.g. rows of error findings)."""
    flagged_rows = np.asarray(flagged_rows, dtype=np.int64)
    flagged_rows = flagged_rows[(flagged_rows >= 0) & (flagged_rows < len(rows))]
    if not len(flagged_rows) or not len(items):
        return np.zeros(len(items), bool)
    keys = set(zip(rows["keyhash"][flagged_rows].tolist(), rows["crashid"][flagged_rows].tolist()))
    maybe = np.flatnonzero(np.isin(rows["keyhash"][items], rows["keyhash"][flagged_rows]))
    mask = np.zeros(len(items), bool)
    for i in maybe:
        rec = rows[items[i]]
        mask[i] = (int(rec["keyhash"]), int(rec["crashid"])) in keys
    return mask
