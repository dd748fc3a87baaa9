"""CRC-16/MODBUS (poly 0x8005 reflected, init 0xFFFF, no final xor), as TBL v2 stores per sample.

Uses the optional C-accelerated ``fastcrc`` package when it is installed. The numpy
fallback never loops per byte in Python: each buffer is cut into equal chunks whose
CRCs run side by side (one numpy step per byte *position* of a chunk), and the chunk
CRCs are then joined with the linear "advance over L zero bytes" map, kept as a
65,536-entry table.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

try:  # optional speed-up: pip install 'itar-browser[crc]'
    from fastcrc import crc16 as _fastcrc16
except ImportError:  # pragma: no cover - depends on the environment
    _fastcrc16 = None

CRC16_INIT = 0xFFFF
_POLY_REFLECTED = 0xA001


def _make_table() -> np.ndarray:
    crc = np.arange(256, dtype=np.uint32)
    for _ in range(8):  # 8 vectorised steps build all 256 entries at once
        crc = np.where(crc & 1, (crc >> 1) ^ _POLY_REFLECTED, crc >> 1)
    return crc.astype(np.uint16)


_TABLE = _make_table()


@lru_cache(maxsize=64)
def _advance_table(n_zero_bytes: int) -> np.ndarray:
    """Table T with T[c] = the CRC state after feeding ``n_zero_bytes`` zeros from state c."""
    if n_zero_bytes == 0:
        return np.arange(65536, dtype=np.uint16)
    if n_zero_bytes == 1:
        c = np.arange(65536, dtype=np.uint16)
        return (c >> 8) ^ _TABLE[c & 0xFF]
    half = _advance_table(n_zero_bytes // 2)
    table = half[half]  # composing the map with itself doubles the zero run
    if n_zero_bytes % 2:
        table = _advance_table(1)[table]
    return table


@lru_cache(maxsize=64)
def _init_after(chunk: int) -> np.ndarray:
    """G[r] = the state reached from the initial 0xFFFF after r zero bytes, r = 0..chunk."""
    states = np.empty(chunk + 1, dtype=np.uint16)
    one = _advance_table(1)
    c = CRC16_INIT
    for r in range(chunk + 1):  # once per chunk length, cached; not per data byte
        states[r] = c
        c = int(one[c])
    return states


def _chunk_length(n: int) -> int:
    """Chunk of about sqrt(n) bytes: as many numpy steps as chunks per buffer."""
    return int(min(4096, max(16, 1 << math.ceil(math.log2(max(1.0, math.sqrt(n)))))))


def _crc_group(buffers: list[memoryview], chunk: int) -> np.ndarray:
    lengths = np.fromiter((len(b) for b in buffers), dtype=np.int64, count=len(buffers))
    n_chunks = np.maximum(1, -(-lengths // chunk))
    first_chunk = np.concatenate(([0], np.cumsum(n_chunks)[:-1]))
    pad = n_chunks * chunk - lengths  # zeros in front: a zero state stays zero over them
    flat = np.zeros(int(n_chunks.sum()) * chunk, dtype=np.uint8)
    starts = first_chunk * chunk + pad
    for buf, start, length in zip(buffers, starts.tolist(), lengths.tolist()):
        flat[start : start + length] = np.frombuffer(buf, dtype=np.uint8)
    columns = np.ascontiguousarray(flat.reshape(-1, chunk).T)
    state = np.zeros(columns.shape[1], dtype=np.uint16)
    for column in columns:  # one step per byte position, all chunks at once
        state = (state >> 8) ^ _TABLE[(state ^ column) & 0xFF]
    # The 0xFFFF start enters at the first real byte; by linearity add its advanced value.
    result = state[first_chunk] ^ _init_after(chunk)[chunk - pad]
    advance = _advance_table(chunk)
    for j in range(1, int(n_chunks.max())):
        more = n_chunks > j
        result[more] = advance[result[more]] ^ state[first_chunk[more] + j]
    return result


def crc16_modbus_numpy(buffers: Sequence[bytes | bytearray | memoryview]) -> np.ndarray:
    """CRC-16/MODBUS of each buffer through the numpy route only, whatever is installed."""
    views = [memoryview(b).cast("B") for b in buffers]
    out = np.empty(len(views), dtype=np.uint16)
    groups: dict[int, list[int]] = {}
    for i, v in enumerate(views):
        groups.setdefault(_chunk_length(len(v)), []).append(i)
    for chunk, members in groups.items():
        out[members] = _crc_group([views[i] for i in members], chunk)
    return out


def crc16_modbus_many(buffers: Sequence[bytes | bytearray | memoryview]) -> np.ndarray:
    """CRC-16/MODBUS of each buffer, as a uint16 array (fastcrc when installed, else numpy)."""
    if _fastcrc16 is None:
        return crc16_modbus_numpy(buffers)
    modbus = _fastcrc16.modbus
    return np.fromiter((modbus(b) for b in buffers), dtype=np.uint16, count=len(buffers))


def crc16_modbus(data: bytes | bytearray | memoryview) -> int:
    """CRC-16/MODBUS of one buffer (check value: b"123456789" -> 0x4B37)."""
    return int(crc16_modbus_many([data])[0])
