"""Deletes that stay deleted across devices (DESIGN.md §16): an id deleted here or on another
device is remembered, and a later write of the same id from a device that had not seen the delete
does not bring it back (``app.sync.engine`` keeps the ids under ``agentbar-sync-deleted``).

``decide(doc, leaves, admitted)`` is the rule for one replicated conversation document and every
leaf revision it has (CouchDB keeps each device's revision as a leaf until one is written over it):
a deletion wins over every other leaf, whichever revision CouchDB picked as the winner (it picks a
live one over a deletion, which brought deletes back); otherwise several live leaves are merged
(``app.history.merge.merge_leaves``) and the losers deleted; otherwise the one document is applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.sync.documents import DELETION

__all__ = ["Decision", "Tombstones", "decide"]


class Tombstones:
    """The document ids deleted on any device (§16: deletes do not come back).

    >>> stones = Tombstones(["conversation:t1"])
    >>> stones.admits("conversation:t1"), stones.admits("conversation:t2")
    (False, True)
    """

    def __init__(self, ids: Iterable[str] = (), store: Any = None, key: str = "") -> None:
        self._ids = set(ids)
        self._store, self._key = store, key

    @classmethod
    def kept_in(cls, store: Any, key: str) -> "Tombstones":
        """The ids ``store`` (a ``StringStorage``) holds as a JSON list under ``key`` (none when it is
        blocked or damaged); each ``delete`` writes them back there (ids only, never credentials).

        >>> from app.storage import MemoryStorage
        >>> store = MemoryStorage()
        >>> Tombstones.kept_in(store, "k").delete("conversation:t1")
        >>> Tombstones.kept_in(store, "k").admits("conversation:t1"), store.get_item("k")
        (False, '["conversation:t1"]')
        """
        try:
            raw = store.get_item(key)
            ids = json.loads(raw) if raw else []
        except Exception:  # noqa: BLE001 - blocked or damaged: no tombstones known here
            ids = []
        return cls([i for i in ids if isinstance(i, str)] if isinstance(ids, list) else [], store, key)

    def delete(self, doc_id: str) -> None:
        """Remember ``doc_id`` as deleted (here, or a remote ``_deleted`` change), in the store too."""
        self._ids.add(doc_id)
        if self._store is None:
            return
        try:
            self._store.set_item(self._key, json.dumps(self.ids()))
        except Exception:  # noqa: BLE001 - the tombstone holds for this page; PouchDB keeps the deletion
            pass

    def admits(self, doc_id: str) -> bool:
        """False when ``doc_id`` was deleted: a remote write of it is not applied here."""
        return doc_id not in self._ids

    def ids(self) -> list[str]:
        """The deleted ids, sorted (what the adapter stores)."""
        return sorted(self._ids)


@dataclass(frozen=True)
class Decision:
    """What one replicated conversation comes to (``decide``).

    ``what``: ``delete`` (the conversation is deleted here and everywhere), ``merge`` (several live
    leaves: ``live`` to merge, the winner first), ``one`` (``live[0]`` alone). ``seen``: for a delete,
    the turn digests the deleting devices had (``app.sync.documents.turn_digests``; ``None`` when no
    deletion said: every turn counts as seen, nothing is kept apart). ``live``: the live leaves, the
    winner first, then by revision (every device orders them alike); a delete deletes each of them
    (``losers`` are the live leaves but the first for a merge)."""

    what: Literal["delete", "merge", "one"]
    live: list[dict[str, Any]] = field(default_factory=list)
    seen: frozenset[str] | None = None

    @property
    def losers(self) -> list[dict[str, Any]]:
        """The live leaves a merge writes over (deleted once the merged one is written)."""
        return self.live[1:]


def decide(doc: dict[str, Any], leaves: list[dict[str, Any]] | None, admitted: bool) -> Decision:
    """The rule for a replicated conversation ``doc`` (CouchDB's winning revision), with ``leaves``
    every leaf revision it has (winner included; ``None`` when it has one leaf only), and
    ``admitted`` False when its id was deleted here before (``Tombstones``), DESIGN.md §16:

    - a delete wins: the winner is deleted, any leaf is a conversation's deletion
      (``type: "deletion"``), or the id was deleted here. ``seen`` is the union of what each
      deletion says its device had (``None`` when none says);
    - else several live leaves are merged (``merge``), else ``one``.

    >>> alive = {"_id": "conversation:t", "_rev": "2-b", "meta": {}}
    >>> gone = {"_id": "conversation:t", "_rev": "2-a", "_deleted": True, "type": "deletion", "seen": ["x"]}
    >>> d = decide(alive, [alive, gone], True)
    >>> d.what, sorted(d.seen), [leaf["_rev"] for leaf in d.live]
    ('delete', ['x'], ['2-b'])
    >>> decide(alive, [alive, {**alive, "_rev": "2-c"}], True).what, decide(alive, None, True).what
    ('merge', 'one')
    >>> decide({"_id": "conversation:t", "_deleted": True}, None, True).seen is None
    True
    """
    every = list(leaves) if leaves else [doc]
    if not any(leaf.get("_rev") == doc.get("_rev") for leaf in every):
        every.insert(0, doc)
    winner_rev = doc.get("_rev")
    live = [leaf for leaf in every if not leaf.get("_deleted")]
    live.sort(key=lambda leaf: (leaf.get("_rev") != winner_rev, str(leaf.get("_rev", ""))))
    deletions = [leaf for leaf in every if leaf.get("_deleted") and leaf.get("type") == DELETION]
    if doc.get("_deleted") or deletions or not admitted:
        seen = None
        if deletions:
            seen = frozenset(digest for leaf in deletions for digest in leaf.get("seen") or []
                             if isinstance(digest, str))
        return Decision("delete", live, seen)
    if len(live) > 1:
        return Decision("merge", live)
    return Decision("one", live or [doc])
