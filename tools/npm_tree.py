"""One npm package tree pinned by a committed ``package.json`` and ``package-lock.json``, installed
with ``npm ci`` into ``<cache>/<name>/<lock sha256[:16]>/`` outside the work tree (the cache of
``tools/llama_server.py``): what the sync tests' server (``tools/couchdb_server.py``) and the
cross-browser suite's Firefox driver (``tools/engines.py``) install. Standard library only; a
second install finds the tree and does nothing; a failed one leaves no half-made tree (it is made
in a staging folder and moved in place).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__:  # imported as tools.npm_tree (tests, the other tools imported as tools.*)
    from tools.llama_server import cache_root
else:  # imported by a tool run as python tools/<tool>.py
    from llama_server import cache_root

__all__ = ["NpmTree"]


@dataclass(frozen=True)
class NpmTree:
    """The tree of ``package`` pinned by ``here``'s ``package.json`` and ``package-lock.json``,
    installed under ``<cache>/<name>/``; ``scripts``: whether npm runs the packages' install scripts.
    ``label`` prefixes the tool's messages."""

    here: Path
    package: str
    name: str
    label: str
    scripts: bool = True

    def lock_entry(self) -> dict:
        """The lock's entry of ``package`` (``version``, ``integrity``, …)."""
        lock = json.loads((self.here / "package-lock.json").read_text(encoding="utf-8"))
        return lock["packages"][f"node_modules/{self.package}"]

    def install_dir(self) -> Path:
        """Where the pinned tree is installed (it holds ``node_modules``): keyed by the lock's sha256."""
        digest = hashlib.sha256((self.here / "package-lock.json").read_bytes()).hexdigest()[:16]
        return cache_root() / self.name / digest

    def installed_version(self) -> str | None:
        """The version of ``package`` installed there (its ``package.json`` says), None when none."""
        manifest = self.install_dir() / "node_modules" / self.package / "package.json"
        try:
            return json.loads(manifest.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            return None

    def npm_ci(self) -> Path:
        """``npm ci`` the lock into a staging folder moved in place of ``install_dir()``; returns it.
        Raises ``SystemExit`` when npm fails or the installed version is not the pinned one."""
        target = self.install_dir()
        version = self.lock_entry()["version"]
        staging = target.with_name(target.name + f".part{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(self.here / name, staging / name)
        print(f"{self.label}: npm ci {self.package}@{version} into {target}", file=sys.stderr, flush=True)
        command = ["npm", "ci", *([] if self.scripts else ["--ignore-scripts"]), "--no-audit", "--no-fund",
                   "--loglevel=error"]
        done = subprocess.run(command, cwd=staging, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise SystemExit(f"{self.label}: npm ci failed ({done.returncode})")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        if self.installed_version() != version:
            raise SystemExit(f"{self.label}: {target} does not hold {self.package}@{version}")
        return target
