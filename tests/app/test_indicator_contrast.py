"""Check boxes and radio buttons read on both palettes: the drawn outline of an unchecked indicator reaches the
WCAG 2.1 non-text contrast (3:1) against the colours around and inside it, measured on the rendered pixels."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from gui_helpers import taridx_panel
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QCheckBox, QRadioButton, QStyle, QWidget

WEBDS_INDEX = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds" / "train.taridx"


def luminance(c: QColor) -> float:
    """WCAG relative luminance, written out here so the test does not lean on the app's own formula."""
    def lin(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(c.red()) + 0.7152 * lin(c.green()) + 0.0722 * lin(c.blue())


def ratio(a: QColor, b: QColor) -> float:
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def outline_pixels(button: QWidget) -> tuple[int, int]:
    """(pixels of the indicator that reach 3:1 against both Window and Base, the indicator's side in px).

    Only the indicator is measured: the strip left of the label, as wide as the style's indicator."""
    style = button.style()
    metric = QStyle.PixelMetric.PM_ExclusiveIndicatorWidth if isinstance(button, QRadioButton) \
        else QStyle.PixelMetric.PM_IndicatorWidth
    side = style.pixelMetric(metric, None, button)
    image = button.grab().toImage()
    pal = button.palette()
    window, base = pal.color(QPalette.ColorRole.Window), pal.color(QPalette.ColorRole.Base)
    strong = 0
    for y in range(image.height()):
        for x in range(min(side + 1, image.width())):
            c = image.pixelColor(x, y)
            strong += ratio(c, window) >= 3.0 and ratio(c, base) >= 3.0
    return strong, side


def assert_outline_reads(button: QWidget) -> None:
    strong, side = outline_pixels(button)
    # a box's outline has ~4 sides of pixels, a circle's ~π·side; ask for two sides' worth, well above stray pixels
    assert strong >= 2 * side, f"{type(button).__name__} {button.text()!r}: {strong} outline pixels reach 3:1"


@pytest.fixture
def themed():
    """apply_theme(name) for the test; the application's style and palette as they were afterwards."""
    from app.style import apply_theme

    app = QApplication.instance()
    palette, style_name = QPalette(app.palette()), app.style().name() or "fusion"
    yield lambda theme: (apply_theme(app, theme), QApplication.processEvents())
    app.setStyle(style_name)
    app.setPalette(palette)
    QApplication.processEvents()


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_unchecked_box_and_radio_outline_reach_3_to_1(qtbot, themed, theme, tmp_path):
    themed(theme)
    holder = QWidget()
    qtbot.addWidget(holder)
    box, radio = QCheckBox("Anonymous", holder), QRadioButton("a folder", holder)
    radio.move(0, 30)
    holder.show()
    holder.grab().save(str(tmp_path / f"indicators-{theme}.png"))
    for button in (box, radio):
        assert not button.isChecked()
        assert_outline_reads(button)


def test_fusions_own_dark_outline_fails_the_measure(qtbot, themed):
    """The measure can fail: Fusion's own outline on the dark palette (the bug) is about the Base colour."""
    from app.style import dark_palette

    themed("dark")
    app = QApplication.instance()
    app.setStyle("Fusion")
    app.setPalette(dark_palette())
    box = QCheckBox("Anonymous")
    qtbot.addWidget(box)
    box.show()
    strong, side = outline_pixels(box)
    assert strong < 2 * side


def test_every_indicator_of_the_wizard_dialogs_and_panels_reads_in_dark(qtbot, themed, tmp_path):
    from app.views.formats.taridx.dedup_panel import DuplicatesPanel
    from app.views.formats.taridx.plots_panel import PlotsPanel
    from app.views.formats.taridx.wizard import BuildIndexWizard
    from app.views.formats.tbl.convert_dialog import ConvertDialog
    from app.views.open_url_dialog import OpenUrlDialog
    from app.views.settings import app_settings

    themed("dark")
    measured: list[str] = []

    def check_all(widget: QWidget, name: str) -> None:
        widget.grab().save(str(tmp_path / f"{name}.png"))
        for button in widget.findChildren(QCheckBox) + widget.findChildren(QRadioButton):
            if button.isVisible() and not button.isChecked():
                assert_outline_reads(button)
                measured.append(f"{name}: {button.text()}")

    wizard = BuildIndexWizard()
    qtbot.addWidget(wizard)
    wizard.show()
    check_all(wizard, "wizard-source")
    wizard.source_page.set_folder(WEBDS_INDEX.parent)
    wizard.next()
    check_all(wizard, "wizard-options")
    for dialog in (ConvertDialog(), OpenUrlDialog(app_settings())):
        qtbot.addWidget(dialog)
        dialog.show()
        check_all(dialog, type(dialog).__name__)
    for panel_class in (PlotsPanel, DuplicatesPanel):
        with taridx_panel(qtbot, panel_class, WEBDS_INDEX) as panel:
            check_all(panel, panel_class.__name__)
    # radios and boxes of every one of them were measured
    assert any(m.startswith("wizard-source") for m in measured)
    assert any(m.startswith("wizard-options") for m in measured)
    assert sum(m.startswith("ConvertDialog") for m in measured) >= 3
    assert any(m.startswith("OpenUrlDialog") for m in measured)
    assert any(m.startswith("PlotsPanel") for m in measured) and any(m.startswith("DuplicatesPanel") for m in measured)
