"""itarcore never imports Qt: with every Qt binding blocked, all of its modules import and the CLI runs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "data" / "taridx" / "webds" / "val.taridx"

SCRIPT = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pkgutil, sys

    BLOCKED = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "superqt")

    class BlockQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, BlockQt())
    for name in BLOCKED:  # prove the block works before relying on it
        try:
            importlib.import_module(name)
        except ImportError:
            pass
        else:
            raise SystemExit(f"block failed for {name}")

    import itarcore
    imported = ["itarcore"]
    failed = {}
    for info in pkgutil.walk_packages(itarcore.__path__, "itarcore."):
        if info.name == "itarcore.__main__":
            continue  # runs the CLI on import; exercised below through the CLI itself
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception as exc:
            failed[info.name] = f"{type(exc).__name__}: {exc}"

    from itarcore.cli import main
    code = main(["info", "--json", sys.argv[1]])
    qt = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    sys.stdout.flush()
    print(json.dumps({"imported": imported, "failed": failed, "code": code, "qt": qt}))
    """
)


def test_itarcore_without_qt(tmp_path: Path) -> None:
    script = tmp_path / "no_qt.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(FIXTURE)], check=False, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info_line, report_line = proc.stdout.strip().splitlines()[-2:]
    report = json.loads(report_line)
    assert report["failed"] == {}
    assert report["code"] == 0
    assert report["qt"] == []
    assert json.loads(info_line)["format"] == "taridx"

    # every .py under itarcore/ (except __main__) was imported
    root = Path(__file__).parents[2] / "itarcore"
    expected = {".".join(("itarcore", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
                for p in root.rglob("*.py") if p.name != "__main__.py"}
    assert expected <= set(report["imported"]), sorted(expected - set(report["imported"]))
    assert {"itarcore.dataset", "itarcore.decoders", "itarcore.cli.taridx", "itarcore.indexing.indexer"} <= expected


def test_python_m_itarcore_without_qt(tmp_path: Path) -> None:
    """`python -m itarcore` (the __main__ module) also runs with Qt blocked."""
    script = tmp_path / "run_main.py"
    script.write_text(SCRIPT.split("import itarcore\n")[0] + textwrap.dedent(
        """
        import runpy
        sys.argv = ["itarcore", "info", sys.argv[1]]
        runpy.run_module("itarcore", run_name="__main__")
        """))
    proc = subprocess.run([sys.executable, str(script), str(FIXTURE)], check=False, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TARIDX" in proc.stdout


def test_commands_that_scan_nothing_do_not_import_numba() -> None:
    """numba (the 'fast' extra) costs a noticeable import; only a tar scan may load it."""
    script = ("import sys; from itarcore.cli import main; import itarcore.indexing.indexer, itarcore.formats.tar; "
              f"main(['info', '--json', {str(FIXTURE)!r}]); print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
