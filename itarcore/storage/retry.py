"""Retries with backoff for remote reads, and one line saying what a server did.

Transient: HTTP 5xx and 429, timeouts, connection resets and refusals, responses cut
short. Anything else (404, 403, a bad URL) fails at once. fsspec's own exceptions
differ by backend (aiohttp for HTTP, botocore through s3fs), so failures are sorted by
their status code and type, without importing any backend.
"""
from __future__ import annotations

import errno
import re
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

RETRIES = 3  # after the first try: 4 attempts in all
BACKOFF_SECONDS = 0.05  # doubled after each failed attempt
BACKOFF_LIMIT = 2.0
_TRANSIENT_ERRNOS = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.ETIMEDOUT, errno.EPIPE,
                     errno.EIO, errno.EAGAIN, errno.EHOSTUNREACH, errno.ENETUNREACH}
_TRANSIENT_TYPES = {"ClientPayloadError", "ServerDisconnectedError", "ClientConnectionError", "ClientOSError",
                    "ServerTimeoutError", "ClientConnectorError", "ContentLengthError", "TransferEncodingError",
                    "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError", "EndpointConnectionError",
                    "IncompleteReadError", "ResponseStreamingError", "ShortReadError"}


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any (aiohttp, botocore, fsspec wrappers)."""
    if _is_payload_error(exc):  # aiohttp's parser errors carry code 400 of their own, not the server's
        return None
    for attr in ("status", "status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore ClientError
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(value, int):
            return value
    cause = exc.__cause__ or exc.__context__
    return status_of(cause) if cause is not None and cause is not exc else None


def _is_timeout(exc: BaseException) -> bool:  # asyncio.TimeoutError is its own class before Python 3.11
    return any(t.__name__ == "TimeoutError" for t in type(exc).__mro__)


def _is_payload_error(exc: BaseException) -> bool:
    return any(t.__name__ in _TRANSIENT_TYPES or t.__name__ == "HttpProcessingError" for t in type(exc).__mro__)


def is_transient(exc: BaseException) -> bool:
    """Worth another try: 5xx/429, timeouts, resets, responses cut short."""
    if _is_payload_error(exc):
        return True
    status = status_of(exc)  # fsspec's HTTP stat turns a 5xx into FileNotFoundError with the 5xx as its cause
    if status is not None:
        return status >= 500 or status in (408, 429)
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)) or _is_timeout(exc):
        return True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    cause = exc.__cause__ or exc.__context__
    return cause is not None and cause is not exc and is_transient(cause)


def describe_failure(exc: BaseException) -> str:
    """What the server said, in a few words: HTTP status and reason, timeout, short read, …"""
    text = " ".join(str(exc).split())
    if any(isinstance(e, TimeoutError) or _is_timeout(e) for e in _chain(exc)):
        return "timed out: the server sent nothing for too long" + (f" ({text})" if text else "")
    if _is_payload_error(exc) or _is_payload_error(exc.__cause__ or exc):
        counts = re.search(r"received (\d+) of (\d+) bytes", text)
        return "response cut short" + (f": received {counts[1]} of {counts[2]} bytes" if counts else f" ({text})")
    status = status_of(exc)
    if status in (None, 404) and isinstance(exc, FileNotFoundError):
        return "not found (404)"
    if status in (None, 403) and isinstance(exc, PermissionError):
        return "access denied (403)"
    if status is not None:
        reason = _reason(exc)
        return f"server answered HTTP {status}" + (f" ({reason})" if reason else "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, nearest first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _reason(exc: BaseException | None) -> str:
    while exc is not None:
        reason = getattr(exc, "message", None) or getattr(exc, "reason", None)
        if isinstance(reason, str) and reason:
            return reason
        exc = exc.__cause__ or exc.__context__
    return ""


def call_with_retries(call: Callable[[], T], retries: int, error: Callable[[BaseException], Exception]) -> T:
    """``call()``, again after a growing pause while it fails transiently (``retries`` times at most).

    The final failure, or the first permanent one, is raised as ``error(exc)`` with the
    attempt count appended when it was retried.
    """
    from ..errors import ItarError

    delay = BACKOFF_SECONDS
    for attempt in range(retries + 1):
        try:
            return call()
        except ItarError:
            raise
        except Exception as exc:  # noqa: BLE001 - every backend failure becomes one StorageError
            if attempt >= retries or not is_transient(exc):
                final = error(exc)
                if attempt:
                    final.args = (f"{final.args[0]} (after {attempt + 1} attempts)",)
                raise final from None
            time.sleep(delay)
            delay = min(delay * 2, BACKOFF_LIMIT)
    raise AssertionError("unreachable")
