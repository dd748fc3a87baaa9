"""tar -> TBL conversion job, the TBL Document and the CLI, checked against fixtures, tarfile and turboloader."""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from itarcore import cli
from itarcore.document import open_document
from itarcore.document.tbl import CRC_LABELS
from itarcore.errors import Cancelled, WriteError
from itarcore.formats.tbl import TblFile
from itarcore.jobs import convert_tar_to_tbl
from itarcore.progress import CancelToken

DATA = Path(__file__).parents[1] / "data"
IMAGES = DATA / "tbl" / "images.tar"


def run_cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    # only this format's command modules: the CLI shell stays independent of the other formats' progress
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("tbl", "convert"))
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_convert_v2_equals_turboloader_fixture_and_v1_equals_v1code(tmp_path):
    r = convert_tar_to_tbl([IMAGES], tmp_path / "a.tbl")
    assert (r.num_samples, r.skipped, r.formats) == (12, 0, {"JPEG": 4, "PNG": 2, "WEBP": 2, "BMP": 2, "TIFF": 2})
    assert (tmp_path / "a.tbl").read_bytes() == (DATA / "tbl" / "v2_plain.tbl").read_bytes()
    convert_tar_to_tbl(IMAGES, tmp_path / "b.tbl", version=1, include_formats=["JPEG"])
    assert (tmp_path / "b.tbl").read_bytes() == (DATA / "tbl" / "v1_from_v1code.tbl").read_bytes()
    convert_tar_to_tbl(IMAGES, tmp_path / "c.tbl", version=1)
    assert (tmp_path / "c.tbl").read_bytes() == (DATA / "tbl" / "v1_independent.tbl").read_bytes()


def test_convert_shards_with_lz4_and_sidecar_metadata(tmp_path):
    shards = [DATA / "taridx" / "webds" / f"train_000{i}.tar" for i in range(3)]
    r = convert_tar_to_tbl(shards, tmp_path / "t.tbl", lz4=True, metadata_from="json")
    images, sidecars = [], {}
    for shard in shards:  # independent truth: Python's tarfile
        with tarfile.open(shard) as tf:
            for m in tf.getmembers():
                if not m.isfile():
                    continue
                base = m.name.rsplit("/", 1)[-1]
                stem, _, ext = base.partition(".")
                data = tf.extractfile(m).read()
                if ext.lower() in ("jpg", "left.jpg", "png", "webp"):
                    images.append((m.name, stem, shard.name, data))
                elif ext.lower() in ("cls", "json"):
                    sidecars.setdefault(stem, {})[ext.lower()] = data
    assert r.num_samples == len(images) and r.compressed > 0
    with TblFile(tmp_path / "t.tbl") as tbl:
        assert tbl.verify().ok
        for i, (name, stem, shard, data) in enumerate(images):
            assert tbl.read_sample(i) == data
            (block,) = tbl.metadata_for(i)
            meta = tbl.decode_metadata(block)
            assert (meta["name"], meta["stem"], meta["shard"]) == (name, stem, shard)
            side = sidecars.get(stem, {})
            if "cls" in side:
                assert meta["cls"] == int(side["cls"])
            if "json" in side:
                assert meta["json"] == json.loads(side["json"])
    tl = pytest.importorskip("turboloader", reason="turboloader (optional interop dependency) cannot be imported")
    ref = tl.TblReaderV2(str(tmp_path / "t.tbl"), verify_checksums=True)
    assert [ref.read_sample(i) for i in range(len(images))] == [d for *_, d in images]
    assert json.loads(ref.read_metadata(0)[0])["name"] == images[0][0]


def test_convert_cancel_leaves_no_output(tmp_path):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        convert_tar_to_tbl(IMAGES, tmp_path / "x.tbl", cancel=token)
    assert os.listdir(tmp_path) == []
    later = CancelToken()
    seen = []

    def cancel_after_first_report(p):  # cancels once samples have been written to the temp file
        seen.append(p.done)
        later.cancel()

    with pytest.raises(Cancelled):
        convert_tar_to_tbl(IMAGES, tmp_path / "x.tbl", progress=cancel_after_first_report, cancel=later)
    assert seen and seen[0] > 0 and os.listdir(tmp_path) == []


