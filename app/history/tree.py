"""A conversation as a tree of messages, and the shown path through it (DESIGN.md §17).

Pure and browser-free. Every message has an id, unique in its conversation, and a parent: the
message before it on its path (``ROOT`` for a first message). Messages with one parent are
siblings, in the order they were made. At every fork the tree records which child is shown, by id
(never by position: siblings arrive from another tab or another device); a fork with no recorded
choice shows its newest child. The *shown path* runs from the first message through each fork's
shown child to a leaf: it is what the panel draws, what the model is sent and what
``maic-agent-threads`` keeps (§3's v1 contract).

Messages are the slim dicts of §3 (``{"role", "id", "content": [...]}``); the tree never changes
one. Three forms of the same tree:

- the stored form (history's ``messages`` record, DESIGN.md §17 "Storage"): ``messages`` = the shown
  path, ``branches`` = every other message with its ``parentId`` (``None`` for a first message),
  and a bare ``{"id", "parentId"}`` for each message of the path that has siblings, all in the
  order made (siblings keep their order across a reload); ``shown`` = the last shown child of each
  fork that lies off the shown path, keyed by the fork's
  parent id (``""`` for the first message's fork). A record without ``branches`` is a chain, which is
  what every conversation stored before branches is (``Tree.from_record``, ``Tree.record``);
- the export form (``agentbar-conversation`` version 2, §17 "Moving data"): every message with its
  ``parentId``, parents before children, and the shown child of every fork (``Tree.from_export``,
  ``Tree.export``);
- the runtime's shown path, which grows a turn at a time (``Tree.grow``).

A ``Tree`` is immutable: every change returns a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from app.continuity import derived_ids

__all__ = ["ROOT", "Tree", "beside_path", "kinship", "readable_path", "with_ids"]

ROOT = ""
"""The parent key of a first message (its fork is keyed ``""`` in ``shown``)."""


def with_ids(messages: Iterable[dict], new_id: Callable[[], str]) -> list[dict]:
    """``messages`` with an id on each: a message without a string id, or with an id an earlier
    message already has, gets ``new_id()`` (a copy; the others are returned as they are). A thread
    written by the TS original has no ids; it gets them when it is adopted (DESIGN.md §17).

    >>> ids = iter(["n1", "n2"])
    >>> [m["id"] for m in with_ids([{"id": "a"}, {}, {"id": "a"}], lambda: next(ids))]
    ['a', 'n1', 'n2']
    """
    seen: set[str] = set()
    out = []
    for message in messages:
        ident = message.get("id")
        if not isinstance(ident, str) or not ident or ident in seen:
            ident = new_id()
            while ident in seen:
                ident = new_id()
            message = {**message, "id": ident}
        seen.add(ident)
        out.append(message)
    return out


def _repeat_at(messages: list) -> int:
    """The position of ``messages``' first message whose string id an earlier one has (``len`` if none)."""
    try:
        if len({message["id"] for message in messages}) == len(messages):
            return len(messages)  # every id distinct (the stored case): no walk
    except (KeyError, TypeError):  # a message without an id, no dict, an id that is no key
        pass
    seen: set[str] = set()
    for at, message in enumerate(messages):
        ident = message.get("id") if isinstance(message, Mapping) else None
        if isinstance(ident, str) and ident:
            if ident in seen:
                return at
            seen.add(ident)
    return len(messages)


def readable_path(messages: list) -> list:
    """A record's stored shown path (``messages``, a list) as it is read and shown: up to its first
    message whose string id an earlier message of it has (DESIGN.md §17: every message has one id,
    unique). From there on the tree cannot place the path's entries (``beside_path``): they are not
    shown and never given fresh ids, and a write keeps what they hold (docs/failures.md).

    >>> [m["id"] for m in readable_path([{"id": "u"}, {"id": "a"}, {"id": "u"}, {"id": "b"}])]
    ['u', 'a']
    """
    at = _repeat_at(messages)
    return messages if at == len(messages) else messages[:at]


