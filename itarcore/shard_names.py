"""Long member names (GNU ``L`` records, pax ``path``) of a shard's members, for display.

A local shard is scanned once (mmap: cheap). A remote shard is not downloaded to name
one member: the extended headers that give a member its long name sit right before its
own header, so :class:`RemoteLongNames` reads the window before the member and finds
the chain of ``L``/``x``/``K`` records that ends exactly at it (valid checksum, typeflag,
and size landing on the member). Only pax *global* headers (``g``), which would need the
whole archive read from the start, are not applied there.
"""
from __future__ import annotations

from collections import OrderedDict

from .formats.tar import scan_tar
from .formats.tar_fields import BLOCK, header_checksum_ok, parse_number, parse_pax
from .storage import RangedSource

WINDOW = 64 << 10  # bytes read before a member to find its extended headers
_EXTENDED = (ord("L"), ord("x"), ord("K"))
_REMEMBERED = 1 << 14


def long_names_of(source: RangedSource) -> dict[int, bytes] | RemoteLongNames:
    """Header offset -> full name, for members whose name is not their header's name field alone."""
    if source.is_remote:
        return RemoteLongNames(source)
    try:
        scan = scan_tar(source.name)
        return {int(scan.header_offsets[r]): full for r, full in scan.full_names.items()}
    except Exception:  # noqa: BLE001 - a damaged shard still shows the names its headers hold
        return {}


class RemoteLongNames:
    """``get(offset)`` like the local dict; the window before each member is read once, with its header.

    :meth:`prefetch` reads the windows of many members in one batched request (near ones
    merged), so a screen of names costs one round trip per shard.
    """

    def __init__(self, source: RangedSource) -> None:
        self.source = source
        self._known: OrderedDict[int, tuple[bytes | None, bytes]] = OrderedDict()  # offset -> (long name, header)

    def get(self, offset: int) -> bytes | None:
        return self._entry(offset)[0]

    def header(self, offset: int) -> bytes:
        """The member's own 512-byte header (read with its window)."""
        return self._entry(offset)[1]

    def _entry(self, offset: int) -> tuple[bytes | None, bytes]:
        if offset not in self._known:
            self.prefetch([offset])
        return self._known[offset]

    def prefetch(self, offsets: list[int]) -> None:
        wanted = sorted({o for o in offsets if o not in self._known and 0 <= o <= self.source.size - BLOCK})
        starts = [max(0, o - WINDOW) // BLOCK * BLOCK if o % BLOCK == 0 else o for o in wanted]
        data = self.source.read_ranges([(lo, o + BLOCK - lo) for lo, o in zip(starts, wanted)])
        for lo, offset, raw in zip(starts, wanted, data):
            raw = bytes(raw)
            name = _long_name(raw[: offset - lo], lo, offset, self.source.name) if offset % BLOCK == 0 else None
            self._known[offset] = (name, raw[offset - lo :])
        while len(self._known) > _REMEMBERED:
            self._known.popitem(last=False)


def _long_name(window: bytes, lo: int, offset: int, path: str) -> bytes | None:
    """The name the chain of extended records ending at ``offset`` gives (pax path over GNU long name)."""
    long_name: bytes | None = None
    pax_path: bytes | None = None
    end = offset
    while True:  # walk back through the chain of extended records ending at `end`
        found = _record_ending_at(window, lo, end)
        if found is None:
            break
        start, flag, data = found
        if flag == ord("L") and long_name is None:
            long_name = data.split(b"\0", 1)[0]
        elif flag == ord("x") and pax_path is None:
            try:
                pax_path = parse_pax(data, path, start + BLOCK).get("path")
            except Exception:  # noqa: BLE001 - a bad pax record names nothing
                pax_path = None
        end = start
    return pax_path if pax_path is not None else long_name


def _record_ending_at(window: bytes, lo: int, end: int) -> tuple[int, int, bytes] | None:
    """(start, typeflag, data) of the nearest extended record whose data ends exactly at block ``end``."""
    for start in range(end - BLOCK, lo - 1, -BLOCK):
        header = window[start - lo : start - lo + BLOCK]
        if header[156] not in _EXTENDED or header[257:262] != b"ustar" or not header_checksum_ok(header):
            continue
        try:
            size = parse_number(header[124:136], "", "size", start + 124)
        except Exception:  # noqa: BLE001 - not a header after all
            size = -1
        if 0 <= size and start + BLOCK + -(-size // BLOCK) * BLOCK == end:
            return start, header[156], window[start - lo + BLOCK : start - lo + BLOCK + size]
    return None
