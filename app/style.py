"""Light and dark palettes on the Fusion style, and colours that read well on both."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleFactory
from shiboken6 import isValid

THEMES = ("system", "light", "dark")
# WCAG 2.1 SC 1.4.11: a control's boundary needs 3:1 against what is next to it
NON_TEXT_CONTRAST = 3.0
# Aim above 3:1 so the drawn pixels still make it: a box's 1-px edge is blended a little, a radio button's
# antialiased circle a lot (most of its pixels are part-covered)
OUTLINE_MARGIN = {QStyle.PrimitiveElement.PE_IndicatorCheckBox: 1.25, QStyle.PrimitiveElement.PE_IndicatorRadioButton: 1.75}
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


def relative_luminance(colour: QColor) -> float:
    """WCAG 2.x relative luminance of an sRGB colour."""
    def linear(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio, 1 (same luminance) to 21 (black on white)."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _mix(a: QColor, b: QColor, t: float) -> QColor:
    return QColor.fromRgbF(*(x + (y - x) * t for x, y in zip(a.getRgbF()[:3], b.getRgbF()[:3])))


# Fusion draws a check box's or radio button's outline a shade darker than the Window colour (darker(140),
# lighter(110) for boxes; darker(150) on some releases), which on a dark palette is the Base colour inside it.
def _fusion_outlines(window: QColor) -> tuple[QColor, ...]:
    return window.darker(140), window.darker(140).lighter(110), window.darker(150)


def indicator_window(palette: QPalette, margin: float = 1.0) -> QColor:
    """The Window colour to hand Fusion so every outline it derives reaches ``margin`` × 3:1 against both Base
    (inside the indicator) and Window (around it): the first mix of Base towards Text that does."""
    base, text = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)
    window = palette.color(QPalette.ColorRole.Window)
    for step in range(101):
        candidate = _mix(base, text, step / 100).lighter(140)
        if all(min(contrast_ratio(o, base), contrast_ratio(o, window)) >= NON_TEXT_CONTRAST * margin
               for o in _fusion_outlines(candidate)):
            return candidate
    return text


class IndicatorContrastStyle(QProxyStyle):
    """Fusion, with check box and radio button outlines that read on any palette (Fusion's own are about the
    Base colour on a dark one). Menus' check marks, item views' and group boxes' check boxes draw through the
    same two primitives, so every indicator in the app gets it."""

    def __init__(self) -> None:
        super().__init__(QStyleFactory.create("Fusion"))
        self._windows: dict[tuple, QColor] = {}  # (element, palette, colour group) -> the indicator's Window

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        if element in OUTLINE_MARGIN:
            palette = QPalette(option.palette)
            key = (element, palette.cacheKey(), palette.currentColorGroup())
            window = self._windows.get(key)
            if window is None:
                if len(self._windows) > 256:  # palettes come and go with themes: keep the cache small
                    self._windows.clear()
                window = self._windows[key] = indicator_window(palette, OUTLINE_MARGIN[element])
            palette.setColor(palette.currentColorGroup(), QPalette.ColorRole.Window, window)
            option = type(option)(option)  # a copy: the caller's option stays as it was
            option.palette = palette
        super().drawPrimitive(element, option, painter, widget)


_ITEM_VIEW_STYLE: QStyle | None = None


def item_view_style() -> QStyle:
    """Fusion with no Python override, for big item views that draw no check box or radio button.

    A Python override of a style method routes every call of that method through Python:
    :class:`IndicatorContrastStyle`'s ``drawPrimitive`` is called twice for each grid cell (its row
    and item panels) and made a repaint of 18 grid rows about a third slower (10.2 against 6.9 ms,
    medians of 120 paints). The palette still comes from the app, so the grid looks the same.
    """
    global _ITEM_VIEW_STYLE
    if _ITEM_VIEW_STYLE is None or not isValid(_ITEM_VIEW_STYLE):  # none yet, or deleted with an earlier app
        _ITEM_VIEW_STYLE = QStyleFactory.create("Fusion")
    app = QApplication.instance()
    if _ITEM_VIEW_STYLE.parent() is None and app is not None:
        _ITEM_VIEW_STYLE.setParent(app)  # a widget does not own its style: the app does, and deletes it with itself
    return _ITEM_VIEW_STYLE


def apply_theme(app: QApplication, theme: str) -> None:
    """'light', 'dark' or 'system' (the platform's own palette)."""
    app.setStyle(IndicatorContrastStyle())
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
