"""A 2-D histogram of image sizes (width × height), with exact counts of the commonest sizes.

Bins are a quarter octave wide from 1 to 65,536 pixels on each axis (65 edges; larger
sizes fall in the last bin), which reads well as a heatmap on log axes. In JSON the histogram is sparse: ``cells`` lists
[width bin, height bin, count] of the non-empty bins. Exact
(width, height) counts are kept for up to ``MAX_EXACT`` distinct sizes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

STEPS_PER_OCTAVE = 4
OCTAVES = 16
EDGES = [2 ** (i / STEPS_PER_OCTAVE) for i in range(OCTAVES * STEPS_PER_OCTAVE + 1)]
N_BINS = len(EDGES) - 1
MAX_EXACT = 4096
TOP_SIZES = 50  # exact sizes listed in JSON, commonest first


_EDGES = np.array(EDGES)


def dims_bins(pixels: np.ndarray) -> np.ndarray:
    """The bin of each width or height (0 and 1 go to the first bin, beyond 65,536 to the last)."""
    return np.clip(np.searchsorted(_EDGES, pixels, side="right") - 1, 0, N_BINS - 1)


@dataclass
class DimsHistogram:
    counts: np.ndarray = field(default_factory=lambda: np.zeros((N_BINS, N_BINS), np.int64))  # [width, height]
    exact: Counter = field(default_factory=Counter)
    exact_complete: bool = True  # False once more than MAX_EXACT distinct sizes were seen
    images: int = 0
    unreadable: int = 0

    def add(self, dims: np.ndarray) -> None:
        """Count images from an (n, 2) array of width and height; (0, 0) marks an unreadable header."""
        dims = np.asarray(dims, np.int64).reshape(-1, 2)
        ok = (dims[:, 0] > 0) & (dims[:, 1] > 0)
        self.images += len(dims)
        self.unreadable += int(np.count_nonzero(~ok))
        good = dims[ok]
        if not len(good):
            return
        cells = dims_bins(good[:, 0]) * N_BINS + dims_bins(good[:, 1])
        self.counts += np.bincount(cells, minlength=N_BINS * N_BINS).reshape(N_BINS, N_BINS)
        keys, counts = np.unique(good[:, 0] << 32 | good[:, 1], return_counts=True)  # one integer sort
        for key, count in zip(keys.tolist(), counts.tolist()):
            width, height = key >> 32, key & 0xFFFFFFFF
            if (width, height) in self.exact or len(self.exact) < MAX_EXACT:
                self.exact[(width, height)] += count
            else:
                self.exact_complete = False

    def to_json(self) -> dict:
        top = sorted(self.exact.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_SIZES]
        return {
            "images": self.images, "unreadable": self.unreadable,
            "edges": [round(e, 4) for e in EDGES], "cells": [[int(w), int(h), int(self.counts[w, h])] for w, h in zip(*np.nonzero(self.counts))],
            "sizes": [{"width": w, "height": h, "count": c} for (w, h), c in top],
            "distinct_sizes": len(self.exact), "sizes_complete": self.exact_complete,
        }
