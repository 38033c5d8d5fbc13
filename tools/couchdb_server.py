"""Install and start the CouchDB-protocol server of the sync end-to-end tests (DESIGN.md §16).

The sync tests replicate against a real CouchDB-protocol server on 127.0.0.1 that the suite starts
itself: ``pouchdb-server`` from npm, a stand-in for Apache CouchDB (its last release is from 2019;
users run CouchDB). Standard library only, idempotent:

- the install: ``npm ci`` of ``tools/pouchdb-server/package.json`` and its ``package-lock.json``
  (``pouchdb-server`` pinned by version, every package of the tree by its lock ``integrity``; npm
  leaves the install scripts of the optional ``leveldown`` and ``sqlite3`` unrun, which
  ``--in-memory`` does not need) into ``<cache>/pouchdb-server/<lock sha256[:16]>/``, outside the work
  tree (``$AGENTBAR_CACHE``, else ``$XDG_CACHE_HOME/agentbar``, else ``~/.cache/agentbar``, as
  ``tools/llama_server.py``); a second run finds it and does nothing;
- ``start(port)``: ``pouchdb-server --in-memory --port N --host 127.0.0.1`` in a temporary working
  folder (it writes ``config.json`` and ``log.txt`` there), waiting until ``GET /`` answers its welcome
  (``{"express-pouchdb": "Welcome!", …}``); ``CouchServer.stop()`` ends it and removes the folder.

Usage::

    python tools/couchdb_server.py           # install when missing; print the binary's path
    python tools/couchdb_server.py --check   # exit 1 when it is not installed (no install)
    python tools/couchdb_server.py --serve [--port N]   # run one (in memory) until Ctrl+C, to try sync

Raises ``SystemExit`` when npm fails or the installed version is not the pinned one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

if __package__:  # imported as tools.couchdb_server (tests)
    from tools.npm_tree import NpmTree
else:  # run as python tools/couchdb_server.py
    from npm_tree import NpmTree

HERE = Path(__file__).resolve().parent / "pouchdb-server"
PACKAGE = "pouchdb-server"
START_TIMEOUT_S = 30.0
TREE = NpmTree(HERE, PACKAGE, "pouchdb-server", "couchdb_server")


def pinned() -> tuple[str, str]:
    """``(version, integrity)`` of ``pouchdb-server`` as the committed lock pins it."""
    entry = TREE.lock_entry()
    return entry["version"], entry["integrity"]


def install_dir() -> Path:
    """Where the pinned tree is installed: keyed by the lock's sha256."""
    return TREE.install_dir()


def binary() -> Path:
    """The installed ``pouchdb-server`` command (it may not exist yet)."""
    return install_dir() / "node_modules" / ".bin" / PACKAGE


def installed() -> bool:
    """True when the pinned version is installed (its ``package.json`` says so) with its command."""
    return TREE.installed_version() == pinned()[0] and binary().exists()


def install() -> Path:
    """``npm ci`` the pinned tree when it is not installed; returns the command's path."""
    if not installed():
        TREE.npm_ci()
        if not binary().exists():
            raise SystemExit(f"couchdb_server: {install_dir()} holds no {PACKAGE} command")
    return binary()


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def welcome(origin: str, timeout: float = 2.0) -> dict | None:
    """The parsed ``GET /`` of ``origin``, or None when it does not answer JSON."""
    try:
        with urllib.request.urlopen(origin + "/", timeout=timeout) as answer:
            return json.loads(answer.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


@dataclass
class CouchServer:
    """A running ``pouchdb-server --in-memory``: ``origin`` (``http://127.0.0.1:<port>``), ``port``."""

    process: subprocess.Popen
    port: int
    folder: Path

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """End the server (its process group) and remove its working folder."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(port: int | None = None) -> CouchServer:
    """Start ``pouchdb-server --in-memory`` on 127.0.0.1 (``port``, else a free one) in a temporary
    folder and wait (``START_TIMEOUT_S``) until it answers the CouchDB welcome; raises
    ``RuntimeError`` when it does not."""
    command = install()
    port = port or free_port()
    folder = Path(tempfile.mkdtemp(prefix="agentbar-couch-"))
    log = (folder / "server.out").open("wb")
    process = subprocess.Popen([str(command), "--in-memory", "--port", str(port), "--host", "127.0.0.1"],
                               cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = CouchServer(process, port, folder)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        body = welcome(server.origin, timeout=1.0)
        if isinstance(body, dict) and ("couchdb" in body or "express-pouchdb" in body):
            return server
        if process.poll() is not None:
            break
        time.sleep(0.2)
    output = (folder / "server.out").read_text(errors="replace")[-2000:]
    server.stop()
    raise RuntimeError(f"pouchdb-server did not start on port {port}: {output}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when not installed (install nothing)")
    parser.add_argument("--serve", action="store_true",
                        help="install when missing, then run a server (in memory, 127.0.0.1) until interrupted")
    parser.add_argument("--port", type=int, default=5984, help="with --serve: its port (default 5984)")
    args = parser.parse_args(argv)
    if args.check:
        return 0 if installed() else 1
    print(install())
    if args.serve:
        def interrupted(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, interrupted)  # a plain kill ends the server it started too
        server = start(args.port)
        print(f"A CouchDB-protocol server (pouchdb-server, in memory) is running at {server.origin}; "
              "Ctrl+C ends it and everything it holds.", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
