"""Seeded mutation fuzzing of every reader: the mutants, and the paths that must meet them.

A mutant is an intact reference fixture with one or two damages: flipped bytes, a
truncation, or an integer field overwritten with a boundary value. Integer fields are found
from the intact file's own Document header (scalar ``u8``..``u64`` fields) and, in a zip,
from every record's fields; record regions (row arrays, item descriptors, TBL index
entries) get aligned 4- or 8-byte overwrites. So the mutations aim at counts, offsets and
sizes without a per-format table.

``exercise_document`` drives one file through everything the browser and the CLI do with
it and returns the exceptions that are not :class:`itarcore.ItarError` (the escapes).
``tests/fuzz_campaign.py`` runs thousands of mutants locally, with a timeout and RSS watch.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from itarcore.errors import ItarError

DATA = Path(__file__).parent / "data"
WEBDS = DATA / "taridx" / "webds"

# name -> fixture; the TARIDX mutant sits beside (links to) its intact shards so payloads are read too
FIXTURES = {
    "taridx": WEBDS / "train.taridx",
    "taco": DATA / "taco" / "taco_3entries.tacozip",
    "kastore": DATA / "kastore" / "example.trees",
    "kastore-multi": DATA / "kastore" / "multi_store.kas",
    "tbl-v1": DATA / "tbl" / "v1_independent.tbl",
    "tbl-v2": DATA / "tbl" / "v2_lz4_meta.tbl",
    # a zip none of the formats opens, so sniffing (Python's zipfile, for the tszip hint) meets the damage
    "tszip": DATA / "kastore" / "example.trees.tsz",
}
# where a mutant is written: a .tsz name would be taken for tszip by its suffix alone, never sniffed
MUTANT_NAMES = {"tszip": "example.zip"}
SCALAR_WIDTHS = {"u8": 1, "u16": 2, "u32": 4, "u64": 8}
# (signature, [(offset, width) of its integer fields]) of the zip records: versions, flags, method, CRC,
# sizes, name/extra/comment lengths, disk numbers, counts and offsets
ZIP_RECORDS = (
    (b"PK\x03\x04", [(4, 2), (6, 2), (8, 2), (14, 4), (18, 4), (22, 4), (26, 2), (28, 2)]),
    (b"PK\x01\x02", [(4, 2), (6, 2), (8, 2), (10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2), (32, 2),
                      (34, 2), (42, 4)]),
    (b"PK\x05\x06", [(4, 2), (6, 2), (8, 2), (10, 2), (12, 4), (16, 4), (20, 2)]),
    (b"PK\x06\x06", [(4, 8), (24, 4), (28, 4), (32, 8), (40, 8), (48, 8), (56, 8)]),
    (b"PK\x06\x07", [(4, 4), (8, 8), (16, 4)]),
)


@dataclass(frozen=True)
class Escape:
    """An exception outside the ItarError family, and where it came out."""

    step: str
    error: str
    trace: str

    def __str__(self) -> str:
        return f"{self.step}: {self.error}\n{self.trace}"


# -- mutants --------------------------------------------------------------------------------------


def zip_fields(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every integer field of every zip record found by its signature."""
    fields = []
    for signature, layout in ZIP_RECORDS:
        at = data.find(signature)
        while at >= 0:
            fields += [(at + rel, width) for rel, width in layout if at + rel + width <= len(data)]
            at = data.find(signature, at + 1)
    return fields


