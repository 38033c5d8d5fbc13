"""The runtime's trace hook: a measuring tool (the benchmark, DESIGN.md §13, §15) hears each of
``app.runtime.TRACE_PHASES`` of a turn's end and of another tab's write, to time them.

Dev-only (DESIGN.md §15): the development server's app wheel holds this module, for the benchmark
(``bench/hooks.py``); ``tools/build.py`` leaves it out of ``dist/`` (``DEV_ONLY``) and no shipped
module imports it. The runtime itself only calls the observers it holds (none in a shipped build).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.runtime import AgentRuntime

__all__ = ["trace"]


def trace(runtime: AgentRuntime, observer: Callable[[str, str | None], None]) -> Callable[[], None]:
    """Call ``observer(phase, stage_id)`` at each of ``TRACE_PHASES`` that ``runtime`` passes from now
    on; returns the function that stops it."""
    observers = runtime._observers  # the runtime package's own list: this module is the runtime's
    observers.append(observer)
    return lambda: observers.remove(observer) if observer in observers else None
