"""What a tab takes in from a read of the stored value (DESIGN.md §5): validated threads, whether
their layout is known, and the courses gone from it that this tab keeps.

``take_in`` decides and returns a ``Taken``; the facade (``app.store.facade``) acts on it
(keeps the pruned courses in memory and says so, backs a damaged value up).

Rules: a damaged value keeps the threads this tab held wherever it lost them (an
unreadable one keeps them all, a damaged thread keeps this tab's version). In a sound
value, a course this tab held that is gone was removed deliberately (followed) unless
another tab's save said it pruned it (``app.store.pruned``): then this tab keeps its
version in memory, never losing completed turns it holds.

Example::

    >>> from app.store.decode import ReadValue
    >>> held = {"a": Thread([], 1)}
    >>> taken = take_in(ReadValue(1, {}), held, set(), lambda: frozenset({"a"}))
    >>> taken.threads, taken.pruned
    ({}, ('a',))
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

from app.store.decode import ReadValue, fresh_threads
from app.store.envelope import Thread

__all__ = ["Taken", "take_in"]


@dataclass(frozen=True)
class Taken:
    """``threads``: what the stored value now holds for this tab. ``layout_known``: the stored
    value is exactly their envelope (a later save can splice). ``damaged``: reading lost
    something. ``pruned``: courses gone from the value that another tab's save said it pruned
    (this tab keeps its held version of each). ``repaired``: courses whose thread was taken with
    something of it dropped or repaired (``app.store.decode.Fresh``)."""

    threads: dict[str, Thread]
    layout_known: bool
    damaged: bool
    pruned: tuple[str, ...] = ()
    repaired: tuple[str, ...] = ()


def take_in(found: ReadValue, held: dict[str, Thread], kept: Container[str],
            recorded: Callable[[], frozenset[str]]) -> Taken:
    """Validate ``found`` (``app.store.decode.read_value``) against ``held`` (this tab's stored
    threads before the read); ``kept``: stage ids this tab keeps in memory already;
    ``recorded()``: the stage ids the pruning record lists (read only when a course is gone)."""
    fresh = fresh_threads(found.entries, held)
    damaged = found.damaged or fresh.damaged
    threads = {**held, **fresh.threads} if found.keep_all else fresh.threads
    pruned: tuple[str, ...] = ()
    missing = [] if damaged else [k for k in held if k not in threads and k not in kept]
    if missing:
        listed = recorded()
        pruned = tuple(k for k in missing if k in listed)
    layout_known = found.canonical and not damaged and not fresh.kept_held and not pruned
    return Taken(threads, layout_known, damaged, pruned, fresh.repaired)
