"""Vendored pure-Python wheels installed after ready without a long task (DESIGN.md §13).

``install_in_steps(names)`` fetches each wheel of the generated lock (``pyodide.lockfile``:
its file name and SHA-256, from this origin like the rest of the runtime, DESIGN.md §2)
and unpacks it with ``app.wheels.unpack_in_steps``, a slice per task. Should anything
fail (no lock entry, a fetch error, a digest that does not match), Pyodide's
``loadPackage`` installs the wheels instead, in one task as before: Markdown is an
improvement, never a reason to fail.
"""

from __future__ import annotations

import importlib
import logging
import sysconfig
from pathlib import Path

import js
from pyscript.ffi import is_none

from app.browser.tasks import next_task
from app.wheels import unpack_in_steps

__all__ = ["install_in_steps"]

_log = logging.getLogger(__name__)
PACKAGE_DIR = "static/vendor/pyodide/"
"""Where the lock's wheels are served when Pyodide names no package base URL (``pyscript.toml``)."""


def _base_url(pyodide_js) -> str:
    base = getattr(pyodide_js, "lockfileBaseUrl", None)
    if base is None or is_none(base):
        base = PACKAGE_DIR
    return js.URL.new(str(base), js.document.baseURI).href


async def _install(pyodide_js, name: str, base: str, target: Path) -> None:
    entry = js.Reflect.get(pyodide_js.lockfile.packages, name)
    response = await js.fetch(js.URL.new(str(entry.file_name), base).href)
    if not response.ok:
        raise OSError(f"{entry.file_name}: HTTP {response.status}")
    data = (await response.arrayBuffer()).to_bytes()
    await next_task()
    await unpack_in_steps(data, target, sha256=str(entry.sha256), pause=next_task,
                          clock=lambda: float(js.performance.now()))


async def install_in_steps(names: list[str]) -> None:
    """Install the lock's wheels ``names`` (dependencies first; each a pure-Python wheel) into
    site-packages in slices; ``loadPackage`` of the last one (which brings its dependencies) when
    that fails. Raises what ``loadPackage`` raises."""
    import pyodide_js

    try:
        base, target = _base_url(pyodide_js), Path(sysconfig.get_path("purelib"))
        for name in names:
            await _install(pyodide_js, name, base, target)
        importlib.invalidate_caches()
    except Exception as error:  # noqa: BLE001 - the one-task install still works
        _log.warning("installing %s in steps failed (%s): loadPackage instead", names, error)
        await pyodide_js.loadPackage(names[-1])
