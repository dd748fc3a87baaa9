"""The compiled tar walk (``fast`` extra) against tarfile, and its hand-offs to the Python walk."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.errors import Cancelled, ChecksumError
from itarcore.formats import tar as tar_module
from itarcore.formats.tar import scan_tar
from itarcore.indexing import jit
from itarcore.indexing.indexer import index_shards
from itarcore.progress import CancelToken

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba (the 'fast' extra) is not installed")


@pytest.fixture(autouse=True)
def _compiled_route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ITARCORE_JIT", "1")  # these tars are small: by default numpy would scan them


def write_tar(path: Path, members: dict[str, bytes], fmt: int = tarfile.USTAR_FORMAT, **pax) -> None:
    with tarfile.open(path, "w", format=fmt) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.pax_headers = dict(pax)
            tar.addfile(info, io.BytesIO(data))


def truth(path: Path) -> list[tuple[str, int, int]]:
    with tarfile.open(path) as tar:
        return [(m.name, m.offset_data - 512, m.size) for m in tar.getmembers() if m.isreg()]


def found(path: Path) -> list[tuple[str, int, int]]:
    scan = scan_tar(path)
    return list(zip(scan.names, scan.header_offsets.tolist(), scan.sizes.tolist()))


def test_many_members_across_chunks_match_tarfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tar_module, "_SCAN_CHUNK_BLOCKS", 8)  # 4 KiB chunks: many resumptions
    rng = np.random.default_rng(5)
    members = {f"s{i:04d}.{ext}": rng.bytes(int(rng.integers(0, 3000))) for i in range(300) for ext in ("a", "b")}
    path = tmp_path / "many.tar"
    write_tar(path, members)
    scan = scan_tar(path)
    assert scan.method == "compiled"
    assert found(path) == truth(path)


def test_signed_checksum_of_old_writers_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "signed.tar"
    write_tar(path, {"caf\xe9.bin": b"xyz"}, fmt=tarfile.GNU_FORMAT)
    raw = bytearray(path.read_bytes())
    raw[3] = 0xE9  # a high byte in the name field
    raw[148:156] = b" " * 8
    signed = sum(b - 256 if b >= 128 else b for b in raw[:512])
    raw[148:156] = b"%06o\0 " % signed
    path.write_bytes(bytes(raw))
    scan = scan_tar(path)
    assert scan.method == "compiled" and scan.sizes.tolist() == [3]


def test_a_wrong_checksum_hands_over_for_the_precise_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.tar"
    write_tar(path, {"a.jpg": b"1" * 700, "b.jpg": b"2"})
    raw = bytearray(path.read_bytes())
    second = 512 + 1024
    raw[second + 1] ^= 0x04
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError) as info:
        scan_tar(path)
    assert info.value.offset == second + 148


def test_pax_size_record_hands_over_to_the_python_walk(tmp_path: Path) -> None:
    path = tmp_path / "pax.tar"
    write_tar(path, {"a.bin": b"hello", "b.bin": b"world!"}, fmt=tarfile.PAX_FORMAT, size="5")
    scan = scan_tar(path)
    assert scan.method == "sequential"  # the override is applied by the Python walk only
    assert found(path) == truth(path)


def test_cancel_stops_the_compiled_walk(tmp_path: Path) -> None:
    path = tmp_path / "c.tar"
    write_tar(path, {"a.bin": b"x"})
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        scan_tar(path, cancel=token)


def test_parallel_indexing_reports_a_bad_shard_and_stops(tmp_path: Path) -> None:
    good = [tmp_path / f"f_{i}.tar" for i in range(3)]
    for i, p in enumerate(good):
        write_tar(p, {f"s{i}.jpg": b"j" * 900})
    bad = tmp_path / "f_9.tar"
    bad.write_bytes(good[0].read_bytes()[:700])  # ends inside the payload
    token = CancelToken()
    with pytest.raises(Exception) as info:
        index_shards([*good, bad], jobs=2, cancel=token)
    assert str(bad) in str(info.value)
    assert not token.cancelled  # the caller's token is left alone; only the sibling workers were stopped


def test_dense_tiny_members_grow_the_output_arrays(tmp_path: Path) -> None:
    path = tmp_path / "dense.tar"  # 3,000 empty members: far more than one header per 4 KiB page
    write_tar(path, {f"e{i:05d}.txt": b"" for i in range(3000)})
    scan = scan_tar(path)
    assert scan.method == "compiled"
    assert found(path) == truth(path)


def test_auto_choice_keeps_small_scans_off_numba(tmp_path: Path) -> None:
    """Loading numba costs more than it saves on small scans: a fresh process scans them with numpy."""
    path = tmp_path / "small.tar"
    write_tar(path, {"a.jpg": b"1"})
    script = ("import sys; from itarcore.formats.tar import scan_tar; "
              f"print(scan_tar({str(path)!r}).method, 'numba' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "ITARCORE_JIT"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["vectorised", "False"]


@pytest.mark.parametrize(("setting", "below", "loaded", "cached", "expected"), [
    ("0", False, True, True, False),
    ("1", True, False, False, True),
    ("auto", True, False, True, False),
    ("auto", False, False, True, True),
    ("auto", True, False, False, False),
    ("auto", False, False, False, True),
    ("auto", True, True, False, True),  # once loaded, every scan uses the kernels
])
def test_worthwhile_policy(monkeypatch: pytest.MonkeyPatch, setting: str, below: bool, loaded: bool, cached: bool,
                           expected: bool) -> None:
    if not jit.available():
        pytest.skip("numba is not installed: every route is numpy")
    monkeypatch.setenv("ITARCORE_JIT", setting)
    monkeypatch.setattr(jit, "_loaded", loaded)
    monkeypatch.setattr(jit, "kernels_cached", lambda: cached)
    threshold = jit.break_even_bytes(cached)
    assert jit.worthwhile(threshold - 1 if below else threshold) is expected


def test_break_even_follows_the_measured_costs() -> None:
    """load / saving: ~4 GB with cached kernels; compiling first pushes it far out."""
    per_gb = jit.SAVED_SECONDS_PER_GB
    assert jit.break_even_bytes(True) == int(jit.LOAD_SECONDS / per_gb * 1e9)
    assert jit.break_even_bytes(False) == int((jit.LOAD_SECONDS + jit.COMPILE_SECONDS) / per_gb * 1e9)
    assert jit.break_even_bytes(True) < 8 << 30 < jit.break_even_bytes(False)


def test_kernels_cached_sees_numba_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert jit.kernels_cached() is False
    tag = f"py{sys.version_info.major}{sys.version_info.minor}.nbi"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / f"tar_walk._walk-12.{tag}").write_bytes(b"")
    assert jit.kernels_cached() is False  # the indexer's kernels are missing still
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / f"kernels.split_rows-10.{tag}").write_bytes(b"")
    assert jit.kernels_cached() is True
