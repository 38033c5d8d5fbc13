"""Several tabs over one stored value (DESIGN.md §5): the pure rules a tab applies to what
another tab wrote.

- ``rebase``: a save built on ``base`` while another tab saved more turns on the same
  conversation appends its new messages to what is stored (two tabs on one course never
  erase each other's turns), unless history keeps the conversation's tree: then the two tabs'
  turns after ``base`` are siblings at ``base``'s end (DESIGN.md §17), and what is stored is this
  tab's path, never its turn after a reply its model never saw.
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
           firsts: Collection[str] = (), *, tree_kept: bool = False) -> tuple[Messages, bool]:
    """``(messages to store, merged)`` for a save of ``messages`` built on ``base`` (what ``load``
    returned) when ``stored`` is what the store holds now: ``stored`` followed by the messages
    after ``base`` when another tab changed the course since ``base`` and ``messages`` still
    continues ``base`` (``merged``), else ``messages`` as given; also when what is stored is another
    branch of ``base``'s conversation (``app.continuity.branches_off``: shown there, DESIGN.md §17):
    this tab's branch is shown, and history keeps both. ``firsts``: the first messages of the
    conversation's tree as this tab holds it, so that a path through another version of the first
    question is told for a branch too (a thread alone cannot tell it from another conversation's).
    ``tree_kept``: history keeps the conversation's tree, so when another tab's turns went on from
    ``base`` another way than ``messages`` (both sent on the same reply), the two are siblings at
    ``base``'s end (§17) and ``messages`` is stored as given, this tab's branch shown; without it they
    are merged as above, so that nothing is lost (§5)."""
    if base is None or stored is base or stored == base or not continues(messages, base):
        return messages, False
    if branches_off(stored, base, sent_on=_first_questions_of_one_tree(stored, base, firsts)):
        return messages, False
    if tree_kept and base and continues(stored, base) and branches_off(messages, stored, sent_on=True):
        return messages, False  # a fork at base's end: the other tab's turn is a sibling (history keeps it)
    return stored + messages[len(base):], True


def replaced(stored: Messages, base: Messages, firsts: Collection[str] = ()) -> bool:
    """True when ``stored`` (the stored thread now) is not ``base`` and is not in its conversation:
    it neither goes on from it nor is a branch of it (``app.continuity.belongs``; ``firsts`` as
    ``rebase``'s)."""
    return stored is not base and not belongs(stored, base, sent_on=_first_questions_of_one_tree(stored, base, firsts))
