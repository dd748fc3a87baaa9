"""The Audit panel on the fixtures and on corrupted copies, driven with pytest-qt."""
from __future__ import annotations

import io
import json
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from app.views.formats.taridx.audit_panel import PANELS, AuditPanel
from itarcore.audit import audit_index
from itarcore.document import open_document
from itarcore.formats.taridx import read_taridx


@pytest.fixture
def panel_for(qtbot):
    opened = []

    def make(path: Path) -> AuditPanel:
        doc = open_document(str(path))
        panel = AuditPanel(doc)
        panel.resize(900, 420)
        qtbot.addWidget(panel)
        panel.show()
        opened.append((doc, panel))
        return panel

    yield make
    for doc, panel in opened:
        panel.shutdown()
        doc.close()


def run(qtbot, panel: AuditPanel, button) -> None:
    with qtbot.waitSignal(panel.statusMessage, timeout=30_000):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.worker is None)


def items(panel: AuditPanel) -> list:
    return [panel.findings.topLevelItem(i) for i in range(panel.findings.topLevelItemCount())]


def swap_members(shard: Path, a: int, b: int) -> None:
    with tarfile.open(shard) as tf:
        infos = tf.getmembers()
        payloads = [tf.extractfile(i).read() for i in infos]
    order = list(range(len(infos)))
    order[a], order[b] = b, a
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as tf:
        for i in order:
            tf.addfile(infos[i], io.BytesIO(payloads[i]))


def test_registered_for_taridx() -> None:
    assert PANELS == [AuditPanel] and AuditPanel.title == "Audit"


