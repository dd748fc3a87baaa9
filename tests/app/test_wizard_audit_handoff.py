"""The wizard's "Run audit" button opens the new index and runs the full audit in the main window."""
from __future__ import annotations

from PySide6.QtWidgets import QApplication, QMessageBox


def test_run_audit_from_the_wizard_audits_the_opened_index(qtbot, webds):
    from app.views.formats.taridx.audit_panel import AuditPanel
    from app.views.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    try:
        path = str(webds / "mixed.taridx")
        with qtbot.waitSignal(window.documentOpened, timeout=15_000):
            window.actions_.open_and_audit(path)
        panel = next(p for p in window.panels if isinstance(p, AuditPanel))
        qtbot.waitUntil(lambda: panel.report is not None, timeout=20_000)
        assert panel.report.full
        # the mixed fold interleaves its samples: the full audit names them (issue 4)
        kinds = {f.kind for f in panel.report.findings}
        assert any("adjacent" in k or "split" in k for k in kinds), kinds
        assert not any(f.severity == "error" for f in panel.report.findings)
    finally:
        window.shutdown()
        for box in QApplication.topLevelWidgets():
            if isinstance(box, QMessageBox):
                box.close()
