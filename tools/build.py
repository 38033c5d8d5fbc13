"""Build ``dist/``: the deployable, offline folder (DESIGN.md §11).

What goes in (``select_files``): ``index.html``, ``pyscript.toml``,
``app/locales/*.json`` (the loading screen reads them before Python runs) and
everything under ``static/`` except

- vendored test libraries (``vendor.lock.json`` entries with ``"test_only"``,
  laid out under ``static/vendor/test/``), ``*.map`` files and the service
  worker template ``static/sw.js`` (written to ``dist/sw.js`` instead);
- PyScript chunks that only its editor, terminal, game and archive features
  import (``PYSCRIPT_UNUSED``): the page has none of them.

The app's Python source ships inside the app wheel, less the dev-only modules (``DEV_ONLY``:
hooks that only the development server's tests and the benchmark use); benchmark hooks live in
``bench/`` and are never shipped.

Transformations (the dev tree is left as it is):

- the app wheel loses the ``DEV_ONLY`` modules, their compiled ``.pyc`` files and their
  ``RECORD`` rows (``without_dev_only``);
- zip files Pyodide opens (``python_stdlib.zip`` and the wheels) are re-packed
  *stored* (same members, no deflate) so Brotli compresses the whole archive:
  about 6.0 MB instead of 7.6 MB on the wire; ``pyodide-lock.json`` gets the
  re-packed wheels' sha256 (DESIGN.md §2: every file in the lock carries the
  sha256 of the file served).
- ``index.html`` gets ``<meta name="agentbar-build">`` (boot.js registers the
  service worker only then) and the Content-Security-Policy ``CSP`` as a meta
  tag.

Output: every file also as ``.br`` (quality 11) and ``.gz`` (level 9),
``manifest.json`` (``{"version", "files": {path: {"sha256", "size"}}}``, the
content-hashed manifest), ``headers.json`` (the response headers of this build, ``headers``: a host
sends them with every file) and ``sw.js`` (the manifest inlined as ``{"version", "files": {path:
sha256}, "onDemand": [path]}``, so any change of any file changes the worker's bytes and the
browser installs the new version; ``onDemand``: the files of ``ON_DEMAND``, not precached).
Compressed bytes are cached under ``.cache/build/`` by content sha256, so a
rebuild recompresses only what changed.

Usage::

    python tools/build.py [--out dist] [--quiet] [--connect-src ORIGIN]... [--keep-connect-src]

Raises ``SystemExit`` when the vendored runtime is missing (run tools/vendor.py).
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import vendor  # noqa: E402

COMPRESS_CACHE = ROOT / ".cache" / "build"
SW_TEMPLATE = "static/sw.js"
BUILD_META = "agentbar-build"

PYSCRIPT_UNUSED = [
    "codemirror*", "index-*.js", "xterm*", "mpy-*.js", "py-[A-Z]*.js", "toml-Blg*.js", "zip-*.js",
    "storage.js", "service-worker.js",
]
"""Globs under static/vendor/pyscript/ reached only from py-editor, py-terminal, py-game,
archive ``[files]`` or PyScript's own worker mode (checked: the page requests none of them)."""

REPACK = ["static/vendor/pyodide/python_stdlib.zip", "static/vendor/pyodide/*.whl"]

ON_DEMAND = ["static/sync.js", "static/sync-worker.js", "static/vendor/pouchdb/*"]
"""Globs of files that only sync loads (``app.browser.sync_setup.SCRIPTS``, DESIGN.md §16: with sync
off nothing of it is loaded). The worker does not precache them; it keeps each at its first use."""

APP_WHEEL = "static/vendor/pyodide/agentbar-*.whl"

DEV_ONLY = ["app/store/trace.py", "app/runtime/trace.py", "app/browser/dev_hooks.py"]
"""Modules of the app wheel that dist/ leaves out (DESIGN.md §15: nothing the benchmark needs ships):
a save timed step by step (``trace_save``), the runtime's phase observers (``trace``) and
``window.agentbarCheckpoints``. No shipped module imports them but through an import that may fail
(``tests/unit/test_build.py`` checks both)."""


def _dev_only(member: str) -> bool:
    """Whether wheel ``member`` is a ``DEV_ONLY`` module or its compiled ``__pycache__/<name>.<tag>.pyc``."""
    if member in DEV_ONLY:
        return True
    folder, _, name = member.rpartition("/")
    parent, _, cache = folder.rpartition("/")
    return cache == "__pycache__" and name.endswith(".pyc") and f"{parent}/{name.split('.')[0]}.py" in DEV_ONLY


