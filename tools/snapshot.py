"""Make the interpreter's memory snapshot the page boots from (DESIGN.md §13, "ready back under the
floor's shadow").

A bare Pyodide spends most of its start-up initialising the interpreter. Pyodide can save that
state as a *memory snapshot* (its ``_makeSnapshot`` / ``makeMemorySnapshot`` / ``_loadSnapshot``
options) and start from it instead. This module makes one under Node from the vendored Pyodide,
with the standard-library modules of ``IMPORTS`` already imported, and writes

- ``static/vendor/pyodide/snapshot.bin.gz``: the snapshot (the wasm memory, about 31.5 MB),
  gzip-compressed (about 7 MB) so that any static host serves it small; the page inflates it with
  the browser's ``DecompressionStream`` (``static/pyodide-boot.mjs``);
- ``static/vendor/pyodide/snapshot.json``: what it was made from (``inputs``: sha256 of the
  Pyodide files, this module's ``IMPORTS`` and ``tools/snapshot.mjs``), its digests (``sha256`` of
  the file as sent, ``inflatedSha256`` of the memory: the page checks the bytes it got against one
  of them before restoring, whichever it has, and boots as usual on a mismatch) and its figures.

It is made again only when ``inputs`` changed (idempotent, about 3 s). It is not a pinned vendored
file: it is built here, like the app wheel. Pyodide itself refuses a snapshot of another build
(the build id in its header), and the page then boots normally.

Only standard-library modules are imported before the snapshot: Pyodide refuses one made after
``loadPackage`` (a dynamic library's JS state is not in the wasm memory), so pydantic and the app
wheel load after the restore. What a restored interpreter shares with every other restore (the
``random`` module's seed, ``time.timezone``/``tzname``, ``LANG``, string hashes) is listed in
``app/process_state.py``, which puts right what matters at ``main()``.

Usage: ``python tools/snapshot.py [--force]``; called by ``tools/vendor.py``. Without ``node`` on
the PATH it prints why and makes nothing: the page boots without a snapshot.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file's bytes (the standard library's ``hashlib.file_digest``: this module is
    imported by ``tools/vendor.py``, so it imports nothing from there)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


ROOT = Path(__file__).resolve().parent.parent
PYODIDE_DIR = ROOT / "static" / "vendor" / "pyodide"
SCRIPT = Path(__file__).with_suffix(".mjs")
SNAPSHOT = PYODIDE_DIR / "snapshot.bin.gz"
MANIFEST = PYODIDE_DIR / "snapshot.json"
INPUT_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")

IMPORTS = (
    # what pydantic's import and one model definition add to a bare interpreter (measured: a bare
    # ``loadPyodide`` against one after ``loadPackage(["pydantic"])`` and a model, under Node)
    "datetime", "decimal", "email", "fractions", "hmac", "html", "html.entities", "importlib.metadata",
    "ipaddress", "numbers", "secrets", "sysconfig", "tarfile", "unicodedata", "uuid", "zoneinfo",
    # the app's own standard-library imports, before ready and after (``grep -rh '^import\\|^from' app``)
    "asyncio", "base64", "codecs", "collections.abc", "colorsys", "contextlib", "contextvars",
    "dataclasses", "difflib", "email.utils", "functools", "gc", "hashlib", "importlib.util", "inspect",
    "io", "json", "json.decoder", "logging", "math", "pathlib", "random", "re", "struct", "time",
    "traceback", "types", "typing", "urllib.parse", "zipfile", "zlib",
)


def inputs(pyodide_dir: Path = PYODIDE_DIR) -> dict[str, str]:
    """What a snapshot is made from: ``{name: sha256}`` of the Pyodide files, the maker script, and
    the import list (``"imports"``). Raises ``FileNotFoundError`` when Pyodide is not laid out."""
    found = {name: sha256_of(pyodide_dir / name) for name in INPUT_FILES}
    found["snapshot.mjs"] = sha256_of(SCRIPT)
    found["imports"] = hashlib.sha256(",".join(IMPORTS).encode()).hexdigest()
    return found


def is_current(pyodide_dir: Path = PYODIDE_DIR) -> bool:
    """True when ``snapshot.bin.gz`` exists and ``snapshot.json`` names the current ``inputs``, the
    file's digest and the inflated memory's digest."""
    manifest, snapshot = pyodide_dir / MANIFEST.name, pyodide_dir / SNAPSHOT.name
    if not (manifest.is_file() and snapshot.is_file()):
        return False
    try:
        recorded = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    return (recorded.get("inputs") == inputs(pyodide_dir) and recorded.get("sha256") == sha256_of(snapshot)
            and isinstance(recorded.get("inflatedSha256"), str))


def make(pyodide_dir: Path = PYODIDE_DIR, force: bool = False) -> dict | None:
    """Make the snapshot when missing or stale; returns its manifest, or None when it cannot be made
    here (no ``node``; Pyodide not laid out). Raises ``subprocess.CalledProcessError`` when Node fails."""
    node = shutil.which("node")
    if not (pyodide_dir / "pyodide.mjs").is_file():
        return None
    if not force and is_current(pyodide_dir):
        return json.loads((pyodide_dir / MANIFEST.name).read_text())
    if node is None:
        print("snapshot: no node on the PATH; the page will boot without a memory snapshot", flush=True)
        return None
    with tempfile.TemporaryDirectory(prefix="agentbar-snapshot-") as tmp:
        raw = Path(tmp) / "snapshot.bin"
        done = subprocess.run([node, str(SCRIPT), str(pyodide_dir) + "/", str(raw), ",".join(IMPORTS)],
                              check=True, capture_output=True, text=True, cwd=tmp)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        data = raw.read_bytes()
    packed = gzip.compress(data, compresslevel=6, mtime=0)
    part = pyodide_dir / (SNAPSHOT.name + ".part")
    part.write_bytes(packed)
    part.replace(pyodide_dir / SNAPSHOT.name)
    manifest = {"inputs": inputs(pyodide_dir), "sha256": hashlib.sha256(packed).hexdigest(),
                "inflatedSha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data), "gzipBytes": len(packed), "imports": list(IMPORTS), "made": figures}
    (pyodide_dir / MANIFEST.name).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"snapshot: {len(data) / 1e6:.1f} MB ({len(packed) / 1e6:.1f} MB gzip), "
          f"{len(IMPORTS)} modules imported, made in {figures['totalMs']} ms", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="make it again even when current")
    args = parser.parse_args(argv)
    make(force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
