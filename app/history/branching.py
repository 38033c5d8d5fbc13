"""What history's ``messages`` record keeps of a conversation's tree beside its shown path
(DESIGN.md §17 "Storage"), and what a sync document carries of it (§17 "Sync"): ``Branching``, the
one type for it (a record's whole stored form, the path with its ``Branching``, is
``app.history.branches.StoredForm``); and ``grown``, a tree with a shown path added.

Pure and browser-free. The record is ``{taskId, messages: the shown path, branches?, shown?,
shownAt?}``: ``branches`` and ``shown`` are ``app.history.tree.Tree.record``'s (treated as opaque
here: read with ``Tree.from_record``, written from ``Tree.record``), ``shownAt`` the time (epoch ms)
of the last choice of a shown branch, which decides whose choices win when two devices' trees are
merged (``app.history.merge``). A record without them is a chain (every record stored before
branches, and every document an older device sends).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.continuity import derived_ids
from app.history.tree import Tree

__all__ = ["Branching", "NO_BRANCHES", "grown"]


@dataclass(frozen=True)
class Branching:
    """The tree's part of a ``messages`` record beside the shown path: ``branches`` (list of dicts),
    ``shown`` (parent key → child id) and ``shown_at`` (epoch ms, None when not recorded). Empty for a
    chain (``NO_BRANCHES``)."""

    branches: list[dict] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)
    shown_at: int | None = None

    @classmethod
    def of(cls, record: Any) -> "Branching":
        """What ``record`` (a ``messages`` record or a sync document, a dict) keeps beside its path,
        read liberally (DESIGN.md §3): ``branches`` entries that are not dicts, ``shown`` entries that
        are not strings and a ``shownAt`` that is not a whole number ≥ 0 are left out. What sync and
        every reader of a whole conversation take; the write path reads with ``as_stored``.

        >>> Branching.of({"messages": [], "branches": [{"id": "b", "parentId": None}, 5], "shownAt": 7})
        Branching(branches=[{'id': 'b', 'parentId': None}], shown={}, shown_at=7)
        >>> Branching.of(None) == NO_BRANCHES
        True
        """
        if not isinstance(record, Mapping):
            return NO_BRANCHES
        shown = record.get("shown")
        at = record.get("shownAt")
        return cls(_branch_dicts(record),
                   {k: v for k, v in shown.items() if isinstance(k, str) and isinstance(v, str)}
                   if isinstance(shown, Mapping) else {},
                   at if isinstance(at, int) and not isinstance(at, bool) and at >= 0 else None)

    @classmethod
    def as_stored(cls, record: Any) -> "Branching":
        """What ``record`` (a ``messages`` record as read, a dict) keeps beside its path, as the write
        path takes it to write it again: ``branches`` entries that are not dicts are left out (as
        ``of``), ``shown`` is kept as stored when it is an object (a turn, a backup line, rewrite it
        as it was) and ``shownAt`` is not read (``shown_at`` None: a local write dates its choices by
        its conversation's ``updatedAt``, ``app.history.merge``; a backup line carries none).

        >>> Branching.as_stored({"branches": [5], "shown": {"a": 1}, "shownAt": 7})
        Branching(branches=[], shown={'a': 1}, shown_at=None)
        """
        if not isinstance(record, Mapping):
            return NO_BRANCHES
        shown = record.get("shown")
        return cls(_branch_dicts(record), dict(shown) if isinstance(shown, dict) else {})

    @classmethod
    def of_tree(cls, tree: Tree, shown_at: int | None = None) -> tuple[list[dict], "Branching"]:
        """``(shown path, Branching)``: ``tree``'s stored form (``Tree.record``) with ``shown_at``."""
        messages, branches, shown = tree.record()
        return messages, cls(branches, shown, shown_at)

    def tree(self, messages: list[dict]) -> Tree:
        """The tree of shown path ``messages`` with these branches (``Tree.from_record``)."""
        return Tree.from_record(messages, self.branches, self.shown)

    def paths(self, messages: list[dict]) -> list[list[dict]]:
        """Every path of the tree of shown path ``messages`` from a first message to a leaf, the leaves
        in the order made (a chain's: ``[messages]``): what a deletion says its device had of every
        branch, and what a device that never saw that deletion keeps apart (DESIGN.md §16, §17).

        >>> other = Branching([{"id": "b", "parentId": "a", "role": "user"}])
        >>> [[m["id"] for m in path] for path in other.paths([{"id": "a"}, {"id": "c"}])]
        [['a', 'c'], ['a', 'b']]
        """
        if not self.branches:
            return [list(messages)] if messages else []
        tree = self.tree(messages)
        shown = tree.path_ids()
        leaves = [i for i in tree.ids if not tree.children(i)]
        leaves.sort(key=lambda i: i != (shown[-1] if shown else None))  # the shown path first
        out = []
        for leaf in leaves:
            path, key = [], leaf
            while key is not None:
                path.append(tree.nodes[key])
                key = tree.parent(key)
            out.append(path[::-1])
        return out

    def fields(self) -> dict[str, Any]:
        """The record's (or document's) fields for this: ``branches``, ``shown`` and ``shownAt``, each
        only when it holds something (a chain adds none: its record is written as before branches).

        >>> Branching([], {}, 5).fields(), NO_BRANCHES.fields()
        ({'shownAt': 5}, {})
        """
        out: dict[str, Any] = {}
        if self.branches:
            out["branches"] = list(self.branches)
        if self.shown:
            out["shown"] = dict(self.shown)
        if self.shown_at is not None:
            out["shownAt"] = self.shown_at
        return out

    def __bool__(self) -> bool:
        return bool(self.branches or self.shown or self.shown_at is not None)


NO_BRANCHES = Branching()
"""A chain's: nothing beside the shown path."""


def _branch_dicts(record: Mapping) -> list[dict]:
    branches = record.get("branches")
    return [b for b in branches if isinstance(b, dict)] if isinstance(branches, list) else []


def grown(tree: Tree | None, path: list[dict[str, Any]]) -> Tree:
    """``tree`` with the shown ``path`` (slim messages) added and chosen at every fork (``Tree.grow``):
    what the runtime holds of its course's tree after a turn, an edit or a load (DESIGN.md §17). A
    chain of ``path`` when there is no tree yet (``tree`` None). A message of ``path`` without an id
    (another tab of the TS original wrote it) is the message with its derived id
    (``app.continuity.derived_ids``, the one the panel shows it with). Never raises. History's stored
    form grows by ``app.history.branches.StoredForm.written``.

    >>> [m["id"] for m in grown(None, [{"id": "u"}]).path()]
    ['u']
    >>> grown(Tree.chain([{"id": "u"}]), [{"id": "u"}, {"id": "a"}]).parent("a")
    'u'
    """
    path = derived_ids(path)
    if tree is not None:
        try:
            return tree.grow(path)
        except ValueError:  # pragma: no cover - every message of the path has an id now
            pass
    return Tree.chain(path)
