"""kastore (and tskit ``.trees``) files as a Document: header, an items table, a stores table.

Besides ``open_document`` this module knows tskit's ragged columns: a data array
``X`` plus ``X_offset`` (n + 1 offsets) give n variable-length rows, e.g.
``individuals/metadata`` or ``provenances/record``.
"""
from __future__ import annotations

import os

import numpy as np

from ..formats.kastore import (
    DESCRIPTOR_SIZE,
    HEADER_SIZE,
    TYPE_NAMES,
    KastoreStore,
    open_kastore_file,
    select_store,
)
from .base import Column, Document, HeaderField, Payload, Table

OFFSET_SUFFIX = "_offset"


def ragged_pair(store: KastoreStore, key: str) -> tuple[str, str] | None:
    """(data key, offsets key) when ``key`` is either half of a tskit ragged column, else None."""
    if key.endswith(OFFSET_SUFFIX) and key[: -len(OFFSET_SUFFIX)] in store:
        data_key, offsets_key = key[: -len(OFFSET_SUFFIX)], key
    elif key + OFFSET_SUFFIX in store:
        data_key, offsets_key = key, key + OFFSET_SUFFIX
    else:
        return None
    if store.item(offsets_key).dtype.kind not in "iu":
        return None
    return data_key, offsets_key


def ragged_problem(data: np.ndarray, offsets: np.ndarray) -> str:
    """Why ``offsets`` cannot split ``data`` into rows ('' when it can)."""
    if len(offsets) == 0:
        return "the offsets array is empty (it needs one more entry than there are rows)"
    if int(offsets[0]) != 0:
        return f"the first offset is {int(offsets[0])}, not 0"
    if int(offsets[-1]) != len(data):
        return f"the last offset is {int(offsets[-1])}, but the data array has {len(data)} elements"
    chunk = 1 << 20  # bounded temporaries even for 10^8 offsets
    for start in range(0, len(offsets) - 1, chunk):
        part = offsets[start : start + chunk + 1]
        if np.any(part[1:] < part[:-1]):
            row = start + int(np.flatnonzero(part[1:] < part[:-1])[0])
            return f"offsets decrease at row {row}"
    return ""


def ragged_row(data: np.ndarray, offsets: np.ndarray, row: int) -> np.ndarray:
    """Row ``row`` of a ragged column (offsets already checked with :func:`ragged_problem`)."""
    return data[int(offsets[row]) : int(offsets[row + 1])]


def as_text(array: np.ndarray) -> str | None:
    """The UTF-8 text an int8/uint8 array holds (tskit metadata, schemas), or None when it is not text."""
    if array.dtype.itemsize != 1 or array.dtype.kind not in "iu" or len(array) == 0:
        return None
    try:
        text = array.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(ch < " " and ch not in "\t\n\r" for ch in text):
        return None
    return text


def _header_fields(store: KastoreStore, n_stores: int) -> list[HeaderField]:
    b, h = store.base, store.header
    group = "Header" if n_stores == 1 else f"Header of store {store.index} (of {n_stores})"
    magic = bytes(h["magic"].tobytes())
    fields = [
        HeaderField("magic", "u8[8]", magic, b, 8, magic.hex(" ") + "  (\\x89KAS\\r\\n\\x1a\\n)", group),
        HeaderField("major version", "u16", store.version[0], b + 8, 2, "", group),
        HeaderField("minor version", "u16", store.version[1], b + 10, 2, "", group),
        HeaderField("number of items", "u32", len(store.items_list), b + 12, 4, "", group),
        HeaderField("file size", "u64", store.size, b + 16, 8, f"{store.size:,} bytes", group),
        HeaderField("reserved", "u8[40]", bytes(h["reserved"].tobytes()), b + 24, 40,
                    "all zero" if not any(h["reserved"].tobytes()) else h["reserved"].tobytes().hex(" "), group),
        HeaderField("item descriptors", f"{DESCRIPTOR_SIZE} B × n", len(store.items_list), b + HEADER_SIZE,
                    DESCRIPTOR_SIZE * len(store.items_list), f"{len(store.items_list)} × {DESCRIPTOR_SIZE} bytes "
                    "(type, key start/length, array start/length): see the items table", group),
    ]
    return fields