def test_mixed_fold_full_audit_click_and_export(qtbot, panel_for, data_dir: Path, tmp_path: Path) -> None:
    path = data_dir / "taridx" / "webds" / "mixed.taridx"
    panel = panel_for(path)
    assert not panel.export_button.isEnabled() and not panel.rebuild_button.isVisible()
    run(qtbot, panel, panel.full_button)
    kinds = [it.text(0) for it in items(panel)]
    assert "split samples" in kinds and "0 errors" in panel.summary.text()
    # Truth from tarfile: members whose stem is not one run in archive order.
    names = []
    for shard in ("mixed_0000.tar", "mixed_0001.tar"):
        with tarfile.open(path.with_name(shard)) as tf:
            names += tf.getnames()
    stems = [n.split(".", 1)[0] for n in names]
    starts = [s for i, s in enumerate(stems) if i == 0 or stems[i - 1] != s]
    split = [i for i, s in enumerate(stems) if starts.count(s) > 1]
    item = items(panel)[kinds.index("split samples")]
    assert item.text(2) == f"{len(split):,}"
    with qtbot.waitSignal(panel.selectRows) as sel:
        rect = panel.findings.visualItemRect(item)
        qtbot.mouseClick(panel.findings.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert sel.args[0] == "rows" and np.array_equal(sel.args[1], split)
    assert not panel.rebuild_button.isVisible()
    out = tmp_path / "report.json"
    panel.export_json(out)
    assert json.loads(out.read_text()) == audit_index(path).to_json()
    panel.grab().save(str(tmp_path / "audit.png"))


def test_quick_check_names_missing_shard_rows(qtbot, panel_for, webds: Path) -> None:
    panel = panel_for(webds / "train.taridx")
    (webds / "train_0001.tar").unlink()
    run(qtbot, panel, panel.quick_button)
    assert [it.text(0) for it in items(panel)] == ["missing shard"]
    with read_taridx(webds / "train.taridx") as idx:
        expected = np.flatnonzero(idx.rows["fid"] == 1)
    with qtbot.waitSignal(panel.selectRows) as sel:
        panel.findings.itemClicked.emit(items(panel)[0], 0)
    assert np.array_equal(sel.args[1], expected) and len(expected) == 248


def test_stale_copy_offers_rebuild_in_place(qtbot, panel_for, webds: Path, monkeypatch) -> None:
    index = webds / "train.taridx"
    old = index.read_bytes()
    swap_members(webds / "train_0001.tar", 4, 5)
    panel = panel_for(index)
    run(qtbot, panel, panel.full_button)
    assert [it.text(0) for it in items(panel) if it.toolTip(0) == "error"] == ["row mismatch"]
    assert panel.rebuild_button.isVisible() and "rebuilding it would help" in panel.summary.text()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(panel.reloadRequested, timeout=30_000):
        qtbot.mouseClick(panel.rebuild_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.worker is None)
    backups = list(webds.glob("train.taridx.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == old
    after = audit_index(index)
    assert not after.stale and [f for f in after.findings if f.severity == "error"] == []


def test_cancel_and_error_dialog(qtbot, panel_for, webds: Path) -> None:
    panel = panel_for(webds / "train.taridx")
    reported, release = threading.Event(), threading.Event()

    def hold(_progress) -> None:
        reported.set()
        release.wait(10)

    panel.start(full=True)
    panel.worker.progressed.connect(hold, Qt.ConnectionType.DirectConnection)
    qtbot.waitUntil(reported.is_set)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    release.set()
    qtbot.waitUntil(lambda: panel.worker is None)
    assert panel.summary.text() == "Cancelled." and panel.report is None

    (webds / "train.taridx").write_bytes(b"garbage, not an index")
    panel.start(full=False)
    qtbot.waitUntil(lambda: panel.worker is None)
    boxes = [w for w in QApplication.topLevelWidgets() if w.objectName() == "errorDialog" and w.isVisible()]
    assert boxes and "train.taridx" in boxes[-1].informativeText()
    for box in boxes:
        box.close()
    assert panel.quick_button.isEnabled()


def test_in_the_main_window_a_finding_selects_its_rows_in_the_grid(qtbot, webds: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    from app.views.main_window import MainWindow
    from app.views.settings import SETTINGS_ENV

    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "settings.ini"))
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.documentOpened, timeout=15_000):
            window.open_path(str(webds / "mixed.taridx"))
        panel = next(p for p in window.panels if isinstance(p, AuditPanel))
        dock = next(d for d in window._panel_docks if d.widget() is panel)
        dock.show()  # as View → Audit does
        dock.raise_()
        qtbot.waitUntil(lambda: not panel.visibleRegion().isEmpty())
        run(qtbot, panel, panel.full_button)
        item = next(it for it in items(panel) if it.text(0) == "missing extension")
        finding = panel.report.findings[int(item.data(0, Qt.ItemDataRole.UserRole))]
        qtbot.mouseClick(panel.findings.viewport(), Qt.MouseButton.LeftButton,
                         pos=panel.findings.visualItemRect(item).center())
        grid = window.tabs_by_name["rows"].grid
        assert window.current_tab() is window.tabs_by_name["rows"]
        selected = grid.model.source_rows(grid.selected_view_rows())
        assert selected.tolist() == finding.rows == [61]  # mixed_EMPTY.TXT: the only member of its sample
    finally:
        window.shutdown()


def test_appended_member_is_an_error_with_its_shard_and_offset(qtbot, panel_for, webds: Path, tmp_path: Path) -> None:
    shard = webds / "train_0000.tar"
    extra = tarfile.TarInfo("extra000999.txt")
    extra.size = 5
    with tarfile.open(shard, "a") as tf:
        tf.addfile(extra, io.BytesIO(b"hello"))
    with tarfile.open(shard) as tf:
        offset = tf.getmember("extra000999.txt").offset
    panel = panel_for(webds / "train.taridx")
    run(qtbot, panel, panel.full_button)
    first = items(panel)[0]  # errors are listed first
    assert (first.text(0), first.toolTip(0)) == ("unindexed member", "error")
    assert f"'extra000999.txt' at offset {offset}" in first.text(1) and "Shards: train_0000.tar" in first.toolTip(1)
    assert "1 error," in panel.summary.text() and panel.rebuild_button.isVisible()
    panel.findings.setCurrentItem(first)
    assert panel.detail.toPlainText().startswith("ERROR · unindexed_member")
    panel.grab().save(str(tmp_path / "audit_unindexed.png"))
