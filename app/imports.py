"""Importing a package in steps the page can pause between (DESIGN.md §13: nothing after ready over 50 ms).

A package whose ``__init__`` imports everything (``markdown_it``, ``pyuegc``) runs in one
browser task when imported: tens of ms of module bodies (classes, compiled patterns,
tables). ``import_in_steps(package, parts, pause)`` puts the package's module in
``sys.modules`` before its ``__init__`` runs, imports the submodules ``parts`` one at a
time with ``pause()`` awaited after each, and runs ``__init__`` last (it then finds them
imported). The result is the package as ``import package`` gives it.

Pure Python (``importlib``); the browser passes ``app.browser.tasks.next_task`` as ``pause``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType

__all__ = ["import_in_steps"]


async def import_in_steps(package: str, parts: Sequence[str], pause: Callable[[], Awaitable[object]]) -> ModuleType:
    """Import ``package`` with each of ``parts`` (submodule names relative to it, e.g. ``"common.utils"``,
    in order) in a step of its own, ``pause()`` awaited after each, and the package's ``__init__`` last.
    An already imported package is returned as it is. Raises ``ModuleNotFoundError`` when ``package``
    is not installed, and what a module body raises; the package is then not left half imported in
    ``sys.modules`` (a later import starts again)."""
    if package in sys.modules:
        return sys.modules[package]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {package!r}", name=package)
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module  # its submodules import without running __init__ first
    try:
        for part in parts:
            importlib.import_module(f"{package}.{part}")
            await pause()
        spec.loader.exec_module(module)
    except BaseException:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
        raise
    return module
