"""A modified copy of the train fixture fold, and the truth about it read with Python's tarfile."""
from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

from itarcore.jobs import index_fold

SHARDS = ("train_0000.tar", "train_0001.tar", "train_0002.tar")


def read_members(shard: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(shard) as tf:
        return [(info, tf.extractfile(info).read()) for info in tf.getmembers() if info.isfile()]


def write_members(shard: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tf:
        for info, payload in members:
            info = tarfile.TarInfo(info.name) if isinstance(info, str) else info
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))


def member(name: str, payload: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = 0o644, 1_700_000_000
    return info, payload


def stem_of(name: str) -> tuple[str, str]:
    base = name.rsplit("/", 1)[-1]
    stem, _, ext = base.partition(".")
    return stem, ext.lower()


def samples_of(folder: Path, shards=SHARDS) -> dict[str, tuple[str, dict[str, list[int]]]]:
    """stem -> (shard of its first member, {ext: sorted sizes}), straight from tarfile."""
    out: dict[str, tuple[str, dict[str, list[int]]]] = {}
    for shard in shards:
        for info, payload in read_members(folder / shard):
            stem, ext = stem_of(info.name)
            out.setdefault(stem, (shard, {}))[1].setdefault(ext, []).append(len(payload))
    for _, exts in out.values():
        for sizes in exts.values():
            sizes.sort()
    return out


def expected_diff(old: dict, new: dict) -> dict[str, dict[str, list[str]]]:
    """The diff computed from two tarfile listings: kind -> {stem: sorted change names}."""
    out: dict[str, dict[str, list[str]]] = {"added": {}, "removed": {}, "changed": {}, "moved": {}}
    for stem in new.keys() - old.keys():
        out["added"][stem] = []
    for stem in old.keys() - new.keys():
        out["removed"][stem] = []
    for stem in old.keys() & new.keys():
        (old_shard, a), (new_shard, b) = old[stem], new[stem]
        changes = []
        if {e: len(s) for e, s in a.items()} != {e: len(s) for e, s in b.items()}:
            changes.append("extensions")
        elif a != b:
            changes.append("size")
        if old_shard != new_shard:
            changes.append("shard")
        if "extensions" in changes or "size" in changes:
            out["changed"][stem] = sorted(changes)
        elif changes:
            out["moved"][stem] = changes
    return out


def build_modified_train(src: Path, dst: Path) -> dict[str, object]:
    """Copy the train fold from ``src`` to ``dst`` with known edits, index it; returns what was injected."""
    dst.mkdir(parents=True, exist_ok=True)
    shards = {s: read_members(src / s) for s in SHARDS}
    stems = {s: [stem_of(i.name)[0] for i, _ in m] for s, m in shards.items()}

    # shard 0: a sample removed, and the first stem of a colliding pair removed, so its partner
    # (a crash stem in the old index) becomes the first stem of that hash in the new one
    s0 = shards["train_0000.tar"]
    shards["train_0000.tar"] = [(i, p) for i, p in s0 if stem_of(i.name)[0] not in ("train000005",
                                                                                      "sample_3781adf6e49e")]
    # shard 1: one member grows; the colliding pair swaps order (same samples, crash ids swapped);
    # its last sample moves to the end of shard 2 unchanged
    s1 = []
    for info, payload in shards["train_0001.tar"]:
        s1.append((info, payload + b"grown!" if info.name == "train000070.json" else payload))
    pair = [m for m in s1 if stem_of(m[0].name)[0] in ("sample_f1a3638e3c02", "!DoxIo#m")]
    first_pair = next(i for i, m in enumerate(s1) if m in pair)
    rest = [m for m in s1 if m not in pair]
    swapped = [m for m in pair if stem_of(m[0].name)[0] == "!DoxIo#m"] + \
              [m for m in pair if stem_of(m[0].name)[0] == "sample_f1a3638e3c02"]
    s1 = rest[:first_pair] + swapped + rest[first_pair:]
    last = stems["train_0001.tar"][-1]
    moving = [m for m in s1 if stem_of(m[0].name)[0] == last]
    shards["train_0001.tar"] = [m for m in s1 if m not in moving]
    # shard 2: a new sample, and an extension added to an existing one
    s2 = shards["train_0002.tar"]
    grown = next(st for st in stems["train_0002.tar"]
                 if not any(stem_of(i.name) == (st, "npy") for i, _ in s2))
    at = max(k for k, (i, _) in enumerate(s2) if stem_of(i.name)[0] == grown) + 1
    s2 = s2[:at] + [member(f"{grown}.npy", b"\x93NUMPY fake")] + s2[at:]
    shards["train_0002.tar"] = s2 + [member("zz_added.jpg", b"\xff\xd8 new"), member("zz_added.cls", b"7")] + moving
    for name, members in shards.items():
        write_members(dst / name, members)
    index_fold([dst / s for s in SHARDS], dst / "train.taridx")
    return {"removed": ["train000005", "sample_3781adf6e49e"], "added": ["zz_added"],
            "size": "train000070", "extension": grown, "moved": last}


def copy_indexes_only(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "train.taridx", dst / "train.taridx")
    return dst / "train.taridx"