def _items_table(store: KastoreStore) -> Table:
    items = store.items_list
    base = store.base
    keys = np.array([it.key for it in items], dtype=object)
    i64 = np.int64

    def col(values: list[int]) -> np.ndarray:
        return np.array(values, dtype=i64)

    columns = [
        Column("key", keys, "text", tooltip="the item's key (UTF-8)"),
        Column("type", np.array([it.type for it in items], dtype=i64), "enum", TYPE_NAMES, "numpy dtype (type code)"),
        Column("length", col([it.length for it in items]), "int", tooltip="number of elements"),
        Column("bytes", col([it.nbytes for it in items]), "size", tooltip="array size in bytes"),
        Column("key offset", col([base + it.key_start for it in items]), "int", tooltip="absolute file offset of the key"),
        Column("key length", col([it.key_len for it in items]), "int", tooltip="key length in bytes"),
        Column("array offset", col([base + it.array_start for it in items]), "int",
               tooltip="absolute file offset of the array (store offset + array start field)"),
        Column("padding", col([it.padding for it in items]), "int", tooltip="zero bytes before the array (8-alignment)"),
        Column("descriptor offset", col([base + HEADER_SIZE + DESCRIPTOR_SIZE * it.index for it in items]), "int",
               tooltip="absolute file offset of the 64-byte item descriptor"),
    ]

    def byte_range(row: int) -> tuple[int, int]:
        return base + items[row].array_start, items[row].nbytes

    def payload(row: int) -> Payload:
        it = items[row]
        data = memoryview(store.array(it)).cast("B")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in it.key) or f"item{row}"
        return Payload(data, "kastore", f"{safe}.{it.type_name}.bin",
                       {"dtype": it.type_name, "length": it.length, "key": it.key})

    def lookup(text: str) -> np.ndarray:
        return np.flatnonzero(keys == text).astype(np.int64)

    return Table(
        "items", len(items), columns, payload=payload, byte_range=byte_range, lookup=lookup, lookup_label="key",
        description=f"{len(items)} items of store {store.index}; the array view follows the selected row",
    )


def _stores_table(stores: list[KastoreStore]) -> Table:
    def byte_range(row: int) -> tuple[int, int]:
        return stores[row].base, stores[row].size

    return Table(
        "stores", len(stores),
        [
            Column("store", np.arange(len(stores), dtype=np.int64), "int"),
            Column("offset", np.array([s.base for s in stores], dtype=np.int64), "int", tooltip="absolute file offset"),
            Column("size", np.array([s.size for s in stores], dtype=np.int64), "size"),
            Column("items", np.array([len(s.items_list) for s in stores], dtype=np.int64), "int"),
        ],
        byte_range=byte_range,
        description="stores back to back in this file; open another with `--store N` / the store option",
    )


def open_document(path: str | os.PathLike[str], store: int = 0, **_options: object) -> Document:
    """Open store ``store`` (default the first) of a kastore file."""
    path = os.fspath(path)
    kf = open_kastore_file(path)
    try:
        chosen = select_store(kf, int(store))
    except BaseException:
        kf.close()
        raise
    n_stores = len(kf.stores)
    header = _header_fields(chosen, n_stores)
    if n_stores > 1:
        header += [
            HeaderField(f"store {s.index}", "store", s.base, s.base, s.size,
                        f"offset {s.base:,}, {s.size:,} bytes, {len(s.items_list)} items", "Stores in this file")
            for s in kf.stores
        ]
    title = f"kastore {chosen.version[0]}.{chosen.version[1]}"
    if "format/name" in chosen and chosen.item("format/name").type_name in ("int8", "uint8"):
        title += f" ({chosen['format/name'].tobytes().decode('utf-8', 'replace')})"  # e.g. tskit.trees
    if n_stores > 1:
        title += f", store {chosen.index + 1} of {n_stores}"
    return Document(
        path=path,
        format="kastore",
        title=title,
        header=header,
        tables=[_items_table(chosen), _stores_table(kf.stores)],
        warnings=list(chosen.warnings),
        summary={"stores": n_stores, "store": chosen.index, "items": len(chosen.items_list), "bytes": chosen.size},
        source=chosen,
        closers=[kf.close],
    )
