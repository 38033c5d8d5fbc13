"""Deletes that stay deleted across devices (DESIGN.md §16): an id deleted here or on another
device is remembered, and a later write of the same id from a device that had not seen the delete
does not bring it back (``app.sync.engine`` keeps the ids under ``agentbar-sync-deleted``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Tombstones"]


class Tombstones:
    """The document ids deleted on any device (§16: deletes do not come back).

    >>> stones = Tombstones(["conversation:t1"])
    >>> stones.admits("conversation:t1"), stones.admits("conversation:t2")
    (False, True)
    """

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._ids = set(ids)

    def delete(self, doc_id: str) -> None:
        """Remember ``doc_id`` as deleted (here, or a remote ``_deleted`` change)."""
        self._ids.add(doc_id)

    def admits(self, doc_id: str) -> bool:
        """False when ``doc_id`` was deleted: a remote write of it is not applied here."""
        return doc_id not in self._ids

    def ids(self) -> list[str]:
        """The deleted ids, sorted (what the adapter stores)."""
        return sorted(self._ids)
