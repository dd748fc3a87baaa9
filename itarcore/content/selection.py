"""Which members of a fold a subset holds: the grid's filters plus sample-level choices.

Member conditions (all ANDed) pick rows: extensions, shards, a size range. Sample
conditions pick whole samples: a stem glob, a list of stems, labels (from ``cls`` or
a JSON field, see :mod:`itarcore.content.labels`). A subset is the members that pass
the member conditions and belong to a sample that passes the sample conditions; with
``whole_samples`` every member of such a sample is kept once one of them passes.
"""
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..errors import DatasetError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from ..rowpass import iter_row_chunks
from .labels import resolve_label_source
from .payloads import iter_payload_runs

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """'1500' -> 1500, '10k' -> 10240, '1.5M' -> 1572864; '' -> None. Raises ValueError otherwise."""
    if not text.strip():
        return None
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use digits with an optional k, M, G suffix)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclass
class Selection:
    extensions: list[str] | None = None  # member extensions ('' for none), lower-case
    shards: list[str] | None = None  # shard file names or fids as text
    min_size: int | None = None
    max_size: int | None = None
    stem_glob: str | None = None  # fnmatch pattern, case-sensitive
    stems: list[str] | None = None  # exact stems
    labels: list[str] | None = None  # label values (as `stats` shows them)
    label_field: str | None = None  # label source (None: cls, else cls2)
    whole_samples: bool = False

    @property
    def by_sample(self) -> bool:
        return self.stem_glob is not None or self.stems is not None or self.labels is not None


def read_stem_list(path: str | os.PathLike[str]) -> list[str]:
    """Stems, one a line (blank lines and surrounding whitespace ignored); a CSV's first column."""
    try:
        text = open(path, encoding="utf-8").read()  # noqa: SIM115 - read whole
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text at offset {exc.start}") from None
    stems = []
    for line in text.splitlines():
        value = line.split(",", 1)[0].strip() if line.count(",") else line.strip()
        if value and value != "stem":
            stems.append(value)
    return stems


def _member_mask(ds: Dataset, sel: Selection, part: np.ndarray) -> np.ndarray:
    mask = np.ones(len(part), bool)
    if sel.extensions is not None:
        ids = [e for e, name in enumerate(ds.extensions) if name in {x.lower() for x in sel.extensions}]
        mask &= np.isin(part["extid"], ids)
    if sel.shards is not None:
        mask &= np.isin(part["fid"], _shard_fids(ds, sel.shards))
    if sel.min_size is not None:
        mask &= part["size"] >= sel.min_size
    if sel.max_size is not None:
        mask &= part["size"] <= sel.max_size
    return mask


def _shard_fids(ds: Dataset, shards: Iterable[str]) -> list[int]:
    by_name = {ds.shard_name(fid): fid for fid in ds.referenced_fids().tolist()}
    fids = []
    for shard in shards:
        if shard in by_name:
            fids.append(by_name[shard])
        elif shard.isdigit():
            fids.append(int(shard))
        else:
            raise DatasetError(f"{ds.path}: no shard {shard!r} in this fold (shards: "
                               f"{', '.join(sorted(by_name)[:5])}{' …' if len(by_name) > 5 else ''})")
    return fids


def _keys(ds: Dataset, rows: np.ndarray) -> np.ndarray:
    rec = ds.rows[rows]
    keys = np.empty(len(rows), [("keyhash", "<u8"), ("crashid", "<u4")])
    keys["keyhash"], keys["crashid"] = rec["keyhash"], rec["crashid"]
    return keys


def _label_keys(ds: Dataset, sel: Selection, cancel: CancelToken | None) -> np.ndarray:
    source = resolve_label_source(ds.extensions, sel.label_field, f"{ds.path}: ")
    if source is None:
        raise DatasetError(f"{ds.path}: --label needs labels: the fold has no cls or cls2 members (name a JSON "
                           "field with --field)")
    ext_ids = [e for e, name in enumerate(ds.extensions) if name == source.ext]
    rows = np.concatenate([np.flatnonzero(np.isin(part["extid"], ext_ids)) + start
                           for start, part in iter_row_chunks(ds.index, cancel=cancel)] or [np.zeros(0, np.int64)])
    wanted = set(sel.labels or [])
    chosen = []
    for run in iter_payload_runs(ds, rows, cancel):
        chosen += [row for row, data in run.payloads() if source.label_of(data) in wanted]
    return _keys(ds, np.array(sorted(chosen), np.int64))


def _sample_keys(ds: Dataset, sel: Selection, candidates: np.ndarray, cancel: CancelToken | None) -> np.ndarray:
    """Keys (keyhash, crashid) of the samples that pass the sample conditions, among the candidate rows' samples."""
    keys, first = np.unique(_keys(ds, candidates), return_index=True)
    ok = np.ones(len(keys), bool)
    if sel.stem_glob is not None or sel.stems is not None:
        stems = ds.stem_names(candidates[first])
        if sel.stem_glob is not None:
            ok &= np.array([fnmatch.fnmatchcase(s, sel.stem_glob) for s in stems], bool)
        if sel.stems is not None:
            wanted = set(sel.stems)
            ok &= np.array([s in wanted for s in stems], bool)
    if sel.labels is not None:
        ok &= np.isin(keys, _label_keys(ds, sel, cancel))
    return keys[ok]


def select_rows(ds: Dataset, sel: Selection, *, progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> np.ndarray:
    """Rows of the subset, ascending (see the module notes)."""
    if sel.min_size is not None and sel.max_size is not None and sel.min_size > sel.max_size:
        raise DatasetError(f"empty size range: minimum {sel.min_size} > maximum {sel.max_size}")
    reporter = ProgressReporter(progress, ds.n_rows, "rows", cancel)
    member_rows = np.concatenate([np.flatnonzero(_member_mask(ds, sel, part)) + start
                                  for start, part in iter_row_chunks(ds.index, reporter=reporter, cancel=cancel)]
                                 or [np.zeros(0, np.int64)]).astype(np.int64)
    if not sel.by_sample and not sel.whole_samples:
        return member_rows
    keys = _sample_keys(ds, sel, member_rows, cancel) if sel.by_sample else np.unique(_keys(ds, member_rows))
    if sel.whole_samples:
        return np.concatenate([np.flatnonzero(np.isin(_keys(ds, np.arange(start, start + len(part))), keys)) + start
                               for start, part in iter_row_chunks(ds.index, cancel=cancel)]
                              or [np.zeros(0, np.int64)]).astype(np.int64)
    return member_rows[np.isin(_keys(ds, member_rows), keys)]
