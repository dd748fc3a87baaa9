"""Helpers of the content tests: small generated folds and the truth about any fold read with ``tarfile``."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from PIL import Image
from scale_fold import add_member

from itarcore.jobs import index_fold

WEBDS = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"


def stem_ext(name: str) -> tuple[str, str]:
    """The reference's split (NOTES.md): basename, stem up to the first dot, lower-cased extension."""
    stem, _, ext = name.rsplit("/", 1)[-1].partition(".")
    return stem, ext.lower()


def shard_members(shard: Path) -> list[tuple[str, bytes]]:
    """(name, payload) of every regular member, in archive order, by Python's tarfile."""
    with tarfile.open(shard) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isreg()]


def fold_shards(folder: Path, fold: str) -> list[Path]:
    return sorted(folder.glob(f"{fold}_*.tar"))


def write_fold(folder: Path, fold: str, shards: list[list[tuple[str, bytes]]]) -> Path:
    """Write ``<fold>_NNNN.tar`` with these members and index them; returns the index path."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fid, members in enumerate(shards):
        path = folder / f"{fold}_{fid:04d}.tar"
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for name, data in members:
                add_member(tar, name, data)
        paths.append(path)
    index = folder / f"{fold}.taridx"
    index_fold(paths, index)
    return index


def jpeg(width: int, height: int, seed: int) -> bytes:
    img = Image.new("RGB", (width, height), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    for x in range(0, width, 3):
        img.putpixel((x, (x * seed) % height), (255 - seed % 256, 0, seed % 256))
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90)
    return out.getvalue()


READERS = ["cached", "populate", "faults"]


def use_reader(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read payload runs as from shards in the page cache, by the caller's page faults in runs taken
    together ("cached"); as on a cold page cache, populated ahead on a second thread ("populate"); or
    by the caller's page faults alone, run by run ("faults"), as where Linux lacks MADV_POPULATE_READ."""
    from itarcore.content import payloads

    if kind != "faults" and payloads._LIBC is None:
        pytest.skip("no libc madvise here")
    if kind == "cached":
        monkeypatch.setattr(payloads, "_in_page_cache", lambda *args: True)
    elif kind == "populate":
        monkeypatch.setattr(payloads, "_in_page_cache", lambda *args: False)
    else:
        monkeypatch.setattr(payloads, "_LIBC", None)
