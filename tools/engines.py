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
import sys
from pathlib import Path

if __package__:  # imported as tools.engines (tests)
    from tools.npm_tree import NpmTree
else:  # run as python tools/engines.py
    from npm_tree import NpmTree

HERE = Path(__file__).resolve().parents[1] / "tests" / "browsers"
PACKAGE = "puppeteer-core"
TREE = NpmTree(HERE, PACKAGE, "engines", "engines", scripts=False)


def pinned() -> str:
    """The version of ``puppeteer-core`` the committed lock pins."""
    return TREE.lock_entry()["version"]


def install_dir() -> Path:
    """Where the pinned tree is installed (it holds ``node_modules``): keyed by the lock's sha256."""
    return TREE.install_dir()


def installed() -> bool:
    """True when the pinned ``puppeteer-core`` is installed (its ``package.json`` says so)."""
    return TREE.installed_version() == pinned()


def install() -> Path:
    """``npm ci`` the pinned tree when it is not installed; returns the install folder."""
    return install_dir() if installed() else TREE.npm_ci()


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
