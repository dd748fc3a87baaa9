"""Stems of a few rows without scanning their shards for long names.

A member's name is longer than its tar header holds only when extension headers (a pax
header or a GNU long name) stand between the previous member's data and its own header.
So a member whose header starts right where the previous indexed member's padded data
ends (or at offset 0) is named by its own header; only the others go through the
Dataset's per-shard scan of long names.
"""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..formats.tar import decode_name
from ..formats.tar_fields import BLOCK
from ..indexing.indexer import split_name


def header_names_suffice(ds: Dataset, rows: np.ndarray) -> np.ndarray:
    """For each row: True when no extension header can precede its member's header."""
    rec = ds.rows[rows]
    fid_column, offset_column = ds.rows["fid"], ds.rows["offset"]
    if _in_shard_order(fid_column, offset_column):  # as an index lists members: the previous row is the previous member
        before = np.maximum(np.asarray(rows, np.int64) - 1, 0)
        same = (rows > 0) & (fid_column[before] == rec["fid"])
        previous_end = np.where(same, _padded_end(ds.rows[before]), 0)
        return previous_end == rec["offset"].astype(np.int64)
    adjacent = np.zeros(len(rows), bool)
    for fid in np.unique(rec["fid"]).tolist():
        mine = rec["fid"] == fid
        shard = ds.rows[np.flatnonzero(fid_column == fid)]
        order = np.argsort(shard["offset"], kind="stable")
        offsets = shard["offset"][order].astype(np.int64)
        ends = _padded_end(shard[order])
        wanted = rec["offset"][mine].astype(np.int64)
        at = np.searchsorted(offsets, wanted)
        previous_end = np.where(at > 0, ends[np.maximum(at - 1, 0)], 0)
        adjacent[mine] = previous_end == wanted
    return adjacent


def _padded_end(rec: np.ndarray) -> np.ndarray:
    """Where each member's data ends, padded to whole blocks."""
    sizes = rec["size"].astype(np.int64)
    return rec["offset"].astype(np.int64) + BLOCK + (sizes + BLOCK - 1) // BLOCK * BLOCK


def _in_shard_order(fid: np.ndarray, offset: np.ndarray, step: int = 1 << 20) -> bool:
    """Whether rows are ascending by (shard, offset); in chunks, so no temporaries the size of the index."""
    for lo in range(0, len(fid), step):
        f, o = fid[lo : lo + step + 1].astype(np.int64), offset[lo : lo + step + 1].astype(np.int64)
        if ((np.diff(f) < 0) | ((np.diff(f) == 0) & (np.diff(o) <= 0))).any():
            return False
    return True


def stem_names(ds: Dataset, rows: np.ndarray | list[int]) -> list[str]:
    """The same stems as ``Dataset.stem_names``, reading long names only where they can exist."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return []
    direct = header_names_suffice(ds, rows)
    out = []
    for row, plain in zip(rows.tolist(), direct.tolist()):
        try:
            out.append(decode_name(split_name(ds.member_name_bytes(row, header_only=plain))[0]))
        except DatasetError:
            out.append(ds.stem_names([row])[0])  # its crash stem, or ''
    return out