def without_dev_only(data: bytes) -> bytes:
    """The app wheel ``data`` less its ``DEV_ONLY`` members (``_dev_only``) and their ``RECORD`` rows;
    the other members as they were, in their order."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if _dev_only(info.filename):
                continue
            body = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                rows = body.decode().splitlines(keepends=True)
                body = "".join(r for r in rows if not _dev_only(r.split(",", 1)[0])).encode()
            out.writestr(info, body)
    return buffer.getvalue()


def csp(connect: list[str] | tuple[str, ...] = ()) -> str:
    """The Content-Security-Policy of the build; ``connect``: origins besides the page's own that the
    page may connect to (a model endpoint, DESIGN.md §12; the sync server, §16), each
    ``http(s)://host[:port]``. Raises ``SystemExit`` for anything else (a path, a wildcard, a quote).

    >>> "connect-src 'self' https://couch.example:6984;" in csp(["https://couch.example:6984/"])
    True
    """
    origins = []
    for origin in connect:
        origin = origin.strip().rstrip("/")
        if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:\d{1,5})?|https?://\[[0-9A-Fa-f:]+\](:\d{1,5})?", origin):
            raise SystemExit(f"build: --connect-src takes an origin (http(s)://host[:port]), not {origin!r}")
        origins.append(origin)
    return "; ".join([
        "default-src 'none'",
        "script-src 'self' 'wasm-unsafe-eval' 'unsafe-eval'",
        "style-src 'self'",
        "img-src 'self' data:",  # a scene's images are data: URLs (app.checkpoints.slides.safe_image)
        " ".join(["connect-src 'self'", *origins]),
        "worker-src 'self'",
        "manifest-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ])


CSP = csp()
"""The strictest policy the page runs under (README "Deploying"); header-only directives
(``frame-ancestors``) are listed in ``HEADERS``. ``--connect-src ORIGIN`` (or
``AGENTBAR_CONNECT_SRC``, origins separated by spaces) admits a model endpoint or a sync server."""

HEADERS_FILE = "headers.json"
"""Written into dist/ by ``build``: ``headers(policy)`` of that build as a JSON object (name → value)."""


def headers(policy: str = CSP) -> dict[str, str]:
    """Response headers a host sends with every file of a build whose policy is ``policy`` (``csp``):
    the policy plus ``frame-ancestors`` (a header-only directive). ``build`` writes them to
    ``dist/headers.json``; tools/serve.py --dist sends what that file holds (README "Deploying")."""
    return {
        "Content-Security-Policy": policy + "; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


HEADERS = headers(CSP)
"""``headers`` of a build admitting no other origin (``--connect-src`` not given)."""


def recorded_connect(out: Path) -> list[str]:
    """The origins besides the page's own that the build in ``out`` admits, read from its
    ``headers.json``; ``[]`` when ``out`` holds no build (or one that records none)."""
    try:
        policy = json.loads((out / HEADERS_FILE).read_text())["Content-Security-Policy"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    for directive in policy.split(";"):
        words = directive.split()
        if words[:2] == ["connect-src", "'self'"]:
            return words[2:]
    return []


def connect_origins(given: list[str], env: str, out: Path, keep: bool = False) -> list[str]:
    """The origins a build admits: ``env`` (``AGENTBAR_CONNECT_SRC``, separated by spaces) and then
    ``given`` (``--connect-src``); when both are empty and ``keep`` (``--keep-connect-src``, what
    ``bash tools/dev.sh serve --dist`` rebuilds with), those of the build already in ``out``."""
    origins = [*env.split(), *given]
    return origins if origins or not keep else recorded_connect(out)


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def select_files(root: Path = ROOT) -> list[str]:
    """Paths (POSIX, relative to ``root``) that go into dist/, sorted; see the module docstring."""
    lock = json.loads((root / "vendor.lock.json").read_text())
    test_only = [e["dest"].rstrip("/") + "/" for e in lock["npm"] if e.get("test_only")]
    chosen = ["index.html", "pyscript.toml"]
    chosen += sorted(p.relative_to(root).as_posix() for p in (root / "app" / "locales").glob("*.json"))
    for path in sorted((root / "static").rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel == SW_TEMPLATE or rel.endswith(".map") or any(rel.startswith(t) for t in test_only):
            continue
        if rel.startswith("static/vendor/test/"):
            continue
        if rel.startswith("static/vendor/pyscript/") and any(fnmatch.fnmatch(path.name, g) for g in PYSCRIPT_UNUSED):
            continue
        chosen.append(rel)
    return chosen


def repack_stored(data: bytes) -> bytes:
    """The same zip members, stored (no deflate), fixed order and dates: Brotli then sees the raw bytes."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist():
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.external_attr = info.external_attr
            copy.compress_type = zipfile.ZIP_STORED
            out.writestr(copy, source.read(info))
    return buffer.getvalue()


def _compressed(data: bytes, kind: str, quality: int = 11) -> bytes:
    """``data`` as ``kind`` (``br`` at Brotli ``quality``, ``gz`` at level 9), cached by its sha256 (a
    quality other than 11 under a name of its own)."""
    suffix = kind if kind != "br" or quality == 11 else f"br{quality}"
    key = COMPRESS_CACHE / f"{sha256_bytes(data)}.{suffix}"
    if key.exists():
        return key.read_bytes()
    if kind == "br":
        import brotli

        out = brotli.compress(data, quality=quality)
    else:
        out = gzip.compress(data, compresslevel=9, mtime=0)
    key.parent.mkdir(parents=True, exist_ok=True)
    tmp = key.with_suffix(key.suffix + ".tmp")
    tmp.write_bytes(out)
    tmp.replace(key)
    return out


