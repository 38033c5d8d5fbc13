"""Hooks the end-to-end tests and the benchmark wait by: ``window.agentbarCheckpoints()`` resolves
once every scene-version list, diff and summary refresh started so far is drawn
(``CheckpointView.settle``).

Dev-only (DESIGN.md §15): the development server's app wheel holds this module; ``tools/build.py``
leaves it out of ``dist/`` (``DEV_ONLY``), and the page installs it only when it is there
(``app.browser.page``), so a deployed page has no such global.
"""

from __future__ import annotations

from typing import Any

from pyodide.ffi import create_proxy
from pyscript import window

__all__ = ["install"]


def install(checkpoint_view: Any) -> None:
    """Set ``window.agentbarCheckpoints`` to ``checkpoint_view.settle`` (an
    ``app.browser.checkpoint_view.CheckpointView``): a function returning a promise."""
    window.agentbarCheckpoints = create_proxy(checkpoint_view.settle)
