"""``itar-browser [FILE] [--demo] [--screenshot PNG] [--goto-row N] [--theme T]``: the desktop browser."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from itarcore.errors import ItarError
from itarcore.storage import display_name, is_url

SCREENSHOT_TIMEOUT_MS = 120_000
# how long quitting waits for workers to reach a cancel check (passes check every chunk, well under this)
EXIT_WAIT_MS = 300
SIGNAL_CHECK_MS = 250  # how soon Ctrl+C in the terminal closes the window
# harmless notes the offscreen platform prints for every window; they only bury real messages
OFFSCREEN_NOISE = ("does not support propagateSizeHints",)


def _display_or_platform_named(env: dict[str, str]) -> bool:
    return bool(env.get("QT_QPA_PLATFORM") or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def use_offscreen_if_headless(env: dict[str, str] | None = None) -> bool:
    """Pick Qt's offscreen platform when there is no display (must run before the QApplication exists)."""
    env = os.environ if env is None else env
    if _display_or_platform_named(env):
        return False
    env["QT_QPA_PLATFORM"] = "offscreen"
    return True


def has_display(env: dict[str, str] | None = None) -> bool:
    """False only on Linux with no X or Wayland display and no platform chosen: Qt would abort there."""
    env = os.environ if env is None else env
    return not sys.platform.startswith("linux") or _display_or_platform_named(env)


def offscreen_with_screen(width: int, height: int) -> str:
    """A QT_QPA_PLATFORM value for the offscreen platform with one screen of this size (default 800×800)."""
    import json
    import tempfile

    path = Path(tempfile.gettempdir()) / f"itar-offscreen-{width}x{height}.json"
    if not path.exists():
        screen = {"name": "offscreen", "x": 0, "y": 0, "width": width, "height": height,
                  "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"screens": [screen]}))
        os.replace(tmp, path)
    return f"offscreen:configfile={path}"


def quiet_offscreen_noise() -> None:
    """Drop the offscreen platform's known harmless warnings; every other Qt message still reaches stderr."""
    from PySide6.QtCore import qFormatLogMessage, qInstallMessageHandler

    def handler(mode, context, message: str) -> None:
        if any(noise in message for noise in OFFSCREEN_NOISE):
            return
        sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")

    qInstallMessageHandler(handler)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="itar-browser", description="Look inside TARIDX, TACO, kastore and TBL files.")
    p.add_argument("file", nargs="?", help="index file or URL (s3://, https:// …) to open (format by magic bytes)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="fsspec storage option for a URL (repeatable; used for this run only, never saved)")
    p.add_argument("--anon", action="store_true", help="anonymous access to a URL (no credentials)")
    p.add_argument("--demo", action="store_true", help="build a small demo dataset in the cache folder and open it")
    p.add_argument("--screenshot", metavar="PNG", help="open, wait for the first preview, save a window grab, exit")
    p.add_argument("--goto-row", type=int, metavar="N", help="select and scroll to row N first")
    p.add_argument("--theme", choices=("system", "light", "dark"), help="palette (default: the saved choice)")
    p.add_argument("--size", default="1440x900", help="window size for --screenshot, WxH (default 1440x900)")
    return p


def storage_options(args: argparse.Namespace) -> dict | None:
    """``--storage-option``/``--anon`` as fsspec options (None: none given, use the environment's)."""
    from itarcore.storage import parse_storage_options

    options = parse_storage_options(args.storage_option)
    if args.anon:
        options["anon"] = True
    return options or None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        storage_options(args)
    except ItarError as exc:  # a pair that is not KEY=VALUE
        print(f"itar-browser: {exc}", file=sys.stderr)
        return 2
    if args.screenshot and not (args.file or args.demo):
        print("itar-browser: --screenshot needs FILE or --demo", file=sys.stderr)
        return 2
    if not args.screenshot and not has_display():
        print("itar-browser: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset): run it in a "
              "desktop session or with ssh -X, or save a window grab with --screenshot PNG", file=sys.stderr)
        return 2
    if args.screenshot:
        use_offscreen_if_headless()  # a grab needs no screen: works over ssh and in CI
        if os.environ.get("QT_QPA_PLATFORM") == "offscreen":  # a screen just big enough for the grab and frame
            width, height = _size(args.size)
            os.environ["QT_QPA_PLATFORM"] = offscreen_with_screen(width + 16, height + 16)
    from PySide6.QtWidgets import QApplication

    from app.style import app_icon, apply_theme
    from app.views.main_window import MainWindow
    from app.views.settings import APPLICATION, ORGANISATION
    from itarcore.limits import raise_open_file_limit

    if os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen"):
        quiet_offscreen_noise()
    raise_open_file_limit()  # a fold of thousands of shards maps them at once
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANISATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("iTar Browser")
    app.setWindowIcon(app_icon())
    window = MainWindow()
    apply_theme(app, args.theme or str(window.settings.value("theme", "system")))
    if args.screenshot:
        return _screenshot(app, window, args)
    window.show()
    close_on_terminal_signals(window)
    if args.demo:
        window.open_demo()
    elif args.file:
        window.open_path(args.file, storage_options(args))
    code = app.exec()
    window.shutdown()
    return _leave(int(code))


def close_on_terminal_signals(window) -> None:
    """Ctrl+C in the terminal (SIGINT) and SIGTERM close the window as its close button does.

    Qt's event loop runs in C++, where Python never looks at a pending signal; a timer gives
    Python a turn four times a second, so the handler runs at once rather than never. The
    handler only posts the close: a signal that comes while the window is still opening its
    file, before the loop runs, would otherwise close it before there is a loop to quit."""
    import signal

    from PySide6.QtCore import QTimer

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: QTimer.singleShot(0, window.close))
    timer = QTimer(window)  # owned by the window: it lives as long as the window
    timer.timeout.connect(lambda: None)
    timer.start(SIGNAL_CHECK_MS)


