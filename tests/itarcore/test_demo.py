"""The demo fold: real tar shards, a real index, real images, and the collision pair."""
from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import xxhash
from PIL import Image

from itarcore import demo
from itarcore.formats.taridx import read_taridx

COLLISIONS = Path(__file__).parents[1] / "data" / "taridx" / "collisions.txt"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.build_demo(tmp_path_factory.mktemp("demo"))


def _members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def test_layout_and_sample_count(built: Path) -> None:
    root = built.parent
    assert built.name == "demo.taridx"
    assert sorted(p.name for p in root.glob("demo_*.tar")) == ["demo_0000.tar", "demo_0001.tar", "demo_0002.tar"]
    stems = set()
    for shard in sorted(root.glob("demo_*.tar")):
        assert tarfile.is_tarfile(shard)
        for m in _members(shard):
            assert m.isfile()
            stems.add(m.name.split(".", 1)[0])
    assert len(stems) == 300
    index = read_taridx(built)
    assert index.header.n_stems == 300


def test_index_rows_match_tarfile(built: Path) -> None:
    index = read_taridx(built)
    expected = []
    for fid, shard in enumerate(sorted(built.parent.glob("demo_*.tar"))):
        for m in _members(shard):
            stem, ext = m.name.split(".", 1)
            expected.append((fid, m.offset, m.size, ext.lower(), xxhash.xxh64(stem.encode()).intdigest()))
    rows = index.rows
    assert len(rows) == len(expected)
    got = [(int(r["fid"]), int(r["offset"]), int(r["size"]), index.extensions[r["extid"]], int(r["keyhash"]))
           for r in rows]
    assert got == expected
    assert index.header.flags & 1  # samples are written contiguously


def test_every_kind_of_member_is_present_and_decodes(built: Path) -> None:
    kinds: dict[str, int] = {}
    with tarfile.open(built.parent / "demo_0000.tar") as tar:
        for m in tar.getmembers():
            ext = m.name.split(".", 1)[1]
            kinds[ext] = kinds.get(ext, 0) + 1
            data = tar.extractfile(m).read()
            if ext in ("jpg", "png", "mask.png"):
                with Image.open(io.BytesIO(data)) as im:
                    im.load()
                    assert im.format == ("JPEG" if ext == "jpg" else "PNG")
                    assert (im.width, im.height) in demo.SIZES
                    assert im.mode == ("L" if ext == "mask.png" else "RGB")
            elif ext == "cls":
                assert 0 <= int(data) < len(demo.CLASSES)
            elif ext == "json":
                caption = json.loads(data)
                assert caption["class"] == demo.CLASSES[caption["label"]]
            elif ext == "npy":
                arr = np.load(io.BytesIO(data), allow_pickle=False)
                assert arr.dtype == np.float32 and arr.ndim in (1, 2)
            elif ext == "txt":
                assert data.decode("utf-8").startswith("Sample ")
    assert set(kinds) == {"jpg", "png", "cls", "json", "npy", "txt", "mask.png"}
    assert kinds["cls"] == kinds["json"] == kinds["jpg"] + kinds["png"] == 100


def test_images_are_drawn_not_blank(built: Path) -> None:
    with tarfile.open(built.parent / "demo_0001.tar") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".jpg"))
        with Image.open(tar.extractfile(member)) as im:
            arr = np.asarray(im.convert("RGB"), dtype=np.int16)
    assert arr.std() > 10  # a gradient and a shape, not a flat fill


def test_collision_pair_from_fixture_is_indexed_with_crash_id(built: Path) -> None:
    first_line = next(line for line in COLLISIONS.read_text().splitlines() if not line.startswith("#"))
    assert tuple(first_line.split("\t")) == demo.COLLISION_PAIR
    a, b = demo.COLLISION_PAIR
    assert xxhash.xxh64(a.encode()).intdigest() == xxhash.xxh64(b.encode()).intdigest()
    index = read_taridx(built)
    assert index.crash_stems == [b]
    rows = index.rows
    kh = xxhash.xxh64(a.encode()).intdigest()
    same = rows[rows["keyhash"] == kh]
    names = []
    for fid, shard in enumerate(sorted(built.parent.glob("demo_*.tar"))):
        by_offset = {m.offset: m.name for m in _members(shard)}
        names += [(by_offset[int(r["offset"])], int(r["crashid"])) for r in same if r["fid"] == fid]
    assert {n.split(".", 1)[0] for n, c in names if c == 0} == {a}
    assert {n.split(".", 1)[0] for n, c in names if c == 1} == {b}


def test_rebuild_only_when_incomplete(built: Path, tmp_path: Path) -> None:
    root = tmp_path / "d"
    index = demo.build_demo(root)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    stamp = index.stat().st_mtime_ns
    assert demo.build_demo(root) == index
    assert index.stat().st_mtime_ns == stamp  # complete: nothing rewritten
    # byte-identical to an independent build (seeded, fixed mtimes)
    assert before["demo_0001.tar"] == (built.parent / "demo_0001.tar").read_bytes()
    assert before["demo.taridx"] == built.read_bytes()
    shard = root / "demo_0002.tar"
    shard.write_bytes(shard.read_bytes()[:10_000])  # an interrupted copy
    demo.build_demo(root)
    assert shard.read_bytes() == before["demo_0002.tar"]


def test_progress_reports_and_cancel(tmp_path: Path) -> None:
    from itarcore.errors import Cancelled
    from itarcore.progress import CancelToken

    token = CancelToken()
    seen = []

    def progress(p):
        seen.append(p)
        token.cancel()

    with pytest.raises(Cancelled):
        demo.build_demo(tmp_path / "c", progress=progress, cancel=token)
    assert seen and seen[0].unit == "samples"
    assert not (tmp_path / "c" / demo.MANIFEST).exists()


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG applies to Linux and BSD")
def test_demo_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert demo.demo_dir() == tmp_path / "itar-browser" / "demo"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert demo.demo_dir() == tmp_path / "home" / ".cache" / "itar-browser" / "demo"
