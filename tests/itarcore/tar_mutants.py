"""Seeded mutants of tar shards, and the outcome of indexing one through either scan route.

Shared by ``test_tar_mutants.py`` (a few hundred mutants in CI) and, run as a script, a
big local run that keeps the compiled route in a child process, so that a crash there
is counted rather than killing the run::

    python tests/itarcore/tar_mutants.py --mutants 5000 --seed 1

Bases are the first members of the fixture shards (tests/data/taridx/webds) and
webdataset-like tars written here by ``tarfile`` in the ustar, GNU and pax dialects.
Every mutant names the mutation that made it, so a failure can be replayed by seed.
"""
from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

BLOCK = 512
DATA = Path(__file__).resolve().parents[1] / "data" / "taridx" / "webds"

# Member names with every oddity the NOTES.md split and the TARIDX text blocks meet.
ODD_NAMES = (
    b"\xff\xfe.jpg", b"ok.\xe9", b"caf\xc3\xa9.JPG", b"\xc3\x28.cls", b"dir\xff/a.jpg", b"a\xed\xa0\x80b.txt",
    b"a\nb.jpg", b"a.j\npg", b"a\rb.json", b"dir\\a.jpg", b"a\\b\\c.png", b"README", b".hidden", b".a.b.c",
    b"..", b".", b"/", b"dir/", b"dir//a.jpg", b"a..b", b"a.", b"A.JPG", b"x.\xc4\xb0MG", b"\xe2\x80\x8b.jpg",
    b"s" * 100, b"s" * 99 + b".", b"d/" * 49 + b"x", b"a b.j p g", b"\t.cls", b"x.JSON", b"x.Left.JPG",
    b"\x01\x02.\x7f",
)
# Size fields: out of range, odd fill, base-256 of every lead byte.
ODD_SIZES = (
    b"77777777777\0", b"777777777777", b"\0\0\0\0" + b"1750\0\0\0\0", b"    1750 \0\0", b"00000001750 ",
    b"0000 001750\0", b"+0000001750\0", b"0000000_750\0", b"-0000000001\0", b"00000001758\0", b"\0" * 12,
    b" " * 12, b"0000001750\0x", b"\x80" + bytes(10) + b"\x01", b"\x80" + b"\xff" * 11, b"\xff" * 12,
    b"\x81" + bytes(11), b"\x80\x7f" + b"\xff" * 10, b"\x80" + bytes(7) + b"\x7f\xff\xff\xff", b"\t1750\n\0\0\0\0\0",
    *(b"\x80" + bytes(3) + ((1 << 63) - k).to_bytes(8, "big") for k in (1, 512, 1000, 1 << 20)),  # wraps int64
)
PAX_PAYLOADS = (
    b"18 size=999999999\n", b"12 size=abc\n", b"11 size=-5\n", b"13 size=1_0\n", b"9 size=0\n",
    b"16 path=\xff\xfe.jpg\n", b"16 path=a\0b.jpg\n", b"15 path=a\nb.jpg\n", b"12 path=x.JP\n", b"9 nokey\n",
    b"99 path=x\n", b"x path=y\n", b"\n", b"", b"5 =\n\n", b"20 hdrcharset=BINARY\n", b"0 \n",
    b"13 path=dir/\n", b"11 path=.a\n", b"26 comment=" + b"c" * 13 + b"\n",
)


def header(name: bytes, size: int, typeflag: bytes = b"0", magic: bytes = b"ustar\x0000", prefix: bytes = b"") -> bytes:
    """One 512-byte tar header with a correct checksum."""
    h = bytearray(BLOCK)
    h[0:100] = name[:100].ljust(100, b"\0")
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"00000000000\0"
    h[156:157] = typeflag
    h[257:265] = magic
    h[345:500] = prefix[:155].ljust(155, b"\0")
    return fix_checksum(h)


def fix_checksum(h: bytearray | bytes) -> bytes:
    h = bytearray(h)
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def record(name: bytes, payload: bytes, typeflag: bytes = b"0", **kw) -> bytes:
    return header(name, len(payload), typeflag, **kw) + payload + bytes(-len(payload) % BLOCK)


