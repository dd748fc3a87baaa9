"""A small but real demo fold for `itar-browser --demo` and the README.

About 300 webdataset-style samples over three USTAR shards, drawn with Pillow
(shapes on gradients with a label), with ``cls``, ``json`` captions, some ``npy``
arrays, ``txt`` notes, a second image channel and one real xxh64 collision pair,
then indexed with itarcore's own indexer. Built from a fixed seed, so two builds
with the same Pillow give the same bytes. See ``resources/demo_recipe.md``.
"""
from __future__ import annotations

import io
import json
import math
import os
import random
import shutil
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .cachedir import user_cache_dir
from .errors import ItarError
from .progress import CancelToken, ProgressCallback, ProgressReporter

FOLD = "demo"
N_SHARDS = 3
SAMPLES_PER_SHARD = 100
SEED = 20240
RECIPE_VERSION = 1
MANIFEST = "demo_manifest.json"  # written last: its presence with matching sizes means "complete"
MTIME = 1_700_000_000  # fixed member mtime keeps the shards byte-stable

# A real xxh64 (seed 0) collision pair, copied from the fixtures' collisions.txt
# (a clone of the app has no shared fixture folder). The second stem comes later
# in the fold, so the index gives it crash id 1.
COLLISION_PAIR = ("sample_3781adf6e49e", "#$w{lSfF")
COLLISION_AT = (10, 140)  # sample numbers replaced by the pair (shard 0 and shard 1)

CLASSES = ("circle", "square", "triangle", "ring", "cross", "star")
PALETTE = {
    "red": (220, 50, 47), "orange": (240, 140, 30), "yellow": (240, 210, 40), "green": (60, 170, 80),
    "teal": (40, 160, 160), "blue": (50, 110, 220), "violet": (130, 80, 200), "white": (245, 245, 245),
}
SIZES = ((96, 64), (128, 128), (160, 96), (64, 64), (200, 120))


def demo_dir() -> Path:
    """The user cache folder for the demo fold (not created here)."""
    return user_cache_dir() / "demo"


def shard_names() -> list[str]:
    return [f"{FOLD}_{i:04d}.tar" for i in range(N_SHARDS)]


def build_demo(root: Path | None = None, progress: ProgressCallback | None = None,
               cancel: CancelToken | None = None) -> Path:
    """Write the demo shards and their index under ``root``; returns the ``.taridx`` path.

    Does nothing when a complete build is already there (its manifest matches the
    files on disk); otherwise rebuilds everything.
    """
    root = Path(root) if root is not None else demo_dir()
    index_path = root / f"{FOLD}.taridx"
    if _is_complete(root):
        return index_path
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / MANIFEST).unlink(missing_ok=True)
        n_total = N_SHARDS * SAMPLES_PER_SHARD
        reporter = ProgressReporter(progress, n_total, unit="samples", cancel=cancel)
        rng = random.Random(SEED)
        for shard in range(N_SHARDS):
            name = shard_names()[shard]
            tmp = root / (name + ".part")
            with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
                for k in range(SAMPLES_PER_SHARD):
                    number = shard * SAMPLES_PER_SHARD + k
                    for member, data in sample_members(number, rng):
                        _add(tar, member, data)
                    reporter.update(number + 1, current=name)
            os.replace(tmp, root / name)
        _index(root, index_path, progress, cancel)
    except OSError as exc:
        raise ItarError(f"{root}: cannot write the demo dataset: {exc.strerror or exc}") from exc
    _write_manifest(root)
    return index_path


def stem_of(number: int) -> str:
    for at, stem in zip(COLLISION_AT, COLLISION_PAIR):
        if number == at:
            return stem
    return f"{FOLD}{number:06d}"


