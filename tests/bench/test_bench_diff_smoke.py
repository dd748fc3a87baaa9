"""bench_diff.py --quick in CI: it must run, check its counts and print its table (no timing assertions)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_bench_diff_quick_prints_every_route(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH / "bench_diff.py"), "--quick", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    for route in ("itarcore diff, one pass", "itarcore diff, 4 passes", "Python dict of samples (reference)"):
        assert re.search(rf"^{re.escape(route)}\s+[\d.]+\s+[\d.]+\s+[\d,]+\s+[\d,]+\s+([\d.]+|—)$", done.stdout, re.MULTILINE), route
    assert "counts as expected: added 1,000, removed 1,000, changed_size 1,000" in done.stdout