def test_convert_refuses_bad_requests_and_corrupt_tar(tmp_path):
    with pytest.raises(WriteError, match="v1 has no metadata"):
        convert_tar_to_tbl(IMAGES, tmp_path / "x.tbl", version=1, metadata_from="json")
    with pytest.raises(WriteError, match="unknown sample format 'GIF'"):
        convert_tar_to_tbl(IMAGES, tmp_path / "x.tbl", include_formats=["GIF"])
    cut = tmp_path / "cut.tar"
    cut.write_bytes(IMAGES.read_bytes()[:3000])
    with pytest.raises(Exception) as info:
        convert_tar_to_tbl(cut, tmp_path / "x.tbl")
    assert "cut.tar" in str(info.value) and type(info.value).__module__ == "itarcore.errors"
    assert sorted(os.listdir(tmp_path)) == ["cut.tar"]


def test_convert_raw_members_and_zero_length(tmp_path):
    tar_path = tmp_path / "in.tar"
    with tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in [("a/" + "long" * 40 + ".png", b"not really a png"), ("b.jpg", b""), ("c.txt", b"x")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    r = convert_tar_to_tbl(tar_path, tmp_path / "o.tbl", lz4=True)
    assert (r.num_samples, r.skipped) == (2, 1)
    with TblFile(tmp_path / "o.tbl") as tbl:
        assert [tbl.read_sample(i, verify=True) for i in range(2)] == [b"not really a png", b""]
        assert tbl.entries["width"].tolist() == [0, 0]


def mixed_tar(path: Path, tar_format: int) -> list[tuple[str, bytes]]:
    """Images of every kind under odd names (upper case, long, no extension) among non-samples."""
    from PIL import Image

    members = []
    for i in range(40):
        fmt, ext = [("JPEG", "JPG"), ("PNG", "png"), ("WEBP", "WebP"), ("BMP", "bmp"), ("TIFF", "Tiff")][i % 5]
        out = io.BytesIO()
        Image.new("RGB", (3 + i, 40 - i), (i, 2 * i, 3 * i)).save(out, fmt)
        folder = "deep/" * (i % 3) * 12  # some names need a long-name record
        members.append((f"{folder}s{i:03d}.{ext}", out.getvalue()))
        members.append((f"{folder}s{i:03d}.txt", b"caption %d" % i))
    members += [("empty.jpeg", b""), ("no_extension", b"\xff\xd8"), ("dir.jpg/readme", b"x")]
    with tarfile.open(path, "w", format=tar_format) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return members


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_convert_in_small_batches_equals_the_one_by_one_route(tmp_path, monkeypatch, tar_format):
    from itarcore.formats import tbl_write
    from itarcore.formats.tbl_write import format_for_name, write_tbl
    from itarcore.jobs import convert_tbl

    monkeypatch.setattr(convert_tbl, "_BATCH_BYTES", 3000)  # many batches, some of one sample
    monkeypatch.setattr(convert_tbl, "_BATCH_SAMPLES", 5)
    monkeypatch.setattr(tbl_write, "_IOV_MAX", 2)  # several writev calls per batch
    monkeypatch.setattr(tbl_write, "_WRITEBACK_STEP", 1)  # early writeback after every batch
    convert_tar_to_tbl(IMAGES, tmp_path / "fixture.tbl")
    assert (tmp_path / "fixture.tbl").read_bytes() == (DATA / "tbl" / "v2_plain.tbl").read_bytes()
    members = mixed_tar(tmp_path / "mixed.tar", tar_format)
    r = convert_tar_to_tbl(tmp_path / "mixed.tar", tmp_path / "batched.tbl")
    # the one-by-one route: tarfile's names, format_for_name and image_size for each sample
    samples = [(data, format_for_name(name)) for name, data in members if format_for_name(name)]
    write_tbl(tmp_path / "single.tbl", samples)
    assert (r.num_samples, r.skipped) == (41, 42)
    assert (tmp_path / "batched.tbl").read_bytes() == (tmp_path / "single.tbl").read_bytes()
    with TblFile(tmp_path / "batched.tbl") as tbl:
        assert tbl.entries["width"][:5].tolist() == [3, 4, 5, 6, 7] and tbl.verify().ok
    token = CancelToken()
    with pytest.raises(Cancelled):  # cancelled between two batches, with views of the map still around
        convert_tar_to_tbl(tmp_path / "mixed.tar", tmp_path / "cancelled.tbl", progress=lambda p: token.cancel(),
                           cancel=token)
    assert not [p for p in os.listdir(tmp_path) if p.startswith((".cancelled", "cancelled"))]
    tl = pytest.importorskip("turboloader", reason="turboloader (optional interop dependency) cannot be imported")
    ref = tl.TblReaderV2(str(tmp_path / "batched.tbl"), verify_checksums=True)
    assert [ref.read_sample(i) for i in range(r.num_samples)] == [d for d, _ in samples]


def test_convert_disk_error_is_a_write_error_and_leaves_nothing(tmp_path, monkeypatch):
    from itarcore.formats import tbl_write

    def disk_full(fd, buffers):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tbl_write, "write_all", disk_full)  # fails in the writer thread
    with pytest.raises(WriteError, match="No space left"):
        convert_tar_to_tbl(IMAGES, tmp_path / "x.tbl")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("durable", [True, False])
