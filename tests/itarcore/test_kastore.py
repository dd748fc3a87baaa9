"""kastore reader and writer against the reference `kastore` package and the fixtures."""
from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import kastore
import numpy as np
import pytest

from itarcore.errors import Cancelled, FormatError, TruncatedError, VersionError, WriteError
from itarcore.formats.kastore import TYPE_NAMES, load, open_kastore_file, open_store
from itarcore.formats.kastore_write import dump, dumps
from itarcore.progress import CancelToken

DATA = Path(__file__).resolve().parents[1] / "data" / "kastore"
GOOD_FILES = sorted(
    p for p in DATA.rglob("*") if p.suffix in (".kas", ".trees") and "malformed" not in p.parts
)
MALFORMED = DATA / "upstream" / "malformed"


def assert_same_arrays(ours: dict, ref) -> None:
    assert list(ours) == list(ref)
    for key in ref:
        assert ours[key].dtype == ref[key].dtype, key
        assert ours[key].dtype.byteorder in ("<", "=", "|")
        np.testing.assert_array_equal(ours[key], ref[key], err_msg=key)


@pytest.mark.parametrize("path", GOOD_FILES, ids=lambda p: str(p.relative_to(DATA)))
def test_reads_like_reference(path: Path) -> None:
    assert len(GOOD_FILES) >= 24  # 14 top-level fixtures + 10 upstream v1 files
    ours = load(path)
    for engine in ("python", "c"):
        assert_same_arrays(ours, kastore.load(path, read_all=True, engine=engine))
    for array in ours.values():  # zero-copy: views over the map, not copies
        assert not array.flags.owndata and not array.flags.writeable


def test_example_trees_matches_key_listing() -> None:
    """Every key, type, key/array offset and length agrees with the fixture's own listing."""
    expected = []
    line_re = re.compile(r"type=(\d+) \((\w+)\s*\) key@(\d+)\+(\d+) array@(\d+) len=(\d+) key='(.*)'")
    for line in (DATA / "example.trees.keys.txt").read_text().splitlines():
        m = line_re.search(line)
        if m:
            expected.append((int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5]), int(m[6]), m[7]))
    store = open_store(DATA / "example.trees")
    got = [(it.type, it.type_name, it.key_start, it.key_len, it.array_start, it.length, it.key)
           for it in store.items_list]
    assert len(expected) == 62
    assert got == expected
    assert store.size == 53820 and store.warnings == []


def test_multi_store_lists_and_opens_each() -> None:
    path = DATA / "multi_store.kas"
    kf = open_kastore_file(path)
    assert [(s.offset, s.size, s.n_items) for s in kf.store_infos] == [(0, 144, 1), (144, 144, 1)]
    with open(path, "rb") as fh:  # the reference reads stores one after another from one handle
        refs = [kastore.load(fh, read_all=True), kastore.load(fh, read_all=True)]
    for i, ref in enumerate(refs):
        assert_same_arrays(load(path, store=i), ref)
    with pytest.raises(FormatError, match=r"no store 2: the file holds 2 store\(s\)"):
        open_store(path, 2)


