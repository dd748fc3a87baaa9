"""kastore as a Document, tskit interop, and the `itarcore info` / `itarcore kastore dump` commands."""
from __future__ import annotations

import json
from pathlib import Path

import kastore
import numpy as np
import pytest

from itarcore import cli
from itarcore.document import open_document
from itarcore.document.kastore import as_text, ragged_pair, ragged_problem, ragged_row
from itarcore.formats.kastore import open_store
from itarcore.formats.kastore_write import dump

DATA = Path(__file__).resolve().parents[1] / "data" / "kastore"
EXAMPLE = DATA / "example.trees"


def test_document_header_items_and_payload() -> None:
    doc = open_document(EXAMPLE)
    try:
        raw = EXAMPLE.read_bytes()
        assert doc.format == "kastore" and doc.title == "kastore 1.0 (tskit.trees)"
        fields = {f.name: f for f in doc.header}
        assert (fields["magic"].offset, fields["magic"].size, fields["magic"].value) == (0, 8, raw[:8])
        assert (fields["number of items"].offset, fields["number of items"].value) == (12, 62)
        assert (fields["file size"].offset, fields["file size"].value) == (16, len(raw))
        items = doc.table("items")
        assert items.n_rows == 62
        ref = kastore.load(EXAMPLE, read_all=True)
        keys = list(items.column("key").values)
        assert keys == list(ref)
        row = keys.index("nodes/time")
        assert items.column("type").format(items.column("type").values[row]) == "float64"
        assert items.column("length").values[row] == 73 and items.column("bytes").values[row] == 584
        assert items.column("key offset").values[row] == 4859 and items.column("array offset").values[row] == 41664
        assert items.column("padding").values[row] == 41664 - (41368 + 73 * 4)  # after nodes/population
        offset, size = items.byte_range(row)
        assert (offset, size) == (41664, 584)
        payload = items.payload(row)
        assert bytes(payload.data) == raw[offset : offset + size] == ref["nodes/time"].tobytes()
        assert payload.ext == "kastore" and payload.meta == {"dtype": "float64", "length": 73, "key": "nodes/time"}
        assert list(items.lookup("nodes/time")) == [row] and len(items.lookup("nodes")) == 0
        assert doc.summary == {"stores": 1, "store": 0, "items": 62, "bytes": len(raw)}
    finally:
        doc.close()


def test_document_second_store_uses_absolute_offsets() -> None:
    doc = open_document(DATA / "multi_store.kas", store=1)
    try:
        raw = (DATA / "multi_store.kas").read_bytes()
        items = doc.table("items")
        offset, size = items.byte_range(0)
        assert raw[offset : offset + size] == np.array([3.0]).tobytes()
        key_at = items.column("key offset").values[0]
        assert raw[key_at : key_at + 6] == b"second"
        assert doc.table("stores").n_rows == 2 and doc.title.endswith("store 2 of 2")
    finally:
        doc.close()


def test_ragged_helpers_on_example() -> None:
    store = open_store(EXAMPLE)
    assert ragged_pair(store, "provenances/record") == ("provenances/record", "provenances/record_offset")
    assert ragged_pair(store, "provenances/record_offset") == ("provenances/record", "provenances/record_offset")
    assert ragged_pair(store, "nodes/time") is None
    data, offsets = store["sites/ancestral_state"], store["sites/ancestral_state_offset"]
    assert ragged_problem(data, offsets) == ""
    assert ragged_row(data, offsets, 3).tobytes() == data.tobytes()[int(offsets[3]) : int(offsets[4])]
    assert ragged_problem(data, offsets[:-1]).startswith("the last offset is")
    bad = np.array(offsets)
    bad[5], bad[6] = bad[6] + 1, bad[5]
    assert ragged_problem(data, bad) == "offsets decrease at row 5"
    assert ragged_problem(data, np.array([1, len(data)])) == "the first offset is 1, not 0"
    assert ragged_problem(data, np.array([], np.uint32)).startswith("the offsets array is empty")
    assert as_text(store["format/name"]) == "tskit.trees"
    assert as_text(store["nodes/flags"]) is None and as_text(np.array([0, 1], np.uint8)) is None


