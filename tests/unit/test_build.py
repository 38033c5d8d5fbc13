"""tools/build.py: what goes into dist/, the manifest, precompression, re-packed archives (DESIGN.md §11)."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
from pathlib import Path

import brotli
import pytest

from tests.archives import zip_bytes
from tools import build




@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A miniature repository laid out like the real one after tools/vendor.py."""
    root = tmp_path / "repo"
    files = {
        "index.html": b'<!doctype html>\n<html>\n<head>\n  <meta charset="utf-8">\n</head>\n<body></body>\n</html>\n',
        "pyscript.toml": b'interpreter = "./static/vendor/pyodide/pyodide.mjs"\n',
        "app/locales/en-US.json": b'{"app": {"loading": "Loading"}}',
        "app/model.py": b"# shipped inside the wheel, not as a file\n",
        "bench/hooks.py": b"# never shipped\n",
        "tests/e2e/page.html": b"<p>test page</p>",
        "static/boot.js": b"// boot\n",
        "static/boot.js.map": b"{}",
        "static/sw.js": b"self.addEventListener('fetch', () => {});\n",
        "static/vendor/pyscript/core.js": b"export {};\n",
        "static/vendor/pyscript/codemirror-AAAA.js": b"// editor only\n",
        "static/vendor/pyscript/xterm-BBBB.js": b"// terminal only\n",
        "static/vendor/pyscript/error-CCCC.js": b"// kept\n",
        "static/vendor/pouchdb/pouchdb.min.js": b"// sync client, loaded only when sync is on\n",
        "static/sync.js": b"// sync adapter\n",
        "static/sync-worker.js": b"// sync worker\n",
        "static/vendor/test/zustand/vanilla.mjs": b"// test only\n",
        "static/vendor/zustand-like/x.mjs": b"// test only, by its lock entry\n",
        "static/vendor/pyodide/snapshot.bin.gz": gzip.compress(b"\0" * 4096, mtime=0),
        "static/vendor/pyodide/python_stdlib.zip": zip_bytes({"os.py": b"# os\n" * 200}),
        "static/vendor/pyodide/demo-1.0-py3-none-any.whl": zip_bytes({"demo/__init__.py": b"x = 1\n" * 300}),
    }
    lock = {"packages": {"demo": {"name": "demo", "file_name": "demo-1.0-py3-none-any.whl", "sha256": "old"}}}
    files["static/vendor/pyodide/pyodide-lock.json"] = json.dumps(lock).encode()
    files["vendor.lock.json"] = json.dumps({"npm": [
        {"name": "zustand-like", "dest": "static/vendor/zustand-like", "test_only": True},
        {"name": "pyscript", "dest": "static/vendor/pyscript"},
    ], "wheels": []}).encode()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_only_what_the_page_needs_is_selected(tree):
    chosen = build.select_files(tree)
    assert "index.html" in chosen and "pyscript.toml" in chosen and "app/locales/en-US.json" in chosen
    assert "static/vendor/pyscript/core.js" in chosen and "static/vendor/pyscript/error-CCCC.js" in chosen
    assert "static/vendor/pouchdb/pouchdb.min.js" in chosen and "static/sync.js" in chosen  # DESIGN.md §16
    for absent in ["app/model.py", "bench/hooks.py", "tests/e2e/page.html", "static/boot.js.map", "static/sw.js",
                   "static/vendor/pyscript/codemirror-AAAA.js", "static/vendor/pyscript/xterm-BBBB.js",
                   "static/vendor/test/zustand/vanilla.mjs", "static/vendor/zustand-like/x.mjs"]:
        assert absent not in chosen


