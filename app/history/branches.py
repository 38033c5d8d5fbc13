"""A conversation's tree as history's ``messages`` record keeps it, and how a thread grows it
(DESIGN.md §17 "Storage"). Pure Python; the tree itself is ``app.history.tree``'s.

The record is ``{taskId, messages, branches?, shown?}``: ``messages`` is the shown path (every
reader that takes a conversation for a linear list reads it as before), ``branches`` every message
off that path with its ``parentId``, ``shown`` the last shown child of each fork off the path. A
record without ``branches`` is a chain: everything stored before branches, nothing migrated
(``app.records.SCHEMA`` version 4).

Every write that rewrites a conversation's messages from a thread (a turn, New conversation, resume,
start-up adoption) writes ``grown(held, thread)``: the stored tree with the thread added, so no
branch is ever dropped by a write that did not know of it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from app.continuity import continues, derived_ids
from app.history.tree import Tree

__all__ = ["StoredForm", "grown"]


class StoredForm(NamedTuple):
    """The parts of a ``messages`` record (module docstring): ``messages`` as stored (the shown path: a
    list, or whatever a damaged record holds), ``branches`` (``[]``: a chain) and ``shown``."""

    messages: Any
    branches: list[dict] = []
    shown: dict[str, str] = {}

    @classmethod
    def of(cls, record: Any) -> "StoredForm":
        """The stored form of a ``messages`` record as read (None or a damaged record: no messages;
        ``branches``/``shown`` that are not a list/an object are read as missing: a chain)."""
        if not isinstance(record, dict):
            return cls(None)
        branches, shown = record.get("branches"), record.get("shown")
        return cls(record.get("messages"), [b for b in branches if isinstance(b, dict)] if isinstance(branches, list)
                   else [], dict(shown) if isinstance(shown, dict) else {})

    def fields(self) -> dict:
        """The record's fields beside ``taskId``: ``branches`` and ``shown`` only when there are any
        (a chain is written as before branches)."""
        fields: dict[str, Any] = {"messages": self.messages}
        if self.branches:
            fields["branches"] = self.branches
        if self.shown:
            fields["shown"] = self.shown
        return fields

    def indexed(self) -> list:
        """What search folds, in order: every branch message, then the shown path (DESIGN.md §17:
        search finds text on every branch). The path comes last so that a turn on it adds its text
        at the end, and only that text is indexed again (``app.history.repository.indexed_prefix``)."""
        messages = self.messages if isinstance(self.messages, list) else []
        return [*self.branches, *messages] if self.branches else messages

    def tree(self) -> Tree:
        """The conversation's ``Tree`` (``Tree.from_record``; a chain when there are no branches)."""
        return Tree.from_record(self.messages if isinstance(self.messages, list) else [], self.branches, self.shown)


def grown(held: StoredForm | None, thread: list[dict]) -> StoredForm:
    """The stored form of conversation ``held`` once ``thread`` (a shown path the runtime holds: a turn's
    thread, or the thread New conversation, resume or start-up keeps) is written into it: ``held``'s
    tree grown by ``thread`` (``Tree.grow``: new messages become children of the one before them, the
    path is chosen at every fork, the old path's messages stay as branches). A chain that ``thread``
    goes on from stays a chain: ``thread`` as it is. ``held`` None or unreadable: ``thread`` alone.
    A message without an id (of ``thread`` or of ``held``: the TS original wrote none) is the message
    with its derived id (``app.continuity.derived_ids``), so a thread read with ids grows the
    conversation stored without them, and the tree written names each message by its id.

    >>> grown(StoredForm([{"id": "u"}, {"id": "a"}]), [{"id": "u"}, {"id": "a"}, {"id": "u2"}])
    StoredForm(messages=[{'id': 'u'}, {'id': 'a'}, {'id': 'u2'}], branches=[], shown={})
    >>> form = grown(StoredForm([{"id": "u"}, {"id": "a"}]), [{"id": "u"}, {"id": "b"}])
    >>> [m["id"] for m in form.messages], [(m["id"], m["parentId"]) for m in form.branches]
    (['u', 'b'], [('a', 'u'), ('b', 'u')])
    """
    if held is None or not isinstance(held.messages, list) or (not held.branches and continues(thread, held.messages)):
        return StoredForm(thread)
    try:
        messages, branches, shown = held.tree().grow(derived_ids(thread)).record()
    except ValueError:  # an entry that is no message: the thread is kept as it is, the branches as stored
        return StoredForm(thread, held.branches, held.shown)
    return StoredForm(messages, branches, shown)
