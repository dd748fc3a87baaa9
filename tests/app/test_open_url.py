"""Opening URLs: File → Open URL…, the command line, recent files and drops; secrets never saved.

The settings file is read back as text after each route: no password, token or storage option
value may appear in it, and URLs are remembered by their display name.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gui_helpers import click
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QImage
from PySide6.QtWidgets import QLineEdit, QPushButton

from app.views.remote_session import dropped_target
from app.views.settings import SETTINGS_ENV, app_settings, recent_files, url_history
from itarcore.storage import display_name

ROOT = Path(__file__).parents[2]
WEBDS = ROOT / "tests" / "data" / "taridx" / "webds"


def settings_text() -> str:
    app_settings().sync()
    return Path(os.environ[SETTINGS_ENV]).read_text(encoding="utf-8", errors="replace")


def test_open_url_dialog_opens_with_options_and_saves_no_secret(qtbot, window, http_server):
    base = http_server.serve(WEBDS)
    host = base.removeprefix("http://")
    url = f"{base}/train.taridx?token=tok-secret-123"  # e.g. a presigned URL
    dialog = window.actions_.open_url_dialog()
    dialog.url_box.setCurrentText(url)
    row = dialog.option_rows[0]
    row.key.setText("headers")
    row.value.setText('{"Authorization": "Bearer sek-ret-999"}')
    secret_row = dialog.add_option("client_secret", "cs-value-777")
    assert secret_row.value.echoMode() == QLineEdit.EchoMode.Password  # a credential is not shown on screen
    assert row.value.echoMode() == QLineEdit.EchoMode.Normal
    assert dialog.storage_options() == {"headers": {"Authorization": "Bearer sek-ret-999"},
                                        "client_secret": "cs-value-777"}
    click(qtbot, secret_row.remove)  # not an option HTTP takes: the user removes it again
    dialog.cache_mb.setValue(3)  # the payload cache's budget, a saved setting
    with qtbot.waitSignal(window.documentOpened, timeout=30_000):
        click(qtbot, dialog.open_button)
    assert window.document.format == "taridx"
    assert int(app_settings().value("remote/cacheMB")) == 3 and window.remote.cache.max_bytes == 3 << 20
    shown = display_name(url)
    assert "tok-secret-123" not in shown and shown.startswith(f"{base}/train.taridx?token=")
    assert recent_files(app_settings())[0] == shown
    assert url_history(app_settings())[0] == shown
    text = settings_text()
    for secret in ("tok-secret-123", "sek-ret-999", "cs-value-777", "Authorization"):
        assert secret not in text
    assert host in text  # the URL itself is remembered
    recent = window.actions_.recent_menu.actions()[0]
    assert "tok-secret" not in recent.text() and "tok-secret" not in recent.toolTip()


def test_open_url_dialog_refuses_what_is_not_a_url(qtbot, window):
    dialog = window.actions_.open_url_dialog()
    dialog.url_box.setCurrentText("just/a/path.taridx")
    click(qtbot, dialog.open_button)
    assert dialog.isVisible() and "is not a URL" in dialog.problem.text()
    dialog.url_box.setCurrentText("s3://bucket/x.taridx")
    dialog.option_rows[0].key.setText("")
    dialog.option_rows[0].value.setText("orphan")
    click(qtbot, dialog.open_button)
    assert dialog.isVisible() and "expected KEY=VALUE" in dialog.problem.text()
    dialog.reject()


def test_a_url_dropped_as_text_opens(qtbot, window, http_server):
    url = http_server.serve(WEBDS) + "/val.taridx"
    mime = QMimeData()
    mime.setText(url + "\n")
    assert dropped_target(mime) == url
    event = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.documentOpened, timeout=30_000) as opened:
        window.dropEvent(event)
    assert opened.args == [url] and window.document.tables[0].n_rows > 0
    local = QMimeData()
    local.setUrls([QUrl.fromLocalFile(str(WEBDS / "val.taridx"))])
    assert dropped_target(local) == str(WEBDS / "val.taridx")
    plain = QMimeData()
    plain.setText("not a url")
    assert dropped_target(plain) is None


def test_command_line_url_with_storage_options_screenshot(tmp_path, s3_server):
    url = s3_server.upload(WEBDS) + "/train.taridx"
    options = s3_server.storage_options
    out, ini = tmp_path / "shot.png", tmp_path / "s.ini"
    args = [url, "--storage-option", f"key={options['key']}", "--storage-option", f"secret={options['secret']}",
            "--storage-option", "client_kwargs=" + json.dumps(options["client_kwargs"]),
            "--screenshot", str(out), "--size", "1440x900"]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **{SETTINGS_ENV: str(ini)})
    done = subprocess.run([sys.executable, "-m", "app.main", *args], cwd=ROOT, env=env, check=False,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1440, 900)
    text = ini.read_text()
    assert url in text and options["secret"] not in text


def test_command_line_refuses_a_malformed_storage_option(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **{SETTINGS_ENV: str(tmp_path / "s.ini")})
    done = subprocess.run([sys.executable, "-m", "app.main", "s3://b/x.taridx", "--storage-option", "novalue"],
                          cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr


def test_added_option_rows_grow_the_dialog_instead_of_squeezing_the_fields(qtbot, window):
    dialog = window.actions_.open_url_dialog()
    qtbot.waitExposed(dialog)
    add = next(b for b in dialog.findChildren(QPushButton) if b.text() == "Add option")
    for key in ("endpoint_url", "secret", "region_name"):
        click(qtbot, add)
        dialog.option_rows[-1].key.setText(key)
    qtbot.wait(10)
    for row in dialog.option_rows:  # full height: a squeezed field cuts the underscore of endpoint_url
        assert row.key.height() >= row.key.sizeHint().height()
    dialog.reject()