def test_tskit_tree_sequence_opens_with_all_keys(tmp_path: Path) -> None:
    tskit = pytest.importorskip("tskit")
    tables = tskit.Tree.generate_balanced(16, span=100).tree_sequence.dump_tables()
    tables.individuals.metadata_schema = tskit.MetadataSchema.permissive_json()
    for i in range(5):
        tables.individuals.add_row(location=[i, i / 2], metadata={"name": f"ind-{i}", "ü": "ñ" * i})
    tables.provenances.add_row(record=json.dumps({"made by": "test", "i": [1, 2]}))
    ts = tables.tree_sequence()
    path = tmp_path / "made.trees"
    ts.dump(path)
    store = open_store(path)
    ref = kastore.load(path, read_all=True)
    assert list(store) == list(ref) and len(store) > 50
    for key in ref:
        np.testing.assert_array_equal(store[key], ref[key], err_msg=key)
    data, offsets = store["individuals/metadata"], store["individuals/metadata_offset"]
    assert ragged_problem(data, offsets) == ""
    for i in range(ts.num_individuals):  # decoded by tskit itself
        assert json.loads(ragged_row(data, offsets, i).tobytes().decode()) == ts.individual(i).metadata
    loc, loc_off = store["individuals/location"], store["individuals/location_offset"]
    assert list(ragged_row(loc, loc_off, 4)) == list(ts.individual(4).location)
    recs, rec_off = store["provenances/record"], store["provenances/record_offset"]
    assert [ragged_row(recs, rec_off, i).tobytes().decode() for i in range(ts.num_provenances)] == [
        p.record for p in ts.provenances()
    ]


# -- CLI -----------------------------------------------------------------------------
@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    # Only this format's modules: the shell imports every registered module, some may not exist yet.
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("kastore",))
    monkeypatch.setattr(cli, "INFO_MODULES", {"kastore": "kastore"})

    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def test_info_json_contract(run) -> None:
    code, out, _ = run("info", "--json", EXAMPLE)
    assert code == 0
    d = json.loads(out)
    assert d["format"] == "kastore" and d["stores"] == 1
    ref = kastore.load(EXAMPLE, read_all=True)
    assert [it["key"] for it in d["items"]] == list(ref)
    assert all(set(it) == {"key", "type", "length", "key_start", "array_start"} for it in d["items"])
    by_key = {it["key"]: it for it in d["items"]}
    assert by_key["edges/child"] == {"key": "edges/child", "type": "int32", "length": 213,
                                     "key_start": 4032, "array_start": 5184}
    for key, array in ref.items():
        assert (by_key[key]["type"], by_key[key]["length"]) == (array.dtype.name, len(array))


def test_info_json_selects_store(run) -> None:
    code, out, _ = run("info", "--json", "--store", "1", DATA / "multi_store.kas")
    d = json.loads(out)
    assert code == 0 and d["stores"] == 2
    assert d["items"] == [{"key": "second", "type": "float64", "length": 1, "key_start": 128, "array_start": 136}]
    code, _, err = run("info", "--store", "2", DATA / "multi_store.kas")
    assert code == 2 and "no store 2" in err and err.count("\n") == 1


def test_info_text_lists_items(run) -> None:
    code, out, _ = run("info", EXAMPLE)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "kastore 1.0: store 0 of 1, 62 items, 53,820 bytes"
    assert lines[1].split() == ["int32", "213", "852", "B", "edges/child"]
    assert len(lines) == 63


def test_dump_text_numbers_and_json(run) -> None:
    ref = kastore.load(EXAMPLE, read_all=True)
    code, out, _ = run("kastore", "dump", EXAMPLE, "provenances/record")
    assert code == 0 and out == ref["provenances/record"].tobytes().decode() + "\n"
    code, out, _ = run("kastore", "dump", EXAMPLE, "nodes/time")
    assert [float(v) for v in out.split()] == ref["nodes/time"].tolist()
    code, out, _ = run("kastore", "dump", "--numbers", EXAMPLE, "format/name")
    assert [int(v) for v in out.split()] == list(b"tskit.trees")
    code, out, _ = run("kastore", "dump", "--json", EXAMPLE, "edges/parent")
    assert json.loads(out) == ref["edges/parent"].tolist()


def test_dump_float32_and_nan(run, tmp_path: Path) -> None:
    path = tmp_path / "f.kas"
    dump({"f32": np.array([0.1, 2.5], np.float32), "f64": np.array([1.0, np.nan, -np.inf])}, path)
    _, out, _ = run("kastore", "dump", path, "f32")
    assert out.split() == ["0.1", "2.5"]  # float32's own shortest form
    _, out, _ = run("kastore", "dump", "--json", path, "f64")
    assert json.loads(out) == [1.0, None, None]


def test_dump_errors_are_one_line(run) -> None:
    code, _, err = run("kastore", "dump", EXAMPLE, "nodes/tme")
    assert code == 2 and "no key 'nodes/tme'" in err and "'nodes/time'" in err and err.count("\n") == 1
    code, _, err = run("kastore", "dump", DATA / "upstream" / "malformed" / "bad_type_20.kas", "a")
    assert code == 2 and "unknown type code" in err
