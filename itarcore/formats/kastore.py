"""kastore reader: the key -> numpy array store behind every tskit ``.trees`` file.

Layout (see specs/NOTES.md, which the real files follow): a 64-byte header, one
64-byte descriptor per item, the keys packed back to back from ``64 + 64n``, then
each array at the next 8-aligned offset, the last one ending exactly at the size
field. Offsets inside a store are relative to the store's first byte, so several
stores can follow one another in one file.

Arrays come back as read-only ``np.frombuffer`` views over an mmap: opening a
10^8-element column costs nothing until its pages are touched.
"""
from __future__ import annotations

import mmap
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import FormatError, TruncatedError, VersionError
from . import KASTORE_MAGIC, ZIP_LFH, sniffer

HEADER_SIZE = 64
DESCRIPTOR_SIZE = 64
ARRAY_ALIGN = 8
VERSION_MAJOR = 1
VERSION_MINOR = 0

# Type code -> little-endian dtype; the code is the index.
TYPE_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in ("<i1", "<u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8")
)
TYPE_NAMES: tuple[str, ...] = tuple(dt.name for dt in TYPE_DTYPES)  # "int8" ... "float64"
ITEM_SIZES = np.array([dt.itemsize for dt in TYPE_DTYPES], dtype=np.int64)

HEADER_DTYPE = np.dtype(
    [("magic", "V8"), ("major", "<u2"), ("minor", "<u2"), ("n_items", "<u4"), ("size", "<u8"), ("reserved", "V40")]
)
DESCRIPTOR_DTYPE = np.dtype(
    [
        ("type", "u1"),
        ("reserved1", "V7"),
        ("key_start", "<u8"),
        ("key_len", "<u8"),
        ("array_start", "<u8"),
        ("array_len", "<u8"),
        ("reserved2", "V24"),
    ]
)
assert HEADER_DTYPE.itemsize == HEADER_SIZE and DESCRIPTOR_DTYPE.itemsize == DESCRIPTOR_SIZE

TSZIP_HINT = (
    "this is a tszip file (a ZIP archive holding a zarr-compressed tskit tree sequence), not a kastore file; "
    "decompress it first with `python -m tszip -d FILE` (or `tsunzip FILE`) and open the resulting .trees file"
)


@dataclass(frozen=True)
class Item:
    """One descriptor, already validated. Offsets are relative to the store start."""

    index: int
    key: str  # decoded for display; undecodable bytes shown as \\x escapes
    raw_key: bytes
    type: int
    key_start: int
    key_len: int
    array_start: int
    length: int  # elements
    padding: int  # zero bytes before the array (alignment)

    @property
    def dtype(self) -> np.dtype:
        return TYPE_DTYPES[self.type]

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type]

    @property
    def nbytes(self) -> int:
        return self.length * TYPE_DTYPES[self.type].itemsize


@dataclass
class StoreInfo:
    """Where one store lies in its file."""

    index: int
    offset: int  # absolute position of the store's header
    size: int  # the header's size field
    n_items: int


@sniffer
def _is_tszip(path: str, head: bytes) -> bool:
    if not head.startswith(ZIP_LFH):
        return False
    if path.endswith(".tsz"):
        return True
    with zipfile.ZipFile(path) as zf, zf.open(".zattrs") as attrs:  # at most 4 KiB, however big it says it is
        return b'"tszip"' in attrs.read(4096)


def _refuse_non_kastore(path: str, head: bytes) -> None:
    if _is_tszip(path, head):
        raise FormatError(path, "magic", 0, TSZIP_HINT, expected=KASTORE_MAGIC.hex(" "), found=head[:8].hex(" "))
    raise VersionError(
        path, "magic", 0, "not a kastore file", expected=KASTORE_MAGIC.hex(" "), found=head[:8].hex(" ") or "(empty)"
    )


