"""Where an index job writes: a local file (temp file + rename) or a store URL (one upload of the finished file).

Readers never see half an index either way: a local file is replaced by a rename, and an
object in a store appears whole when its single PUT completes (s3fs, gcsfs and adlfs
upload larger files as one multipart upload, which also appears only when complete).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ..formats.taridx import write_taridx
from ..indexing.indexer import FoldIndex
from ..storage import display_name, filesystem, is_url, remote_call, write_atomic


def backup_name(name: str) -> str:
    return name + f".bak-{time.strftime('%Y%m%d-%H%M%S')}"


class IndexTarget:
    """An index's destination, local path or URL; ``storage_options`` apply to URLs only."""

    def __init__(self, output: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> None:
        self.remote = is_url(output)
        self.output: str | Path = os.fspath(output) if self.remote else Path(output)
        self.storage_options = storage_options or {}

    @property
    def name(self) -> str:
        return display_name(self.output)

    def exists(self) -> bool:
        if not self.remote:
            return self.output.exists()
        fs, path = filesystem(self.output, self.storage_options)
        return bool(remote_call(self.output, self.storage_options, "cannot check whether it exists",
                                lambda: fs.exists(path)))

    def backup(self) -> str | Path:
        """Copy the existing index beside itself as ``<name>.bak-<time>``; returns the copy's path or URL."""
        if not self.remote:
            copy = self.output.with_name(backup_name(self.output.name))
            shutil.copy2(self.output, copy)
            return copy
        fs, path = filesystem(self.output, self.storage_options)
        remote_call(self.output, self.storage_options, "cannot back up", lambda: fs.copy(path, backup_name(path)))
        return backup_name(self.output)

    def write(self, index: FoldIndex) -> None:
        """The index file, whole: written locally, then (for a URL) uploaded in one piece."""
        if not self.remote:
            write_taridx(self.output, index.rows, index.extensions, index.crash_stems, index.n_stems,
                         index.contiguous)
            return
        with tempfile.TemporaryDirectory(prefix="itar-upload-") as folder:
            local = os.path.join(folder, "index.taridx")
            write_taridx(local, index.rows, index.extensions, index.crash_stems, index.n_stems, index.contiguous)
            write_atomic(self.output, local, self.storage_options)


__all__ = ["IndexTarget", "backup_name"]