def _leave(code: int) -> int:
    """Stop every worker within EXIT_WAIT_MS; if a task ignores its cancel token, exit without it.

    Letting Python and Qt tear down under a thread still inside a task would either wait for
    the task (a long pass) or let it touch deleted objects; neither is acceptable on exit.
    """
    from app.workers import JobWorker

    if JobWorker.await_workers(EXIT_WAIT_MS):
        return code
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _size(text: str) -> tuple[int, int]:
    width, height = (int(v) for v in text.lower().split("x"))
    return width, height


def _screenshot(app, window, args) -> int:
    """Open, wait for loading and the first preview (signals), grab, exit 0; unreadable input exits 2."""
    from PySide6.QtCore import QTimer

    width, height = _size(args.size)
    window.resize(width, height)
    window.show()
    window.reset_layout()  # docks sized for this window, not the saved layout
    result = {"code": 3}

    def fail(problem: str) -> None:
        print(f"itar-browser: {problem}", file=sys.stderr)
        result["code"] = 2
        app.quit()

    def grab() -> None:
        tab = window.current_tab()
        if tab is not None and tab.model.fetching:  # cells still read in the background (a remote index)
            QTimer.singleShot(100, grab)
            return
        app.processEvents()
        Path(args.screenshot).parent.mkdir(parents=True, exist_ok=True)
        if window.grab().save(args.screenshot):
            result["code"] = 0
        else:
            print(f"itar-browser: could not write {args.screenshot}", file=sys.stderr)
            result["code"] = 1
        app.quit()

    def on_opened(_path: str) -> None:
        window.previewSettled.connect(lambda: QTimer.singleShot(50, grab))
        if args.goto_row is not None and not window.go_to_row(args.goto_row):
            fail(f"row {args.goto_row} does not exist in {args.file or 'the demo'}")

    def on_failed(path: str, problem: str) -> None:
        fail(f"{display_name(path)}: {problem}")

    window.documentOpened.connect(on_opened)
    window.openFailed.connect(on_failed)
    if args.demo:
        window.open_demo()
    elif not is_url(args.file) and not os.path.isfile(args.file):
        print(f"itar-browser: {args.file}: no such file", file=sys.stderr)
        return 2
    else:
        window.open_path(args.file, storage_options(args))
    QTimer.singleShot(SCREENSHOT_TIMEOUT_MS, lambda: fail("timed out waiting for the file to load"))
    app.exec()
    window.shutdown()
    for box in app.topLevelWidgets():
        if box.objectName() == "errorDialog":
            box.close()
    return _leave(result["code"])


def run(argv: list[str] | None = None) -> None:
    """The ``itar-browser`` process: :func:`main`, then leave at once.

    By then the layout is saved and every worker stopped; Python's and Qt's teardown of
    every module and widget would only add ~0.5 s between the window closing and the
    process ending (measured on a loaded 2-core machine), so it is skipped.
    """
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
