"""The page's longest Python steps, named (for the benchmark parts).

A Chrome trace shows a Python step as one WebAssembly call: its thread CPU, not what ran. Each
asyncio callback the page's event loop runs is a task of its own; ``watch`` wraps
``asyncio.Handle._run`` in the page to time each one, and ``steps`` returns the longest with the
coroutine and line where each began and where it stopped (its next ``await``). Only the benchmark
page has this wrapper: the app ships none of it (DESIGN.md §15).
"""

from __future__ import annotations

import json

from bench.scripts import RUN_PY

KEEP = 8
"""How many of the longest steps ``steps`` returns."""

_WATCH = """
import asyncio, json, js
from asyncio import events as _events

def _where(callback):
    owner = getattr(callback, "__self__", None)
    coro = owner.get_coro() if isinstance(owner, asyncio.Task) else None
    chain = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            name = frame.f_code.co_filename.rsplit("/app/", 1)[-1]
            if name != "browser/tasks.py":  # the pause itself names nothing
                chain.append(f"{name}:{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    if chain:  # the innermost coroutine, and the one that runs it when they differ
        return chain[-1] if len(chain) == 1 else f"{chain[-1]} (in {chain[-2]})"
    return getattr(callback, "__qualname__", repr(callback))[:80]

if not hasattr(_events.Handle, "_bench_run"):
    _events.Handle._bench_run = _events.Handle._run
    def _timed(self):
        began = js.performance.now()
        where = _where(self._callback)
        try:
            return self._bench_run()
        finally:
            spent = js.performance.now() - began
            if spent >= 10:
                js.window.__pysteps.push(json.dumps([round(spent, 1), where, _where(self._callback)]))
    _events.Handle._run = _timed
js.window.__pysteps = js.Array.new()
json.dumps(True)
"""


def watch(page) -> None:
    """Start timing the page's Python steps (forgetting those timed before)."""
    page.evaluate(RUN_PY, _WATCH)


def steps(page, keep: int = KEEP) -> list[list]:
    """The ``keep`` longest Python steps since ``watch``, as ``[ms, began at, stopped at]`` (wall
    clock; ``file:function:line`` of the innermost coroutine), longest first."""
    rows = [json.loads(row) for row in page.evaluate("() => Array.from(window.__pysteps || [])")]
    return sorted(rows, key=lambda row: -row[0])[:keep]


def report(rows: list[list] | None, indent: str = "  ") -> None:
    """Print ``steps``' rows, longest first (the three longest)."""
    for ms, began, stopped in (rows or [])[:3]:
        print(f"{indent}Python step {ms} ms (wall): from {began} to {stopped}")
