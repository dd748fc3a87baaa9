"""A row that no longer points at a tar header shows no name instead of payload bytes."""
from __future__ import annotations

import struct
import tarfile
from pathlib import Path

from itarcore.dataset import Dataset
from itarcore.formats.tar_fields import header_checksum_ok


def test_shifted_row_has_no_name_and_neighbours_keep_theirs(webds: Path) -> None:
    index = webds / "train.taridx"
    raw = bytearray(index.read_bytes())
    off_arr = struct.unpack_from("<Q", raw, 48)[0]
    field = off_arr + 32 * 5 + 2  # row 5's offset: move it into the member's payload
    struct.pack_into("<Q", raw, field, struct.unpack_from("<Q", raw, field)[0] + 512)
    index.write_bytes(bytes(raw))
    with tarfile.open(webds / "train_0000.tar") as tar:
        truth = [m.name for m in tar.getmembers()]
    with Dataset.open(index) as ds:
        assert ds.member_names([4, 5, 6]) == [truth[4], "", truth[6]]
        assert ds.stem_names([5]) == [""]


def test_header_checksum_ok_on_real_and_fake_blocks(data_dir: Path) -> None:
    shard = (data_dir / "taridx/webds/train_0000.tar").read_bytes()
    assert header_checksum_ok(shard[:512])
    assert not header_checksum_ok(shard[512:1024])  # the first member's payload
    assert not header_checksum_ok(bytes(512))
