"""The one exception family every itarcore reader, writer and job raises.

Catch :class:`ItarError` to handle anything this library reports. Format problems
are :class:`FormatError` (or a subclass); their message always names the file, the
field and the byte offset, and the expected and found values when there are any.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


class ItarError(Exception):
    """Base of every error itarcore raises on purpose."""


class FormatError(ItarError):
    """A file does not follow its on-disk format.

    ``path``, ``field`` and ``offset`` say where; ``expected`` and ``found`` say what.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        field: str,
        offset: int | None,
        problem: str = "",
        *,
        expected: Any = None,
        found: Any = None,
    ) -> None:
        self.path = os.fspath(path) if path is not None else "<memory>"
        self.field = field
        self.offset = offset
        self.problem = problem
        self.expected = expected
        self.found = found
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = f"{self.path}: field '{self.field}'"
        if self.offset is not None:
            where += f" at offset {self.offset}"
        parts = [where]
        if self.problem:
            parts.append(self.problem)
        if self.expected is not None or self.found is not None:
            parts.append(f"expected {self.expected!s}, found {self.found!s}")
        return ": ".join(parts)


class TruncatedError(FormatError):
    """The file ends before a structure it declares."""


class VersionError(FormatError):
    """An unknown magic or an unsupported major version."""


class ChecksumError(FormatError):
    """A stored checksum does not match the bytes it covers."""


class DatasetError(ItarError):
    """A fold cannot be used as asked (missing shards, unknown stem, bad row)."""


class MissingShardError(DatasetError):
    """One or more shards of a fold are not on disk."""

    def __init__(self, index_path: str, missing: list[str]) -> None:
        self.index_path = index_path
        self.missing = list(missing)
        shown = ", ".join(self.missing[:5]) + (" …" if len(self.missing) > 5 else "")
        super().__init__(f"{index_path}: {len(self.missing)} shard(s) missing: {shown}")


class WriteError(ItarError):
    """A writer refused its input or could not write the output."""


class Cancelled(ItarError):
    """A long task stopped because its cancel token was set."""
