"""Light and dark palettes on the Fusion style, and colours that read well on both."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")
ICON_PATH = Path(__file__).resolve().parent.parent / "resources" / "itar-browser.svg"


def app_icon() -> QIcon:
    """The application's mark (resources/itar-browser.svg); an empty icon if the file is missing."""
    return QIcon(str(ICON_PATH)) if ICON_PATH.exists() else QIcon()


def dark_palette() -> QPalette:
    p = QPalette()
    c = QColor
    roles = QPalette.ColorRole
    p.setColor(roles.Window, c(45, 45, 48))
    p.setColor(roles.WindowText, c(230, 230, 230))
    p.setColor(roles.Base, c(30, 30, 32))
    p.setColor(roles.AlternateBase, c(40, 40, 44))
    p.setColor(roles.ToolTipBase, c(60, 60, 64))
    p.setColor(roles.ToolTipText, c(235, 235, 235))
    p.setColor(roles.Text, c(230, 230, 230))
    p.setColor(roles.PlaceholderText, c(140, 140, 140))
    p.setColor(roles.Button, c(53, 53, 57))
    p.setColor(roles.ButtonText, c(230, 230, 230))
    p.setColor(roles.BrightText, c(255, 90, 90))
    p.setColor(roles.Link, c(110, 170, 255))
    p.setColor(roles.Highlight, c(52, 120, 200))
    p.setColor(roles.HighlightedText, c(255, 255, 255))
    p.setColor(roles.Light, c(70, 70, 74))
    p.setColor(roles.Midlight, c(60, 60, 64))
    p.setColor(roles.Mid, c(40, 40, 44))
    p.setColor(roles.Dark, c(25, 25, 27))
    p.setColor(roles.Shadow, c(0, 0, 0))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, c(120, 120, 120))
    return p


def light_palette() -> QPalette:
    app = QApplication.instance()
    return app.style().standardPalette() if app is not None else QPalette()


def apply_theme(app: QApplication, theme: str) -> None:
    """'light', 'dark' or 'system' (the platform's own palette)."""
    app.setStyle("Fusion")
    if theme == "dark":
        app.setPalette(dark_palette())
    elif theme == "light":
        app.setPalette(light_palette())
    else:
        app.setPalette(QGuiApplication.palette() if theme == "system" else light_palette())


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def banner_colors(palette: QPalette) -> tuple[str, str, str]:
    """(background, text, border) for a warning banner readable on this palette."""
    if is_dark(palette):
        return "#4a3b12", "#ffe3a3", "#8a6d1f"
    return "#fff4ce", "#4d3800", "#e0c060"
