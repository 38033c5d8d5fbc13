"""``app.imports.import_in_steps``: a package imported in steps with pauses between (DESIGN.md §13)."""

from __future__ import annotations

import sys

import pytest

from app.imports import import_in_steps


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``steppkg`` whose ``__init__`` imports its two submodules, each logging when it runs."""
    root = tmp_path / "steppkg"
    (root / "inner").mkdir(parents=True)
    (root / "__init__.py").write_text("import builtins\nbuiltins.LOG.append('init')\n"
                                      "from steppkg.inner.deep import VALUE\nfrom steppkg import other\n")
    (root / "inner" / "__init__.py").write_text("")
    (root / "inner" / "deep.py").write_text("import builtins\nbuiltins.LOG.append('deep')\nVALUE = 42\n")
    (root / "other.py").write_text("import builtins\nbuiltins.LOG.append('other')\nfrom steppkg.inner.deep import VALUE\n")
    log = []
    monkeypatch.setattr("builtins.LOG", log, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield log
    for name in [n for n in sys.modules if n.split(".")[0] == "steppkg"]:
        del sys.modules[name]


async def test_each_part_runs_in_its_own_step_and_init_last(package):
    async def pause():
        package.append("pause")

    module = await import_in_steps("steppkg", ["inner.deep", "other"], pause)
    assert package == ["deep", "pause", "other", "pause", "init"]  # without steps: init, deep, other at once
    assert module.VALUE == 42 and module.other.VALUE == 42
    import steppkg

    assert steppkg is module
    assert await import_in_steps("steppkg", ["other"], pause) is module and package.count("init") == 1


async def test_a_failing_part_leaves_nothing_half_imported(package, tmp_path):
    (tmp_path / "steppkg" / "other.py").write_text("raise RuntimeError('broken')\n")

    async def pause():
        pass

    with pytest.raises(RuntimeError):
        await import_in_steps("steppkg", ["inner.deep", "other"], pause)
    assert not [n for n in sys.modules if n.split(".")[0] == "steppkg"]
    with pytest.raises(ModuleNotFoundError):
        await import_in_steps("no_such_package_here", [], pause)
