"""Quota pruning (DESIGN.md §5): a save that does not fit drops the least recently updated
*other* stored threads until it does, pruning and saving being one write.

``write_pruning`` returns what it wrote; the facade (``app.store.facade``) says so
(``storage-pruned``, ``storage-full``) and keeps what did not fit in memory.

Example::

    >>> from app.storage import MemoryStorage
    >>> from app.store.envelope import Thread, envelope
    >>> storage = MemoryStorage()
    >>> threads = {"old": Thread([], 1), "new": Thread([], 2)}
    >>> storage.quota = len("k") + len(envelope({"new": threads["new"]}))
    >>> write_pruning(storage, "k", threads, "new").pruned
    ('old',)
"""

from __future__ import annotations

from dataclasses import dataclass

from app.storage import QuotaExceeded, StringStorage
from app.store.envelope import Thread, envelope
from app.store.jsjson import js_key_order
from app.store.pruned import PruneNotes

__all__ = ["Pruned", "prune_order", "write_pruning"]


@dataclass(frozen=True)
class Pruned:
    """What ``write_pruning`` did. ``threads``: what the stored value now holds, or ``None`` when
    even the saved thread alone does not fit (nothing was written). ``pruned``: stage ids
    removed to make room, least recently updated first (empty when nothing was written)."""

    threads: dict[str, Thread] | None
    pruned: tuple[str, ...] = ()


def prune_order(threads: dict[str, Thread], stage_id: str) -> list[str]:
    """The threads other than ``stage_id``'s in the order quota pruning drops them: least recently
    updated first, ties in JavaScript key order (DESIGN.md §5)."""
    rank = {k: i for i, k in enumerate(js_key_order(threads))}
    return sorted((k for k in rank if k != stage_id), key=lambda k: (threads[k].updated_at, rank[k]))


def write_pruning(storage: StringStorage, key: str, threads: dict[str, Thread], stage_id: str,
                  notes: PruneNotes | None = None, *, tried: bool = False) -> Pruned:
    """Write ``envelope(threads)`` whole under ``key``; on ``QuotaExceeded`` drop the next thread of
    ``prune_order`` and retry, until it fits or only ``stage_id``'s is left and does not fit.

    ``notes``: the record of what is pruned (``app.store.pruned``), written before each write
    that prunes; when that write does not fit, the record is taken back and the write tried
    once more without it (so the record never costs a pruned thread), then written after.
    A write is never partial: the stored value is either the returned ``threads`` or unchanged.
    ``tried``: ``envelope(threads)`` itself was just found not to fit (a splice into the same value):
    the first write is a pruning one. Raises ``StorageUnavailable``.
    """
    victims = prune_order(threads, stage_id)
    candidate = dict(threads)
    pruned: list[str] = []
    while True:
        noted = bool(pruned) and notes is not None and notes.note(pruned)
        written = not (tried and not pruned) and _fits(storage, key, candidate)
        if not written and noted:
            notes.take_back()
            noted, written = False, _fits(storage, key, candidate)
        if written:
            if pruned and notes is not None and not noted:
                notes.note(pruned)  # after: the pruning write freed room
            return Pruned(candidate, tuple(pruned))
        if not victims:
            return Pruned(None)
        pruned.append(victims.pop(0))
        del candidate[pruned[-1]]


def _fits(storage: StringStorage, key: str, threads: dict[str, Thread]) -> bool:
    """Write ``envelope(threads)`` whole; False when it does not fit (nothing written)."""
    try:
        storage.set_item(key, envelope(threads))
        return True
    except QuotaExceeded:
        return False
