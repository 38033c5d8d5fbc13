"""tools/snapshot.py: the interpreter snapshot is made when its inputs change, and only then
(DESIGN.md §13). Node is replaced by a stand-in that writes known bytes, so these run anywhere;
the real snapshot is exercised in Chromium by tests/e2e/test_snapshot.py."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from tools import snapshot


@pytest.fixture
def pyodide_dir(tmp_path: Path) -> Path:
    root = tmp_path / "pyodide"
    root.mkdir()
    for name in snapshot.INPUT_FILES:
        (root / name).write_bytes(f"stand-in {name}".encode())
    return root


@pytest.fixture
def node_runs(monkeypatch) -> list[list[str]]:
    runs: list[list[str]] = []

    def fake_run(args, **kwargs):
        runs.append(args)
        Path(args[3]).write_bytes(b"memory" * 1000)
        return subprocess.CompletedProcess(args, 0, stdout='{"bootMs": 1, "totalMs": 2, "bytes": 6000, "modules": 3}\n')

    monkeypatch.setattr(snapshot.shutil, "which", lambda name: "/usr/bin/node" if name == "node" else None)
    monkeypatch.setattr(snapshot.subprocess, "run", fake_run)
    return runs


def test_made_once_then_current_until_an_input_changes(pyodide_dir, node_runs):
    manifest = snapshot.make(pyodide_dir)
    assert len(node_runs) == 1 and node_runs[0][4] == ",".join(snapshot.IMPORTS)
    assert gzip.decompress((pyodide_dir / "snapshot.bin.gz").read_bytes()) == b"memory" * 1000
    assert json.loads((pyodide_dir / "snapshot.json").read_text()) == manifest
    assert snapshot.is_current(pyodide_dir)

    snapshot.make(pyodide_dir)
    assert len(node_runs) == 1  # current: not made again

    (pyodide_dir / "pyodide.asm.wasm").write_bytes(b"another Pyodide build")
    assert not snapshot.is_current(pyodide_dir)
    snapshot.make(pyodide_dir)
    assert len(node_runs) == 2 and snapshot.is_current(pyodide_dir)


def test_the_manifest_names_the_digests_the_page_checks_before_restoring(pyodide_dir, node_runs):
    """The page (static/pyodide-boot.mjs) checks the bytes it got against ``sha256`` (as sent,
    compressed) or ``inflatedSha256`` (a host that sent it with Content-Encoding: gzip has had the
    browser inflate it); a manifest from before names only the first, so it is made again."""
    manifest = snapshot.make(pyodide_dir)
    packed = (pyodide_dir / "snapshot.bin.gz").read_bytes()
    assert manifest["sha256"] == hashlib.sha256(packed).hexdigest()
    assert manifest["inflatedSha256"] == hashlib.sha256(b"memory" * 1000).hexdigest()
    del manifest["inflatedSha256"]
    (pyodide_dir / "snapshot.json").write_text(json.dumps(manifest))
    assert not snapshot.is_current(pyodide_dir)


def test_a_damaged_snapshot_file_is_made_again(pyodide_dir, node_runs):
    snapshot.make(pyodide_dir)
    (pyodide_dir / "snapshot.bin.gz").write_bytes(b"cut short")
    assert not snapshot.is_current(pyodide_dir)
    snapshot.make(pyodide_dir)
    assert len(node_runs) == 2 and snapshot.is_current(pyodide_dir)


def test_without_node_nothing_is_made_and_the_page_boots_as_usual(pyodide_dir, monkeypatch, capsys):
    monkeypatch.setattr(snapshot.shutil, "which", lambda name: None)
    assert snapshot.make(pyodide_dir) is None
    assert not (pyodide_dir / "snapshot.bin.gz").exists()
    assert "no node" in capsys.readouterr().out


def test_only_standard_library_modules_are_imported_before_the_snapshot():
    import importlib.util
    import sys

    for name in snapshot.IMPORTS:
        top = name.split(".")[0]
        assert top in sys.stdlib_module_names, name
        assert importlib.util.find_spec(name) is not None, name