def test_convert_fsyncs_the_output_only_when_durable(tmp_path, monkeypatch, durable, capsys):
    """Same bytes either way; fsync before the rename only when durable (the default), and the CLI's --no-fsync."""
    from itarcore.formats import tbl_write

    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(tbl_write.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                            real_fsync(fd)))
    convert_tar_to_tbl(IMAGES, tmp_path / "a.tbl", durable=durable)
    assert (tmp_path / "a.tbl").read_bytes() == (DATA / "tbl" / "v2_plain.tbl").read_bytes()
    assert [os.path.basename(p) for p in synced] == ([f".a.tbl.tmp-{os.getpid()}"] if durable else [])
    synced.clear()
    argv = ["convert", "tar-to-tbl", str(IMAGES), str(tmp_path / "b.tbl")] + ([] if durable else ["--no-fsync"])
    assert run_cli(monkeypatch, capsys, *argv)[0] == 0
    assert (tmp_path / "b.tbl").read_bytes() == (DATA / "tbl" / "v2_plain.tbl").read_bytes()
    assert len(synced) == (1 if durable else 0)


# -- Document -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["v1_from_v1code.tbl", "v1_independent.tbl", "v2_plain.tbl", "v2_lz4_meta.tbl",
                                  "v2_empty.tbl"])
def test_document_for_every_fixture(name):
    doc = open_document(DATA / "tbl" / name)
    try:
        samples = doc.table("samples")
        with TblFile(DATA / "tbl" / name) as tbl:
            assert samples.n_rows == tbl.num_samples
            assert doc.header[0].name == "magic" and doc.header[0].value == (DATA / "tbl" / name).read_bytes()[:4]
            for row in range(samples.n_rows):
                p = samples.payload(row)
                assert bytes(p.data) == tbl.read_sample(row)
                assert samples.byte_range(row) == (int(tbl.entries["offset"][row]), int(tbl.entries["size"][row]))
            if tbl.version == 2 and tbl.num_samples:
                status = samples.column("CRC status")
                assert [CRC_LABELS[c] for c in status.values] == ["ok"] * tbl.num_samples
                flags = next(f for f in doc.header if f.name == "flags")
                assert "has checksums" in flags.text
                assert next(f for f in doc.header if f.name == "header_crc32").text.endswith("(ok)")
    finally:
        doc.close()


def test_document_payload_ext_meta_and_metadata_table():
    doc = open_document(DATA / "tbl" / "v2_lz4_meta.tbl")
    try:
        samples, meta = doc.table("samples"), doc.table("metadata")
        exts = [samples.payload(i).ext for i in range(samples.n_rows)]
        assert exts[:5] == ["jpg", "png", "webp", "bmp", "tiff"]
        assert samples.payload(0).meta["width"] == 16 and samples.payload(0).meta["height"] == 12
        assert meta.n_rows == 12 and json.loads(meta.payload(4).data) == {"label": 1, "name": "class1/img_004.tif"}
        assert meta.drill(4)[0] == "samples" and meta.drill(4)[1].tolist() == [4]
        assert samples.drill(4)[1].tolist() == [4]
        assert samples.lookup("class2/img_011.jpg").tolist() == [11]
    finally:
        doc.close()


