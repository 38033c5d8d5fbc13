"""Several tabs over one stored value (DESIGN.md §5): the pure rules a tab applies to what
another tab wrote.

- ``rebase``: a save built on ``base`` while another tab saved more turns on the same
  conversation appends its new messages to what is stored (two tabs on one course never
  erase each other's turns).
- ``replaced``: another tab replaced a course's thread with one that does not go on from
  what this tab built on (another conversation resumed or a new one begun).
- ``gone``: which courses this tab held went from the stored value (kept in memory when
  another tab's save says it pruned them, ``app.store.pruned``; else followed).

"Thread B continues thread A" is ``app.continuity.continues``, the one rule for it.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from app.continuity import continues
from app.store.envelope import Thread

__all__ = ["gone", "rebase", "replaced"]

Messages = list[dict[str, Any]]


def rebase(messages: Messages, base: Messages | None, stored: Messages) -> tuple[Messages, bool]:
    """``(messages to store, merged)`` for a save of ``messages`` built on ``base`` (what ``load``
    returned) when ``stored`` is what the store holds now: ``stored`` followed by the messages
    after ``base`` when another tab changed the course since ``base`` and ``messages`` still
    continues ``base`` (``merged``), else ``messages`` as given."""
    if base is not None and stored is not base and stored != base and continues(messages, base):
        return stored + messages[len(base):], True
    return messages, False


def replaced(stored: Messages, base: Messages) -> bool:
    """True when ``stored`` (the stored thread now) is not ``base`` and does not go on from it."""
    return stored is not base and not continues(stored, base)


def gone(held: dict[str, Thread], fresh: dict[str, Thread], kept: Container[str]) -> list[str]:
    """The courses ``held`` (this tab's stored threads before a read) that are absent from
    ``fresh`` (a readable, undamaged value) and not ``kept`` in memory already: each was
    pruned by another tab's save when its record says so (``app.store.pruned``), else
    removed deliberately (followed)."""
    return [k for k in held if k not in fresh and k not in kept]
