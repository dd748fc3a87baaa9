"""open_document on URLs: the same header fields, table values, payloads and raw bytes as the local file.

Truth: the local documents (tested against the fixtures elsewhere) and the files' own bytes.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from itarcore.document import open_document

DATA = Path(__file__).parents[1] / "data"


def _same_document(local_doc, remote_doc, local_path: Path) -> None:
    assert [(f.name, f.value, f.offset, f.size) for f in remote_doc.header] == \
        [(f.name, f.value, f.offset, f.size) for f in local_doc.header]
    assert remote_doc.title == local_doc.title and remote_doc.file_size == local_path.stat().st_size
    raw = local_path.read_bytes()
    assert remote_doc.read_bytes(10, 300) == raw[10:310] and remote_doc.read_bytes(len(raw) - 5, 100) == raw[-5:]
    for here, there in zip(local_doc.tables, remote_doc.tables):
        picks = np.unique(np.array([0, here.n_rows // 2, here.n_rows - 1])) if here.n_rows else np.zeros(0, int)
        assert there.n_rows == here.n_rows
        for a, b in zip(here.columns, there.columns):
            assert list(b.get(picks)) == list(a.get(picks)), (here.name, a.title)
        if here.payload is not None and here.n_rows:
            assert there.payload(int(picks[-1])).data == here.payload(int(picks[-1])).data


@pytest.mark.parametrize(("folder", "name"), [("taridx/webds", "train.taridx"), ("tbl", "v2_lz4_meta.tbl"),
                                              ("kastore", "example.trees"), ("taco", "taco_3entries.tacozip")])
def test_remote_documents_equal_local(http_server, webds: Path, tmp_path: Path, monkeypatch, folder: str,
                                      name: str):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where a TACO/kastore/TBL copy goes
    (tmp_path / "tmp").mkdir()
    source = webds if folder.startswith("taridx") else DATA / folder
    url = f"{http_server.serve(source)}/{name}"
    local_doc, remote_doc = open_document(source / name), open_document(url)
    try:
        assert remote_doc.path == url
        _same_document(local_doc, remote_doc, source / name)
        assert len(os.listdir(tmp_path / "tmp")) == (0 if name.endswith(".taridx") else 1)
    finally:
        local_doc.close()
        remote_doc.close()
    assert os.listdir(tmp_path / "tmp") == []  # the temporary copy went with the document


def test_opening_a_remote_index_reads_no_rows(http_server, tmp_path: Path):
    from synthetic import write_index

    write_index(tmp_path / "big.taridx", 100_000, seed=4)  # 3.2 MB of rows, small enough for eager stats locally
    doc = open_document(f"{http_server.serve(tmp_path)}/big.taridx")
    try:
        stats = doc.source.index.source.stats
        assert stats.bytes_fetched < 70_000  # header and tables only
        rows = doc.tables[0]
        assert [c.get(np.array([99_999]))[0] for c in rows.columns[:2]] == \
            [int(doc.source.rows[99_999]["fid"]), int(doc.source.rows[99_999]["offset"])]
        assert stats.bytes_fetched < 70_000 + (1 << 20)  # and then the block of the row shown
    finally:
        doc.close()


@pytest.mark.parametrize("name", ["train.taridx", "v2_lz4_meta.tbl"])
def test_opening_a_url_stats_it_once_and_reads_no_byte_twice(http_server, webds: Path, name: str):
    """The format check and the reader share one open source: one HEAD, and its first read is not asked again."""
    folder = webds if name.endswith(".taridx") else DATA / "tbl"
    doc = open_document(f"{http_server.serve(folder, names=[name])}/{name}")
    try:
        gets = [r[2] for r in http_server.requests("GET", name)]
        assert len(http_server.requests("HEAD", name)) == 1
        assert gets and len(gets) == len(set(gets)), gets
        assert doc.read_bytes(0, 6) == (folder / name).read_bytes()[:6]
    finally:
        doc.close()