def int_fields(path: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(offset, width) of the integer fields, and (offset, size) of the record regions, of an intact file.

    From its Document's header (scalar fields; arrays of records as regions), plus every zip
    record's fields for a zip; a zip no format opens has only those.
    """
    from itarcore.document import open_document

    data = path.read_bytes()
    scalars = zip_fields(data) if data.startswith(b"PK\x03\x04") else []
    try:
        doc = open_document(path)
    except ItarError:
        return scalars, []
    try:
        scalars += [(f.offset, SCALAR_WIDTHS[f.type]) for f in doc.header if f.type in SCALAR_WIDTHS]
        regions = [(f.offset, min(f.size, len(data) - f.offset)) for f in doc.header
                   if f.type not in SCALAR_WIDTHS and f.size >= 16 and f.name not in ("reserved", "padding")]
        return scalars, regions
    finally:
        doc.close()


def boundary_values(width: int, current: int, file_size: int, rng: random.Random) -> list[int]:
    top = (1 << (8 * width)) - 1
    values = [0, 1, 2, 7, 8, 0xFF, top, top - 1, top >> 1, (top >> 1) + 1, current + 1, current - 1,
              current * 2, file_size, file_size - 1, file_size + 1, 1 << 31, (1 << 32) - 1, 1 << 32,
              rng.getrandbits(8 * width)]
    return [v & top for v in values]


class Mutator:
    """Seeded mutants of one intact file."""

    def __init__(self, path: Path, seed: int) -> None:
        self.original = path.read_bytes()
        self.rng = random.Random(seed)
        self.scalars, self.regions = int_fields(path)

    def flip(self, data: bytearray) -> str:
        n = self.rng.choice((1, 1, 2, 4, 16))
        for _ in range(n):
            pos = self.rng.randrange(len(data))
            if self.rng.random() < 0.5:
                data[pos] ^= 1 << self.rng.randrange(8)
            else:
                data[pos] = self.rng.randrange(256)
        return f"flip {n}"

    def truncate(self, data: bytearray) -> str:
        cuts = [o for o, _ in self.scalars] + [o for o, _ in self.regions]
        if cuts and self.rng.random() < 0.5:  # at or next to a structure's start
            cut = self.rng.choice(cuts) + self.rng.choice((-1, 0, 1))
        else:
            cut = self.rng.randrange(len(data))
        cut = max(0, min(cut, len(data) - 1))
        del data[cut:]
        return f"truncate at {cut}"

    def overwrite(self, data: bytearray) -> str:
        if self.regions and (not self.scalars or self.rng.random() < 0.5):
            start, size = self.rng.choice(self.regions)
            width = self.rng.choice((4, 8))
            pos = start + self.rng.randrange(max(1, size // width)) * width
        else:
            pos, width = self.rng.choice(self.scalars)
        if pos + width > len(data):
            return self.flip(data)
        current = int.from_bytes(data[pos : pos + width], "little")
        value = self.rng.choice(boundary_values(width, current, len(data), self.rng))
        data[pos : pos + width] = value.to_bytes(width, "little")
        return f"u{8 * width} at {pos}: {current} -> {value}"

    def mutants(self, count: int) -> Iterator[tuple[str, bytes]]:
        """``count`` mutants: one damage each, or two for one in four (a flip or overwrite, then another)."""
        kinds = (self.flip, self.truncate, self.overwrite, self.overwrite)
        for i in range(count):
            data = bytearray(self.original)
            done = [kinds[i % len(kinds)](data)]
            if self.rng.random() < 0.25 and data:
                done.append(self.rng.choice((self.flip, self.overwrite))(data))
            yield "; ".join(done), bytes(data)


def fixture_payloads(path: Path) -> list[tuple[str, bytes, dict]]:
    """(ext, bytes, meta) of every payload of every table of an intact fixture (none when no format opens it)."""
    from itarcore.document import open_document

    try:
        doc = open_document(path)
    except ItarError:
        return []
    try:
        found = []
        for table in doc.tables:
            if table.payload is None:
                continue
            for row in range(table.n_rows):
                if table.payload_available is None or table.payload_available(row):
                    p = table.payload(row)
                    found.append((p.ext, bytes(p.data), dict(p.meta)))
        return found
    finally:
        doc.close()


def mutate_payload(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A payload with flipped bytes, cut short, or both (decoders meet what a damaged member holds)."""
    out = bytearray(data)
    done = []
    if out and rng.random() < 0.7:
        n = rng.choice((1, 2, 8, 32))
        for _ in range(n):
            out[rng.randrange(len(out))] = rng.randrange(256)
        done.append(f"{n} bytes changed")
    if not done or rng.random() < 0.4:
        cut = rng.randrange(len(out) + 1)
        del out[cut:]
        done.append(f"cut at {cut}")
    return ", ".join(done), bytes(out)


def exercise_decode(ext: str, data: bytes, meta: dict) -> list[Escape]:
    from itarcore.decoders import decode

    steps = _Steps()
    steps.run(f"decode {ext!r}", lambda: decode(data, ext, meta))
    return steps.escapes


def place_mutant(name: str, data: bytes, folder: Path) -> Path:
    """Write ``data`` where the format expects it (a TARIDX beside links to its intact shards)."""
    src = FIXTURES[name]
    folder.mkdir(parents=True, exist_ok=True)
    if name == "taridx":
        for shard in WEBDS.glob(f"{src.stem}_*.tar"):
            link = folder / shard.name
            if not link.exists():
                link.symlink_to(shard.resolve())
    target = folder / MUTANT_NAMES.get(name, src.name)
    target.write_bytes(data)
    return target


# -- what must meet a mutant ------------------------------------------------------------------------


class _Steps:
    """Run steps, tolerating ItarError and recording any other exception as an escape."""

    def __init__(self) -> None:
        self.escapes: list[Escape] = []

    def run(self, step: str, fn: Callable[[], object]) -> object:
        try:
            return fn()
        except ItarError:
            return None
        except Exception as exc:  # noqa: BLE001 - the point: any other exception is an escape
            self.escapes.append(Escape(step, f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=-4)))
            return None