def _tarfile_base(rng: np.random.Generator, fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for i in range(int(rng.integers(2, 7))):
            stem = f"d{i % 2}/sample{i:04d}" if rng.random() < 0.3 else f"sample{i:04d}"
            if rng.random() < 0.15:
                stem = "long/" * 25 + stem  # beyond 100 bytes: prefix, GNU L or pax path
            for ext in rng.choice(["jpg", "cls", "json", "txt", "Left.PNG", ""], int(rng.integers(1, 4)),
                                  replace=False):
                info = tarfile.TarInfo(f"{stem}.{ext}" if ext else stem)
                data = rng.bytes(int(rng.integers(0, 1500)))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        if rng.random() < 0.3:
            info = tarfile.TarInfo("a_dir")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
    return buf.getvalue()


def _fixture_base(rng: np.random.Generator) -> bytes:
    shards = sorted(DATA.glob("*.tar"))
    raw = shards[int(rng.integers(len(shards)))].read_bytes()
    offsets = [h for h, _ in chain(raw)]
    keep = int(rng.integers(1, min(10, len(offsets)) + 1))
    end = offsets[keep] if keep < len(offsets) else len(raw)
    return raw[:end] + bytes(2 * BLOCK)


def base_tar(rng: np.random.Generator) -> bytes:
    pick = rng.random()
    if pick < 0.4:
        return _fixture_base(rng)
    fmt = (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT)[int(rng.integers(3))]
    return _tarfile_base(rng, fmt)


def chain(raw: bytes) -> list[tuple[int, int]]:
    """(header offset, padded record length) of the records, by their octal sizes, up to the first odd one."""
    out, off = [], 0
    while off + BLOCK <= len(raw) and raw[off : off + BLOCK] != bytes(BLOCK):
        try:
            size = int(raw[off + 124 : off + 136].split(b"\0")[0].strip() or b"0", 8)
        except ValueError:
            break
        if size < 0 or off + BLOCK + size > len(raw):
            break
        out.append((off, BLOCK + size + (-size % BLOCK)))
        off += out[-1][1]
    return out


# Each mutation edits the base; it returns the new bytes.
def _pick(rng: np.random.Generator, raw: bytes) -> tuple[int, int]:
    records = chain(raw)
    return records[int(rng.integers(len(records)))]


def _set_field(raw: bytes, at: int, value: bytes, recompute: bool = True) -> bytes:
    out = bytearray(raw)
    out[at : at + len(value)] = value
    hdr = at - at % BLOCK
    if recompute:
        out[hdr : hdr + BLOCK] = fix_checksum(out[hdr : hdr + BLOCK])
    return bytes(out)


def flip_header_bytes(rng, raw):
    off, _ = _pick(rng, raw)
    out = bytearray(raw)
    for _ in range(int(rng.integers(1, 4))):
        i = off + int(rng.integers(BLOCK))
        out[i] = int(rng.integers(256)) if rng.random() < 0.5 else out[i] ^ (1 << int(rng.integers(8)))
    if rng.random() < 0.7:  # recomputed: the mutant gets past the checksum
        out[off : off + BLOCK] = fix_checksum(out[off : off + BLOCK])
    return bytes(out)


def odd_name(rng, raw):
    off, _ = _pick(rng, raw)
    name = ODD_NAMES[int(rng.integers(len(ODD_NAMES)))]
    return _set_field(raw, off, name[:100].ljust(100, b"\0"))


def odd_prefix(rng, raw):
    off, _ = _pick(rng, raw)
    prefix = ODD_NAMES[int(rng.integers(len(ODD_NAMES)))]
    out = _set_field(raw, off + 257, b"ustar\x0000", recompute=False)
    return _set_field(out, off + 345, prefix[:155].ljust(155, b"\0"))


def odd_size(rng, raw):
    off, _ = _pick(rng, raw)
    return _set_field(raw, off + 124, ODD_SIZES[int(rng.integers(len(ODD_SIZES)))])


def shifted_size(rng, raw):
    off, _ = _pick(rng, raw)
    size = (chain(raw[off:])[:1] or [(0, BLOCK)])[0][1] - BLOCK
    size = max(0, size + int(rng.choice([-512, -1, 1, 511, 512, 1024, 1 << 20])))
    return _set_field(raw, off + 124, b"%011o\0" % size)


def odd_checksum_field(rng, raw):
    off, _ = _pick(rng, raw)
    stored = int(fix_checksum(raw[off : off + BLOCK])[148:154], 8)
    forms = (b"%06o\0 " % stored, b"%07o\0" % stored, b" %06o " % stored, b"\0%06o " % stored,
             b"%08o" % stored, b"%o" % stored + b" 1", b"        ", b"\0" * 8)
    return _set_field(raw, off + 148, forms[int(rng.integers(len(forms)))].ljust(8, b"\0")[:8], recompute=False)


def odd_typeflag(rng, raw):
    off, _ = _pick(rng, raw)
    flag = bytes([rng.choice(list(b"0\x00712345LKxgSVDM") + [int(rng.integers(256))])])
    return _set_field(raw, off + 156, flag)


def odd_magic(rng, raw):
    off, _ = _pick(rng, raw)
    magic = (b"ustar  \0", b"ustar\x0000", b"\0" * 8, b"ustaR\x0000", b"ustar\x00\xff\xff")[int(rng.integers(5))]
    return _set_field(raw, off + 257, magic)


def truncate(rng, raw):
    off, length = _pick(rng, raw)
    where = off + int(rng.integers(1, BLOCK)) if rng.random() < 0.5 else off + int(rng.integers(BLOCK, length + 1))
    return raw[:where]


def zero_block(rng, raw):
    off, length = _pick(rng, raw)
    kind = int(rng.integers(4))
    if kind == 0:  # a header zeroed: the archive ends early, its payload left as trailing data
        return raw[:off] + bytes(BLOCK) + raw[off + BLOCK :]
    if kind == 1:  # an end marker inserted between two records
        return raw[:off] + bytes(BLOCK) + raw[off:]
    if kind == 2:  # garbage (a stale header) after the end marker
        return raw + raw[off : off + length]
    return raw[: off + length] + bytes(BLOCK) + raw[off + length + BLOCK :] if off + length < len(raw) else raw


def pax_record(rng, raw):
    off, _ = _pick(rng, raw)
    payload = PAX_PAYLOADS[int(rng.integers(len(PAX_PAYLOADS)))]
    flag = b"x" if rng.random() < 0.8 else b"g"
    return raw[:off] + record(b"././@PaxHeader", payload, flag) + raw[off:]


def gnu_longname(rng, raw):
    off, _ = _pick(rng, raw)
    name = ODD_NAMES[int(rng.integers(len(ODD_NAMES)))]
    name = name + (b"\0" if rng.random() < 0.7 else b"") + (b"x" * int(rng.integers(0, 200)) if rng.random() < 0.3
                                                             else b"")
    if rng.random() < 0.2:
        name = b""
    return raw[:off] + record(b"././@LongLink", name, b"L", magic=b"ustar  \0") + raw[off:]


def swap_records(rng, raw):
    records = chain(raw)
    if len(records) < 2:
        return raw
    i = int(rng.integers(len(records) - 1))
    (a, la), (b, lb) = records[i], records[i + 1]
    return raw[:a] + raw[b : b + lb] + raw[a : a + la] + raw[b + lb :]


MUTATIONS: dict[str, Callable[[np.random.Generator, bytes], bytes]] = {
    f.__name__: f for f in (flip_header_bytes, odd_name, odd_prefix, odd_size, shifted_size, odd_checksum_field,
                            odd_typeflag, odd_magic, truncate, zero_block, pax_record, gnu_longname, swap_records)
}


def mutant(seed: int) -> tuple[str, bytes]:
    """(what was done, tar bytes) of mutant ``seed``: one to three mutations of one base."""
    rng = np.random.default_rng(seed)
    raw = base_tar(rng)
    done = []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        if not chain(raw):
            break
        kind = list(MUTATIONS)[int(rng.integers(len(MUTATIONS)))]
        raw = MUTATIONS[kind](rng, raw)
        done.append(kind)
    return "+".join(done) or "none", raw


def outcome(path: str, compiled: bool, convert_to: str | None = None) -> dict[str, object]:
    """What each stage made of ``path`` on one route: the scan, the finished index, the TBL conversion.

    A stage's value is its result (as plain data) or ``("refused", type, message)``.
    Anything that is not an ItarError propagates: the caller counts it as an escape.
    """
    from itarcore.errors import ItarError
    from itarcore.formats.tar import scan_tar
    from itarcore.formats.taridx import write_taridx
    from itarcore.indexing.indexer import index_shards
    from itarcore.jobs.convert_tbl import convert_tar_to_tbl

    os.environ["ITARCORE_JIT"] = "1" if compiled else "0"  # also picks the name-split kernels
    result: dict[str, object] = {}

    def stage(name: str, fn: Callable[[], object]) -> None:
        try:
            result[name] = fn()
        except ItarError as exc:
            result[name] = ("refused", type(exc).__name__, str(exc))

    def scan() -> object:
        s = scan_tar(path, compiled=compiled)
        return (s.header_offsets.tolist(), s.sizes.tolist(), [s.name_bytes(i) for i in range(s.n_members)],
                s.end_offset, s.skipped, s.file_size)

    def index() -> bytes:
        fold = index_shards([path])
        out = path + ".taridx"
        write_taridx(out, fold.rows, fold.extensions, fold.crash_stems, fold.n_stems, fold.contiguous)
        return Path(out).read_bytes()

    def convert() -> bytes:
        convert_tar_to_tbl([path], convert_to, metadata_from="json", durable=False)
        return Path(convert_to).read_bytes()

    stage("scan", scan)
    stage("index", index)
    if convert_to is not None:
        stage("convert", convert)
    return result


def _child(args: list[str]) -> None:
    """Child of the big run: compute one route's outcomes of mutant files, one pickle per file."""
    import pickle

    compiled = args[0] == "compiled"
    progress = Path(args[1])
    for path in args[2:]:
        progress.write_text(path)  # so the parent knows which file crashed us
        try:
            res = outcome(path, compiled, path + f".{args[0]}.tbl")
        except Exception as exc:  # noqa: BLE001 - an escape is a finding, reported by the parent
            res = {"escape": f"{type(exc).__name__}: {exc}"}
        Path(path + f".{args[0]}.pickle").write_bytes(pickle.dumps(res))


def big_run(n: int, seed: int, folder: Path) -> dict[str, int]:
    """Write ``n`` mutants, run each route in a child process (restarted past a crash), compare."""
    import pickle
    import subprocess
    import sys
    from collections import Counter

    folder.mkdir(parents=True, exist_ok=True)
    paths, kinds = [], {}
    for i in range(n):
        kind, raw = mutant(seed * 1_000_003 + i)
        p = folder / f"m{i:06d}_0000.tar"
        p.write_bytes(raw)
        paths.append(str(p))
        kinds[str(p)] = kind
    counts: Counter[str] = Counter()
    crashed: dict[str, set[str]] = {"compiled": set(), "numpy": set()}
    for route in ("compiled", "numpy"):
        todo = paths
        while todo:
            progress = folder / f"progress.{route}"
            progress.unlink(missing_ok=True)
            proc = subprocess.run([sys.executable, __file__, "--child", route, str(progress), *todo],
                                  check=False, capture_output=True)
            if proc.returncode == 0:
                break
            bad = progress.read_text()
            crashed[route].add(bad)
            print(f"{route} route: process died ({proc.returncode}) on {bad} [{kinds[bad]}]", flush=True)
            todo = todo[todo.index(bad) + 1 :]
    for p in paths:
        if p in crashed["compiled"] or p in crashed["numpy"]:
            counts["crash"] += 1
            continue
        a = pickle.loads(Path(p + ".compiled.pickle").read_bytes())
        b = pickle.loads(Path(p + ".numpy.pickle").read_bytes())
        for route, res in (("compiled", a), ("numpy", b)):
            if "escape" in res:
                counts["escape"] += 1
                print(f"{route} escape on {p} [{kinds[p]}]: {res['escape']}")
        if "escape" in a or "escape" in b:
            continue
        if a != b:
            counts["disagree"] += 1
            stages = [s for s in a if a[s] != b[s]]
            print(f"routes disagree on {p} [{kinds[p]}] in {stages}: {[(a[s], b[s]) for s in stages][:1]!r:.600}")
            continue
        counts["agree"] += 1
        counts["indexed" if isinstance(a["index"], bytes) else "index refused"] += 1
        counts["converted" if isinstance(a["convert"], bytes) else "convert refused"] += 1
    return dict(counts)


if __name__ == "__main__":
    import argparse
    import sys
    import tempfile

    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mutants", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="folder to keep the mutants in (default: a temporary one)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(big_run(opts.mutants, opts.seed, opts.keep or Path(tmp)))
