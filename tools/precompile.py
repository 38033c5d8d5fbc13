"""Bytecode of the app's modules for the browser's Python (DESIGN.md §13: start-up levers).

The page's Python is Pyodide's CPython 3.14; this machine's is another version,
whose ``.pyc`` files the browser could not use. So the vendored Pyodide itself
compiles them, under Node (``tools/precompile.mjs``), as *unchecked-hash*
``.pyc`` files (PEP 552: read without comparing the source's time stamp, which
unpacking the wheel does not keep). Results are cached under ``.cache/pyc/`` by
the sha256 of each source, so only changed modules are compiled again.

``compiled(sources)`` maps ``{"app/x.py": source bytes}`` to
``{"app/__pycache__/x.cpython-314.pyc": bytes}``; it returns ``{}`` (and the wheel
ships sources only, as before) when Node or the vendored Pyodide is missing or
fails. Measured gain: see docs/performance-before-snapshot.md, "First paint and start-up".
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "pyc"
PYODIDE_DIR = ROOT / "static" / "vendor" / "pyodide"
SCRIPT = Path(__file__).with_name("precompile.mjs")
SITE = "/lib/python3.14/site-packages"
"""Where Pyodide unpacks the wheel: the file names the bytecode carries (tracebacks)."""
TAG = "cpython-314"


def _pyc_name(path: str) -> str:
    parent, _, name = path.rpartition("/")
    return f"{parent}/__pycache__/{name[:-3]}.{TAG}.pyc"


def compiled(sources: dict[str, bytes], *, quiet: bool = True) -> dict[str, bytes]:
    """``{wheel path of a .pyc: bytes}`` for each ``.py`` in ``sources`` (module docstring)."""
    node = shutil.which("node")
    if node is None or not (PYODIDE_DIR / "pyodide.mjs").is_file() or not (PYODIDE_DIR / "pyodide-lock.json").is_file():
        return {}  # no Pyodide to start under Node yet (tools/vendor.py packs the wheel again once it has its lock)
    digests = {path: hashlib.sha256(data).hexdigest() for path, data in sources.items() if path.endswith(".py")}
    missing = {path: digest for path, digest in digests.items() if not (CACHE / f"{digest}.pyc").is_file()}
    if missing:
        with tempfile.TemporaryDirectory() as tmp:
            jobs = []
            for path, digest in missing.items():
                src = Path(tmp) / f"{digest}.py"
                src.write_bytes(sources[path])
                jobs.append({"source": str(src), "name": f"{SITE}/{path}", "out": str(Path(tmp) / f"{digest}.pyc")})
            (Path(tmp) / "jobs.json").write_text(json.dumps(jobs))
            try:
                subprocess.run([node, str(SCRIPT), str(PYODIDE_DIR) + "/", str(Path(tmp) / "jobs.json")],
                               check=True, capture_output=True, timeout=600)
            except (OSError, subprocess.SubprocessError) as error:
                detail = getattr(error, "stderr", b"") or b""
                print(f"precompile: skipped ({error}) {detail.decode(errors='replace')[-400:]}", file=sys.stderr)
                return {}
            CACHE.mkdir(parents=True, exist_ok=True)
            for job in jobs:
                out = Path(job["out"])
                shutil.copyfile(out, CACHE / out.name)
        if not quiet:
            print(f"precompile: {len(missing)} module(s) compiled by Pyodide")
    return {_pyc_name(path): (CACHE / f"{digest}.pyc").read_bytes() for path, digest in digests.items()}