def test_document_raw_u8_payload_has_dims(tmp_path):
    from itarcore.formats.tbl_write import TblWriter

    pixels = np.arange(4 * 3 * 3, dtype=np.uint8).tobytes()
    with TblWriter(tmp_path / "raw.tbl", 1) as w:
        w.add(pixels, "RAW_U8", 4, 3)
    doc = open_document(tmp_path / "raw.tbl")
    try:
        p = doc.table("samples").payload(0)
        assert (p.ext, p.meta["width"], p.meta["height"], p.meta["channels"]) == ("raw_u8", 4, 3, 3)
    finally:
        doc.close()


def test_document_opens_bad_header_crc_with_warning(tmp_path):
    raw = bytearray((DATA / "tbl" / "v2_plain.tbl").read_bytes())
    raw[50] = 7
    (tmp_path / "b.tbl").write_bytes(bytes(raw))
    doc = open_document(tmp_path / "b.tbl")
    try:
        assert any("header CRC-32 mismatch" in w for w in doc.warnings)
        assert "MISMATCH" in next(f for f in doc.header if f.name == "header_crc32").text
    finally:
        doc.close()


# -- CLI --------------------------------------------------------------------------------------
def test_cli_info_json_contract(monkeypatch, capsys):
    tl = pytest.importorskip("turboloader", reason="turboloader (optional interop dependency) cannot be imported")
    code, out, _ = run_cli(monkeypatch, capsys, "info", "--json", str(DATA / "tbl" / "v2_lz4_meta.tbl"))
    d = json.loads(out)
    ref = tl.TblReaderV2(str(DATA / "tbl" / "v2_lz4_meta.tbl"))
    assert code == 0 and (d["format"], d["version"], d["num_samples"]) == ("tbl", 2, 12)
    for i, s in enumerate(d["samples"]):
        info = ref.get_sample_info(i)
        assert set(s) == {"offset", "size", "format", "uncompressed_size", "width", "height", "flags"}
        assert (s["offset"], s["size"], s["uncompressed_size"], s["width"], s["height"], s["format"]) == (
            info["offset"], info["size"], info["uncompressed_size"], info["width"], info["height"],
            info["format"].name)
        assert s["flags"] == (1 if info["is_compressed"] else 0) | 2
    code, out, _ = run_cli(monkeypatch, capsys, "info", "--json", str(DATA / "tbl" / "v1_from_v1code.tbl"))
    d = json.loads(out)
    assert d["samples"][0] == {"offset": 96, "size": 663, "format": "JPEG"} and d["version"] == 1


def test_cli_cat_writes_decoded_bytes(monkeypatch, capfdbinary):
    with tarfile.open(IMAGES) as tf:
        first = tf.extractfile(tf.getmembers()[0]).read()
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("tbl", "convert"))
    code = cli.main(["tbl", "cat", str(DATA / "tbl" / "v2_lz4_meta.tbl"), "0", "--verify"])
    assert code == 0 and capfdbinary.readouterr().out == first  # sample 0 is LZ4-compressed in the file


def test_cli_verify_and_convert(monkeypatch, capsys, tmp_path):
    code, out, _ = run_cli(monkeypatch, capsys, "convert", "tar-to-tbl", str(IMAGES), str(tmp_path / "o.tbl"),
                           "--lz4", "--metadata-from", "json")
    assert code == 0 and "12 samples" in out
    code, out, _ = run_cli(monkeypatch, capsys, "tbl", "verify", str(tmp_path / "o.tbl"))
    assert code == 0 and "12 sample CRCs checked, 0 bad" in out
    raw = bytearray((tmp_path / "o.tbl").read_bytes())
    with TblFile(tmp_path / "o.tbl") as tbl:
        at = int(tbl.entries["offset"][3]) + 60
    raw[at] ^= 0x55
    (tmp_path / "o.tbl").write_bytes(bytes(raw))
    code, out, _ = run_cli(monkeypatch, capsys, "tbl", "verify", "--json", str(tmp_path / "o.tbl"))
    assert code == 1 and json.loads(out)["bad_samples"] == [3]
    code, _, err = run_cli(monkeypatch, capsys, "tbl", "cat", str(tmp_path / "o.tbl"), "3", "--verify")
    assert code == 2 and "entry[3].crc16" in err and err.count("\n") == 1
