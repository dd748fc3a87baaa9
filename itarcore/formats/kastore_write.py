"""kastore writer: byte-identical to ``kastore.dump`` for the same dict, and atomic.

Keys are sorted by their raw UTF-8 bytes (the same order as Python's code-point
sort, which the reference uses), arrays start at the next multiple of 8 with zero
padding, and nothing follows the last array.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import WriteError
from ..progress import CancelToken, ProgressCallback, ProgressReporter
from . import KASTORE_MAGIC
from .kastore import ARRAY_ALIGN, DESCRIPTOR_SIZE, HEADER_SIZE, TYPE_DTYPES, VERSION_MAJOR, VERSION_MINOR

_TYPE_BY_NAME = {dt.name: code for code, dt in enumerate(TYPE_DTYPES)}


def _prepare(key: Any, value: Any) -> tuple[bytes, int, np.ndarray]:
    if not isinstance(key, str):
        raise WriteError(f"kastore keys must be str, got {type(key).__name__}: {key!r}")
    if not key:
        raise WriteError("kastore keys must not be empty")
    try:
        raw_key = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WriteError(f"key {key!r} cannot be encoded as UTF-8: {exc.reason}") from None
    array = np.asarray(value)
    if array.ndim != 1:
        raise WriteError(f"key {key!r}: kastore stores 1-D arrays only, got shape {array.shape}")
    code = _TYPE_BY_NAME.get(array.dtype.name)
    if code is None or array.dtype.kind not in "iuf":
        names = ", ".join(_TYPE_BY_NAME)
        raise WriteError(f"key {key!r}: dtype {array.dtype} is not a kastore type ({names})")
    # Big-endian (or native on a big-endian host) input: store the same values little-endian.
    array = np.ascontiguousarray(array, dtype=TYPE_DTYPES[code])
    return raw_key, code, array


def layout(arrays: Mapping[str, Any]) -> tuple[bytes, list[tuple[int, np.ndarray]]]:
    """Header + descriptors + keys as bytes, and (array start, little-endian array) per item, in file order."""
    prepared = sorted((_prepare(k, v) for k, v in arrays.items()), key=lambda p: p[0])
    n = len(prepared)
    if n >= 2**32:
        raise WriteError(f"too many items for a kastore file: {n}")
    pos = HEADER_SIZE + DESCRIPTOR_SIZE * n
    key_starts = []
    for raw_key, _, _ in prepared:
        key_starts.append(pos)
        pos += len(raw_key)
    placed: list[tuple[int, np.ndarray]] = []
    for _, _, array in prepared:
        pos = -(-pos // ARRAY_ALIGN) * ARRAY_ALIGN
        placed.append((pos, array))
        pos += array.nbytes
    head = bytearray(HEADER_SIZE)
    head[0:8] = KASTORE_MAGIC
    struct.pack_into("<HHIQ", head, 8, VERSION_MAJOR, VERSION_MINOR, n, pos)
    for i, ((raw_key, code, array), key_start, (array_start, _)) in enumerate(zip(prepared, key_starts, placed)):
        descriptor = bytearray(DESCRIPTOR_SIZE)
        struct.pack_into("<B7xQQQQ", descriptor, 0, code, key_start, len(raw_key), array_start, len(array))
        head += descriptor
    for raw_key, _, _ in prepared:
        head += raw_key
    return bytes(head), placed


def dumps(arrays: Mapping[str, Any]) -> bytes:
    """The file bytes for ``arrays`` (small stores; use :func:`dump` for big ones)."""
    head, placed = layout(arrays)
    out = bytearray(head)
    for start, array in placed:
        out += bytes(start - len(out))
        out += array.tobytes()
    return bytes(out)


def dump(
    arrays: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> int:
    """Write ``arrays`` to ``path`` atomically (temp file in the same folder, fsync, rename); returns the size."""
    if not isinstance(arrays, Mapping):
        raise WriteError(f"kastore input must be a mapping of str -> 1-D array, got {type(arrays).__name__}")
    path = os.fspath(path)
    head, placed = layout(arrays)
    total = placed[-1][0] + placed[-1][1].nbytes if placed else len(head)
    reporter = ProgressReporter(progress, total, unit="bytes", cancel=cancel)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(head)
            written = len(head)
            for start, array in placed:
                fh.write(bytes(start - written))
                if array.nbytes:
                    fh.write(memoryview(array).cast("B"))
                written = start + array.nbytes
                reporter.update(written, current=path)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise WriteError(f"{path}: cannot write kastore file: {exc.strerror or exc}") from exc
        raise
    reporter.finish()
    return total