def test_build_writes_manifest_precompressed_files_and_worker(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    out = tmp_path / "dist"
    manifest = build.build(out, root=tree, quiet=True)

    files = manifest["files"]
    assert set(files) == set(build.select_files(tree))
    for rel, entry in files.items():
        data = (out / rel).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        if rel.endswith(".gz"):  # compressed already: no variants of it
            assert not (out / f"{rel}.br").exists() and not (out / f"{rel}.gz").exists()
            continue
        assert brotli.decompress((out / f"{rel}.br").read_bytes()) == data
        assert gzip.decompress((out / f"{rel}.gz").read_bytes()) == data
    assert "static/vendor/pyodide/snapshot.bin.gz" in files
    assert json.loads((out / "manifest.json").read_text()) == manifest

    worker = (out / "sw.js").read_text()
    inlined = json.loads(worker.split("const BUILD = ", 1)[1].split(";\n", 1)[0])
    assert inlined == {"version": manifest["version"], "files": {r: f["sha256"] for r, f in files.items()},
                       "onDemand": ["static/sync-worker.js", "static/sync.js",
                                    "static/vendor/pouchdb/pouchdb.min.js"]}  # sync's, not precached
    assert worker.endswith((tree / "static/sw.js").read_text())

    index = (out / "index.html").read_text()
    assert f'http-equiv="Content-Security-Policy" content="{build.CSP}"' in index
    assert 'name="agentbar-build"' in index


def test_archives_are_repacked_stored_and_the_lock_follows(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    out = tmp_path / "dist"
    build.build(out, root=tree, quiet=True)
    wheel = out / "static/vendor/pyodide/demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_STORED}
        assert archive.read("demo/__init__.py") == b"x = 1\n" * 300
    lock = json.loads((out / "static/vendor/pyodide/pyodide-lock.json").read_text())
    assert lock["packages"]["demo"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    with zipfile.ZipFile(out / "static/vendor/pyodide/python_stdlib.zip") as archive:
        assert archive.read("os.py") == b"# os\n" * 200


DEV_ONLY_MODULES = ["app/store/trace.py", "app/runtime/trace.py", "app/browser/dev_hooks.py"]
"""What only the development server and the benchmark use (a save timed step by step, the runtime's
phase observers, ``window.agentbarCheckpoints``): kept out of dist/ (DESIGN.md §15)."""


def test_the_app_wheel_in_dist_leaves_out_the_dev_only_modules_and_the_lock_follows(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    name = "agentbar-0.1.0-py3-none-any.whl"
    members = {"app/__init__.py": b"", "app/store/facade.py": b"# shipped\n",
               "app/store/__pycache__/facade.cpython-314.pyc": b"pyc"}
    for module in DEV_ONLY_MODULES:
        parent, _, file = module.rpartition("/")
        members[module] = b"# dev only\n"
        members[f"{parent}/__pycache__/{file[:-3]}.cpython-314.pyc"] = b"pyc"
    record = "".join(f"{path},sha256=x,{len(data)}\n" for path, data in members.items())
    members["agentbar-0.1.0.dist-info/RECORD"] = (record + "agentbar-0.1.0.dist-info/RECORD,,\n").encode()
    (tree / "static/vendor/pyodide" / name).write_bytes(zip_bytes(members))
    lock_path = tree / "static/vendor/pyodide/pyodide-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["packages"]["agentbar"] = {"name": "agentbar", "file_name": name, "sha256": "old"}
    lock_path.write_text(json.dumps(lock))

    out = tmp_path / "dist"
    build.build(out, root=tree, quiet=True)
    wheel = out / "static/vendor/pyodide" / name
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        shipped_record = archive.read("agentbar-0.1.0.dist-info/RECORD").decode()
    assert {"app/store/facade.py", "app/store/__pycache__/facade.cpython-314.pyc"} <= names
    for module in DEV_ONLY_MODULES:
        stem = module.rpartition("/")[2][:-3]
        assert not [n for n in names if n == module or n.endswith(f"/__pycache__/{stem}.cpython-314.pyc")
                    and n.startswith(module.rpartition("/")[0])], module
        assert module not in shipped_record
    assert "app/store/facade.py,sha256=x" in shipped_record
    lock = json.loads((out / "static/vendor/pyodide/pyodide-lock.json").read_text())
    assert lock["packages"]["agentbar"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_the_dev_only_modules_are_the_builds_and_no_shipped_module_needs_them():
    """Every dev-only hook lives in a module the build leaves out; a shipped module reaches one only
    through an import that may fail (the hook is then not installed)."""
    import ast

    root = Path(build.__file__).resolve().parents[1]
    assert sorted(build.DEV_ONLY) == sorted(DEV_ONLY_MODULES)
    assert all((root / module).is_file() for module in DEV_ONLY_MODULES)
    dev_modules = {module[:-3].replace("/", ".") for module in DEV_ONLY_MODULES}
    for path in sorted((root / "app").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in DEV_ONLY_MODULES:
            continue
        source = path.read_text()
        for hook in ("trace_save", "trace_splice", "agentbarCheckpoints", "SaveTrace"):
            assert hook not in source, (rel, hook)
        tree = ast.parse(source)
        guarded = {id(node) for block in ast.walk(tree) if isinstance(block, ast.Try)
                   and any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                           for h in block.handlers)
                   for stmt in block.body for node in ast.walk(stmt)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            else:
                continue
            assert not (names & dev_modules) or id(node) in guarded, (rel, sorted(names & dev_modules))
    from app.runtime import AgentRuntime
    from app.store import ThreadStore
    assert not hasattr(AgentRuntime, "trace") and not hasattr(ThreadStore, "trace_save")


def test_any_changed_file_changes_the_worker_and_only_its_manifest_entry(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    first = build.build(tmp_path / "a", root=tree, quiet=True)
    (tree / "static/boot.js").write_bytes(b"// boot, changed\n")
    second = build.build(tmp_path / "b", root=tree, quiet=True)
    assert first["version"] != second["version"]
    changed = {r for r in first["files"] if first["files"][r] != second["files"][r]}
    assert changed == {"static/boot.js", "index.html"}  # index.html carries the files' hash
    assert (tmp_path / "a/sw.js").read_bytes() != (tmp_path / "b/sw.js").read_bytes()


def test_the_csp_admits_only_the_origins_the_deployer_names(tree, tmp_path, monkeypatch):
    """DESIGN.md §16 (as §12): connect-src is the page's own origin unless the deployer names a server."""
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    assert "connect-src 'self';" in build.CSP
    out = tmp_path / "dist"
    build.build(out, root=tree, quiet=True, connect=["https://couch.example:6984/", "http://127.0.0.1:5984"])
    index = (out / "index.html").read_text()
    assert "connect-src 'self' https://couch.example:6984 http://127.0.0.1:5984;" in index
    assert "default-src 'none'" in index
    for bad in ["https://couch.example/db", "*", "'unsafe-inline'", "https://a.example; script-src *"]:
        with pytest.raises(SystemExit):
            build.csp([bad])


def test_the_build_records_its_headers_and_a_rebuild_can_keep_its_origins(tree, tmp_path, monkeypatch):
    """dist/headers.json: the headers a host sends with every file, the policy of dist/index.html; a
    rebuild with ``--keep-connect-src`` and no origins of its own admits the ones dist/ was built with."""
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    out = tmp_path / "dist"
    build.build(out, root=tree, quiet=True, connect=["http://127.0.0.1:5993"])
    headers = json.loads((out / "headers.json").read_text())
    policy = build.csp(["http://127.0.0.1:5993"])
    assert headers == {**build.headers(policy)}
    assert headers["Content-Security-Policy"] == policy + "; frame-ancestors 'none'"
    assert build.recorded_connect(out) == ["http://127.0.0.1:5993"]
    assert build.recorded_connect(tmp_path / "none") == []
    assert build.connect_origins([], "", out, keep=True) == ["http://127.0.0.1:5993"]
    assert build.connect_origins(["https://b.example"], "", out, keep=True) == ["https://b.example"]
    assert build.connect_origins([], "https://c.example", out, keep=True) == ["https://c.example"]
    assert build.connect_origins([], "", out, keep=False) == []
