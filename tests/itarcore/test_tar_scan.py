"""Tar scanning against Python's tarfile, for every dialect the indexer must handle."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import xxhash

from itarcore.errors import ChecksumError, FormatError, TruncatedError
from itarcore.formats.tar import scan_tar
from itarcore.indexing.hashing import xxh64_padded
from itarcore.indexing.indexer import shard_members

# every scan runs through both fast walks (compiled and numpy)
pytestmark = pytest.mark.usefixtures("scan_route")

NAMES = [
    "plain.jpg",
    "dir/sub/nested.cls",
    "d" * 60 + "/" + "e" * 60 + "/long_ustar_prefix.json",  # fits ustar only through the prefix field
    "x" * 150 + ".txt",  # needs GNU 'L' or a pax path
    "ünïcødé/名前.PNG",
    "frame01.left.jpg",
    "README",
    ".hidden",
]


def make_tar(path: Path, fmt: int, names=NAMES, extras: bool = True) -> dict[str, bytes]:
    payloads = {}
    with tarfile.open(path, "w", format=fmt) as tar:
        if extras:
            d = tarfile.TarInfo("dir")
            d.type = tarfile.DIRTYPE
            tar.addfile(d)
        for i, name in enumerate(names):
            data = bytes([i]) * (i * 300 + 1)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            payloads[name] = data
            if extras and i == 2:
                link = tarfile.TarInfo("link_to_plain")
                link.type = tarfile.SYMTYPE
                link.linkname = "plain.jpg"
                tar.addfile(link)
    return payloads


def tarfile_truth(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return [m for m in tar.getmembers() if m.isreg()]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_every_regular_member_matches_tarfile(tmp_path: Path, fmt: int) -> None:
    names = NAMES if fmt != tarfile.USTAR_FORMAT else [n for n in NAMES if len(n) <= 100 or "/" in n]
    names = names if fmt != tarfile.USTAR_FORMAT else [n for n in names if n.isascii()]
    path = tmp_path / "t.tar"
    payloads = make_tar(path, fmt, names)
    truth = tarfile_truth(path)
    scan = scan_tar(path)
    assert scan.names == [m.name for m in truth]
    # tarfile.offset points at a pax/GNU extended record; the member's own header is just before its data
    assert scan.header_offsets.tolist() == [m.offset_data - 512 for m in truth]
    assert scan.sizes.tolist() == [m.size for m in truth]
    raw = path.read_bytes()
    for name, off, size in zip(scan.names, scan.data_offsets.tolist(), scan.sizes.tolist()):
        assert raw[off : off + size] == payloads[name]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_stems_and_extensions_follow_notes(tmp_path: Path, fmt: int) -> None:
    path = tmp_path / "t.tar"
    make_tar(path, fmt)
    members = shard_members(path)
    expected = []
    for name in NAMES:
        base = name.rsplit("/", 1)[-1]
        stem, _, ext = base.partition(".")
        expected.append((xxhash.xxh64_intdigest(stem.encode()), ext.lower()))
    got = [(int(k), members.ext_names[c]) for k, c in zip(members.keyhash, members.ext_codes)]
    assert got == expected


def test_pax_global_header_applies_to_following_members(tmp_path: Path) -> None:
    path = tmp_path / "g.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "global"}) as tar:
        for name in ("a.jpg", "b.cls"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
    truth = tarfile_truth(path)
    scan = scan_tar(path)
    assert scan.names == ["a.jpg", "b.cls"] and scan.header_offsets.tolist() == [m.offset_data - 512 for m in truth]


def _fix_checksum(raw: bytearray, off: int) -> None:
    raw[off + 148 : off + 156] = b" " * 8
    raw[off + 148 : off + 156] = b"%06o\0 " % sum(raw[off : off + 512])


def test_base256_size_field(tmp_path: Path) -> None:
    path = tmp_path / "b.tar"
    make_tar(path, tarfile.USTAR_FORMAT, ["a.bin", "b.bin"], extras=False)
    raw = bytearray(path.read_bytes())
    size = int(raw[124:135], 8)
    raw[124:136] = b"\x80" + size.to_bytes(11, "big")
    _fix_checksum(raw, 0)
    path.write_bytes(bytes(raw))
    assert [m.size for m in tarfile_truth(path)] == scan_tar(path).sizes.tolist()


def test_truncated_shard_names_shard_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "t.tar"
    make_tar(path, tarfile.GNU_FORMAT, ["a.jpg", "b.jpg", "c.jpg"], extras=False)
    truth = tarfile_truth(path)
    cut = truth[2].offset_data + 100
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(TruncatedError) as info:
        scan_tar(path)
    assert str(path) in str(info.value) and info.value.offset == truth[2].offset_data


def test_bad_checksum_is_an_error_not_a_row(tmp_path: Path) -> None:
    path = tmp_path / "t.tar"
    make_tar(path, tarfile.GNU_FORMAT, ["a.jpg", "b.jpg"], extras=False)
    raw = bytearray(path.read_bytes())
    second = tarfile_truth(path)[1].offset
    raw[second + 5] ^= 0x01  # flip a name bit, keep the stored checksum
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError) as info:
        scan_tar(path)
    assert info.value.offset == second + 148 and str(path) in str(info.value)


def test_garbage_header_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "junk.tar"
    path.write_bytes(np.random.default_rng(1).integers(1, 255, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(FormatError):
        scan_tar(path)


def test_ustar_lookalike_inside_payload_falls_back_exactly(tmp_path: Path, scan_route: str) -> None:
    """A payload holding a whole tar (so 'ustar' at byte 257 of a data block) must not become a row."""
    inner = tmp_path / "inner.tar"
    make_tar(inner, tarfile.USTAR_FORMAT, ["x.jpg"], extras=False)
    path = tmp_path / "outer.tar"
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        tar.add(inner, arcname="nested.tar")
        info = tarfile.TarInfo("after.cls")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"7"))
    scan = scan_tar(path)
    # the compiled walk follows the header chain, so the look-alike never misleads it
    assert scan.method == ("compiled" if scan_route == "compiled" else "sequential")
    assert scan.names == [m.name for m in tarfile_truth(path)] == ["nested.tar", "after.cls"]


def test_empty_archive(tmp_path: Path) -> None:
    path = tmp_path / "e.tar"
    tarfile.open(path, "w").close()
    assert scan_tar(path).n_members == 0


def test_batch_xxh64_matches_xxhash() -> None:
    rng = np.random.default_rng(7)
    n, width = 5000, 70
    lengths = rng.integers(0, width + 1, n)
    mat = rng.integers(0, 256, (n, width), dtype=np.uint8)
    mat[np.arange(width)[None, :] >= lengths[:, None]] = 0
    got = xxh64_padded(mat, lengths)
    want = [xxhash.xxh64_intdigest(bytes(mat[i, : lengths[i]])) for i in range(n)]
    assert got.tolist() == want


@pytest.mark.parametrize("form,width", [(b"%011o\0", 12), (b"%06o\0 ", 8), (b"%07o ", 8), (b"%o\0", 8), (b"  %o ", 8)])
def test_octal_columns_parse_every_common_layout(form: bytes, width: int) -> None:
    from itarcore.formats.tar_fields import parse_octal_columns

    values = np.random.default_rng(3).integers(0, 8**5, 500)
    fields = np.frombuffer(b"".join((form % v).ljust(width, b"\0") for v in values), np.uint8).reshape(-1, width)
    parsed, ok = parse_octal_columns(fields)
    assert ok.all() and parsed.tolist() == values.tolist()


def test_name_fields_are_cropped_but_full_100_byte_names_survive(tmp_path: Path) -> None:
    short = tmp_path / "short.tar"
    make_tar(short, tarfile.USTAR_FORMAT, ["a.jpg", "bb.cls"], extras=False)
    assert scan_tar(short).name_fields.shape[1] == len("bb.cls")  # not 100 bytes per member
    full = tmp_path / "full.tar"
    names = ["n" * 96 + ".jpg", "s.cls"]  # the first fills the ustar name field: no NUL at all
    make_tar(full, tarfile.USTAR_FORMAT, names, extras=False)
    scan = scan_tar(full)
    assert scan.name_fields.shape[1] == 100
    assert scan.names == [m.name for m in tarfile_truth(full)] == names
    assert shard_members(full).stem_lengths.tolist() == [96, 1]


def test_ustar_lookalike_with_a_huge_base256_size_falls_back(tmp_path: Path, scan_route: str) -> None:
    """A payload block that looks like a header with a base-256 size beyond int64 is data, not an error."""
    fake = bytearray(512)
    fake[124:136] = b"\x80" + b"\xff" * 11
    fake[257:263] = b"ustar\0"
    path = tmp_path / "t.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in (("a.bin", bytes(fake) * 2), ("b.jpg", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    scan = scan_tar(path)
    assert scan.names == [m.name for m in tarfile_truth(path)] == ["a.bin", "b.jpg"]
    assert scan.sizes.tolist() == [1024, 1]


def test_scan_arrays_own_their_memory(tmp_path: Path) -> None:
    """No array of a scan is a view into a larger work buffer or a read-only bytes object."""
    path = tmp_path / "t.tar"
    make_tar(path, tarfile.GNU_FORMAT, ["n" * 100, "b.jpg"], extras=False)  # one name fills the whole field
    scan = scan_tar(path)
    for array in (scan.header_offsets, scan.sizes, scan.name_fields):
        assert array.flags.owndata and array.flags.writeable