def beside_path(messages: list, branches: Iterable[dict] = ()) -> list[dict]:
    """The entries a record keeps beside its readable shown path (``readable_path``): ``branches``, then
    each message of the path from its first repeated id on, as a branch entry with the ``parentId`` of
    the message stored before it (its id; derived when it has none, ``derived_ids``). ``Tree.from_record``
    places what it can of them (a repeated id never: its id is taken); what a write of the tree
    carries over as stored (``Tree.unplaced``) is taken from these.

    >>> beside_path([{"id": "u"}, {"id": "u", "role": "user"}, {"id": "x", "role": "assistant"}])
    [{'id': 'u', 'role': 'user', 'parentId': 'u'}, {'id': 'x', 'role': 'assistant', 'parentId': 'u'}]
    """
    at = _repeat_at(messages)
    if at == len(messages):
        return list(branches)
    derived = derived_ids(messages)
    tail = []
    for k in range(at, len(messages)):
        before, message = messages[k - 1], messages[k]
        parent = before.get("id") if isinstance(before, Mapping) else None
        if not (isinstance(parent, str) and parent):
            parent = derived[k - 1].get("id") if isinstance(derived[k - 1], Mapping) else None
        if isinstance(message, Mapping):
            tail.append({**_bare(message), "parentId": parent})
    return [*branches, *tail]


def _bare(message: Mapping[str, Any]) -> dict:
    return {k: v for k, v in message.items() if k != "parentId"}


def _positional_names(messages: list[dict], identified: list[dict]) -> dict[str, str]:
    """The positional id ``m<n>`` (the n-th message given one) each message of ``messages`` without a
    usable id was read with before ids were derived (``derived_ids``) → the id it is read with now.
    A tree stored then names such messages by those ids (its branches' ``parentId``, ``shown``);
    ``Tree.from_record`` reads them as the messages they named."""
    counter = iter(range(1 << 62))
    given = with_ids(messages, lambda: f"m{next(counter)}")
    return {old["id"]: new["id"] for message, old, new in zip(messages, given, identified)
            if old is not message and old["id"] != new["id"]}


def _renamed_positional(messages: list[dict], identified: list[dict], listed: list[dict],
                        shown: Mapping[str, str] | None) -> tuple[list[dict], Mapping[str, str] | None]:
    """``listed`` (a record's branch entries) and ``shown`` with the positional ids ``m<n>`` that the
    path's messages without ids were read with when the record was stored (``_positional_names``)
    replaced by the ids derived for them now (``identified``); unchanged when every message of the
    path has its own id, or when no entry names such an id. A branch message stored under an
    ``m<n>`` id of its own keeps it."""
    if not identified or all(m is n for m, n in zip(messages, identified)):
        return listed, shown
    named = {b["id"] for b in listed if set(b) - {"id", "parentId"}}
    old = {k: v for k, v in _positional_names(messages, identified).items() if k not in named}
    if not old:
        return listed, shown

    def now(ident: Any) -> Any:
        return old.get(ident, ident) if isinstance(ident, str) else ident
    listed = [{**b, "id": now(b["id"]) if set(b) <= {"id", "parentId"} else b["id"],
               "parentId": now(b.get("parentId"))} for b in listed]
    return listed, {now(k): now(v) for k, v in (shown or {}).items() if isinstance(k, str) and isinstance(v, str)}


