"""The ranged-read tar scan (itarcore.formats.tar_stream) gives what the local scan gives, reading far less.

Truth is ``scan_tar`` over the same bytes on disk (itself checked against the reference
indexes and ``tarfile``), and hand-counted byte ranges for the skipping.
"""
from __future__ import annotations

import functools
import io
import itertools
import tarfile
from pathlib import Path

import numpy as np
import pytest
from tar_mutants import mutant

from itarcore.errors import ItarError, TruncatedError
from itarcore.formats.read_plan import PROBE_SIZE, ReadPlan
from itarcore.formats.tar import scan_tar
from itarcore.formats.tar_stream import BlockReader, scan_tar_stream

DATA = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"
PLANS = (ReadPlan(512, 0), ReadPlan(1024, 10**9), ReadPlan(4096, 512), ReadPlan())


class CountingFile:
    """``read(offset, length)`` over bytes, recording every range asked for."""

    def __init__(self, raw: bytes) -> None:
        self.raw, self.ranges, self.round_trips = raw, [], 0

    def read(self, offset: int, length: int) -> bytes:
        self.round_trips += 1
        self.ranges.append((offset, length))
        return self.raw[offset : offset + length]

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Several ranges in one round trip (as RemoteSource.read_ranges: requests side by side)."""
        self.round_trips += 1
        self.ranges += ranges
        return [self.raw[offset : offset + length] for offset, length in ranges]


def outcome(scan_fn, *args):
    try:
        s = scan_fn(*args)
    except ItarError as exc:
        return ("refused", type(exc).__name__, str(exc))
    return (s.header_offsets.tolist(), s.sizes.tolist(), [s.name_bytes(i) for i in range(s.n_members)],
            s.skipped, s.file_size, s.name_fields.shape)


def stream_scan(raw: bytes, name: str, plan: ReadPlan = PLANS[-1], batched: bool = False):
    source = CountingFile(raw)
    return scan_tar_stream(BlockReader(source.read, len(raw), name, plan, source.read_ranges if batched else None))


@pytest.mark.parametrize("path", sorted(DATA.glob("*.tar")), ids=lambda p: p.name)
def test_fixture_shards_scan_as_locally(path: Path) -> None:
    raw = path.read_bytes()
    local = scan_tar(path, compiled=False)
    for plan, batched in itertools.product(PLANS, (False, True)):
        remote = stream_scan(raw, str(path), plan, batched)
        assert remote.method == "stream"  # the fast route, not the sequential fallback
        assert np.array_equal(remote.header_offsets, local.header_offsets)
        assert np.array_equal(remote.sizes, local.sizes)
        assert np.array_equal(remote.name_fields, local.name_fields)
        assert remote.full_names == local.full_names


def test_every_mutant_gives_the_local_members_or_the_local_error(tmp_path: Path) -> None:
    routes = set()
    for seed in range(150):
        kind, raw = mutant(seed)
        path = tmp_path / "m_0000.tar"
        path.write_bytes(raw)
        want = outcome(functools.partial(scan_tar, compiled=False), path)
        for plan, batched in itertools.product(PLANS, (False, True)):
            got = outcome(stream_scan, raw, str(path), plan, batched)
            assert got == want, (seed, kind, plan, batched)
        try:
            routes.add(stream_scan(raw, str(path)).method)
        except ItarError:
            routes.add("refused")
    assert {"stream", "sequential", "refused"} <= routes  # the corpus takes every route


def _tar(members: list[tuple[str, int]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A ustar archive of ``(name, size)`` members, and each member's payload (start, size)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(bytes([len(name) % 251]) * size))
    raw = out.getvalue()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return raw, [(m.offset_data, m.size) for m in tar.getmembers()]


def test_large_payloads_are_jumped_not_downloaded() -> None:
    big = 3 << 20
    members = [(f"s{i:03d}.{ext}", size) for i in range(12) for ext, size in (("json", 300), ("mp4", big))]
    raw, payloads = _tar(members)
    source = CountingFile(raw)
    reader = BlockReader(source.read, len(raw), "mem://big_0000.tar", ReadPlan(1 << 20, 256 << 10))
    scan = scan_tar_stream(reader)
    assert scan.method == "stream"
    assert scan.sizes.tolist() == [size for _, size in members]
    # first read: one block; then one probe per sample, at the sample's first header; then the end marker
    end = payloads[-1][0] + big
    starts = [off - 512 for (off, size), (name, _) in zip(payloads, members) if name.endswith("json")]
    assert source.ranges == [(0, 1 << 20)] + [(at, PROBE_SIZE) for at in starts[1:]] + [(end, len(raw) - end)]
    assert (reader.requests, reader.bytes_fetched) == (13, (1 << 20) + 11 * PROBE_SIZE + len(raw) - end)
    assert reader.bytes_fetched < len(raw) / 20
    for start, size in payloads:  # no read lies wholly inside a large payload
        if size == big:
            assert not any(start <= off and off + n <= start + size for off, n in source.ranges)


def test_the_end_marker_is_read_beside_the_first_probe() -> None:
    """With batched reads, the tail comes with the first probe: one round trip fewer, the same requests."""
    big = 3 << 20
    members = [(f"s{i:03d}.{ext}", size) for i in range(4) for ext, size in (("json", 300), ("mp4", big))]
    raw, payloads = _tar(members)
    source = CountingFile(raw)
    reader = BlockReader(source.read, len(raw), "mem://big_0000.tar", ReadPlan(1 << 20, 256 << 10), source.read_ranges)
    scan = scan_tar_stream(reader)
    assert (scan.method, scan.sizes.tolist(), scan.end_offset) == ("stream", [s for _, s in members], payloads[-1][0] + big)
    tail = (len(raw) - PROBE_SIZE) // 512 * 512
    starts = [off - 512 for (off, size), (name, _) in zip(payloads, members) if name.endswith("json")]
    assert source.ranges == [(0, 1 << 20), (starts[1], PROBE_SIZE), (tail, len(raw) - tail)] + [
        (at, PROBE_SIZE) for at in starts[2:]]
    assert (reader.requests, source.round_trips) == (5, 4)  # one per large member; without the tail: 5 and 5
    assert reader.bytes_fetched == (1 << 20) + 4 * PROBE_SIZE + len(raw) - tail - PROBE_SIZE
    small, _ = _tar([(f"s{i:04d}.{ext}", size) for i in range(300) for ext, size in (("jpg", 5000), ("cls", 1))])
    source = CountingFile(small)
    scan_tar_stream(BlockReader(source.read, len(small), "mem://small_0000.tar", ReadPlan(256 << 10, 64 << 10),
                                source.read_ranges))
    assert source.round_trips == len(source.ranges)  # no jump, so no tail read apart


def test_small_members_stream_in_whole_blocks() -> None:
    raw, _ = _tar([(f"s{i:04d}.{ext}", size) for i in range(300) for ext, size in (("jpg", 5000), ("cls", 1))])
    source = CountingFile(raw)
    reader = BlockReader(source.read, len(raw), "mem://small_0000.tar", ReadPlan(256 << 10, 64 << 10))
    scan = scan_tar_stream(reader)
    assert (scan.method, scan.n_members) == ("stream", 600)
    # each read begins at the header after the previous window (the rest of a payload cut by the window
    # end is skipped); all but the last are whole blocks, and together they cover nearly the whole file
    assert all(n == 256 << 10 for _, n in source.ranges[:-1])
    assert reader.bytes_fetched > len(raw) * 0.95
    assert reader.requests == len(source.ranges) <= -(-len(raw) // (256 << 10)) + 1


def test_a_short_read_is_an_error_naming_the_file_and_offset() -> None:
    raw, _ = _tar([("a.jpg", 100_000), ("b.jpg", 10)])

    def short(offset: int, length: int) -> bytes:
        return raw[offset : offset + length][:-1]

    with pytest.raises(TruncatedError, match=r"mem://cut_0000\.tar.*offset 0.*short read"):
        scan_tar_stream(BlockReader(short, len(raw), "mem://cut_0000.tar"))


def test_a_truncated_shard_is_the_local_error() -> None:
    raw, payloads = _tar([("a.jpg", 100_000), ("b.jpg", 200_000)])
    cut = raw[: payloads[1][0] + 1000]  # ends inside b.jpg's payload
    with pytest.raises(TruncatedError) as remote:
        stream_scan(cut, "s3://bucket/ds/cut_0000.tar")
    assert remote.value.offset == payloads[1][0]
    assert "s3://bucket/ds/cut_0000.tar" in str(remote.value)
    assert (remote.value.field, remote.value.problem) == ("payload", "member data runs past end of file")


def test_default_plan_starts_small_then_reads_whole_blocks() -> None:
    raw, _ = _tar([(f"s{i:05d}.jpg", 5000) for i in range(3000)])  # ~16.5 MB of 5 KB members
    source = CountingFile(raw)
    reader = BlockReader(source.read, len(raw), "mem://images_0000.tar")
    assert stream_scan(raw, "x").n_members == scan_tar_stream(reader).n_members == 3000
    lengths = [n for _, n in source.ranges]
    assert lengths == [1 << 20, 8 << 20, len(raw) - source.ranges[2][0]]  # 1 MiB first, then 8x: a block
    assert source.ranges[1][0] - (1 << 20) < 5120 and source.ranges[2][0] - source.ranges[1][0] - (8 << 20) < 5120
