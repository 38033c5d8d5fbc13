"""The app wheel carries bytecode made by the browser's own Python (DESIGN.md §13: start-up levers):
one unchecked-hash ``.pyc`` (PEP 552) per module, for CPython 3.14, matching the source it ships."""

from __future__ import annotations

import struct
import zipfile

import pytest

from tools import precompile, vendor


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not (vendor.PYODIDE_DIR / "pyodide.mjs").is_file():
        pytest.skip("the runtime is not vendored (run tools/vendor.py)")
    # packed elsewhere: a wheel rewritten in static/vendor without its lock stops the served page
    return zipfile.ZipFile(vendor.build_app_wheel(tmp_path_factory.mktemp("wheel")))


def test_every_module_has_unchecked_hash_bytecode_of_its_own_source(wheel):
    names = set(wheel.namelist())
    sources = sorted(n for n in names if n.endswith(".py"))
    assert sources and all(precompile._pyc_name(s) in names for s in sources)
    magics = set()
    for source in sources:
        pyc = wheel.read(precompile._pyc_name(source))
        magics.add(struct.unpack("<H", pyc[:2])[0])
        assert struct.unpack("<I", pyc[4:8])[0] == 0b01, source  # hash-based, its source never checked
    (magic,) = magics
    assert 3600 <= magic < 3700  # CPython 3.14's range (Lib/importlib/_bootstrap_external.py), not this host's


def test_bytecode_names_follow_the_browsers_python():
    assert precompile._pyc_name("app/browser/view.py") == "app/browser/__pycache__/view.cpython-314.pyc"


def test_each_pure_python_wheel_is_served_as_pinned_with_its_bytecode_added_and_the_lock_names_what_is_served():
    # import micropip compiled 43 modules in the page in one task (130-550 ms after ready, DESIGN.md §13)
    if not (vendor.PYODIDE_DIR / "pyodide-lock.json").is_file():
        pytest.skip("the runtime is not vendored (run tools/vendor.py)")
    lock = vendor.json.loads(vendor.LOCK_PATH.read_text())
    served_lock = vendor.json.loads((vendor.PYODIDE_DIR / "pyodide-lock.json").read_text())["packages"]
    pure = [entry for entry in lock["wheels"] if entry["file"].endswith("-none-any.whl")]
    assert {"micropip", "markdown-it-py", "pydantic"} <= {entry["name"] for entry in pure}
    for entry in pure:
        served = vendor.PYODIDE_DIR / entry["file"]
        pinned = zipfile.ZipFile(vendor.CACHE / entry["file"])  # the download, checked against its sha256
        wheel = zipfile.ZipFile(served)
        names = set(wheel.namelist())
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        for name in pinned.namelist():
            if not name.endswith("/") and name != record:
                assert wheel.read(name) == pinned.read(name), (entry["file"], name)
        sources = [n for n in pinned.namelist() if n.endswith(".py")]
        listed = {row.split(",")[0] for row in wheel.read(record).decode().splitlines()}
        assert sources and all(precompile._pyc_name(s) in names and precompile._pyc_name(s) in listed for s in sources)
        assert served_lock[entry["lock_name"]]["sha256"] == vendor.sha256_of(served), entry["file"]


def test_a_wheel_without_bytecode_to_add_is_served_as_pinned(tmp_path, monkeypatch):
    wheel = tmp_path / "x-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("x/__init__.py", "X = 1\n")
    monkeypatch.setattr(precompile, "compiled", lambda sources, **kw: {})
    assert vendor.with_bytecode(wheel) is None
    monkeypatch.setattr(precompile, "compiled", lambda sources, **kw: {precompile._pyc_name(n): b"pyc" for n in sources})
    once, again = vendor.with_bytecode(wheel), vendor.with_bytecode(wheel)
    assert once == again and zipfile.ZipFile(vendor.io.BytesIO(once)).read("x/__pycache__/__init__.cpython-314.pyc") == b"pyc"