def sample_members(number: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """The (member name, bytes) of one sample, in the order they go into the shard."""
    stem = stem_of(number)
    cls = rng.randrange(len(CLASSES))
    colour = rng.choice(sorted(PALETTE))
    width, height = SIZES[rng.randrange(len(SIZES))]
    image, mask = draw_image(stem, CLASSES[cls], PALETTE[colour], (width, height), rng)
    as_png = number % 4 == 3
    members: list[tuple[str, bytes]] = []
    members.append((f"{stem}.{'png' if as_png else 'jpg'}", _encode(image, "PNG" if as_png else "JPEG")))
    members.append((f"{stem}.cls", str(cls).encode("ascii")))
    caption = {
        "caption": f"a {colour} {CLASSES[cls]} on a gradient",
        "class": CLASSES[cls],
        "label": cls,
        "colour": colour,
        "size": [width, height],
        "sample": number,
        "tags": sorted(rng.sample(["demo", "synthetic", "shape", "gradient", "pillow"], 2)),
    }
    members.append((f"{stem}.json", json.dumps(caption, indent=1).encode("utf-8")))
    if number % 7 == 0:
        members.append((f"{stem}.npy", _npy(number, rng)))
    if number % 9 == 0 or stem in COLLISION_PAIR:
        note = f"Sample {number} of the iTar Browser demo: {caption['caption']}.\n"
        if stem in COLLISION_PAIR:
            other = COLLISION_PAIR[1 - COLLISION_PAIR.index(stem)]
            note += f"Its stem has the same xxh64 as '{other}'.\n"
        members.append((f"{stem}.txt", note.encode("utf-8")))
    if number % 11 == 0:  # a second picture of the sample: its shape mask
        members.append((f"{stem}.mask.png", _encode(mask, "PNG")))
    return members


def draw_image(stem: str, shape: str, colour: tuple[int, int, int], size: tuple[int, int],
               rng: random.Random) -> tuple[Image.Image, Image.Image]:
    """The sample's RGB picture (shape on a gradient, stem written in) and its 8-bit shape mask."""
    width, height = size
    a = np.array([rng.randrange(40, 200) for _ in range(3)], dtype=np.float32)
    b = np.array([rng.randrange(40, 200) for _ in range(3)], dtype=np.float32)
    angle = rng.uniform(0, math.pi)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    t = (xx * math.cos(angle) + yy * math.sin(angle))
    t = (t - t.min()) / max(float(t.max() - t.min()), 1.0)
    pixels = a[None, None, :] * (1 - t[..., None]) + b[None, None, :] * t[..., None]
    image = Image.fromarray(pixels.astype(np.uint8), "RGB")
    cx, cy = width * rng.uniform(0.35, 0.65), height * rng.uniform(0.35, 0.55)
    r = min(width, height) * rng.uniform(0.22, 0.32)
    _draw_shape(ImageDraw.Draw(image), shape, (cx, cy, r), colour, (0, 0, 0))
    mask = Image.new("L", size, 0)
    _draw_shape(ImageDraw.Draw(mask), shape, (cx, cy, r), 255, 255)
    draw = ImageDraw.Draw(image)
    font = _font(max(9, height // 8))
    label = stem if len(stem) <= 12 else stem[:12] + "…"
    draw.text((3, height - 3), label, fill=(255, 255, 255), font=font, anchor="ls", stroke_width=1,
              stroke_fill=(0, 0, 0))
    return image, mask


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, where: tuple[float, float, float],
                fill: tuple[int, int, int] | int, outline: tuple[int, int, int] | int) -> None:
    cx, cy, r = where
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=outline)
    elif shape == "square":
        draw.rectangle(box, fill=fill, outline=outline)
    elif shape == "triangle":
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill, outline=outline)
    elif shape == "ring":
        draw.ellipse(box, outline=fill, width=max(3, int(r / 3)))
    elif shape == "cross":
        w = max(3, int(r / 2.5))
        draw.rectangle((cx - w / 2, cy - r, cx + w / 2, cy + r), fill=fill)
        draw.rectangle((cx - r, cy - w / 2, cx + r, cy + w / 2), fill=fill)
    else:
        points = []
        for i in range(10):
            rr = r if i % 2 == 0 else r * 0.45
            phi = -math.pi / 2 + i * math.pi / 5
            points.append((cx + rr * math.cos(phi), cy + rr * math.sin(phi)))
        draw.polygon(points, fill=fill, outline=outline)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _encode(image: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "JPEG":
        image.save(buf, fmt, quality=88)
    else:
        image.save(buf, fmt, optimize=False)
    return buf.getvalue()


def _npy(number: int, rng: random.Random) -> bytes:
    if (number // 7) % 2 == 0:  # 1D: a noisy sine
        x = np.linspace(0, 4 * math.pi, 128, dtype=np.float32)
        noise = np.array([rng.gauss(0, 0.1) for _ in range(x.size)], dtype=np.float32)
        arr: np.ndarray = np.sin(x * (1 + number % 3)) + noise
    else:  # 2D: interference rings
        yy, xx = np.mgrid[-1:1:48j, -1:1:64j]
        arr = (np.cos(8 * np.hypot(xx - 0.3, yy) + number) + np.cos(8 * np.hypot(xx + 0.3, yy))).astype(np.float32)
    buf = io.BytesIO()
    np.save(buf, arr.astype(np.float32), allow_pickle=False)
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = MTIME
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = "demo"
    tar.addfile(info, io.BytesIO(data))


def _index(root: Path, index_path: Path, progress: ProgressCallback | None, cancel: CancelToken | None) -> None:
    from .formats.taridx import write_taridx
    from .indexing.indexer import index_shards

    fold = index_shards([root / name for name in shard_names()], progress=progress, cancel=cancel)
    write_taridx(index_path, fold.rows, fold.extensions, fold.crash_stems, fold.n_stems, fold.contiguous)


def _manifest_files(root: Path) -> list[Path]:
    return [root / name for name in shard_names()] + [root / f"{FOLD}.taridx"]


def _write_manifest(root: Path) -> None:
    files = {p.name: p.stat().st_size for p in _manifest_files(root)}
    text = json.dumps({"recipe": RECIPE_VERSION, "files": files}, indent=1)
    (root / MANIFEST).write_text(text, encoding="utf-8")


def _is_complete(root: Path) -> bool:
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("recipe") != RECIPE_VERSION:
            return False
        files = manifest["files"]
        return all(files.get(p.name) == p.stat().st_size for p in _manifest_files(root))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def remove_demo(root: Path | None = None) -> None:
    """Delete a demo build (for a clean rebuild)."""
    shutil.rmtree(Path(root) if root is not None else demo_dir(), ignore_errors=True)

