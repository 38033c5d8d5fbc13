"""``app.wheels.unpack_in_steps``: a wheel unpacked in slices, checked against the lock (DESIGN.md §13)."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest

from app.wheels import SLICE_MS, WheelError, unpack_in_steps


def wheel(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


class Clock:
    """Each reading is ``step`` ms after the last: as if each file took that long to write."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


async def test_files_are_written_with_a_pause_each_slice(tmp_path):
    files = {f"pkg/m{i}.py": f"X = {i}\n".encode() for i in range(12)} | {"pkg-1.dist-info/RECORD": b""}
    data = wheel(files)
    pauses = []

    async def pause():
        pauses.append(len(list(tmp_path.rglob("*.py"))))

    names = await unpack_in_steps(data, tmp_path, sha256=hashlib.sha256(data).hexdigest(), pause=pause,
                                  clock=Clock(SLICE_MS / 2))
    assert names == list(files)
    assert (tmp_path / "pkg" / "m7.py").read_text() == "X = 7\n"
    assert pauses == [2, 4, 6, 8, 10, 12]  # two files per slice (each "took" half a slice): never all at once


async def test_a_wheel_not_matching_the_lock_or_leaving_the_target_writes_nothing_outside(tmp_path):
    data = wheel({"pkg/a.py": b""})

    async def pause():
        pass

    with pytest.raises(WheelError):
        await unpack_in_steps(data, tmp_path, sha256="0" * 64, pause=pause, clock=Clock(0))
    assert not list(tmp_path.iterdir())
    with pytest.raises(WheelError):
        await unpack_in_steps(wheel({"../evil.py": b""}), tmp_path / "site", sha256=None, pause=pause, clock=Clock(0))
    assert not (tmp_path / "evil.py").exists()