@dataclass(frozen=True)
class Tree:
    """A conversation's messages as a tree (DESIGN.md §17).

    ``nodes``: message id → message (slim §3 dict without ``parentId``), in the order made (a parent
    always before its children); ``parents``: message id → parent id (``ROOT`` for a first message);
    ``chosen``: parent key → the child last shown there. Build one with ``chain``, ``from_record`` or
    ``from_export``; never mutate the mappings.
    """

    nodes: Mapping[str, dict] = field(default_factory=dict)
    parents: Mapping[str, str] = field(default_factory=dict)
    chosen: Mapping[str, str] = field(default_factory=dict)

    # -- building ---------------------------------------------------------------------------------

    @classmethod
    def chain(cls, messages: Iterable[dict]) -> "Tree":
        """The tree of a linear thread: each message's parent is the one before it. A message without
        an id (or with a repeated one) gets the id derived from it and the message before it
        (``app.continuity.derived_ids``: the thread store reads it with the same id, DESIGN.md §17).

        >>> Tree.chain([{"id": "a"}, {"id": "b"}]).parent("b")
        'a'
        """
        nodes: dict[str, dict] = {}
        parents: dict[str, str] = {}
        previous = ROOT
        for message in derived_ids(messages):
            nodes[message["id"]] = _bare(message)
            parents[message["id"]] = previous
            previous = message["id"]
        return cls(nodes, parents, {})

    @classmethod
    def from_record(cls, messages: Iterable[dict], branches: Iterable[dict] | None = None,
                    shown: Mapping[str, str] | None = None) -> "Tree":
        """The tree of history's stored form (module docstring): ``messages`` is the shown path,
        ``branches`` every other message with its ``parentId``, ``shown`` the choices at forks off the
        path; a bare ``{"id", "parentId"}`` entry only places a message of the path among its siblings
        (``record``). Reading is liberal (DESIGN.md §3): a branch message without a string id, with an id
        already present, or whose parent never appears is left out; a ``shown`` entry that names no
        child of its fork is ignored. The path stays the shown path, read up to a message whose id an
        earlier one of it has (``readable_path``); those from there on are read as branch entries
        (``beside_path``).

        >>> t = Tree.from_record([{"id": "u"}, {"id": "a2"}],
        ...                      [{"id": "a1", "parentId": "u", "role": "assistant"}, {"id": "a2", "parentId": "u"}])
        >>> [m["id"] for m in t.path()], t.siblings("a2")
        (['u', 'a2'], (2, 2))
        """
        messages = list(messages)
        if _repeat_at(messages) < len(messages):  # a repeated id: the path is read up to it
            branches, messages = beside_path(messages, branches or ()), readable_path(messages)
        identified = derived_ids(messages)
        base = cls.chain(identified)
        nodes, parents = dict(base.nodes), dict(base.parents)
        listed = [b for b in branches or () if isinstance(b, Mapping) and isinstance(b.get("id"), str) and b["id"]]
        listed, shown = _renamed_positional(messages, identified, listed, shown)
        rank = {}
        for n, message in enumerate(listed):
            rank.setdefault(message["id"], n)
        waiting = [b for b in listed if set(b) - {"id", "parentId"}]  # a bare {id, parentId} only orders
        while waiting:
            left = []
            for message in waiting:
                parent = message.get("parentId") or ROOT
                if message["id"] in nodes:
                    continue
                if parent == ROOT or parent in nodes:
                    nodes[message["id"]] = _bare(message)
                    parents[message["id"]] = parent
                else:
                    left.append(message)
            if len(left) == len(waiting):
                break  # parents that never appear: those messages cannot be placed
            waiting = left
        made = {ident: n for n, ident in enumerate(nodes)}
        children: dict[str, list[str]] = {}
        for ident in nodes:
            children.setdefault(parents[ident], []).append(ident)
        ordered: dict[str, dict] = {}
        stack = [ROOT]
        while stack:  # parents before children; siblings in the order the record lists them
            key = stack.pop()
            kids = sorted(children.get(key, ()), key=lambda i: (rank.get(i, -1), made[i]))
            for ident in kids:
                ordered[ident] = nodes[ident]
            stack.extend(reversed(kids))
        tree = cls(ordered, parents, {k: v for k, v in (shown or {}).items() if isinstance(k, str) and isinstance(v, str)})
        path = list(base.nodes)
        return tree.show(path[-1]) if path else tree

    @classmethod
    def from_export(cls, messages: Iterable[dict], shown: Mapping[str, str] | None = None) -> "Tree":
        """The tree of an export's version-2 messages (each with ``parentId``; ``None`` for a first
        message) and the shown child of each fork.

        Raises ``ValueError`` for a message that is not a dict with a non-empty string id, an id that
        appears twice, or a ``parentId`` that is not an earlier message's id (an import refuses such a
        file and changes nothing, DESIGN.md §9). A ``shown`` entry naming no child of its fork is
        ignored (that fork shows its newest child).

        >>> t = Tree.from_export([{"id": "u", "parentId": None}, {"id": "a", "parentId": "u"},
        ...                       {"id": "b", "parentId": "u"}], {"u": "a"})
        >>> [m["id"] for m in t.path()]
        ['u', 'a']
        """
        nodes: dict[str, dict] = {}
        parents: dict[str, str] = {}
        for message in messages:
            if not isinstance(message, Mapping) or not isinstance(message.get("id"), str) or not message["id"]:
                raise ValueError("a message without an id")
            ident = message["id"]
            if ident in nodes:
                raise ValueError(f"the message id {ident!r} appears twice")
            parent = message.get("parentId")
            if parent is None:
                parent = ROOT
            if not isinstance(parent, str) or (parent != ROOT and parent not in nodes):
                raise ValueError(f"the parent of {ident!r} is not an earlier message")
            nodes[ident] = _bare(message)
            parents[ident] = parent
        if shown is not None and not isinstance(shown, Mapping):
            raise ValueError("shown is not an object")
        return cls(nodes, parents, {k: v for k, v in (shown or {}).items() if isinstance(k, str) and isinstance(v, str)})

    # -- reading ----------------------------------------------------------------------------------

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = {}
        for ident in self.nodes:
            children.setdefault(self.parents[ident], []).append(ident)
        return children

    def children(self, key: str = ROOT) -> list[str]:
        """The ids of the children of ``key`` (a message id, or ``ROOT``), in the order made."""
        return list(self._children.get(key, ()))

    def _shown_child(self, key: str) -> str | None:
        kids = self._children.get(key)
        if not kids:
            return None
        choice = self.chosen.get(key)
        return choice if choice in kids else kids[-1]

    @cached_property
    def _path_ids(self) -> tuple[str, ...]:
        ids: list[str] = []
        key: str | None = self._shown_child(ROOT)
        while key is not None:
            ids.append(key)
            key = self._shown_child(key)
        return tuple(ids)

    def path(self) -> list[dict]:
        """The shown path: from the first message through each fork's shown child to a leaf."""
        return [self.nodes[i] for i in self._path_ids]

    def path_ids(self) -> tuple[str, ...]:
        """The ids of ``path()``."""
        return self._path_ids

    @property
    def ids(self) -> tuple[str, ...]:
        """Every message id, in the order made."""
        return tuple(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, ident: object) -> bool:
        return ident in self.nodes

    def unplaced(self, branches: Iterable[Any]) -> list[dict]:
        """The entries of ``branches`` (a stored record's, DESIGN.md §17) that hold a message this tree
        does not: one ``from_record`` could not place (its parent never appears, a cycle of parents, no
        string id) or whose id another message took (a duplicate). A bare ``{"id", "parentId"}`` entry
        only orders, and is never one. What a write of the tree carries over as stored, so that no
        message is dropped by a rewrite (DESIGN.md §5: nothing is lost silently).

        >>> Tree.chain([{"id": "u"}]).unplaced([{"id": "o", "parentId": "gone", "role": "user"},
        ...                                      {"id": "u", "parentId": None}])
        [{'id': 'o', 'parentId': 'gone', 'role': 'user'}]
        """
        return [entry for entry in branches if isinstance(entry, Mapping) and set(entry) - {"id", "parentId"}
                and (not isinstance(entry.get("id"), str) or self.nodes.get(entry["id"]) != _bare(entry))]

    def parent(self, ident: str) -> str | None:
        """The parent id of message ``ident`` (``None`` for a first message). ``KeyError`` if unknown."""
        parent = self.parents[ident]
        return None if parent == ROOT else parent

    def siblings(self, ident: str) -> tuple[int, int]:
        """``(position, count)`` of message ``ident`` among its siblings, position 1-based (the branch
        picker's ‹ n / m ›). ``KeyError`` if unknown.

        >>> Tree.from_export([{"id": "a"}, {"id": "b"}]).siblings("b")
        (2, 2)
        """
        kids = self._children[self.parents[ident]]
        return kids.index(ident) + 1, len(kids)

    def texts(self) -> list[dict]:
        """Every message, on every branch, in the order made (what search folds, DESIGN.md §17)."""
        return list(self.nodes.values())

    def left_out(self) -> int:
        """How many branches the shown path leaves out: the leaves not on it (Markdown says so).

        >>> Tree.from_export([{"id": "a"}, {"id": "b"}, {"id": "c"}]).left_out()
        2
        """
        leaves = sum(1 for i in self.nodes if i not in self._children)
        return max(0, leaves - 1)

    def forks(self) -> dict[str, list[str]]:
        """Each fork (a parent key with two or more children) → its children's ids."""
        return {k: list(v) for k, v in self._children.items() if len(v) > 1}

    # -- changing ---------------------------------------------------------------------------------

    def show(self, ident: str) -> "Tree":
        """This tree with message ``ident`` on the shown path: it is chosen at its fork and each of its
        ancestors at theirs; below it the path follows the choices last made there (DESIGN.md §17: the
        picker shows a sibling and the path last shown under it). ``KeyError`` if unknown."""
        chosen = dict(self.chosen)
        key = ident
        while key != ROOT:
            parent = self.parents[key]
            chosen[parent] = key
            key = parent
        return Tree(self.nodes, self.parents, chosen)

    def step(self, ident: str, delta: int) -> "Tree":
        """This tree with the sibling ``delta`` places from message ``ident`` shown (clamped to the
        first and last sibling). ``KeyError`` if unknown."""
        kids = self._children[self.parents[ident]]
        index = min(max(kids.index(ident) + delta, 0), len(kids) - 1)
        return self.show(kids[index])

    def grow(self, path: Iterable[dict]) -> "Tree":
        """This tree with a shown path the runtime holds added to it (DESIGN.md §17): each message of
        ``path`` not yet in the tree becomes a child of the message before it on ``path``; a message
        already in the tree keeps its place and takes ``path``'s content (a reply that was still
        running); the path is chosen at every fork it passes. Messages need ids (``with_ids``);
        ``ValueError`` for one without.

        >>> t = Tree.chain([{"id": "u1"}, {"id": "a1"}]).grow([{"id": "u2"}, {"id": "a2"}])
        >>> t.siblings("u2"), [m["id"] for m in t.path()]
        ((2, 2), ['u2', 'a2'])
        """
        nodes, parents, chosen = dict(self.nodes), dict(self.parents), dict(self.chosen)
        previous = ROOT
        for message in path:
            ident = message.get("id") if isinstance(message, Mapping) else None
            if not isinstance(ident, str) or not ident:
                raise ValueError("a message of the path has no id")
            if ident not in nodes:
                parents[ident] = previous
            nodes[ident] = _bare(message)
            chosen[parents[ident]] = ident
            previous = ident
        return Tree(nodes, parents, chosen)

    def merged(self, other: "Tree", *, their_choices: bool = False) -> "Tree":
        """The union of two trees of one conversation (sync, DESIGN.md §16–§17): every message of both,
        one per id (a message whose turn has ended never changes, so this tree's copy is kept); a
        message only ``other`` has keeps ``other``'s parent. The choices are this tree's, or
        ``other``'s where ``their_choices`` (the later wins; the caller knows which is later): the
        later's shown path and its choices at forks, the earlier's elsewhere. At a fork only the
        earlier had (the later had one child there), the earlier's choice is the only one made there
        and is kept (§17: a fork shows the latest choice made on any device), unless the later went
        on below its own child there (messages the earlier does not hold: its later turns)."""
        nodes, parents = dict(self.nodes), dict(self.parents)
        for ident, message in other.nodes.items():
            if ident not in nodes:
                nodes[ident] = message
                parents[ident] = other.parents[ident]
        later, earlier = (other, self) if their_choices else (self, other)
        chosen = {**earlier.chosen, **later.chosen}
        for ident in later._path_ids:
            chosen[later.parents[ident]] = ident
        for key, child in earlier.chosen.items():
            if (len(earlier._children.get(key, ())) > 1 and len(later._children.get(key, ())) <= 1
                    and child in earlier.nodes and not later._went_on(key, earlier)):
                chosen[key] = child
        return Tree(nodes, parents, chosen)

    def _went_on(self, key: str, other: "Tree") -> bool:
        """True when this tree holds, at or below its children of ``key``, a message ``other`` does not."""
        stack = list(self._children.get(key, ()))
        while stack:
            ident = stack.pop()
            if ident not in other.nodes:
                return True
            stack.extend(self._children.get(ident, ()))
        return False

    # -- writing ----------------------------------------------------------------------------------

    def _with_parent(self, ident: str) -> dict:
        parent = self.parents[ident]
        return {**self.nodes[ident], "parentId": None if parent == ROOT else parent}

    def record(self) -> tuple[list[dict], list[dict], dict[str, str]]:
        """The stored form (module docstring): ``(messages, branches, shown)``: the shown path; every
        other message with its ``parentId``, in the order made, and where a message of the path has
        siblings, a bare ``{"id", "parentId"}`` for it at its place in that order (so that siblings
        keep their order, and the picker its numbers, after a reload); the shown child of each fork
        off the path. For a chain, ``branches`` and ``shown`` are empty (a record written as before
        branches).

        >>> Tree.chain([{"id": "a"}]).record()
        ([{'id': 'a'}], [], {})
        """
        on_path = set(self._path_ids)
        branches = [self._with_parent(i) if i not in on_path else {"id": i, "parentId": self.parent(i)}
                    for i in self.nodes if i not in on_path or len(self._children[self.parents[i]]) > 1]
        shown = {key: child for key, kids in self._children.items()
                 if len(kids) > 1 and key != ROOT and key not in on_path
                 and (child := self._shown_child(key)) is not None}
        return self.path(), branches, shown

    def export(self) -> tuple[list[dict], dict[str, str]]:
        """The export form: ``(messages, shown)``: every message with its ``parentId``, in the order
        made, and the shown child of every fork (key ``""`` for the first message's fork).

        >>> Tree.chain([{"id": "a"}, {"id": "b"}]).export()
        ([{'id': 'a', 'parentId': None}, {'id': 'b', 'parentId': 'a'}], {})
        """
        shown = {key: self._shown_child(key) for key, kids in self._children.items() if len(kids) > 1}
        return [self._with_parent(i) for i in self.nodes], {k: v for k, v in shown.items() if v is not None}


def kinship(mine: "Tree", theirs: "Tree") -> Literal["apart", "held", "grows"]:
    """How a conversation ``theirs`` (a file's, a backup's) stands to ``mine``, the one kept under its
    id (DESIGN.md §14: merge by id, never a copy of one conversation): ``apart`` when they share no
    message, or a message of one id differs in content or parent on each side (another
    conversation); ``held`` when ``mine`` holds every message of ``theirs``; else ``grows`` (one
    conversation, continued or branched in ``theirs``).

    >>> a = Tree.from_record([{"role": "user", "id": "q"}], [], {})
    >>> b = Tree.from_record([{"role": "user", "id": "q"}, {"role": "assistant", "id": "r"}], [], {})
    >>> kinship(b, a), kinship(a, b), kinship(a, Tree.from_record([{"role": "user", "id": "x"}], [], {}))
    ('held', 'grows', 'apart')
    """
    shared = [i for i in theirs.ids if i in mine]
    if not shared or any(mine.nodes[i] != theirs.nodes[i] or mine.parent(i) != theirs.parent(i) for i in shared):
        return "apart"
    return "held" if len(shared) == len(theirs) else "grows"
