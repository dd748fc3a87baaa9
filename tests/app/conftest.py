"""GUI test setup: private settings for every test, and a main window built as a user opens it."""
from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
from gui_helpers import shown
from PySide6.QtWidgets import QApplication, QMessageBox

from app.views.settings import SETTINGS_ENV


@pytest.fixture(autouse=True)
def _private_settings(tmp_path, monkeypatch):
    """Never touch the user's real settings."""
    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "settings.ini"))


@pytest.fixture
def window(qtbot):
    """A shown main window; shut down (workers joined) and its message boxes closed afterwards."""
    from app.views.main_window import MainWindow

    w = shown(qtbot, MainWindow())
    yield w
    w.shutdown()
    for box in QApplication.topLevelWidgets():
        if isinstance(box, QMessageBox):
            box.close()


@pytest.fixture
def wizard(qtbot):
    """The Build Index wizard, shown; its run stopped and joined afterwards."""
    from app.views.formats.taridx.wizard import BuildIndexWizard

    w = shown(qtbot, BuildIndexWizard())
    yield w
    w.run_page.stop_and_wait()


@pytest.fixture
def preview(qtbot):
    """A shown payload preview with a short debounce; its timer stopped afterwards."""
    from app.views.preview import PayloadPreview

    w = PayloadPreview(debounce_ms=5)
    w.resize(640, 420)
    yield shown(qtbot, w)
    w.shutdown()