def _rewrite_index(html: str, files_hash: str, policy: str = CSP) -> str:
    head = (f'<meta charset="utf-8">\n  <meta http-equiv="Content-Security-Policy" content="{policy}">\n'
            f'  <meta name="{BUILD_META}" content="{files_hash}">')
    if '<meta charset="utf-8">' not in html:
        raise SystemExit("build: index.html has no <meta charset=\"utf-8\"> to anchor the build meta tags")
    return html.replace('<meta charset="utf-8">', head, 1)


def build(out: Path, root: Path = ROOT, quiet: bool = False, connect: list[str] | tuple[str, ...] = (),
          brotli_quality: int = 11) -> dict:
    """Write ``out`` (replacing it) and return the manifest ``{"version", "files"}``; ``connect``: origins
    the CSP admits besides the page's own (``csp``); ``brotli_quality``: 11 unless the build only has to
    work (the quick benchmark: quality 11 costs about 2 s of CPU a megabyte, cold)."""
    policy = csp(connect)
    if not (root / "static/vendor/pyodide/pyodide-lock.json").exists():
        raise SystemExit("build: static/vendor/ is not laid out; run tools/vendor.py first")
    contents: dict[str, bytes] = {rel: (root / rel).read_bytes() for rel in select_files(root)}

    repacked: dict[str, str] = {}
    for rel in list(contents):
        if fnmatch.fnmatch(rel, APP_WHEEL):
            contents[rel] = without_dev_only(contents[rel])
        if any(fnmatch.fnmatch(rel, g) for g in REPACK):
            contents[rel] = repack_stored(contents[rel])
            repacked[Path(rel).name] = sha256_bytes(contents[rel])
    lock_rel = "static/vendor/pyodide/pyodide-lock.json"
    lock = json.loads(contents[lock_rel])
    for package in lock["packages"].values():
        if package["file_name"] in repacked:
            package["sha256"] = repacked[package["file_name"]]
    contents[lock_rel] = json.dumps(lock, indent=1, sort_keys=True).encode()

    files_hash = sha256_bytes("".join(f"{r} {sha256_bytes(d)}\n" for r, d in sorted(contents.items())
                                      if r != "index.html").encode())[:16]
    contents["index.html"] = _rewrite_index(contents["index.html"].decode(), files_hash, policy).encode()
    files = {rel: {"sha256": sha256_bytes(data), "size": len(data)} for rel, data in sorted(contents.items())}
    version = sha256_bytes(json.dumps(files, sort_keys=True).encode())[:16]
    manifest = {"version": version, "files": files}

    on_demand = sorted(r for r in files if any(fnmatch.fnmatch(r, g) for g in ON_DEMAND))
    inlined = {"version": version, "files": {r: f["sha256"] for r, f in files.items()}, "onDemand": on_demand}
    worker = ("// Generated by tools/build.py from static/sw.js: the build's content-hashed manifest.\n"
              f"const BUILD = {json.dumps(inlined, indent=1)};\n" + (root / SW_TEMPLATE).read_text())
    contents["sw.js"] = worker.encode()
    contents["manifest.json"] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    contents[HEADERS_FILE] = (json.dumps(headers(policy), indent=1) + "\n").encode()

    if out.exists():
        shutil.rmtree(out)
    for rel, data in sorted(contents.items()):
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        if rel.endswith(".gz"):  # compressed already (the interpreter snapshot): served as it is
            continue
        for kind in ("br", "gz"):
            (out / f"{rel}.{kind}").write_bytes(_compressed(data, kind, brotli_quality))
    if not quiet:
        raw = sum(len(d) for d in contents.values())
        br = sum((out / f"{r}.br" if (out / f"{r}.br").exists() else out / r).stat().st_size for r in contents)
        print(f"build: {len(contents)} files in {out} (version {version}), {raw / 1e6:.2f} MB raw, "
              f"{br / 1e6:.2f} MB as Brotli", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "dist"))
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--connect-src", action="append", default=[], metavar="ORIGIN",
                        help="an origin the page may connect to (model endpoint, sync server); repeatable")
    parser.add_argument("--keep-connect-src", action="store_true",
                        help="with no origins given, admit those of the build already in --out")
    args = parser.parse_args(argv)
    connect = connect_origins(args.connect_src, os.environ.get("AGENTBAR_CONNECT_SRC", ""), Path(args.out),
                              keep=args.keep_connect_src)
    policy = csp(connect)  # checked before anything is built
    vendor.main([])  # idempotent: the pinned runtime and a current app wheel
    build(Path(args.out), quiet=args.quiet, connect=connect)
    if connect and not args.quiet:
        print(f"build: {policy.split('; ')[4]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
