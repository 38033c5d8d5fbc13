"""Giving the page back to the browser between slices of work (so no main-thread task runs over 50 ms).

In Pyodide, ``asyncio.sleep(0)`` and ``loop.call_soon`` go on in a microtask of the
same browser task, so the page can neither draw a frame nor answer input in
between. These two helpers cross a real task boundary:

- ``next_task()``: an awaitable that resolves in a later task;
- ``later(callback)``: ``callback()`` in a later task (``scheduler.postTask``, else
  ``setTimeout``);
- ``next_frame(callback)``: ``callback()`` before the next frame is drawn, and again
  ``FRAME_FALLBACK_MS`` later by a timer (a hidden tab draws no frames), for
  ``app.frames.FrameCoalescer``, which ignores the second answer;
- ``when_idle(callback)``: ``callback()`` once the page is idle (``requestIdleCallback``, at the
  latest after ``IDLE_TIMEOUT_MS``), else in a later task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import js
from pyodide.ffi import create_once_callable

__all__ = ["IDLE_TIMEOUT_MS", "later", "next_frame", "next_task", "when_idle"]

FRAME_FALLBACK_MS = 100
"""A hidden tab gets no animation frames: ``next_frame`` answers by a timer after this many ms too."""
IDLE_TIMEOUT_MS = 1000
"""``when_idle`` runs its callback after this many ms even when the page never idles."""


def _scheduler():
    return getattr(js.globalThis, "scheduler", None)


def later(callback: Callable[[], None]) -> None:
    """Run ``callback()`` in a later browser task (after the page may have drawn a frame)."""
    scheduler = _scheduler()
    if scheduler is not None and hasattr(scheduler, "postTask"):
        scheduler.postTask(create_once_callable(callback))
    else:
        js.setTimeout(create_once_callable(callback), 0)


async def next_task() -> None:
    """Resolve in a later browser task: awaiting it ends the task the caller runs in. The rest goes
    to the back of the queue (not ``scheduler.yield()``, whose continuation would go before the
    page's other waiting tasks, so a chain of them would hold those back just the same)."""
    future = asyncio.get_running_loop().create_future()
    later(lambda: future.done() or future.set_result(None))
    await future


def next_frame(callback: Callable[[], None]) -> None:
    """Call ``callback()`` at the next animation frame (``requestAnimationFrame``) and once more
    from a ``FRAME_FALLBACK_MS`` timer; the caller ignores whichever comes second (DESIGN.md §12)."""
    js.requestAnimationFrame(create_once_callable(lambda _time: callback()))
    js.setTimeout(create_once_callable(callback), FRAME_FALLBACK_MS)


def when_idle(callback: Callable[[], None]) -> None:
    """Run ``callback()`` once the page is idle (``requestIdleCallback``; at the latest after
    ``IDLE_TIMEOUT_MS``); where the browser has no idle callbacks, in a later task (``later``)."""
    if not hasattr(js.globalThis, "requestIdleCallback"):
        later(callback)
        return
    options = js.Object.fromEntries([["timeout", IDLE_TIMEOUT_MS]])
    js.globalThis.requestIdleCallback(create_once_callable(lambda _deadline=None: callback()), options)
