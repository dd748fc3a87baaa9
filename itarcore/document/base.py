"""A format-neutral view of an opened file, for the browser and the CLI.

Every format turns a file into a :class:`Document`: header fields with their byte
positions, named tables whose columns are numpy arrays (or lazy resolvers for
values that are costly to get, such as stem names read from tar headers), and an
optional payload reader per table row. The GUI shows any Document without knowing
its format; format-specific panels are extras keyed by ``Document.format``.
"""
from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..storage.residency import read_if_cached


@dataclass(frozen=True)
class HeaderField:
    name: str
    type: str  # on-disk type, e.g. "u16", "S8", "u8[7]"
    value: Any
    offset: int  # absolute byte offset in the file
    size: int  # bytes
    display: str = ""  # human reading, e.g. decoded flag words; empty means str(value)
    group: str = ""  # optional section label, e.g. "Local file header"

    @property
    def text(self) -> str:
        return self.display or _default_display(self.value)


def bytes_text(value: bytes) -> str:
    """Bytes as a person reads them: printable ASCII as is (``TARIDX``), anything else as ``\\xNN``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else "\\\\" if b == 0x5C else f"\\x{b:02x}"
                   for b in bytes(value))


def _default_display(value: Any) -> str:
    if isinstance(value, bytes):
        return bytes_text(value)
    return str(value)


# Column kinds tell the GUI how to format and align values.
COLUMN_KINDS = ("int", "hex", "size", "float", "text", "enum", "bool")


@dataclass(frozen=True)
class Column:
    """One table column.

    ``values`` is either a numpy array with one element per table row, or a lazy
    resolver ``f(rows: np.ndarray[int64]) -> Sequence`` for values that are costly to
    compute (only visible rows are asked for). Lazy columns cannot be sorted or masked.
    For ``kind == "enum"``, ``values`` holds integer codes into ``labels``.
    """

    title: str
    values: np.ndarray | Callable[[np.ndarray], Sequence[Any]]
    kind: str = "int"
    labels: Sequence[str] | None = None
    tooltip: str = ""

    @property
    def lazy(self) -> bool:
        return not isinstance(self.values, np.ndarray)

    def get(self, rows: np.ndarray) -> Sequence[Any]:
        if isinstance(self.values, np.ndarray):
            return self.values[rows]
        return self.values(rows)

    def format(self, value: Any) -> str:
        return format_value(self.kind, value, self.labels)


def format_value(kind: str, value: Any, labels: Sequence[str] | None = None) -> str:
    if value is None:
        return ""
    if kind == "hex":
        return f"{int(value):016x}"
    if kind == "size":
        return f"{int(value):,}"
    if kind == "enum":
        code = int(value)
        if labels is not None and 0 <= code < len(labels):
            return labels[code]
        return str(code)
    if kind == "float":
        return f"{float(value):.6g}"
    if kind == "bool":
        return "yes" if value else "no"
    if kind == "int":
        return str(int(value))
    return str(value)


@dataclass
class Payload:
    """The bytes behind one table row, with what a decoder needs to know."""

    data: bytes | memoryview
    ext: str  # decoder key, e.g. "jpg", "json", "npy", "parquet", "raw_u8"
    name: str  # suggested file name for "Save payload as…"
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. width/height for raw pixels


@dataclass
class Table:
    name: str
    n_rows: int
    columns: list[Column]
    payload: Callable[[int], Payload] | None = None
    payload_available: Callable[[int], bool] | None = None
    # whether payload(row) reads only pages in RAM (may run on the GUI thread); None: always
    payload_in_ram: Callable[[int], bool] | None = None
    byte_range: Callable[[int], tuple[int, int]] | None = None  # (offset, size) in the file
    # exact key search, e.g. a stem through xxh64 + crash table -> matching row indices
    lookup: Callable[[str], np.ndarray] | None = None
    lookup_label: str = ""  # e.g. "stem"
    # a row that stands for rows of another table (an extension -> its rows): (table name, rows)
    drill: Callable[[int], tuple[str, np.ndarray]] | None = None
    description: str = ""

    def column(self, title: str) -> Column:
        for col in self.columns:
            if col.title == title:
                return col
        raise KeyError(title)


@dataclass
class Document:
    path: str
    format: str  # "taridx", "kastore", "tbl", "taco"
    title: str  # e.g. "TARIDX 1.0"
    header: list[HeaderField]
    tables: list[Table]
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # short facts for the status bar
    source: Any = None  # the format's own object (e.g. a Dataset), for format panels
    closers: list[Callable[[], None]] = field(default_factory=list)
    byte_source: Any = None  # a RangedSource for a file that is not at ``path`` (a URL): the hex pane reads it

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def read_bytes(self, offset: int, size: int, limit: int = 4 << 20) -> bytes:
        """Raw file bytes for the hex pane: bounded to the file and to ``limit`` bytes."""
        if self.byte_source is not None:
            start = min(max(0, offset), self.byte_source.size)
            return bytes(self.byte_source.read(start, max(0, min(size, limit, self.byte_source.size - start))))
        with open(self.path, "rb") as fh:
            fh.seek(max(0, offset))
            return fh.read(max(0, min(size, limit)))

    def read_bytes_if_cached(self, offset: int, size: int, limit: int = 4 << 20) -> bytes | None:
        """As :meth:`read_bytes`, but None instead of waiting for the disk (or for a remote file)."""
        if self.byte_source is not None:
            return None
        return read_if_cached(self.path, max(0, offset), max(0, min(size, limit)))

    @property
    def file_size(self) -> int:
        return self.byte_source.size if self.byte_source is not None else os.path.getsize(self.path)

    def close(self) -> None:
        for close in reversed(self.closers):
            close()
        self.closers.clear()


def map_file(path: str | os.PathLike[str]) -> mmap.mmap | bytes:
    """Read-only map of a whole file; empty files give b'' (mmap refuses length 0)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