# file -> (error class, parts the message must contain)
MALFORMED_EXPECTED = {
    "array_len_outside_file.kas": (FormatError, ["item 0 ('a') array length", "offset 96", "outside the store of 140"]),
    "array_offset_outside_file.kas": (FormatError, ["array start", "outside the store", "found 4294967296"]),
    "bad_array_start_-1.kas": (FormatError, ["not at the next 8-aligned offset", "expected 136, found 135"]),
    "bad_array_start_-8.kas": (FormatError, ["not at the next 8-aligned offset", "expected 136, found 128"]),
    "bad_array_start_1.kas": (FormatError, ["not at the next 8-aligned offset", "expected 136, found 137"]),
    "bad_array_start_8.kas": (FormatError, ["array starts outside the store of 140 bytes", "found 144"]),
    "bad_filesize_0_-1.kas": (FormatError, ["'file size' at offset 16", "smaller than the 64-byte header", "found 63"]),
    "bad_filesize_0_1.kas": (TruncatedError, ["'file size'", "declares 65 bytes but the file has only 64"]),
    "bad_filesize_0_1024.kas": (TruncatedError, ["declares 1088 bytes but the file has only 64"]),
    "bad_filesize_10_-1.kas": (FormatError, ["item 9", "end at byte 1000", "outside the store of 999 bytes"]),
    "bad_filesize_10_1.kas": (TruncatedError, ["declares 1001 bytes but the file has only 1000"]),
    "bad_filesize_10_1024.kas": (TruncatedError, ["declares 2024 bytes but the file has only 1000"]),
    "bad_key_start_-1.kas": (FormatError, ["item 0 key start", "not packed contiguously", "expected 128, found 127"]),
    "bad_key_start_1.kas": (FormatError, ["item 0 key start", "not packed contiguously", "expected 128, found 129"]),
    "bad_magic_number.kas": (VersionError, ["'magic' at offset 0", "not a kastore file", "89 4b 41 53"]),
    "bad_type_11.kas": (FormatError, ["item 0 type", "offset 64", "unknown type code", "expected 0..9, found 11"]),
    "bad_type_20.kas": (FormatError, ["item 0 type", "unknown type code", "found 20"]),
    "empty_file.kas": (TruncatedError, ["'header' at offset 0", "file is empty"]),
    "key_len_outside_file.kas": (FormatError, ["key start/length", "key bytes 128..4294967424", "outside the store"]),
    "key_offset_outside_file.kas": (FormatError, ["key bytes 4294967296..4294967297", "outside the store"]),
    "truncated_file.kas": (TruncatedError, ["declares 1000 bytes but the file has only 150"]),
    "truncated_file_correct_size_100.kas": (TruncatedError, ["'number of items' at offset 12", "5 item descriptors",
                                                             "64..384", "size field says 100"]),
    "truncated_file_correct_size_128.kas": (TruncatedError, ["5 item descriptors", "size field says 128"]),
    "truncated_file_correct_size_129.kas": (TruncatedError, ["5 item descriptors", "size field says 129"]),
    "truncated_file_correct_size_200.kas": (TruncatedError, ["5 item descriptors", "size field says 200"]),
    "version_0.kas": (VersionError, ["'major version' at offset 8", "0.0 (older", "expected 1, found 0"]),
    "version_100.kas": (VersionError, ["'major version' at offset 8", "100.0 (newer", "expected 1, found 100"]),
}


def test_every_malformed_file_is_listed() -> None:
    assert sorted(p.name for p in MALFORMED.iterdir()) == sorted(MALFORMED_EXPECTED)
    assert len(MALFORMED_EXPECTED) == 27


@pytest.mark.parametrize("name", sorted(MALFORMED_EXPECTED))
def test_malformed_rejected_clearly(name: str) -> None:
    cls, parts = MALFORMED_EXPECTED[name]
    path = MALFORMED / name
    with pytest.raises(Exception) as ref_exc:  # the reference refuses it too
        kastore.load(path, read_all=True)
    assert not isinstance(ref_exc.value, AssertionError)
    with pytest.raises(cls) as exc:
        load(path)
    message = str(exc.value)
    assert message.startswith(str(path))
    for part in parts:
        assert part in message, (part, message)


