"""tools/couchdb_server.py: the sync tests' server is pinned by version and by its lock (DESIGN.md §16)."""

from __future__ import annotations

import json

from tools import couchdb_server


def test_the_server_is_pinned_by_version_and_integrity():
    version, integrity = couchdb_server.pinned()
    package = json.loads((couchdb_server.HERE / "package.json").read_text())
    assert package["dependencies"] == {"pouchdb-server": version} and version == "4.2.0"
    assert integrity.startswith("sha512-")
    lock = json.loads((couchdb_server.HERE / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == package["dependencies"]
    tree = [entry for name, entry in lock["packages"].items() if name]
    assert tree and all(entry.get("integrity", "").startswith("sha") for entry in tree if not entry.get("link"))


def test_the_install_lives_outside_the_work_tree_keyed_by_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBAR_CACHE", str(tmp_path))
    target = couchdb_server.install_dir()
    assert target.parent == tmp_path / "pouchdb-server" and len(target.name) == 16
    assert not couchdb_server.installed()  # nothing there: --check says so and installs nothing
    assert couchdb_server.main(["--check"]) == 1
