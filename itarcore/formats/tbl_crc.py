"""CRC-16/MODBUS (poly 0x8005 reflected, init 0xFFFF, no final xor), as TBL v2 stores per sample.

Uses the optional C-accelerated ``fastcrc`` package when it is installed. The numpy
fallback never loops per byte in Python: each buffer is cut into equal chunks whose
CRCs run side by side (one numpy step per two-byte *position* of a chunk, through the
65,536-entry "advance over 2 zero bytes" table), and the chunk CRCs are then joined
with the linear "advance over L zero bytes" map, kept as a table of the same size.
"""
from __future__ import annotations

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


def _chunk_lengths(lengths: np.ndarray) -> np.ndarray:
    """Chunk of about sqrt(n) bytes (a power of two): as many numpy steps as chunks per buffer."""
    return np.clip(2 ** np.ceil(np.log2(np.sqrt(np.maximum(lengths, 1)))), 16, 4096).astype(np.int64)


def _transposed(rows: np.ndarray, block: int = 4096) -> np.ndarray:
    """rows.T as a contiguous array, copied a cache-sized block of rows at a time (numpy's own copy is not)."""
    out = np.empty(rows.shape[::-1], rows.dtype)
    for start in range(0, len(rows), block):
        out[:, start : start + block] = rows[start : start + block].T
    return out


def _crc_group(buffers: list[memoryview], lengths: np.ndarray, chunk: int) -> np.ndarray:
    n_chunks = np.maximum(1, -(-lengths // chunk))
    first_chunk = np.concatenate(([0], np.cumsum(n_chunks)[:-1]))
    pad = n_chunks * chunk - lengths  # zeros in front: a zero state stays zero over them
    flat = np.zeros(int(n_chunks.sum()) * chunk, dtype=np.uint8)
    starts = first_chunk * chunk + pad
    for buf, start, length in zip(buffers, starts.tolist(), lengths.tolist()):
        flat[start : start + length] = np.frombuffer(buf, dtype=np.uint8)
    # Two bytes per step: feeding bytes b0, b1 from state c is feeding two zeros from c ^ (b0 | b1 << 8).
    columns = _transposed(flat.view("<u2").reshape(-1, chunk // 2))
    two_zeros = _advance_table(2)
    state = np.zeros(columns.shape[1], dtype=np.uint16)
    for column in columns:  # one step per 2-byte position, all chunks at once
        np.bitwise_xor(state, column, out=state)
        np.take(two_zeros, state, out=state, mode="clip")  # clip: no bounds buffering; indices are u16 anyway
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
    lengths = np.fromiter(map(len, views), dtype=np.int64, count=len(views))
    chunks = _chunk_lengths(lengths)
    for chunk in np.unique(chunks).tolist():
        members = np.flatnonzero(chunks == chunk)
        out[members] = _crc_group([views[i] for i in members.tolist()], lengths[members], chunk)
    return out


def crc16_modbus_many(buffers: Sequence[bytes | bytearray | memoryview]) -> np.ndarray:
    """CRC-16/MODBUS of each buffer, as a uint16 array (fastcrc when installed, else numpy)."""
    if _fastcrc16 is None:
        return crc16_modbus_numpy(buffers)
    return np.fromiter(map(_fastcrc16.modbus, buffers), dtype=np.uint16, count=len(buffers))


def crc16_modbus(data: bytes | bytearray | memoryview) -> int:
    """CRC-16/MODBUS of one buffer (check value: b"123456789" -> 0x4B37)."""
    return int(crc16_modbus_many([data])[0])
