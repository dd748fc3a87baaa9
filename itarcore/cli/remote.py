"""Command-line options for URLs (``--storage-option``, ``--anon``, ``--shards``) and remote small files.

TACO, kastore and TBL readers work on local files; for a URL the commands fetch the
file whole into a temporary file first (ranged reads, retried), refusing files over
``ITARCORE_REMOTE_COPY_LIMIT`` bytes (default 1 GiB), and name the URL, never the
temporary copy, in what they print.
"""
from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..errors import ItarError
from ..storage import RangedSource, display_name, is_url, local_copy, parse_storage_options

REMOTE_COPY_LIMIT = int(os.environ.get("ITARCORE_REMOTE_COPY_LIMIT") or 1 << 30)


def add_storage_options(p: argparse.ArgumentParser, shards: bool = False) -> None:
    """``--storage-option KEY=VALUE`` (repeatable), ``--anon`` and, for fold commands, ``--shards``."""
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE", dest="storage_option",
                   help="fsspec option for URLs (repeatable; VALUE is JSON when it parses), e.g. "
                   "client_kwargs='{\"endpoint_url\": \"http://127.0.0.1:9000\"}' or profile=dev")
    p.add_argument("--anon", action="store_true", help="anonymous access to the store (no credentials)")
    if shards:
        p.add_argument("--shards", metavar="FOLDER_OR_URL", help="look for the fold's shards here (a folder or a "
                       "URL prefix such as s3://bucket/ds/) instead of beside the index")


def storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    options = parse_storage_options(getattr(args, "storage_option", None))
    if getattr(args, "anon", False):
        options["anon"] = True
    return options or None


def shown(path: str) -> str:
    """How a path or URL is printed: URLs without credentials or query secrets."""
    return display_name(path) if is_url(path) else path


@contextlib.contextmanager
def local_file(path: str, args: argparse.Namespace, source: RangedSource | None = None) -> Iterator[str]:
    """A local path for ``path``: itself, or a temporary copy of a URL (read from ``source`` when it is open
    already); errors name the URL, not the copy."""
    with local_copy(path, storage_options(args), limit=REMOTE_COPY_LIMIT, source=source) as local:
        try:
            yield local
        except ItarError as exc:
            if local != path:
                exc.args = (str(exc).replace(local, shown(path)),)
                if isinstance(getattr(exc, "path", None), str):
                    exc.path = exc.path.replace(local, shown(path))
            raise


def renamed(obj: Any, local: str, path: str) -> Any:
    """``obj`` (an info dict) with every string equal to the temporary copy's path replaced by the URL."""
    if local == path:
        return obj
    if isinstance(obj, dict):
        return {k: renamed(v, local, path) for k, v in obj.items()}
    if isinstance(obj, list):
        return [renamed(v, local, path) for v in obj]
    return shown(path) if obj == local else obj