def _table_rows(table: object) -> list[int]:
    n = table.n_rows
    return sorted({0, n - 1}) if n > 0 else []


def _exercise_table(steps: _Steps, table: object) -> None:
    from itarcore.decoders import decode

    rows = _table_rows(table)
    arr = np.array(rows, np.int64)
    if table.lookup is not None:
        steps.run(f"{table.name!r} lookup", lambda: table.lookup("train000001"))
    for col in table.columns:
        values = steps.run(f"table {table.name!r} column {col.title!r}", lambda c=col: list(c.get(arr)))
        for value in values or []:
            steps.run(f"format {table.name!r}/{col.title!r}", lambda c=col, v=value: c.format(v))
    for row in rows:
        if table.byte_range is not None:
            steps.run(f"{table.name!r} byte range of row {row}", lambda r=row: table.byte_range(r))
        if table.payload is None:
            continue
        if table.payload_available is not None and not steps.run(
                f"{table.name!r} payload_available({row})", lambda r=row: table.payload_available(r)):
            continue
        payload = steps.run(f"{table.name!r} payload of row {row}", lambda r=row: table.payload(r))
        if payload is not None:
            steps.run(f"decode {payload.ext!r} of {table.name!r} row {row}",
                      lambda p=payload: decode(p.data, p.ext, p.meta))
        if table.drill is not None:
            steps.run(f"{table.name!r} drill({row})", lambda r=row: table.drill(r))


def exercise_document(path: Path) -> list[Escape]:
    """open_document, every header field, first and last rows of every table, their payloads decoded."""
    from itarcore.document import open_document

    steps = _Steps()
    doc = steps.run("open_document", lambda: open_document(path))
    if doc is None:
        return steps.escapes
    try:
        for field in doc.header:
            steps.run(f"header field {field.name!r}", lambda f=field: (f.value, f.text))
        steps.run("summary", lambda: [str(v) for v in doc.summary.values()])
        for table in doc.tables:
            _exercise_table(steps, table)
    finally:
        steps.run("close", doc.close)
    return steps.escapes


