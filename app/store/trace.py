"""A steady save taken apart and timed step by step: the store's profiling entry point
(``trace_save``), so the benchmark reaches the store through one hook, not by reading its fields.

Dev-only (DESIGN.md §15): the development server's app wheel holds this module, for the
benchmark (``bench/hooks.py``); ``tools/build.py`` leaves it out of ``dist/`` (``DEV_ONLY``) and
no shipped module imports it.

Example::

    >>> from app.storage import MemoryStorage
    >>> from app.store.envelope import Thread, envelope
    >>> storage, held = MemoryStorage(), {"a": Thread([], 1)}
    >>> storage.set_item("k", envelope(held))
    >>> ticks = iter(range(100))
    >>> threads, trace = trace_splice(storage, "k", held, dict(held), "a", Thread([], 2), lambda: next(ticks))
    >>> list(trace.steps)[:2], trace.threads, trace.error
    (['unchanged() (compare with the last written value)', 'encode own thread (Thread.fragment, js_json)'], 1, None)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from typing import TYPE_CHECKING, Any

from app.storage import QuotaExceeded, StringStorage, utf16_len
from app.store.envelope import Thread, splice_for
from app.store.jsjson import js_json, js_key_order

if TYPE_CHECKING:
    from app.store.facade import ThreadStore

__all__ = ["SaveTrace", "trace_save", "trace_splice"]


@dataclass(frozen=True)
class SaveTrace:
    """What one traced save did. ``steps``: ms per step (by the caller's clock), in the order
    done. ``threads``: threads stored; ``entry_units`` / ``replaced_units``: UTF-16 length of the
    entry written and of the span it replaced. ``error``: why the save stopped (nothing written)."""

    steps: dict[str, float] = field(default_factory=dict)
    threads: int = 0
    entry_units: int = 0
    replaced_units: int = 0
    error: str | None = None

    def with_step(self, name: str, ms: float) -> SaveTrace:
        """A copy with one more step."""
        return replace(self, steps={**self.steps, name: ms})


def trace_splice(storage: StringStorage, key: str, written: dict[str, Thread], threads: dict[str, Thread],
                 stage_id: str, thread: Thread, clock: Callable[[], float],
                 splice: Callable[[int, int, str], bool] | None = None) -> tuple[dict[str, Thread] | None, SaveTrace]:
    """Splice ``thread`` as ``stage_id``'s entry into the value ``envelope(written)`` under ``key``,
    timing each step with ``clock``: the compare with what this tab last wrote, the entry's
    encoding, ``splice_for``, the storage's splice (``splice(start, end, text)``, default
    ``storage.splice_item``), and, once after a full write, the UTF-16 lengths of the entries
    before it (cached afterwards). ``threads`` (what the store holds) is updated in place.
    Returns ``(threads now stored, trace)``, or ``(None, trace)`` with ``trace.error`` when
    nothing was written. Raises ``StorageUnavailable``."""
    hand_over = splice or partial(storage.splice_item, key)
    steps: dict[str, float] = {}
    t0 = clock()
    same = storage.unchanged(key)
    t1 = clock()
    steps["unchanged() (compare with the last written value)"] = t1 - t0
    if not same:
        return None, SaveTrace(steps, error="unchanged() is false: another writer changed the value")
    thread.fragment()
    t2 = clock()
    steps["encode own thread (Thread.fragment, js_json)"] = t2 - t1
    threads[stage_id] = thread
    edit = splice_for(written, threads, stage_id)
    t3 = clock()
    steps["splice_for (key order, offsets over all threads)"] = t3 - t2
    if edit is None:
        return None, SaveTrace(steps, error="splice_for found no splice")
    start, end, text = edit
    try:
        done = hand_over(start, end, text)
    except QuotaExceeded:
        done = False
    t4 = clock()
    steps["splice into storage"] = t4 - t3
    if not done:
        return None, SaveTrace(steps, error="the storage refused the splice")
    order = js_key_order(threads)
    for k in order[: order.index(stage_id)]:
        utf16_len(js_json(k)) + 1 + utf16_len(threads[k].fragment())
    steps["once after a full write: UTF-16 length of the entries before it"] = clock() - t4
    return threads, SaveTrace(steps, len(order), utf16_len(text), end - start)


def trace_save(store: ThreadStore, stage_id: str, messages: list[dict[str, Any]], updated_at: int, *,
               clock: Callable[[], float], splice: Callable[[int, int, str], bool] | None = None) -> SaveTrace:
    """One steady save of ``messages`` (stored form) as ``stage_id``'s thread at ``updated_at`` (ms)
    into ``store`` (an ``app.store.ThreadStore`` whose tab wrote the stored value last), spliced step
    by step (``trace_splice``) and timed with ``clock``, then the store's bookkeeping (timed too).
    ``splice(start, end, text)`` replaces the storage's splice (default ``storage.splice_item``).
    Raises ``LookupError`` (nothing written) when the store is not on the splice path: not
    persistent, or no value written by this tab since its last read; or when the trace stopped (the
    layout is then unknown: the next save writes whole, as after a failed splice)."""
    if store.mode != "persistent":
        raise LookupError(f"store not on the splice path (mode {store.mode})")
    stored = store._stored  # the store package's own value: this module is the store's, kept out of dist/
    if stored.written is None:
        raise LookupError("store not on the splice path (no value written by this tab since its last read)")
    threads, trace = trace_splice(stored.storage, stored.key, stored.written or {}, dict(stored.threads),
                                  stage_id, Thread(messages, updated_at), clock, splice)
    if threads is None:
        stored.written = None
        raise LookupError(trace.error)
    t0 = clock()
    stored.take(threads, layout_known=True)
    trace = trace.with_step("bookkeeping (what is stored now)", clock() - t0)
    store._kept.drop(stage_id)
    return trace
