"""The strict ZIP structure reader, checked against Python's zipfile on real and doctored archives."""
from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from itarcore.errors import FormatError, ItarError, TruncatedError
from itarcore.formats.zipfmt import read_zip

TACO = Path(__file__).parents[1] / "data" / "taco"


def _zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_STORED, comment: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.comment = comment
    return buf.getvalue()


def _split_end(data: bytes) -> tuple[bytes, bytes, bytes, tuple]:
    """(members, central directory, end record + comment, parsed end record) of an archive with no ZIP64."""
    eocd = data.rindex(b"PK\x05\x06")
    fields = struct.unpack_from("<4s4H2IH", data, eocd)
    cd_size, cd_offset = fields[5], fields[6]
    return data[:cd_offset], data[cd_offset:cd_offset + cd_size], data[eocd:], fields


def _check_against_zipfile(path: Path) -> None:
    blob = path.read_bytes()
    ours = read_zip(path)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert [m.name for m in ours.members] == [i.filename for i in infos]
        for m, info in zip(ours.members, infos):
            assert (m.header_offset, m.compressed_size, m.size, m.crc32, m.method) == (
                info.header_offset, info.compress_size, info.file_size, info.CRC, info.compress_type)
            stored = blob[m.data_offset:m.data_end]
            data = zlib.decompress(stored, -15) if m.method == 8 else stored
            assert data == zf.read(info)


@pytest.mark.parametrize("name", ["taco_0entries.tacozip", "taco_3entries.tacozip",
                                  "taco_3entries_before_update.tacozip"])
def test_fixture_members_match_zipfile(name: str) -> None:
    _check_against_zipfile(TACO / name)


def test_deflated_members_and_comment(tmp_path: Path) -> None:
    p = tmp_path / "d.zip"
    p.write_bytes(_zip_bytes({"a.txt": b"hello " * 500, "dir/b.json": b'{"x": 1}'}, zipfile.ZIP_DEFLATED,
                             comment=b"a plain comment"))
    _check_against_zipfile(p)
    z = read_zip(p)
    assert z.comment == b"a plain comment"
    assert [m.method for m in z.members] == [8, 8]


def test_lfh_extra_field_shifts_data_offset(tmp_path: Path) -> None:
    # force_zip64 puts a ZIP64 extra field in the local header only: data starts later than name + 30
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, zf.open("big.bin", "w", force_zip64=True) as fh:
        fh.write(b"payload bytes")
    p = tmp_path / "x.zip"
    p.write_bytes(buf.getvalue())
    m = read_zip(p).members[0]
    assert m.data_offset == 30 + len("big.bin") + 20
    _check_against_zipfile(p)


def test_zip64_end_records_followed_even_without_saturated_fields(tmp_path: Path) -> None:
    """As tacozip writes them: a ZIP64 locator next to ordinary 32-bit end-record values."""
    body, cd, _end, fields = _split_end(_zip_bytes({"a": b"1", "b": b"22"}))
    n = fields[4]
    z64_offset = len(body) + len(cd)
    z64 = struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, len(cd), len(body))
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, z64_offset, 1)
    # 32-bit fields that disagree: a reader that ignores the locator lands on the wrong offset
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, len(cd), 7, 0)
    p = tmp_path / "z64.zip"
    p.write_bytes(body + cd + z64 + locator + eocd)
    z = read_zip(p)
    assert z.zip64 and z.zip64_eocd_offset == z64_offset and z.cd_offset == len(body)
    _check_against_zipfile(p)


def test_fake_eocd_inside_comment_is_refused(tmp_path: Path) -> None:
    body, cd, _end, fields = _split_end(_zip_bytes({"a": b"1"}))
    # a second, self-consistent end record hidden in the comment, pointing at bogus offsets
    fake = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, 10, 3, 0)
    real = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, fields[3], fields[4], fields[5], fields[6], len(fake))
    p = tmp_path / "fake.zip"
    p.write_bytes(body + cd + real + fake)
    with pytest.raises(FormatError, match="inside the archive comment"):
        read_zip(p)


def test_eocd_signature_bytes_in_comment_without_valid_length_also_refused(tmp_path: Path) -> None:
    # zipfile trusts the last signature it finds, so even a loose one would change its reading
    p = tmp_path / "c.zip"
    p.write_bytes(_zip_bytes({"a": b"1"}, comment=b"xx PK\x05\x06 yy"))
    with pytest.raises(FormatError, match="second end-record signature"):
        read_zip(p)


def test_fake_zip64_locator_is_refused(tmp_path: Path) -> None:
    body, cd, end, _fields = _split_end(_zip_bytes({"a": b"1"}))
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, 0, 1)  # points at the first local header
    p = tmp_path / "loc.zip"
    p.write_bytes(body + cd + locator + end)
    with pytest.raises(FormatError, match="ZIP64 end record: signature") as info:
        read_zip(p)
    assert info.value.offset == 0 and str(p) in str(info.value)


@pytest.mark.parametrize("cut", [1, 20, 46])
def test_truncated_central_directory(tmp_path: Path, cut: int) -> None:
    body, cd, end, _ = _split_end(_zip_bytes({"a": b"1", "bb": b"2"}))
    p = tmp_path / "t.zip"
    p.write_bytes(body + cd[:-cut] + end)  # the end record still claims the full size
    with pytest.raises(FormatError, match="central directory"):
        read_zip(p)


def test_file_cut_inside_central_directory(tmp_path: Path) -> None:
    data = (TACO / "taco_3entries.tacozip").read_bytes()
    p = tmp_path / "cut.zip"
    p.write_bytes(data[:4300])
    with pytest.raises(FormatError, match="not a ZIP archive"):
        read_zip(p)


def test_huge_entry_count_rejected_before_walking(tmp_path: Path) -> None:
    body, cd, _end, _fields = _split_end(_zip_bytes({"a": b"1"}))
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFE, 0xFFFE, len(cd), len(body), 0)
    p = tmp_path / "n.zip"
    p.write_bytes(body + cd + eocd)
    with pytest.raises(FormatError, match="number of entries") as info:
        read_zip(p)
    assert info.value.found == 0xFFFE


def test_bad_central_signature_names_offset(tmp_path: Path) -> None:
    body, cd, end, _ = _split_end(_zip_bytes({"a": b"1", "b": b"2"}))
    second = cd.index(b"PK\x01\x02", 4)
    broken = cd[:second] + b"PK\x09\x09" + cd[second + 4:]
    p = tmp_path / "s.zip"
    p.write_bytes(body + broken + end)
    with pytest.raises(FormatError, match="signature") as info:
        read_zip(p)
    assert info.value.offset == len(body) + second


@pytest.mark.parametrize("blob", [b"", b"PK", b"not a zip at all, just some text" * 3])
def test_small_or_foreign_files(tmp_path: Path, blob: bytes) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(blob)
    with pytest.raises(ItarError):
        read_zip(p)
    if len(blob) < 22:
        with pytest.raises(TruncatedError):
            read_zip(p)
