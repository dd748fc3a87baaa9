"""Near-duplicate images: 64-bit perceptual hashes (``imagehash.phash``) within a Hamming distance.

Images are decoded at reduced size where the codec allows it (Pillow's JPEG ``draft``).
Pairs are found without comparing every pair: by the pigeonhole principle, two hashes
within ``d`` bits agree exactly on at least one of ``d + 1`` disjoint bit bands, so only
hashes sharing a band value are compared. Pairs join groups (union-find); groups whose
members are all byte-identical are left to the exact report.
"""
from __future__ import annotations

import io
import itertools
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from ..dataset import Dataset
from ..errors import ItarError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from .imagedims import image_extension_mask
from .payloads import iter_payload_runs

if TYPE_CHECKING:
    from .dedup import DuplicateGroup, _Hashed

HASH_BITS = 64
BUCKET_AT_ONCE = 2048  # buckets up to this size compare all their pairs in one numpy step
PHASH_INPUT = 32  # imagehash.phash resizes to 32 x 32 (hash_size 8 x highfreq_factor 4)
# Pillow lets the GIL go while it decodes and resizes, which is most of a phash: two threads
# hash about twice as fast on two cores; more only add hand-offs.
PHASH_THREADS = min(4, os.cpu_count() or 1)


def require_imagehash() -> None:
    try:
        import imagehash  # noqa: F401
    except ImportError:
        raise ItarError("near-duplicate images need the imagehash package: pip install 'itar-browser[content]'") from None


def perceptual_hash(data: memoryview | bytes) -> int | None:
    """The 64-bit phash of an image payload, or None when it does not decode."""
    import imagehash
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(bytes(data))) as img:
                img.draft("L", (PHASH_INPUT * 2, PHASH_INPUT * 2))  # JPEG: decode at 1/2..1/8 scale
                bits = imagehash.phash(img).hash.ravel()
    except Exception:  # noqa: BLE001 - a payload that does not decode has no perceptual hash
        return None
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def _popcount(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    count = np.zeros(x.shape, np.int64)
    for shift in range(0, HASH_BITS, 8):
        count += _BYTE_BITS[((x >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.int64)]
    return count


_BYTE_BITS = np.array([(i).bit_count() for i in range(256)], np.int64)


def _bucket_pairs(hashes: np.ndarray, members: np.ndarray, max_distance: int) -> list[np.ndarray]:
    """Close pairs among one bucket's members: all pairs at once when small, else one member at a time."""
    if len(members) <= BUCKET_AT_ONCE:
        i, j = np.triu_indices(len(members), 1)
        left, right = members[i], members[j]
        close = _popcount(hashes[left] ^ hashes[right]) <= max_distance
        return [np.stack([left[close], right[close]], axis=1)]
    out = []
    for k in range(len(members) - 1):
        rest = members[k + 1 :]
        close = rest[_popcount(hashes[rest] ^ hashes[members[k]]) <= max_distance]
        out.append(np.stack([np.full(len(close), members[k]), close], axis=1))
    return out


def close_pairs(hashes: np.ndarray, max_distance: int) -> np.ndarray:
    """Index pairs (i < j) whose hashes differ in at most ``max_distance`` bits, shape (n, 2)."""
    hashes = np.asarray(hashes, np.uint64)
    bands = max_distance + 1
    edges = np.linspace(0, HASH_BITS, bands + 1).astype(int)
    found = []
    for lo_bit, hi_bit in itertools.pairwise(edges):
        mask = np.uint64((1 << int(hi_bit - lo_bit)) - 1)
        band = (hashes >> np.uint64(lo_bit)) & mask
        order = np.argsort(band, kind="stable")
        sorted_band = band[order]
        starts = np.flatnonzero(np.r_[True, sorted_band[1:] != sorted_band[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for a, b in zip(starts.tolist(), ends.tolist()):
            if b - a < 2:
                continue
            found += _bucket_pairs(hashes, np.sort(order[a:b]), max_distance)
    if not found:
        return np.zeros((0, 2), np.int64)
    return np.unique(np.concatenate(found), axis=0)


def _item_edges(phashes: np.ndarray, max_distance: int) -> np.ndarray:
    """Edges joining items with equal hashes (each to its value's first item) and items of close hashes."""
    values, first, inverse = np.unique(phashes, return_index=True, return_inverse=True)
    same = np.stack([np.arange(len(phashes)), first[inverse]], axis=1)
    close = first[close_pairs(values, max_distance)]
    return np.concatenate([same[same[:, 0] != same[:, 1]], close.reshape(-1, 2)])


def _components(n: int, pairs: np.ndarray) -> list[list[int]]:
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs.tolist():
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in sorted({int(k) for k in pairs.ravel().tolist()}):
        groups.setdefault(root(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def near_groups(datasets: list[Dataset], hashed: list[_Hashed], max_distance: int,
                progress: ProgressCallback | None, cancel: CancelToken | None,
                threads: int = PHASH_THREADS) -> tuple[list[DuplicateGroup], int]:
    """Groups of images within ``max_distance`` bits of phash, and the number of images hashed.

    Each run's images are hashed by ``threads`` threads; a run's payloads are views that hold
    only until the next run is taken, so every run is finished before the next is read.
    """
    from .dedup import DuplicateGroup, Member

    folds, rows, digests, phashes = [], [], [], []
    jobs = []
    for f, (ds, h) in enumerate(zip(datasets, hashed)):
        image_ext = image_extension_mask(ds.extensions)
        is_image = image_ext[ds.rows["extid"][h.rows].astype(np.int64)]
        jobs.append((f, ds, h.rows[is_image], {int(r): (int(a), int(b)) for r, a, b in
                                               zip(h.rows[is_image], h.hi[is_image], h.lo[is_image])}))
    reporter = ProgressReporter(progress, max(1, sum(len(j[2]) for j in jobs)), "images", cancel)
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="phash") as pool:
        for f, ds, image_rows, digest_of in jobs:
            for run in iter_payload_runs(ds, image_rows, cancel):
                items = list(run.payloads())
                values = pool.map(perceptual_hash, [data for _, data in items])
                for (row, _), value in zip(items, values):  # in the run's order, whichever thread finished first
                    if value is not None:
                        folds.append(f)
                        rows.append(row)
                        digests.append(digest_of[row])
                        phashes.append(value)
                del items
                reporter.update(reporter.done + len(run.rows))
    pairs = _item_edges(np.array(phashes, np.uint64), max_distance)
    groups = []
    for component in _components(len(phashes), pairs):
        if len({digests[i] for i in component}) < 2:
            continue  # byte-identical: already an exact group
        first = component[0]
        members = [Member(folds[i], rows[i]) for i in sorted(component, key=lambda i: (folds[i], rows[i]))]
        ext = datasets[folds[first]].ext_of(rows[first])
        groups.append(DuplicateGroup("near", ext, 0, f"{phashes[first]:016x}", members))
    reporter.finish()
    groups.sort(key=lambda g: (g.members[0].fold, g.members[0].row))
    return groups, len(phashes)