class KastoreStore(Mapping[str, np.ndarray]):
    """One validated store of a kastore file; a read-only mapping key -> array view.

    ``warnings`` lists what the reference accepts but a well-formed file should not
    have (unsorted or duplicate keys, keys that are not UTF-8, non-zero reserved bytes).
    With duplicate keys, lookup by key returns the first; ``items_list`` keeps all.
    """

    def __init__(self, path: str, buf: mmap.mmap | bytes, base: int = 0, index: int = 0) -> None:
        self.path = path
        self.base = base
        self.index = index
        self.warnings: list[str] = []
        self._buf = buf
        avail = len(buf) - base
        self.header = self._read_header(avail)
        self.version = (int(self.header["major"]), int(self.header["minor"]))
        self.size = int(self.header["size"])
        n = int(self.header["n_items"])
        # The descriptor count is checked against the size before anything is allocated.
        descriptors_end = HEADER_SIZE + DESCRIPTOR_SIZE * n
        if descriptors_end > self.size:
            raise TruncatedError(
                path, "number of items", base + 12,
                f"{n} item descriptors need bytes {HEADER_SIZE}..{descriptors_end} of the store, "
                f"but its size field says {self.size}",
            )
        # A small copy (64 bytes per item), so that no view pins the map if validation fails.
        self.descriptors = np.frombuffer(buf, DESCRIPTOR_DTYPE, count=n, offset=base + HEADER_SIZE).copy()
        self.items_list: list[Item] = self._validate_items(n)
        self._by_key: dict[str, int] = {}
        for item in self.items_list:
            self._by_key.setdefault(item.key, item.index)
        self._check_order()
        if any(self.header["reserved"].tobytes()):
            self.warnings.append(f"{path}: store {index}: header reserved bytes at offset {base + 24} are not zero")

    # -- validation -------------------------------------------------------------
    def _read_header(self, avail: int) -> np.void:
        path, base = self.path, self.base
        head = bytes(self._buf[base : base + HEADER_SIZE])
        if avail <= 0:
            raise TruncatedError(path, "header", base, "file is empty", expected=f"a {HEADER_SIZE}-byte kastore header",
                                 found="0 bytes")
        if not head.startswith(KASTORE_MAGIC[: len(head)]):
            _refuse_non_kastore(path, head)
        if avail < HEADER_SIZE:
            raise TruncatedError(path, "header", base, f"file ends inside the {HEADER_SIZE}-byte header",
                                 expected=f"{HEADER_SIZE} bytes", found=f"{avail} bytes")
        header = np.frombuffer(self._buf, HEADER_DTYPE, count=1, offset=base).copy()[0]
        major, minor = int(header["major"]), int(header["minor"])
        if major != VERSION_MAJOR:
            age = "older" if major < VERSION_MAJOR else "newer"
            raise VersionError(path, "major version", base + 8,
                               f"unsupported kastore version {major}.{minor} ({age} than this reader)",
                               expected=VERSION_MAJOR, found=major)
        size = int(header["size"])
        if size < HEADER_SIZE:
            raise FormatError(path, "file size", base + 16, f"smaller than the {HEADER_SIZE}-byte header",
                              expected=f">= {HEADER_SIZE}", found=size)
        if size > avail:
            where = "the file" if base == 0 else f"the file after store offset {base}"
            raise TruncatedError(path, "file size", base + 16,
                                 f"the store declares {size} bytes but {where} has only {avail}",
                                 expected=f"<= {avail}", found=size)
        return header

    def _validate_items(self, n: int) -> list[Item]:
        path, base, size = self.path, self.base, self.size
        d = self.descriptors
        types = d["type"]
        bad = np.flatnonzero(types >= len(TYPE_DTYPES))
        if bad.size:
            i = int(bad[0])
            raise FormatError(path, f"item {i} type", base + HEADER_SIZE + DESCRIPTOR_SIZE * i,
                              "unknown type code", expected=f"0..{len(TYPE_DTYPES) - 1}", found=int(types[i]))
        items: list[Item] = []
        key_pos = HEADER_SIZE + DESCRIPTOR_SIZE * n  # keys start right after the descriptors
        keys_and_lens = [(int(ks), int(kl)) for ks, kl in zip(d["key_start"], d["key_len"])]
        for i, (ks, kl) in enumerate(keys_and_lens):
            desc_at = base + HEADER_SIZE + DESCRIPTOR_SIZE * i
            if ks > size or ks + kl > size:
                raise FormatError(path, f"item {i} key start/length", desc_at + 8,
                                  f"key bytes {ks}..{ks + kl} lie outside the store of {size} bytes")
            if ks != key_pos:
                raise FormatError(path, f"item {i} key start", desc_at + 8,
                                  "keys are not packed contiguously after the descriptors", expected=key_pos, found=ks)
            key_pos += kl
        array_pos = key_pos
        for i in range(n):
            ks, kl = keys_and_lens[i]
            desc_at = base + HEADER_SIZE + DESCRIPTOR_SIZE * i
            t = int(types[i])
            start, length = int(d["array_start"][i]), int(d["array_len"][i])
            end = start + length * int(ITEM_SIZES[t])
            aligned = -(-array_pos // ARRAY_ALIGN) * ARRAY_ALIGN
            raw_key = bytes(self._buf[base + ks : base + ks + kl])
            label = raw_key.decode("utf-8", "backslashreplace")
            if start > size:
                raise FormatError(path, f"item {i} ('{label}') array start", desc_at + 24,
                                  f"array starts outside the store of {size} bytes", expected=aligned, found=start)
            if start != aligned:
                raise FormatError(path, f"item {i} ('{label}') array start", desc_at + 24,
                                  "array is not at the next 8-aligned offset after the previous key or array",
                                  expected=aligned, found=start)
            if end > size:
                raise FormatError(path, f"item {i} ('{label}') array length", desc_at + 32,
                                  f"{length} {TYPE_NAMES[t]} elements end at byte {end}, "
                                  f"outside the store of {size} bytes (size field at offset {base + 16})")
            items.append(Item(i, label, raw_key, t, ks, kl, start, length, start - array_pos))
            array_pos = end
        if array_pos != size:
            what = f"the last array ends at byte {array_pos}" if n else f"an empty store ends at byte {HEADER_SIZE}"
            raise FormatError(path, "file size", base + 16, f"{what}, but the size field disagrees",
                              expected=array_pos, found=size)
        return items

    def _check_order(self) -> None:
        where = f"{self.path}: store {self.index}"
        seen: set[bytes] = set()
        for prev, item in zip([None, *self.items_list], self.items_list):
            try:
                item.raw_key.decode("utf-8")
            except UnicodeDecodeError:
                self.warnings.append(f"{where}: key of item {item.index} at offset {self.base + item.key_start} "
                                     f"is not valid UTF-8: {item.raw_key!r}")
            if item.raw_key in seen:
                self.warnings.append(f"{where}: duplicate key '{item.key}' (item {item.index}); lookups use the first")
            elif prev is not None and item.raw_key < prev.raw_key:
                self.warnings.append(f"{where}: keys not sorted: '{item.key}' (item {item.index}) "
                                     f"comes after '{prev.key}'")
            seen.add(item.raw_key)
        if any(self.descriptors["reserved1"].tobytes()) or any(self.descriptors["reserved2"].tobytes()):
            self.warnings.append(f"{where}: reserved bytes in item descriptors are not zero")

    # -- access -----------------------------------------------------------------
    def array(self, item: Item | int) -> np.ndarray:
        """Zero-copy, read-only little-endian view of one item's array."""
        if not isinstance(item, Item):
            item = self.items_list[item]
        return np.frombuffer(self._buf, item.dtype, count=item.length, offset=self.base + item.array_start)

    def item(self, key: str) -> Item:
        return self.items_list[self._by_key[key]]

    def __getitem__(self, key: str) -> np.ndarray:
        return self.array(self._by_key[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    @property
    def end(self) -> int:
        """Absolute offset just past this store."""
        return self.base + self.size


@dataclass
class KastoreFile:
    """A file holding one or more stores back to back."""

    path: str
    stores: list[KastoreStore]
    warnings: list[str] = field(default_factory=list)
    _buf: mmap.mmap | bytes = b""

    @property
    def store_infos(self) -> list[StoreInfo]:
        return [StoreInfo(s.index, s.base, s.size, len(s.items_list)) for s in self.stores]

    def close(self) -> None:
        """Release the map; arrays handed out keep it alive until they are dropped."""
        if isinstance(self._buf, mmap.mmap):
            try:
                self._buf.close()
            except BufferError:  # views still exported: the mmap closes when they are garbage collected
                pass


def _map(path: str) -> mmap.mmap | bytes:
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def open_kastore_file(path: str | os.PathLike[str]) -> KastoreFile:
    """Open every store in the file. The first must be valid; bytes after the last valid one are a warning."""
    path = os.fspath(path)
    buf = _map(path)
    try:
        stores = [KastoreStore(path, buf, 0, 0)]
        warnings: list[str] = []
        pos = stores[0].end
        while pos < len(buf):
            if bytes(buf[pos : pos + 8]) != KASTORE_MAGIC:
                warnings.append(f"{path}: {len(buf) - pos} bytes after the last store at offset {pos} are not a store")
                break
            try:
                stores.append(KastoreStore(path, buf, pos, len(stores)))
            except FormatError as exc:
                warnings.append(f"store {len(stores)} at offset {pos} is unreadable: {exc}")
                break
            pos = stores[-1].end
    except BaseException:
        if isinstance(buf, mmap.mmap):
            try:
                buf.close()
            except BufferError:  # a view still refers to it; garbage collection closes it
                pass
        raise
    for s in stores:  # whichever store is viewed, report what is odd about the file
        s.warnings[:0] = warnings
    return KastoreFile(path, stores, warnings, buf)


def open_store(path: str | os.PathLike[str], store: int = 0) -> KastoreStore:
    """Open one store (default the first) of a kastore file."""
    kf = open_kastore_file(path)
    return select_store(kf, store)


def select_store(kf: KastoreFile, store: int) -> KastoreStore:
    if not 0 <= store < len(kf.stores):
        raise FormatError(kf.path, "store", None, f"no store {store}: the file holds {len(kf.stores)} store(s)",
                          expected=f"0..{len(kf.stores) - 1}", found=store)
    return kf.stores[store]


def load(path: str | os.PathLike[str], store: int = 0) -> dict[str, np.ndarray]:
    """Every array of one store as a dict of zero-copy views (like ``kastore.load``)."""
    s = open_store(path, store)
    return {key: s[key] for key in s}
