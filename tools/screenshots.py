"""Screenshots of every main view at laptop and desktop sizes, light and dark, into ``docs/screenshots/``.

    python tools/screenshots.py                       # 1366x768 and 1920x1080, light and dark
    python tools/screenshots.py --sizes 1440x900 --themes dark --views rows,plots

Each size runs in its own process on Qt's offscreen platform with one screen of that
size (as a laptop or desktop would give), so the window is maximised to the screen's
work area exactly as a user would see it. The demo fold (``itarcore.demo``) and the
test fixtures (TACO, kastore, TBL) are the data (and, for the duplicates view, a "val" fold
holding copies of some demo samples: planted leaks); nothing outside the repository is read.
Every view is reached as a user would (tabs, docks, menus' actions) and grabbed once it
has settled (the signals the tests wait for).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from content_shots import ContentShots

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
VIEWS = ("start", "open-url", "rows", "header-hex", "extensions", "samples", "plots", "gallery", "statistics",
         "duplicates", "audit", "export", "wizard", "convert", "taco", "kastore", "tbl")
SIZES = ("1366x768", "1920x1080")
THEMES = ("light", "dark")
# a desktop's panel or task bar: the work area a maximised window gets is this much shorter
TASKBAR = 28


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    p.add_argument("--sizes", default=",".join(SIZES))
    p.add_argument("--themes", default=",".join(THEMES))
    p.add_argument("--views", default=",".join(VIEWS))
    p.add_argument("--child", metavar="WxH", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    from app.main import offscreen_with_screen

    failed = 0
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        with tempfile.TemporaryDirectory(prefix="itar-shots-") as work:
            env = dict(os.environ, QT_QPA_PLATFORM=offscreen_with_screen(width, height),
                       ITAR_BROWSER_SETTINGS=str(Path(work) / "settings.ini"), ITARCORE_CACHE_DIR=work)
            cmd = [sys.executable, __file__, "--child", size, "--out", args.out, "--themes", args.themes,
                   "--views", args.views]
            done = subprocess.run(cmd, check=False, env=env, cwd=ROOT)
            failed += done.returncode != 0
    return 1 if failed else 0


# ---- the child: one screen size, every theme and view --------------------------------------------------------
def _child(args) -> int:
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QApplication

    from app.main import quiet_offscreen_noise
    from app.style import apply_theme
    from app.views import dock_layout

    quiet_offscreen_noise()
    app = QApplication(sys.argv[:1])
    screen = app.primaryScreen().geometry()
    work_area = QRect(0, 0, screen.width(), screen.height() - TASKBAR)
    dock_layout.screen_area = lambda _w: work_area  # offscreen has no task bar: leave room for one
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots(app, work_area, out, args.child)
    for theme in args.themes.split(","):
        apply_theme(app, theme)
        for view in args.views.split(","):
            started = time.perf_counter()
            path = shots.take(view, theme)
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  "
                  f"({time.perf_counter() - started:.1f} s)", flush=True)
    shots.close()
    return 0


class Shots(ContentShots):
    def __init__(self, app, work_area, out: Path, size: str) -> None:
        from itarcore.demo import build_demo

        self.app, self.work_area, self.out, self.size = app, work_area, out, size
        self.demo = build_demo(Path(os.environ["ITARCORE_CACHE_DIR"]) / "demo")
        self.window = None

    # -- helpers ------------------------------------------------------------------------------------------------
    def wait(self, condition, timeout: float = 60.0, what: str = "") -> None:
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError(f"timed out waiting for {what or condition}")
            self.app.processEvents()
            time.sleep(0.005)

    def settle(self, rounds: int = 20) -> None:
        for _ in range(rounds):
            self.app.processEvents()
            time.sleep(0.005)

    def new_window(self):
        from app.views.main_window import MainWindow

        if self.window is not None:
            self.window.shutdown()
            self.window.deleteLater()
            self.settle()
        w = MainWindow()
        frame = 4  # offscreen's frame: 2 px each side
        w.resize(self.work_area.width() - frame, self.work_area.height() - frame)
        w.show()
        w.reset_layout()
        self.settle()
        self.window = w
        return w

    def open(self, path: Path):
        w = self.window if self.window is not None else self.new_window()
        if w.path != str(path):
            opened = []
            w.documentOpened.connect(opened.append)
            w.open_path(str(path))
            self.wait(lambda: opened, what=f"{path.name} to open")
            w.documentOpened.disconnect(opened.append)
            w.reset_layout()
        self.settle()
        return w

    def previewed(self, act) -> None:
        """Do ``act`` (a selection) and wait for the preview it starts (the payload is read in a worker first)."""
        w, ready = self.window, []
        mark = lambda: ready.append(True)
        w.preview.previewReady.connect(mark)
        act()
        try:
            self.wait(lambda: ready, timeout=10.0, what="the preview")
        except TimeoutError:  # the selection's payload was on screen already
            self.wait(lambda: not w.preview.busy, what="the preview")
        finally:
            w.preview.previewReady.disconnect(mark)

    def raise_panel(self, title: str):
        w = self.window
        for panel, dock in zip(w.panels, w._panel_docks):
            if panel.title == title:
                dock.show()
                dock.raise_()
                self.settle()
                return panel
        raise KeyError(title)

    def save(self, widget, view: str, theme: str) -> Path:
        self.settle()
        path = self.out / f"{view}-{self.size}-{theme}.png"
        widget.grab().save(str(path), "PNG", 0)  # quality 0: the smallest PNG (it is lossless either way)
        return path

    def close(self) -> None:
        if self.window is not None:
            self.window.shutdown()

    # -- the views ----------------------------------------------------------------------------------------------
    def take(self, view: str, theme: str) -> Path:
        return getattr(self, "view_" + view.replace("-", "_"))(view, theme)

    def view_start(self, view: str, theme: str) -> Path:
        from app.views.settings import add_recent_file

        w = self.window if self.window is not None else self.new_window()
        w.close_document()
        for path in (DATA / "tbl" / "v2_lz4_meta.tbl", DATA / "taco" / "taco_3entries.tacozip", self.demo):
            add_recent_file(w.settings, str(path))
        w._show_start_page()
        return self.save(w, view, theme)

    def view_rows(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        w.tabs.setCurrentWidget(w.tabs_by_name["rows"])
        self.previewed(lambda: w.go_to_row(12))
        return self.save(w, view, theme)

    def view_header_hex(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        panel = w.header_panel
        row = next(i for i, f in enumerate(panel.model.fields) if f.name == "n_rows")
        panel.view.selectRow(row)
        return self.save(w, view, theme)

    def view_extensions(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        tab = w.tabs_by_name["extensions"]
        w.tabs.setCurrentWidget(tab)
        self.wait(lambda: not tab.model.fetching, what="extension counts")
        tab.grid.go_to_view_row(1)
        return self.save(w, view, theme)

    def view_samples(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        w.tabs.setCurrentWidget(w.tabs_by_name["rows"])
        panel = self.raise_panel("Samples")
        self.wait(lambda: panel.groups is not None, what="samples")
        panel.go_to_sample(3)
        self.settle(60)
        return self.save(w, view, theme)

    def view_plots(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        panel = self.raise_panel("Plots")
        self.wait(lambda: panel.picker.isEnabled() if hasattr(panel, "picker") else True, what="plots")
        self.settle(60)
        return self.save(w, view, theme)

    def panel_job(self, title: str, start, done, what: str):
        """The demo with panel ``title`` in front, its job started as its button would and finished."""
        w = self.open(self.demo)
        panel = self.raise_panel(title)
        if not done(panel):
            start(panel)
            self.wait(lambda: panel.worker is None and done(panel), what=what)
        return w, panel

    def view_audit(self, view: str, theme: str) -> Path:
        w, panel = self.panel_job("Audit", lambda p: p.start(full=True), lambda p: p.report is not None, "the audit")
        if panel.findings.topLevelItemCount():
            panel.findings.setCurrentItem(panel.findings.topLevelItem(0))
        return self.save(w, view, theme)

    def view_wizard(self, view: str, theme: str) -> Path:
        from PySide6.QtWidgets import QWizard

        from app.views.formats.taridx.wizard import BuildIndexWizard

        shards = Path(tempfile.mkdtemp(prefix="itar-wizard-"))
        for tar in self.demo.parent.glob("*.tar"):
            os.symlink(tar, shards / tar.name)
        wizard = BuildIndexWizard(self.window)
        wizard.show()
        wizard.source_page.set_folder(shards)
        wizard.button(QWizard.WizardButton.NextButton).click()
        wizard.button(QWizard.WizardButton.NextButton).click()
        self.wait(lambda: wizard.run_page.state != "running", what="the index build")
        path = self.save(wizard, view, theme)
        wizard.close()
        return path

    def view_convert(self, view: str, theme: str) -> Path:
        from PySide6.QtWidgets import QMessageBox

        from app.views.formats.tbl.convert_dialog import ConvertDialog

        dialog = ConvertDialog(self.window)
        dialog.add_inputs(sorted(str(p) for p in self.demo.parent.glob("*.tar")))
        dialog.output.setText(str(Path(tempfile.mkdtemp(prefix="itar-convert-")) / "demo.tbl"))
        dialog.metadata.setChecked(True)
        dialog.show()
        dialog.start()
        self.wait(lambda: dialog.worker is None, what="the conversion")
        if isinstance(dialog.message_box, QMessageBox):
            dialog.message_box.close()
        path = self.save(dialog, view, theme)
        dialog.close()
        return path

    def view_taco(self, view: str, theme: str) -> Path:
        w = self.open(DATA / "taco" / "taco_3entries.tacozip")
        self.raise_panel("TACO header")
        return self.save(w, view, theme)

    def view_kastore(self, view: str, theme: str) -> Path:
        w = self.open(DATA / "kastore" / "example.trees")
        tab = w.current_tab()
        keys = [str(k) for k in tab.table.column("key").values]
        w.go_to_row(keys.index("nodes/time"))
        self.raise_panel("Array")
        return self.save(w, view, theme)

    def view_tbl(self, view: str, theme: str) -> Path:
        w = self.open(DATA / "tbl" / "v2_lz4_meta.tbl")
        self.previewed(lambda: w.go_to_row(2))
        self.raise_panel("TBL sample")
        return self.save(w, view, theme)


if __name__ == "__main__":
    sys.exit(main())