def reuse_cli_parser() -> Callable[..., object]:
    """A build_parser that builds the full parser once (thousands of main() calls); patch it in for a fuzz run."""
    from itarcore import cli

    parser = cli.build_parser()

    def built_once(argv: object = None) -> object:
        return parser

    return built_once


def exercise_cli_info(path: Path) -> list[Escape]:
    """`itarcore info --json`: exit 0/1/2, never a traceback nor the catch-all's "internal error"."""
    from itarcore.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["info", "--json", os.fspath(path)])
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:  # noqa: BLE001 - main let an exception out: that is the escape
            return [Escape("itarcore info --json", f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=-4))]
    text = err.getvalue()
    if code not in (0, 1, 2) or "Traceback" in text or "internal error" in text:
        return [Escape("itarcore info --json", f"exit {code}", text)]
    return []


# -- structure-aware TARIDX rows against intact shards ------------------------------------------------


def mutate_rows(original: bytes, rng: random.Random) -> tuple[str, bytes, list[int]]:
    """Damage 1-3 rows of an intact index (a field set to a boundary or another row's value, or rows swapped)."""
    from itarcore.formats.taridx import HEADER_DTYPE, ROW_DTYPE

    header = np.frombuffer(original, HEADER_DTYPE, 1)[0]
    start = int(header["off_arr"])
    rows = np.frombuffer(original, ROW_DTYPE, offset=start).copy()
    n = len(rows)
    touched = [rng.randrange(n) for _ in range(rng.choice((1, 1, 2, 3)))]
    done = []
    for row in touched:
        if rng.random() < 0.15:
            other = rng.randrange(n)
            rows[[row, other]] = rows[[other, row]]
            touched.append(other)
            done.append(f"swap rows {row},{other}")
            continue
        name = rng.choice(ROW_DTYPE.names)
        width = ROW_DTYPE[name].itemsize
        current = int(rows[row][name])
        other = int(rows[rng.randrange(n)][name])
        choices = boundary_values(width, current, len(original), rng)
        choices += [other, current + 512, max(current - 512, 0), (current + 1) * 512]
        value = rng.choice(choices) & ((1 << 8 * width) - 1)
        rows[name][row] = np.array(value, ROW_DTYPE[name])
        done.append(f"row {row} {name}: {current} -> {value}")
    return "; ".join(done), original[:start] + rows.tobytes(), sorted(set(touched))


def exercise_fold(index_path: Path, rows: list[int]) -> list[Escape]:
    """Dataset open, payloads, names and decoding of the damaged rows, samples, quick check and full audit."""
    from itarcore.audit import audit_index, quick_check
    from itarcore.dataset import Dataset
    from itarcore.decoders import decode

    steps = _Steps()
    ds = steps.run("Dataset.open", lambda: Dataset.open(index_path))
    if ds is not None:
        try:
            wanted = sorted(set(rows) | {0, ds.n_rows - 1}) if ds.n_rows else []
            for row in wanted:
                data = steps.run(f"read_payload({row})", lambda r=row: ds.read_payload(r))
                ext = steps.run(f"ext_of({row})", lambda r=row: ds.ext_of(r))
                if data is not None and ext is not None:
                    steps.run(f"decode {ext!r} of row {row}", lambda d=data, e=ext: decode(d, e))
            names = steps.run("stem_names", lambda: ds.stem_names(wanted)) or []
            steps.run("member_names", lambda: ds.member_names(wanted))
            for stem in names:
                steps.run(f"lookup_stem({stem!r})", lambda s=stem: ds.lookup_stem(s))
            steps.run("compute_samples", ds.compute_samples)
        finally:
            steps.run("Dataset.close", ds.close)
    for label, audit in (("quick_check", quick_check), ("audit_index", audit_index)):
        report = steps.run(label, lambda a=audit: a(index_path))
        if report is not None:
            steps.run(f"{label} report", lambda r=report: (r.summary_text(), r.dumps(), r.exit_code))
    return steps.escapes
