"""Open any supported file as a format-neutral :class:`Document`."""
from __future__ import annotations

import importlib
import os

from ..errors import FormatError, ItarError
from ..formats import detect_format, format_of, unsupported_reason
from ..storage import RangedSource, display_name, is_url, local_copy, open_source
from .base import Column, Document, HeaderField, Payload, Table

__all__ = ["Column", "Document", "HeaderField", "Payload", "Table", "open_document"]

# format name -> module under itarcore.document providing open_document(path, **options)
DOCUMENT_MODULES = {
    "taridx": "taridx",
    "kastore": "kastore",
    "tbl": "tbl",
    "taco": "taco",
}


def open_document(path: str | os.PathLike[str], **options: object) -> Document:
    """Detect the format by magic bytes and open ``path`` (a path or a URL) as a Document.

    ``storage_options`` (a dict) go to fsspec for URLs. A TARIDX URL reads its rows and
    payloads with ranged reads; a TACO, kastore or TBL URL is fetched whole into a
    temporary file (at most ``remote_copy_limit`` bytes, default 1 GiB) kept until the
    document closes, its name shown as the URL.
    """
    path = os.fspath(path)
    if is_url(path):
        return _open_url(path, options)
    fmt = detect_format(path)
    if fmt not in DOCUMENT_MODULES:
        raise FormatError(display_name(path), "magic", 0, unsupported_reason(path, fmt))
    module = importlib.import_module(f".{DOCUMENT_MODULES[fmt]}", __name__)
    return module.open_document(path, **options)


def _open_url(url: str, options: dict) -> Document:
    """Opened once: the first bytes give the format, and a TARIDX index goes on reading from the same source."""
    source = open_source(url, options.get("storage_options"))
    try:
        fmt = format_of(bytes(source.read(0, min(512, source.size))))
        if fmt == "taridx":
            from .taridx import open_document as open_taridx

            return open_taridx(url, source=source, **options)  # the index takes the source over
        if fmt not in DOCUMENT_MODULES:
            raise FormatError(display_name(url), "magic", 0,
                              f"not a TARIDX, TACO, kastore or TBL file ({fmt or 'unrecognised data'})")
        with source:  # a copy is made from it, and the copy is what the document reads
            return _open_remote_copy(url, fmt, options, source)
    except BaseException:
        source.close()  # closing twice is harmless
        raise


def _open_remote_copy(url: str, fmt: str, options: dict, source: RangedSource) -> Document:
    limit = int(options.get("remote_copy_limit") or 1 << 30)  # type: ignore[call-overload]
    copy = local_copy(url, options.get("storage_options"), limit=limit, source=source)  # type: ignore[arg-type]
    local = copy.__enter__()
    try:
        module = importlib.import_module(f".{DOCUMENT_MODULES[fmt]}", __name__)
        doc = module.open_document(local, **{k: v for k, v in options.items() if k != "storage_options"})
    except BaseException as exc:
        copy.__exit__(None, None, None)
        if isinstance(exc, ItarError):
            exc.args = (str(exc).replace(local, display_name(url)),)
        raise
    doc.path = display_name(url)
    doc.byte_source = open_source(local)
    doc.closers[:0] = [lambda: copy.__exit__(None, None, None), doc.byte_source.close]  # the copy goes last
    return doc
