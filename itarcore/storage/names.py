"""Paths and URLs as text: which is which, how to show one without its secrets, how to join them.

Nothing here does I/O; every message itarcore prints about a URL goes through
:func:`display_name` (user:password and secret-looking query values removed) and
:func:`scrub` (storage option values masked), so credentials are never printed.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ItarError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_SECRET_KEY = re.compile(r"(sig|signature|token|secret|password|passwd|key|credential|auth|session)", re.IGNORECASE)


class StorageError(ItarError):
    """A file or URL could not be read or written; the message names URL, range and what the server said."""


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for ``scheme://…`` except ``file://`` (a local path)."""
    text = os.fspath(path)
    return isinstance(text, str) and bool(_SCHEME.match(text)) and not text.lower().startswith("file://")


def absolute(path: str | os.PathLike[str]) -> str:
    """A URL as it is, a local path made absolute."""
    text = os.fspath(path)
    return text if is_url(text) else os.path.abspath(text)


def local_path(path: str | os.PathLike[str]) -> str:
    """A local path as a plain path (``file://`` removed)."""
    text = os.fspath(path)
    return text[7:] if isinstance(text, str) and text.lower().startswith("file://") else text


def display_name(path: str | os.PathLike[str]) -> str:
    """The path or URL with user:password and secret-looking query values removed."""
    text = os.fspath(path)
    if not is_url(text):
        return str(text)
    parts = urlsplit(text)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urlencode([(k, "***" if _SECRET_KEY.search(k) else v) for k, v in parse_qsl(parts.query, True)],
                      safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def parse_storage_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (``--storage-option``) as a dict; values are JSON-decoded when they parse."""
    options: dict[str, Any] = {}
    for number, pair in enumerate(pairs or (), start=1):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():  # its text is not shown: it may be a secret typed in the wrong place
            raise StorageError(f"storage option {number}: expected KEY=VALUE (its text is not shown)")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def join(base: str | os.PathLike[str], name: str) -> str:
    """``name`` inside folder ``base``, for local paths and URLs alike."""
    base = os.fspath(base)
    if is_url(base):
        return base.rstrip("/") + "/" + name.lstrip("/")
    return os.path.join(local_path(base), name)


def parent(path: str | os.PathLike[str]) -> str:
    """The folder holding ``path`` (a URL prefix for URLs, the resolved folder for local paths)."""
    text = os.fspath(path)
    if is_url(text):
        return text.rstrip("/").rsplit("/", 1)[0]
    return str(Path(local_path(text)).resolve().parent)


def basename(path: str | os.PathLike[str]) -> str:
    """The file name of a path or URL (a URL's query left out)."""
    text = os.fspath(path)
    return urlsplit(text).path.rstrip("/").rsplit("/", 1)[-1] if is_url(text) else Path(local_path(text)).name


def scrub(text: str, raw_names: Sequence[str], shown: str, secrets: Sequence[str]) -> str:
    """``text`` with raw URLs replaced by their display name and every secret value masked."""
    for raw in sorted({r for r in raw_names if r}, key=len, reverse=True):
        text = text.replace(raw, shown)
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def secret_values(storage_options: dict | None) -> list[str]:
    """Every string in the options long enough to be a credential (masked in any message)."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and len(value) >= 4:
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(storage_options or {})
    return found
