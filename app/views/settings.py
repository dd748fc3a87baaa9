"""Where the browser keeps its settings: recent files, dock layout, theme.

Tests (or a portable install) point ``ITAR_BROWSER_SETTINGS`` at an .ini file so the
user's real settings are never touched.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QSettings

ORGANISATION = "itar"
APPLICATION = "itar-browser"
SETTINGS_ENV = "ITAR_BROWSER_SETTINGS"
MAX_RECENT = 10


def app_settings() -> QSettings:
    path = os.environ.get(SETTINGS_ENV)
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)


def recent_files(settings: QSettings) -> list[str]:
    value = settings.value("recentFiles", [])
    if isinstance(value, str):  # QSettings gives a bare string for a one-item list in .ini files
        value = [value]
    return [str(v) for v in (value or []) if v]


def add_recent_file(settings: QSettings, path: str) -> list[str]:
    path = os.path.abspath(path)
    files = [path] + [p for p in recent_files(settings) if p != path]
    files = files[:MAX_RECENT]
    settings.setValue("recentFiles", files)
    settings.sync()
    return files
