"""The history bench's lying zip (``bench.history._lying_zip``): a ChatGPT export whose member unpacks
past the size its headers declare, so that the import's case measures the unpacking it is named for,
in the quick run's size as in the full run's."""

from __future__ import annotations

import struct
import zipfile

import pytest

from app.history.chatgpt import UNPACK_PIECE, conversations_steps
from app.history.export import MAX_IMPORT_BYTES, ImportRefused
from bench.history import _lying_zip


@pytest.mark.parametrize("unpacked", [5_000_000, 40_000_000])  # --quick's size, the full run's
def test_the_member_unpacks_past_its_declared_size_and_the_import_unpacks_it_up_to_that_size(tmp_path, unpacked):
    path = tmp_path / "lying.zip"
    size = _lying_zip(path, unpacked)
    data = path.read_bytes()
    assert size == len(data)
    archive = zipfile.ZipFile(path)
    [info] = archive.infolist()
    declared = info.file_size  # the central directory's; the local header says the same
    assert struct.unpack_from("<I", data, 22)[0] == declared
    assert UNPACK_PIECE < declared < unpacked <= MAX_IMPORT_BYTES  # passes the size guard, lies by the rest
    info.file_size = unpacked
    assert len(archive.open(info).read()) == unpacked  # its data do unpack to that many bytes

    steps, pauses = conversations_steps(data), 0
    with pytest.raises(ImportRefused) as refused:
        while True:
            next(steps)
            pauses += 1
    assert refused.value.reason == "format" and "CRC" in str(refused.value)  # refused once read to its declared size
    assert pauses >= declared // UNPACK_PIECE  # read a piece at a time: the unpacking the case measures
