"""The app wheel carries bytecode made by the browser's own Python (DESIGN.md §13: start-up levers):
one unchecked-hash ``.pyc`` (PEP 552) per module, for CPython 3.14, matching the source it ships."""

from __future__ import annotations

import struct
import zipfile

import pytest

from tools import precompile, vendor


@pytest.fixture(scope="module")
def wheel():
    if not (vendor.PYODIDE_DIR / "pyodide.mjs").is_file():
        pytest.skip("the runtime is not vendored (run tools/vendor.py)")
    return zipfile.ZipFile(vendor.build_app_wheel())


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
