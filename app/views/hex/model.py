"""The hex viewer's logic, free of Qt: byte sources, a page cache, line layout, selection text.

A source is anything with ``size`` and ``read(offset, length)``: a local file, a memoryview or
mmap, or a ranged remote reader. The viewer reads only what it shows, through ``PageCache``.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

BYTES_PER_LINE = 16
GROUP = 8  # an extra space after this many bytes, as in ``hexdump -C``
PAGE = 4096
COPY_LIMIT = 1 << 20  # bytes: a copy of more would make a clipboard nobody can paste


class ByteSource(Protocol):
    size: int

    def read(self, offset: int, length: int) -> bytes: ...


class CallableSource:
    """A ``read(offset, length)`` function (e.g. ``Document.read_bytes``, a ranged remote read) and a size.

    ``read_cached(offset, length)``, if given, answers without waiting for the disk: bytes, or None.
    """

    def __init__(self, read: Callable[[int, int], bytes], size: int,
                 read_cached: Callable[[int, int], bytes | None] | None = None) -> None:
        self._read, self.size = read, max(0, int(size))
        self.read_cached = read_cached

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._read(offset, length))


class BufferSource:
    """Bytes already in memory or mapped: a bytes object, memoryview or mmap."""

    def __init__(self, buffer: bytes | bytearray | memoryview) -> None:
        self._view = memoryview(buffer).cast("B")
        self.size = len(self._view)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._view[offset:offset + length])


class PageCache:
    """Reads through fixed pages kept in a small LRU, so repaints and the inspector cost no I/O."""

    def __init__(self, source: ByteSource, max_pages: int = 256) -> None:
        self.source, self.max_pages = source, max_pages
        self._pages: OrderedDict[int, bytes] = OrderedDict()

    @property
    def size(self) -> int:
        return self.source.size

    def _page(self, index: int) -> bytes:
        page = self._pages.get(index)
        if page is None:
            start = index * PAGE
            page = self.source.read(start, min(PAGE, self.size - start))
            self._pages[index] = page
            if len(self._pages) > self.max_pages:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(index)
        return page

    def _span(self, offset: int, length: int) -> range:
        end = min(self.size, max(0, offset) + max(0, length))
        return range(max(0, offset) // PAGE, (end + PAGE - 1) // PAGE if end > offset else max(0, offset) // PAGE)

    def missing(self, offset: int, length: int) -> list[int]:
        """Pages of [offset, offset+length) not held yet (a background loader fetches them)."""
        return [i for i in self._span(offset, length) if i not in self._pages]

    def fill_from_memory(self, pages: list[int]) -> list[int]:
        """Take the pages the source can give without waiting (a local file's page cache); the rest."""
        read_cached = getattr(self.source, "read_cached", None)
        if read_cached is None:
            return pages
        rest = []
        for index in pages:
            try:
                page = read_cached(index * PAGE, min(PAGE, self.size - index * PAGE))
            except OSError:  # the file went away or fails: the loader reads it and reports the error
                page = None
            if page is None:
                rest.append(index)
            else:
                self.store({index: page})
        return rest

    def store(self, pages: dict[int, bytes]) -> None:
        for index, page in pages.items():
            self._pages[index] = page
            self._pages.move_to_end(index)
        while len(self._pages) > self.max_pages:
            self._pages.popitem(last=False)

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) clipped to the source; short only at its end."""
        offset = max(0, offset)
        end = min(self.size, offset + max(0, length))
        parts = []
        pos = offset
        while pos < end:
            index = pos // PAGE
            page = self._page(index)
            lo = pos - index * PAGE
            chunk = page[lo:lo + end - pos]
            if not chunk:  # the source gave less than its size promised (a file shrank)
                break
            parts.append(chunk)
            pos += len(chunk)
        return b"".join(parts)


def read_pages(source: ByteSource, pages: list[int]) -> dict[int, bytes]:
    """Whole pages from ``source`` (the background loader's task, off the GUI thread)."""
    return {i: source.read(i * PAGE, min(PAGE, source.size - i * PAGE)) for i in pages}


_PRINTABLE = bytes(b if 32 <= b < 127 else ord(".") for b in range(256))


def offset_digits(size: int) -> int:
    """Hex digits of the offsets column: 8, or more for files past 4 GiB."""
    return max(8, len(f"{max(0, size - 1):x}"))


def hex_column(i: int) -> int:
    """Character column of byte ``i`` of a line within the hex area."""
    return 3 * i + (1 if i >= GROUP else 0)


HEX_CHARS = hex_column(BYTES_PER_LINE - 1) + 2  # "00 11 … 77  88 … ff"


def hex_text(chunk: bytes) -> str:
    """The hex area of one line: bytes as pairs, a wider gap in the middle, padded to full width."""
    text = chunk[:GROUP].hex(" ")
    if len(chunk) > GROUP:
        text += "  " + chunk[GROUP:].hex(" ")
    return text.ljust(HEX_CHARS)


def ascii_text(chunk: bytes) -> str:
    return chunk.translate(_PRINTABLE).decode("ascii")


def dim_split(chunk: bytes) -> tuple[str, str, str, str]:
    """Hex and ASCII of a line, each split in two same-width strings: what reads bright, what reads dim.

    Zero bytes and non-printable characters are dimmed (as ImHex does), drawn in two runs a column.
    """
    hexes, chars = hex_text(chunk), ascii_text(chunk)
    hex_bright, hex_dim = list(hexes), [" "] * len(hexes)
    ascii_bright, ascii_dim = list(chars), [" "] * len(chars)
    for i, b in enumerate(chunk):
        if b == 0:
            c = hex_column(i)
            hex_bright[c:c + 2], hex_dim[c:c + 2] = "  ", hexes[c:c + 2]
        if not 32 <= b < 127:
            ascii_bright[i], ascii_dim[i] = " ", chars[i]
    return "".join(hex_bright), "".join(hex_dim), "".join(ascii_bright), "".join(ascii_dim)


def format_line(offset: int, chunk: bytes, digits: int = 8) -> str:
    """One line as it reads on screen (and in a copy of the view): offset, hex, ASCII."""
    return f"{offset:0{digits}x}  {hex_text(chunk)}  {ascii_text(chunk)}"


def line_count(size: int) -> int:
    return (size + BYTES_PER_LINE - 1) // BYTES_PER_LINE


def selection_as_hex(data: bytes) -> str:
    """Space-separated lowercase pairs, 16 to a line, as the view shows them."""
    return "\n".join(data[i:i + BYTES_PER_LINE].hex(" ") for i in range(0, len(data), BYTES_PER_LINE))


_CONTROL = {c: "." for c in list(range(32)) + [127] if chr(c) not in "\t\n\r"}


def selection_as_text(data: bytes) -> str:
    """The bytes as UTF-8 text: invalid sequences become U+FFFD, control characters a dot."""
    return data.decode("utf-8", errors="replace").translate(_CONTROL)


def parse_offset(text: str, size: int) -> int:
    """A go-to target: decimal (``1234``, ``1,234``), or hex with ``0x``, an ``h`` suffix or a-f letters.

    Raises ValueError with a sentence for the user when the text is not an offset in the file.
    """
    raw = text.strip().replace("_", "").replace(",", "").replace(" ", "").lower()
    if not raw:
        raise ValueError("Type an offset: decimal, or hex such as 0x1f")
    base = 10
    if raw.startswith("0x"):
        raw, base = raw[2:], 16
    elif raw.endswith("h"):
        raw, base = raw[:-1], 16
    elif any(c in "abcdef" for c in raw):
        base = 16
    try:
        value = int(raw, base)
    except ValueError:
        raise ValueError(f"“{text.strip()}” is not an offset: use decimal, or hex such as 0x1f") from None
    if value < 0:
        raise ValueError(f"Offset {value:,} is before the start: offsets start at 0")
    if value >= size:
        last = max(0, size - 1)
        raise ValueError(f"Offset {value:,} (0x{value:x}) is past the end: the last byte is {last:,} (0x{last:x})")
    return value


def describe_range(start: int, end: int) -> str:
    """A selection [start, end) for the status line, e.g. ``0xc–0xf (4 bytes)``."""
    n = end - start
    if n <= 1:
        return f"0x{start:x} ({start:,})"
    return f"0x{start:x}–0x{end - 1:x} ({n:,} bytes)"
