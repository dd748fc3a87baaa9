"""Labels of samples: the text of a label member (``cls``, ``cls2``) or a field of a JSON member.

``--field F`` names either an extension of the fold (its members' text is the label)
or a dotted path into each ``json`` member (``label.class``; a number indexes a list:
``boxes.0.category``). Values are compared as text: a JSON string as itself, any other
JSON value as its compact JSON form (``3``, ``true``, ``[1, 2]``).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..errors import DatasetError

LABEL_EXTENSIONS = ("cls", "cls2")
JSON_EXTENSION = "json"
MAX_LABEL_CHARS = 200  # a longer value is cut (a caption is not a class)
MISSING = None  # the member has no such field
SHORT_LABEL = 24  # label members up to this size are counted as raw bytes first


class Unreadable(str):
    """Marker for a payload that is not the text or JSON its extension says."""


UNREADABLE = Unreadable("(unreadable)")


@dataclass(frozen=True)
class LabelSource:
    """Where labels come from: members of ``ext``, or the field ``path`` of its JSON members."""

    ext: str
    path: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.ext}:{'.'.join(self.path)}" if self.path else self.ext

    def label_of(self, data: bytes | memoryview) -> str | None:
        """The label a payload gives, ``MISSING`` (no such field) or ``UNREADABLE``."""
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return UNREADABLE
        if not self.path:
            return _cut(text.strip())
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return UNREADABLE
        for key in self.path:
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.lstrip("-").isdigit() and -len(value) <= int(key) < len(value):
                value = value[int(key)]
            else:
                return MISSING
        if isinstance(value, str):
            return _cut(value)
        return _cut(json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True))


    def count_labels(self, buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> Counter:
        """Label (or MISSING) -> members, for the payloads at ``buf[starts:starts+sizes]``.

        Short label members are compared as raw bytes all at once (numpy), so each
        distinct value is decoded once; JSON fields and long values are parsed one by one.
        """
        counts: Counter = Counter()
        starts, sizes = np.asarray(starts, np.int64), np.asarray(sizes, np.int64)
        short = (sizes <= SHORT_LABEL) if not self.path else np.zeros(len(sizes), bool)
        if short.any():
            for value, hit in _distinct_short(buf, starts[short], sizes[short]):
                counts[self.label_of(value)] += hit
        for start, size in zip(starts[~short].tolist(), sizes[~short].tolist()):
            counts[self.label_of(buf[start : start + size].tobytes())] += 1
        return counts


def _distinct_short(buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> list[tuple[bytes, int]]:
    """Distinct payloads of at most SHORT_LABEL bytes and how often each occurs (one sort of 64-bit words)."""
    width = max(8, -(-int(sizes.max()) // 8) * 8)  # as wide as the longest, in whole words
    cols = np.arange(width)
    table = np.zeros((len(starts), 8 + width), np.uint8)
    table[:, 8:] = buf[np.minimum(starts[:, None] + cols, len(buf) - 1)]
    table[:, 8:][cols >= sizes[:, None]] = 0
    words = table.view(np.uint64)
    words[:, 0] = sizes
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    first = np.flatnonzero(np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)])
    hits = np.diff(np.r_[first, len(order)])
    return [(ordered[i, 1:].tobytes()[: int(ordered[i, 0])], int(h)) for i, h in zip(first.tolist(), hits.tolist())]


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def resolve_label_source(extensions: list[str], field: str | None, where: str = "") -> LabelSource | None:
    """The label source for ``field`` in a fold with these extensions; None when it has no labels.

    Without a field: ``cls`` members, else ``cls2``. A field that is one of the fold's
    extensions names those members; any other field is a JSON path (the fold must have
    ``json`` members). Raises ``DatasetError`` for an empty path.
    """
    if field is None:
        found = next((e for e in LABEL_EXTENSIONS if e in extensions), None)
        return LabelSource(found) if found else None
    field = field.strip()
    if field.lower() in extensions:
        return LabelSource(field.lower())
    path = tuple(field.split("."))
    if not field or any(not part for part in path):
        raise DatasetError(f"{where}label field {field!r}: expected an extension (cls) or a JSON path (label.class)")
    return LabelSource(JSON_EXTENSION, path)
