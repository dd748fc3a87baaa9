"""How a remote tar is read (numpy-free, so the command line can show the defaults without loading the scanner).

The default skip threshold, 1 MiB, is about the bandwidth-delay product of an object
store (first byte in ~10-20 ms, then ~100 MB/s per connection): jumping over a member
larger than that with a new request takes less time than reading through it, and a
64 KiB probe per such member fetches at most 1/16 of its bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20
# the top of the 8–16 MiB range: half the requests of 8 MiB, which paid on every store measured
DEFAULT_BLOCK_SIZE = 16 * MiB
DEFAULT_SKIP_THRESHOLD = 1 * MiB
PROBE_SIZE = 64 << 10
FIRST_READ = 1 * MiB  # a shard's first read: ~2,000 headers of small members, little of a first large one
GROWTH = 8  # each read that follows on (no large jump) is this many times the last, up to the block size
TAR_BLOCK = 512
# Shards scanned at a time when a remote fold's caller does not say: a remote scan mostly waits
# for the server (a round trip per large member), so more scans than cores keep the link busy.
# Each holds one window of at most the block size in memory.
REMOTE_JOBS = 8


@dataclass(frozen=True)
class ReadPlan:
    """The largest ranged read, and the jump after which the next read is a short probe (both in bytes)."""

    block_size: int = DEFAULT_BLOCK_SIZE
    skip_threshold: int = DEFAULT_SKIP_THRESHOLD

    def __post_init__(self) -> None:
        if self.block_size < TAR_BLOCK:
            raise ValueError(f"block size must be at least {TAR_BLOCK} bytes, not {self.block_size}")
        if self.skip_threshold < 0:
            raise ValueError(f"skip threshold must be >= 0, not {self.skip_threshold}")


__all__ = ["DEFAULT_BLOCK_SIZE", "DEFAULT_SKIP_THRESHOLD", "FIRST_READ", "GROWTH", "PROBE_SIZE", "REMOTE_JOBS",
           "ReadPlan"]
