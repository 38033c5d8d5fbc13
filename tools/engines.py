"""Install the drivers of the cross-browser end-to-end suite (``tests/browsers``, DESIGN.md §2).

The suite runs the app in Firefox ESR and WebKitGTK, both Debian's (``firefox-esr``,
``webkit2gtk-driver``'s ``WebKitWebDriver``, under ``xvfb-run``; ``tools/dev.sh`` installs them with
apt). Firefox is driven by ``puppeteer-core`` over WebDriver BiDi (Node), pinned by
``tests/browsers/package.json`` and its ``package-lock.json``; WebKit by Selenium (pinned in
``requirements-dev.txt``). Standard library only, idempotent: ``npm ci`` of the lock into
``<cache>/engines/<lock sha256[:16]>/`` outside the work tree (the cache of ``tools/llama_server.py``),
with install scripts off (puppeteer-core downloads no browser); a second run does nothing.

Usage::

    python tools/engines.py           # install when missing; print the install folder
    python tools/engines.py --check   # exit 1 when it is not installed (no install)

Raises ``SystemExit`` when npm fails or the installed version is not the pinned one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

if __package__:  # imported as tools.engines (tests)
    from tools.llama_server import cache_root
else:  # run as python tools/engines.py
    from llama_server import cache_root

HERE = Path(__file__).resolve().parents[1] / "tests" / "browsers"
PACKAGE = "puppeteer-core"


def pinned() -> str:
    """The version of ``puppeteer-core`` the committed lock pins."""
    lock = json.loads((HERE / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"][f"node_modules/{PACKAGE}"]["version"]


def install_dir() -> Path:
    """Where the pinned tree is installed (it holds ``node_modules``): keyed by the lock's sha256."""
    digest = hashlib.sha256((HERE / "package-lock.json").read_bytes()).hexdigest()[:16]
    return cache_root() / "engines" / digest


def installed() -> bool:
    """True when the pinned ``puppeteer-core`` is installed (its ``package.json`` says so)."""
    manifest = install_dir() / "node_modules" / PACKAGE / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("version") == pinned()
    except (OSError, ValueError):
        return False


def install() -> Path:
    """``npm ci`` the pinned tree when it is not installed; returns the install folder."""
    target = install_dir()
    if installed():
        return target
    staging = target.with_name(target.name + f".part{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / name, staging / name)
    print(f"engines: npm ci {PACKAGE}@{pinned()} into {target}", file=sys.stderr, flush=True)
    done = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=staging, stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise SystemExit(f"engines: npm ci failed ({done.returncode})")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    if not installed():
        raise SystemExit(f"engines: {target} does not hold {PACKAGE}@{pinned()}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when not installed (install nothing)")
    args = parser.parse_args(argv)
    if args.check:
        return 0 if installed() else 1
    print(install())
    return 0


if __name__ == "__main__":
    sys.exit(main())
