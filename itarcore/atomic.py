"""Atomic file writes: a recognisable temporary file in the same folder, fsync, then os.replace."""
from __future__ import annotations

import contextlib
import glob
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from typing_extensions import Self

TEMP_MARKER = ".tmp-"


def temp_path_for(target: str | os.PathLike[str]) -> Path:
    target = Path(target)
    return target.with_name(f".{target.name}{TEMP_MARKER}{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Delete leftovers of killed writers of ``target`` (their pid no longer runs)."""
    target = Path(target)
    removed = []
    for name in glob.glob(glob.escape(str(target.with_name(f".{target.name}{TEMP_MARKER}"))) + "*"):
        suffix = name.rsplit(TEMP_MARKER, 1)[-1]
        if suffix.isdigit() and int(suffix) != os.getpid() and not _pid_alive(int(suffix)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
                removed.append(Path(name))
    return removed


@contextlib.contextmanager
def atomic_write(target: str | os.PathLike[str], durable: bool = True,
                 while_syncing: Callable[[], None] | None = None) -> Iterator[BinaryIO]:
    """Yield a binary file; on success it replaces ``target`` whole, on any error nothing changes.

    ``durable=False`` (cache files that can be rebuilt) skips the fsyncs and the sweep of dead writers'
    temporaries: a crash may lose the file, never leave a half-written one under its name.
    ``while_syncing`` runs while the file's fsync waits on the disk (on another thread, which
    lets the GIL go); if it raises, nothing changes and its error propagates.
    """
    target = Path(target)
    if durable:
        remove_stale_temps(target)
    tmp = temp_path_for(target)
    fh = open(tmp, "wb")  # noqa: SIM115 - yielded open; closed or removed below
    try:
        yield fh
        fh.flush()
        if durable:
            _fsync(fh, while_syncing)
        elif while_syncing is not None:
            while_syncing()
        fh.close()
        os.replace(tmp, target)
        if durable:
            _fsync_dir(target.parent)
    except BaseException:
        fh.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _fsync(fh: BinaryIO, meanwhile: Callable[[], None] | None) -> None:
    if meanwhile is None:
        os.fsync(fh.fileno())
        return
    with BackgroundSync(fh) as syncing:
        syncing.kick()
        meanwhile()


class BackgroundSync:
    """fsync of a file on another thread (which lets the GIL go), so the disk takes what is written
    while the caller makes the rest; leaving the ``with`` block waits for it and raises its error."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None

    def kick(self) -> None:
        """Start an fsync of what is written so far, unless one is still running."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.wait()
        self._fh.flush()
        self._thread = threading.Thread(target=self._sync, name="itarcore-fsync")
        self._thread.start()

    def _sync(self) -> None:
        try:
            os.fsync(self._fh.fileno())
        except OSError as exc:
            self._error = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.wait()
        else:  # the caller's error wins; the thread still ends before the file closes
            with contextlib.suppress(OSError):
                self.wait()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
