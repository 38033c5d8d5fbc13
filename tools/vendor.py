"""Fetch, verify and lay out the offline runtime under ``static/vendor/``.

Everything the page loads comes from the project's own origin (DESIGN.md §1,
§2). This script, standard library only, is idempotent: a file already in
place with the pinned sha256 is neither fetched nor copied again.

- npm packages (``pyodide``, ``@pyscript/core``) come through ``npm pack`` by
  name and version; the tarball and every file taken from it are checked
  against ``vendor.lock.json``.
- Browser wheels (pydantic's closure with the wasm ``pydantic-core`` build,
  micropip, and markdown-it-py with mdurl, which the app loads after start-up)
  come through ``pip download`` by name and version, checked the same way. Each
  pure-Python one is served with Pyodide's own bytecode added (``with_bytecode``):
  what the page imports is never compiled in the page.
- The app itself is packed as a wheel (``agentbar``) so that Pyodide fetches it
  in parallel with pydantic while it boots, instead of PyScript fetching each
  file after the interpreter is ready (DESIGN.md §2).
- ``static/vendor/pyodide/snapshot.bin.gz``: the interpreter's memory snapshot, made here under
  Node when Pyodide changed (``tools/snapshot.py``, DESIGN.md §13).
- ``static/vendor/pyodide/pyodide-lock.json`` is generated from the stock lock:
  it lists exactly the wheels served, each with the sha256 of the served file
  (a mismatch makes the page hang before ready, DESIGN.md §2).

Usage::

    python tools/vendor.py          # fetch what is missing, verify, build the app wheel
    python tools/vendor.py --pin    # maintainers: rewrite vendor.lock.json from fresh downloads

Raises ``SystemExit`` with a message naming the file on any checksum mismatch
or failed download.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK_PATH = ROOT / "vendor.lock.json"
CACHE = ROOT / ".cache" / "vendor"
VENDOR = ROOT / "static" / "vendor"
PYODIDE_DIR = VENDOR / "pyodide"
WASM_PLATFORM = ["--platform", "pyemscripten_2026_0_wasm32", "--python-version", "3.14",
                 "--implementation", "cp", "--abi", "cp314"]
APP_PACKAGE = "app"
APP_DIST = "agentbar"


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(path: Path, expected: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise SystemExit(f"vendor: sha256 mismatch for {path.name}: expected {expected}, got {actual}")


def _npm_tarball(name: str, version: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / (name.lstrip("@").replace("/", "-") + f"-{version}.tgz")
    if not tarball.exists():
        print(f"vendor: npm pack {name}@{version}", flush=True)
        subprocess.run(["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", str(CACHE)],
                       check=True, stdout=subprocess.DEVNULL)
    return tarball


def _wheel(name: str, version: str, file_name: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / file_name
    if not path.exists():
        print(f"vendor: pip download {name}=={version}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        *WASM_PLATFORM, "-d", str(CACHE), f"{name}=={version}"], check=True)
    if not path.exists():
        raise SystemExit(f"vendor: pip did not produce {file_name}")
    return path


def _place(source_bytes: bytes | Path, dest: Path, expected: str | None) -> None:
    """Write ``dest`` unless it already holds the expected bytes; verify after."""
    if dest.exists() and expected and sha256_of(dest) == expected:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(source_bytes, Path):
        shutil.copyfile(source_bytes, dest)
    else:
        dest.write_bytes(source_bytes)
    if expected:
        _check(dest, expected)


def vendor_npm(entry: dict) -> None:
    """Lay out the pinned files of one npm package under ``entry["dest"]``."""
    dest_dir = ROOT / entry["dest"]
    if all((dest_dir / rel).exists() and sha256_of(dest_dir / rel) == sha for rel, sha in entry["files"].items()):
        return
    tarball = _npm_tarball(entry["name"], entry["version"])
    _check(tarball, entry["sha256"])
    with tarfile.open(tarball) as archive:
        for rel, sha in entry["files"].items():
            member = archive.extractfile(f"package/{entry['strip']}{rel}")
            if member is None:
                raise SystemExit(f"vendor: {rel} missing from {tarball.name}")
            _place(member.read(), dest_dir / rel, sha)


def vendor_wheels(entries: list[dict]) -> None:
    """Place the browser wheels next to ``pyodide.mjs``: each pinned download, checked against its
    sha256, and served as ``with_bytecode`` makes it (a pure-Python wheel with Pyodide's own ``.pyc``
    added; the file as pinned when there is no bytecode yet). Rewritten only when its bytes change."""
    for entry in entries:
        source = _wheel(entry["name"], entry["version"], entry["file"])
        _check(source, entry["sha256"])
        data = with_bytecode(source) if entry["file"].endswith("-none-any.whl") else None
        dest = PYODIDE_DIR / entry["file"]
        if data is None:
            _place(source, dest, entry["sha256"])
        elif not dest.exists() or dest.read_bytes() != data:
            _place(data, dest, None)


def with_bytecode(wheel: Path) -> bytes | None:
    """The pure-Python ``wheel`` with an unchecked-hash ``.pyc`` beside each module, compiled by the
    browser's own Python (``tools/precompile.py``) and listed in its ``RECORD``, so the page imports
    it without compiling the sources (DESIGN.md §13: ``import micropip`` took 130-550 ms in one task
    after ready, ``import markdown_it`` about 100 ms, pydantic's modules are compiled at every start).
    ``None`` when no bytecode could be made (no Node, or Pyodide not vendored yet)."""
    try:
        from tools.precompile import compiled
    except ImportError:  # run as a script: tools/ is on the path itself
        from precompile import compiled

    with zipfile.ZipFile(wheel) as archive:
        files = [(info.filename, archive.read(info)) for info in archive.infolist() if not info.is_dir()]
    pyc = compiled({name: data for name, data in files if name.endswith(".py")})
    if not pyc:
        return None
    added = sorted(pyc.items())
    out = []
    for name, data in files:
        if name.endswith(".dist-info/RECORD"):
            data = data.rstrip(b"\n") + b"\n" + _record_rows(added).encode()
        out.append((name, data))
    return _pack(out + added)


def _record_rows(files: list[tuple[str, bytes]]) -> str:
    """``RECORD`` lines (``name,sha256=…,size``) of ``files``."""
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    return record.getvalue()


def _pack(files: list[tuple[str, bytes]]) -> bytes:
    """A zip of ``files`` in that order, with fixed time stamps: the same files give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def build_app_wheel(dest_dir: Path = PYODIDE_DIR) -> Path:
    """Pack ``app/`` (with its locale JSON) as a pure-Python wheel; reproducible bytes.

    Returns the wheel's path in ``dest_dir`` (``static/vendor/pyodide``, where the generated lock
    must then name its sha256: ``write_pyodide_lock``). Rewritten only when its content changes.
    """
    version = _project_version()
    tag = f"{APP_DIST}-{version}"
    files: list[tuple[str, bytes]] = []
    for path in sorted((ROOT / APP_PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".json"}:
            files.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    try:  # bytecode made by the browser's own Python (DESIGN.md §13)
        from tools.precompile import compiled
    except ImportError:  # run as a script: tools/ is on the path itself
        from precompile import compiled

    files += sorted(compiled(dict(files)).items())
    dist_info = f"{tag}.dist-info"
    files.append((f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {APP_DIST}\nVersion: {version}\n".encode()))
    files.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: agentbar-vendor\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    files.append((f"{dist_info}/RECORD", (_record_rows(files) + f"{dist_info}/RECORD,,\n").encode()))
    dest = dest_dir / f"{tag}-py3-none-any.whl"
    data = _pack(files)
    if not dest.exists() or dest.read_bytes() != data:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return dest


def _project_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def write_pyodide_lock(lock: dict, app_wheel: Path) -> None:
    """Generate ``pyodide-lock.json`` listing exactly the served wheels.

    Starts from the stock lock's ``info`` and entries (for ``depends`` and
    ``imports``), replaces file name, version and sha256 with the served file's,
    and adds the app wheel. Only packages that are served are listed.
    """
    tarball = _npm_tarball("pyodide", lock["npm"][0]["version"])
    with tarfile.open(tarball) as archive:
        stock = json.load(archive.extractfile("package/pyodide-lock.json"))
    packages = {}
    for entry in lock["wheels"]:
        key = entry["lock_name"]
        # A wheel the stock lock does not know (loaded after start-up, e.g.
        # markdown-it-py or pyuegc) is described by its own vendor.lock.json entry: "imports", "depends".
        base = dict(stock["packages"].get(key) or {
            "name": entry["name"], "install_dir": "site", "package_type": "package", "unvendored_tests": False,
            "imports": [key], "depends": []})
        base.update(file_name=entry["file"], version=entry["version"], sha256=sha256_of(PYODIDE_DIR / entry["file"]))
        for field in ("imports", "depends"):
            if field in entry:
                base[field] = entry[field]
        packages[key] = base
    packages[APP_DIST] = {
        "name": APP_DIST, "version": _project_version(), "file_name": app_wheel.name,
        "install_dir": "site", "sha256": sha256_of(app_wheel), "package_type": "package",
        "imports": [APP_PACKAGE], "depends": ["pydantic"], "unvendored_tests": False,
    }
    text = json.dumps({"info": stock["info"], "packages": packages}, indent=1, sort_keys=True)
    dest = PYODIDE_DIR / "pyodide-lock.json"
    if not dest.exists() or dest.read_text() != text:
        dest.write_text(text)


def pin(lock: dict) -> None:
    """Maintainers: recompute every sha256 in ``vendor.lock.json`` from fresh downloads."""
    for entry in lock["npm"]:
        tarball = _npm_tarball(entry["name"], entry["version"])
        entry["sha256"] = sha256_of(tarball)
        with tarfile.open(tarball) as archive:
            prefix = f"package/{entry['strip']}"
            names = [m.name[len(prefix):] for m in archive.getmembers()
                     if m.isfile() and m.name.startswith(prefix)]
            wanted = entry.get("include")
            chosen = sorted(n for n in names if (n in wanted if wanted else not n.endswith(".map")))
            entry["files"] = {n: hashlib.sha256(archive.extractfile(prefix + n).read()).hexdigest() for n in chosen}
    for entry in lock["wheels"]:
        entry["sha256"] = sha256_of(_wheel(entry["name"], entry["version"], entry["file"]))
    LOCK_PATH.write_text(json.dumps(lock, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pin", action="store_true", help="rewrite vendor.lock.json from fresh downloads")
    args = parser.parse_args(argv)
    lock = json.loads(LOCK_PATH.read_text())
    if args.pin:
        pin(lock)
    for entry in lock["npm"]:
        vendor_npm(entry)
    vendor_wheels(lock["wheels"])
    first = not (PYODIDE_DIR / "pyodide-lock.json").is_file()  # Pyodide under Node (precompile) needs it
    write_pyodide_lock(lock, build_app_wheel())
    if first:  # those wheels were packed before Pyodide could start: pack them again with their .pyc files
        vendor_wheels(lock["wheels"])
        write_pyodide_lock(lock, build_app_wheel())
    try:
        from tools import snapshot
    except ImportError:  # run as a script: tools/ is on sys.path
        import snapshot
    snapshot.make()  # the interpreter's memory snapshot the page boots from, when Pyodide changed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
