"""A conversation's tree as history's ``messages`` record keeps it, and how a thread grows it
(DESIGN.md §17 "Storage"). Pure Python; the tree itself is ``app.history.tree``'s.

The record is ``{taskId, messages, branches?, shown?}``: ``messages`` is the shown path (every
reader that takes a conversation for a linear list reads it as before), ``branches`` every message
off that path with its ``parentId``, ``shown`` the last shown child of each fork off the path. A
record without ``branches`` is a chain: everything stored before branches, nothing migrated
(``app.records.SCHEMA`` version 4).

``StoredForm`` is the record's whole form: the shown path and, beside it, a ``Branching``'s
``branches`` and ``shown`` (``app.history.branching``: the one type for what a record or a sync
document keeps beside the path; it reads, writes and builds the tree of them). Every write
that rewrites a conversation's messages from a thread (a turn, New conversation, resume, start-up
adoption) writes ``held.written(thread)``: the stored tree with the thread added, so no branch is
ever dropped by a write that did not know of it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from app.continuity import continues, derived_ids, first_question_at, starts_with_one_of
from app.history.branching import Branching
from app.history.tree import Tree, beside_path
from app.projection import is_slim_message

__all__ = ["StoredForm"]


class StoredForm(NamedTuple):
    """A ``messages`` record as the write path reads and writes it (module docstring), unpacking as
    ``Tree.record``'s ``(messages, branches, shown)``: ``messages`` as stored (the shown path: a list,
    or whatever a damaged record holds), then the tree beside it, ``branching``'s ``branches``
    (``[]``: a chain) and ``shown``. Read with ``Branching.as_stored``: no ``shownAt`` (what sync's
    reading, ``Branching.of``, adds), so a record written from it has none."""

    messages: Any
    branches: list[dict] = []
    shown: dict[str, str] = {}

    @property
    def branching(self) -> Branching:
        """What the record keeps beside the shown path (``branches``, ``shown``; no ``shown_at``)."""
        return Branching(self.branches, self.shown)

    @classmethod
    def of(cls, record: Any) -> "StoredForm":
        """The stored form of a ``messages`` record as read (None or a damaged record: no messages;
        ``branches``/``shown`` that are not a list/an object are read as missing: a chain).

        >>> StoredForm.of({"messages": [], "branches": [{"id": "b", "parentId": None}], "shownAt": 5}).fields()
        {'messages': [], 'branches': [{'id': 'b', 'parentId': None}]}
        """
        if not isinstance(record, dict):
            return cls(None)
        branching = Branching.as_stored(record)
        return cls(record.get("messages"), branching.branches, branching.shown)

    def fields(self) -> dict:
        """The record's fields beside ``taskId``: ``messages``, then ``branches`` and ``shown`` only
        when there are any (a chain is written as before branches; ``Branching.fields``)."""
        return {"messages": self.messages, **self.branching.fields()}

    def indexed(self) -> list:
        """What search folds, in order: every branch message, then the shown path (DESIGN.md §17:
        search finds text on every branch). The path comes last so that a turn on it adds its text
        at the end, and only that text is indexed again (``app.history.repository.indexed_prefix``)."""
        messages = self.messages if isinstance(self.messages, list) else []
        return [*self.branches, *messages] if self.branches else messages

    def tree(self) -> Tree:
        """The conversation's ``Tree`` (``Branching.tree``; a chain when there are no branches)."""
        return self.branching.tree(self.messages if isinstance(self.messages, list) else [])

    def whole(self) -> bool:
        """True when the record's shown path can be read as it is stored: ``messages`` a list of slim
        messages that each read whole (``app.projection.is_slim_message``). A record that is not
        (missing, ``messages`` not a list, a reply whose text is null) is a damaged conversation:
        listed and refused as one whose meta cannot be read, never shown without what it could not
        read, never rewritten (DESIGN.md §5). Branch entries that cannot be placed do not make it so:
        they are read liberally and carried over by every write (``rewritten``).

        >>> StoredForm([{"role": "user", "content": [{"type": "text", "text": "a"}]}]).whole()
        True
        >>> StoredForm("x").whole(), StoredForm(None).whole()
        (False, False)
        """
        return isinstance(self.messages, list) and all(map(is_slim_message, self.messages))

    def rewritten(self, tree: Tree, read: Tree | None = None) -> "StoredForm":
        """``tree`` (this form's tree, changed: grown by a thread, another branch shown) as the record to
        write: ``Tree.record``'s form, with every branch entry of this record that its tree could not
        place (``Tree.unplaced``: an unknown parent, a cycle, a duplicate id; a message of the shown path
        from its first repeated id on, ``app.history.tree.beside_path``) carried over as stored at
        the end of ``branches``, so that a write never drops a message it could not read (DESIGN.md
        §5, §17). An entry ``tree`` now holds as it is (the thread brought it) is not carried twice.
        ``read``: this form's ``tree()`` when the caller has it (else read again here).

        >>> form = StoredForm([{"id": "u"}], [{"id": "o", "parentId": "gone", "role": "user"}])
        >>> form.rewritten(form.tree().grow([{"id": "u"}, {"id": "a"}])).branches
        [{'id': 'o', 'parentId': 'gone', 'role': 'user'}]
        """
        messages, branches, shown = tree.record()
        beside = beside_path(self.messages, self.branches) if isinstance(self.messages, list) else self.branches
        carried = tree.unplaced((read or self.tree()).unplaced(beside)) if beside else []
        return StoredForm(messages, [*branches, *carried], shown)

    def starts(self, thread: Any) -> bool:
        """True when ``thread``'s first message is a first message of this stored tree, told by its id
        (derived when it has none, ``app.continuity.derived_ids``): the shown path's first, or one stored
        beside it with no parent (the first question edited, DESIGN.md §17). A thread that starts so
        belongs to this conversation whichever first question it shows: another tab's picker or a
        reload may show the other one before the turn knows its conversation id. A thread opened by an
        assistant's message (``app.continuity.first_question_at``) starts so when that message is a first
        message here and its first question is a message of this tree: the same greeting alone is not
        the same conversation (conversations imported without ids share its derived id).

        >>> form = StoredForm([{"id": "u1b"}], [{"id": "u1", "parentId": None}, {"id": "u1b", "parentId": None}])
        >>> form.starts([{"id": "u1"}, {"id": "a9"}]), form.starts([{"id": "x"}]), form.starts([])
        (True, False, False)
        """
        path = self.messages if isinstance(self.messages, list) else []
        roots = {entry.get("id") for entry in self.branches if isinstance(entry, dict) and entry.get("parentId") is None}
        if path and isinstance(path[0], dict):
            roots.add(derived_ids(path[:1])[0].get("id"))
        asked = first_question_at(thread) if isinstance(thread, list) else 0
        if not 0 < asked < len(thread) or not starts_with_one_of(thread[:1], roots):
            return starts_with_one_of(thread, roots)
        # opened by an assistant's message this tree opens with: its first question must be one of the tree's
        held = {entry.get("id") for entry in (*derived_ids(path), *self.branches) if isinstance(entry, dict)}
        return starts_with_one_of(thread, held)

    def written(self, thread: list[dict]) -> "StoredForm":
        """This stored form once ``thread`` (a shown path the runtime holds: a turn's thread, or the
        thread New conversation, resume or start-up keeps) is written into it: its tree grown by
        ``thread`` (``Tree.grow``: new messages become children of the one before them, the path is
        chosen at every fork, the old path's messages stay as branches). A chain that ``thread`` goes
        on from stays a chain: ``thread`` as it is. No messages stored (or unreadable): ``thread``
        alone. Branch entries the stored tree cannot place are carried over as stored (``rewritten``).
        A message without an id (of ``thread`` or of the stored path: the TS original wrote
        none) is the message with its derived id (``app.continuity.derived_ids``), so a thread read
        with ids grows the conversation stored without them. An entry that is no message: ``thread``
        is kept as the shown path and the stored branches as stored.

        >>> StoredForm([{"id": "u"}, {"id": "a"}]).written([{"id": "u"}, {"id": "a"}, {"id": "u2"}])
        StoredForm(messages=[{'id': 'u'}, {'id': 'a'}, {'id': 'u2'}], branches=[], shown={})
        >>> form = StoredForm([{"id": "u"}, {"id": "a"}]).written([{"id": "u"}, {"id": "b"}])
        >>> [m["id"] for m in form.messages], [(m["id"], m["parentId"]) for m in form.branches]
        (['u', 'b'], [('a', 'u'), ('b', 'u')])
        """
        if not isinstance(self.messages, list) or (not self.branches and continues(thread, self.messages)):
            return StoredForm(thread)
        try:
            read = self.tree()
            return self.rewritten(read.grow(derived_ids(thread)), read)
        except ValueError:
            return StoredForm(thread, self.branches, self.shown)
