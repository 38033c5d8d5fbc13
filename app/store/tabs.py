"""Several tabs over one stored value (DESIGN.md §5): the pure rules a tab applies to what
another tab wrote.

- ``rebase``: a save built on ``base`` while another tab saved more turns on the same
  conversation appends its new messages to what is stored (two tabs on one course never
  erase each other's turns).
- ``replaced``: another tab replaced a course's thread with one that does not go on from
  what this tab built on (another conversation resumed or a new one begun).
- ``pruned_elsewhere``: which courses this tab held went from the stored value because
  another tab's save pruned them for quota (kept in memory, never lost).

"Thread B continues thread A" is ``app.continuity.continues``, the one rule for it.
"""

from __future__ import annotations

from typing import Any

from app.continuity import continues
from app.store.envelope import Thread

__all__ = ["pruned_elsewhere", "rebase", "replaced"]

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


def pruned_elsewhere(held: dict[str, Thread], fresh: dict[str, Thread], memory: dict[str, Any]) -> list[str]:
    """The courses ``held`` (this tab's stored threads before the read) that are gone from
    ``fresh`` (a readable, undamaged value) because another tab's save pruned them for quota.

    A course this tab held that is gone, and not kept in ``memory`` already, was *pruned*
    when, in the same change, exactly one other course's entry was added or changed (the
    saving course: a save writes only its own entry, a New conversation elsewhere only
    removes one) and it was no more recently updated than any course left unchanged
    (pruning takes the least recently updated). Otherwise the removal is followed: ``[]``.
    """
    gone = [k for k in held if k not in fresh and k not in memory]
    if not gone or sum(held.get(k) is not v for k, v in fresh.items()) != 1:
        return []  # only removals, or several writes seen at once: followed
    unchanged = [v.updated_at for k, v in fresh.items() if held.get(k) is v]
    if unchanged and max(held[k].updated_at for k in gone) > min(unchanged):
        return []
    return gone