def test_tszip_refused_with_instructions(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as exc:
        open_kastore_file(DATA / "example.trees.tsz")
    for part in ("tszip file", "ZIP archive", "python -m tszip -d FILE", "tsunzip"):
        assert part in str(exc.value)
    renamed = tmp_path / "looks_like.trees"  # recognised by content, not only by the .tsz name
    shutil.copyfile(DATA / "example.trees.tsz", renamed)
    with pytest.raises(FormatError, match="tszip file"):
        open_kastore_file(renamed)


def _two_item_file(tmp_path: Path, key_a: bytes, key_b: bytes) -> Path:
    """A valid 2-item file with keys 'ab', 'cd', then the key bytes patched in place."""
    raw = bytearray(dumps({"ab": np.array([1, 2], np.int32), "cd": np.array([3.5])}))
    keys_at = 64 + 2 * 64
    assert raw[keys_at : keys_at + 4] == b"abcd"
    raw[keys_at : keys_at + 4] = key_a + key_b
    path = tmp_path / "patched.kas"
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize(
    "key_a, key_b, warning",
    [
        (b"cd", b"ab", "keys not sorted: 'ab' (item 1) comes after 'cd'"),
        (b"ab", b"ab", "duplicate key 'ab' (item 1)"),
        (b"\xff\xfe", b"cd", "key of item 0 at offset 192 is not valid UTF-8"),
    ],
)
def test_suspicious_keys_warn_but_read(tmp_path: Path, key_a: bytes, key_b: bytes, warning: str) -> None:
    store = open_store(_two_item_file(tmp_path, key_a, key_b))
    assert any(warning in w for w in store.warnings), store.warnings
    np.testing.assert_array_equal(store.array(0), [1, 2])  # values are still there, by position
    np.testing.assert_array_equal(store.array(1), [3.5])


def test_trailing_bytes_warn(tmp_path: Path) -> None:
    path = tmp_path / "tail.kas"
    path.write_bytes(dumps({"x": np.arange(3, dtype=np.uint16)}) + b"junk!")
    kf = open_kastore_file(path)
    assert len(kf.stores) == 1
    assert any("5 bytes after the last store at offset" in w for w in kf.stores[0].warnings)
    np.testing.assert_array_equal(kf.stores[0]["x"], [0, 1, 2])


def test_bad_later_store_is_a_warning(tmp_path: Path) -> None:
    good = dumps({"x": np.arange(3, dtype=np.int8)})
    bad = bytearray(good)
    bad[8] = 7  # major version 7
    path = tmp_path / "two.kas"
    path.write_bytes(good + bytes(bad))
    kf = open_kastore_file(path)
    assert len(kf.stores) == 1
    assert any(f"store 1 at offset {len(good)} is unreadable" in w and "major version" in w for w in kf.warnings)


def test_short_header_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "short.kas"
    path.write_bytes(dumps({})[:40])
    with pytest.raises(TruncatedError, match="file ends inside the 64-byte header"):
        load(path)


# -- writer ------------------------------------------------------------------------
KEY_CHARS = list("abcxyz/_.0") + ["é", "ß", "漢", "字", "😀", "\u0301", "\uffff", "\U0010fffd"]


def random_dict(rng: np.random.Generator) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for _ in range(int(rng.integers(0, 12))):
        key = "".join(rng.choice(KEY_CHARS, size=int(rng.integers(1, 7))))
        dtype = np.dtype(TYPE_NAMES[int(rng.integers(len(TYPE_NAMES)))])
        n = int(rng.choice([0, 0, 1, 2, 3, 7, 64, 1000]))
        if dtype.kind == "f":
            values = rng.standard_normal(n) * 1e3
        else:
            info = np.iinfo(dtype)
            values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        out[key] = np.asarray(values, dtype=dtype)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_writes_byte_identical_to_reference(tmp_path: Path, seed: int) -> None:
    arrays = random_dict(np.random.default_rng(seed))
    ours = tmp_path / "ours.kas"
    dump(arrays, ours)
    for engine in ("python", "c"):
        ref = tmp_path / f"ref-{engine}.kas"
        kastore.dump(arrays, ref, engine=engine)
        assert ours.read_bytes() == ref.read_bytes(), engine
    assert dumps(arrays) == ours.read_bytes()
    back = load(ours)
    assert sorted(back) == sorted(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(back[key], value)


def test_fixture_dicts_rewrite_identically(tmp_path: Path) -> None:
    for name in ("all_types.kas", "empty_arrays.kas", "unicode_keys.kas", "empty_store.kas", "example.trees"):
        arrays = {k: np.array(v) for k, v in load(DATA / name).items()}
        out = tmp_path / name
        dump(arrays, out)
        assert out.read_bytes() == (DATA / name).read_bytes(), name


def test_big_endian_and_strided_input_converted(tmp_path: Path) -> None:
    big = np.arange(-3, 4, dtype=">i4")
    strided = np.arange(20, dtype="<f8")[::3]
    expected = io.BytesIO()
    kastore.dump({"big": big.astype("<i4"), "strided": np.ascontiguousarray(strided)}, expected, engine="python")
    out = tmp_path / "be.kas"
    dump({"big": big, "strided": strided}, out)
    assert out.read_bytes() == expected.getvalue()
    np.testing.assert_array_equal(load(out)["big"], np.arange(-3, 4))


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"m": np.zeros((2, 2))}, "1-D arrays only"),
        ({"b": np.array([True])}, "dtype bool is not a kastore type"),
        ({"c": np.array([1j])}, "dtype complex128 is not a kastore type"),
        ({"o": np.array(["x"], dtype=object)}, "dtype object is not a kastore type"),
        ({"": np.arange(2)}, "keys must not be empty"),
        ({b"raw": np.arange(2)}, "keys must be str"),
        ({"\ud800": np.arange(2)}, "cannot be encoded as UTF-8"),
    ],
)
def test_writer_rejects_bad_input_and_keeps_old_file(tmp_path: Path, arrays: dict, message: str) -> None:
    out = tmp_path / "keep.kas"
    out.write_bytes(b"old contents")
    with pytest.raises(WriteError, match=message):
        dump(arrays, out)
    assert out.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["keep.kas"]


def test_writer_is_atomic_on_cancel_and_reports_progress(tmp_path: Path) -> None:
    out = tmp_path / "big.kas"
    out.write_bytes(b"old")
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        dump({"a": np.arange(10), "b": np.arange(5.0)}, out, cancel=token)
    assert out.read_bytes() == b"old" and os.listdir(tmp_path) == ["big.kas"]
    reports = []
    size = dump({"a": np.arange(10), "b": np.arange(5.0)}, out, progress=reports.append)
    assert size == out.stat().st_size and reports[-1].done == reports[-1].total == size
    assert os.listdir(tmp_path) == ["big.kas"]


def test_writer_reports_unwritable_folder(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="cannot write kastore file"):
        dump({"a": np.arange(3)}, tmp_path / "missing-folder" / "x.kas")
