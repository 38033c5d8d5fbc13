"""Several tabs over one stored value (DESIGN.md §5): the pure rules a tab applies to what
another tab wrote.

- ``rebase``: a save built on ``base`` while another tab saved more turns on the same
  conversation appends its new messages to what is stored (two tabs on one course never
  erase each other's turns).
- ``replaced``: another tab replaced a course's thread with one that does not go on from
  what this tab built on (another conversation resumed or a new one begun); another branch of the
  same conversation shown there (DESIGN.md §17) replaces nothing.

Which courses gone from the stored value a tab keeps is ``app.store.reading``'s rule.

"Thread B continues thread A" is ``app.continuity.continues``, the one rule for it, and "B is in
A's conversation" ``app.continuity.belongs`` (it continues A or is a branch of it).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from app.continuity import belongs, branches_off, continues, starts_with_one_of

__all__ = ["rebase", "replaced"]

Messages = list[dict[str, Any]]


def _first_questions_of_one_tree(stored: Messages, base: Messages, firsts: Collection[str]) -> bool:
    """True when ``stored`` and ``base`` each start with one of ``firsts`` (the first messages of the
    conversation tree the caller holds: its first question and the versions it was edited into, by
    id, derived for a message without one): two paths of one conversation (DESIGN.md §17)."""
    return starts_with_one_of(stored, firsts) and starts_with_one_of(base, firsts)


def rebase(messages: Messages, base: Messages | None, stored: Messages,
           firsts: Collection[str] = ()) -> tuple[Messages, bool]:
    """``(messages to store, merged)`` for a save of ``messages`` built on ``base`` (what ``load``
    returned) when ``stored`` is what the store holds now: ``stored`` followed by the messages
    after ``base`` when another tab changed the course since ``base`` and ``messages`` still
    continues ``base`` (``merged``), else ``messages`` as given; also when what is stored is another
    branch of ``base``'s conversation (``app.continuity.branches_off``: shown there, DESIGN.md §17):
    this tab's branch is shown, and history keeps both. ``firsts``: the first messages of the
    conversation's tree as this tab holds it, so that a path through another version of the first
    question is told for a branch too (a thread alone cannot tell it from another conversation's)."""
    if base is not None and stored is not base and stored != base and continues(messages, base) \
            and not branches_off(stored, base, sent_on=_first_questions_of_one_tree(stored, base, firsts)):
        return stored + messages[len(base):], True
    return messages, False


def replaced(stored: Messages, base: Messages, firsts: Collection[str] = ()) -> bool:
    """True when ``stored`` (the stored thread now) is not ``base`` and is not in its conversation:
    it neither goes on from it nor is a branch of it (``app.continuity.belongs``; ``firsts`` as
    ``rebase``'s)."""
    return stored is not base and not belongs(stored, base, sent_on=_first_questions_of_one_tree(stored, base, firsts))
