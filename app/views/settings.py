"""Where the browser keeps its settings: recent files, URL history, dock layout, theme, cache size.

Tests (or a portable install) point ``ITAR_BROWSER_SETTINGS`` at an .ini file so the
user's real settings are never touched. URLs are stored by their display name only
(user:password and secret-looking query values stripped); storage options, which may
hold credentials, are never stored.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QSettings

from itarcore.storage import absolute, display_name, is_url

ORGANISATION = "itar"
APPLICATION = "itar-browser"
SETTINGS_ENV = "ITAR_BROWSER_SETTINGS"
MAX_RECENT = 10
MAX_URL_HISTORY = 20
# in-memory LRU of fetched remote bytes (payloads), in MiB
CACHE_MB_KEY = "remote/cacheMB"
DEFAULT_CACHE_MB = 256


def app_settings() -> QSettings:
    path = os.environ.get(SETTINGS_ENV)
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)


def _strings(settings: QSettings, key: str) -> list[str]:
    value = settings.value(key, [])
    if isinstance(value, str):  # QSettings gives a bare string for a one-item list in .ini files
        value = [value]
    return [str(v) for v in (value or []) if v]


def _push_front(settings: QSettings, key: str, item: str, limit: int) -> list[str]:
    items = ([item] + [p for p in _strings(settings, key) if p != item])[:limit]
    settings.setValue(key, items)
    settings.sync()
    return items


def storable_name(path: str) -> str:
    """How a path or URL is remembered: local paths absolute, URLs without their secrets."""
    return display_name(path) if is_url(path) else absolute(path)


def recent_files(settings: QSettings) -> list[str]:
    return _strings(settings, "recentFiles")


def add_recent_file(settings: QSettings, path: str) -> list[str]:
    return _push_front(settings, "recentFiles", storable_name(path), MAX_RECENT)


def url_history(settings: QSettings) -> list[str]:
    return _strings(settings, "urlHistory")


def add_url_history(settings: QSettings, url: str) -> list[str]:
    return _push_front(settings, "urlHistory", display_name(url), MAX_URL_HISTORY)


def cache_megabytes(settings: QSettings) -> int:
    try:
        return max(0, int(settings.value(CACHE_MB_KEY, DEFAULT_CACHE_MB)))
    except (TypeError, ValueError):
        return DEFAULT_CACHE_MB
