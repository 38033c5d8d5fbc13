"""The pruning tab's word that it pruned (DESIGN.md §5: a tab never loses completed turns it
holds, and a deliberate removal elsewhere is followed).

When a save prunes other courses for quota, the saving tab says so under its own key,
``<key>.pruned``, beside the envelope (which stays exactly §3's): a JSON array of the stage
ids that are absent from the stored value because a save pruned them. Another tab that held
such a course keeps it in memory (``storage-pruned-elsewhere``) instead of following the
removal. ``ThreadStore.clear`` takes its course off the record before it removes the
course, so a New conversation elsewhere is followed. A listed course that is stored again is
harmless (the record is read only for courses that are gone).

The record is written before the pruning write when it fits, so no tab reads the pruned
value without it; when it does not fit, it is taken back and written after the pruning write
freed room (best effort: nothing is pruned for its sake).

Example::

    >>> from app.storage import MemoryStorage
    >>> storage = MemoryStorage()
    >>> write_pruned(storage, "k", {"c00"}); read_pruned(storage, "k")
    frozenset({'c00'})
    >>> storage.dump()
    {'k.pruned': '["c00"]'}
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from app.storage import QuotaExceeded, StringStorage, UnparseableValue
from app.store.jsjson import js_json

__all__ = ["PruneNotes", "forget_pruned", "read_pruned", "record_key", "write_pruned"]


def record_key(key: str) -> str:
    """The record's key beside the envelope's ``key``."""
    return f"{key}.pruned"


def read_pruned(storage: StringStorage, key: str) -> frozenset[str]:
    """The stage ids the record says were pruned (empty when there is none or it is unreadable).
    Raises ``StorageUnavailable``."""
    try:
        raw = storage.get_item(record_key(key))
        ids = json.loads(raw) if raw is not None else []
    except (UnparseableValue, ValueError, RecursionError):
        return frozenset()
    return frozenset(k for k in ids if isinstance(k, str)) if isinstance(ids, list) else frozenset()


def write_pruned(storage: StringStorage, key: str, stage_ids: Iterable[str]) -> None:
    """Make the record list exactly ``stage_ids`` (sorted; no record when empty). Raises
    ``QuotaExceeded`` (the record is unchanged) or ``StorageUnavailable``."""
    ids = sorted(set(stage_ids))
    if ids:
        storage.set_item(record_key(key), js_json(ids))
    elif storage.keys(record_key(key)):
        storage.remove_item(record_key(key))


def forget_pruned(storage: StringStorage, key: str, stage_id: str) -> None:
    """Take ``stage_id`` off the record (before a deliberate removal of that course); no value is
    read when there is no record. Raises ``StorageUnavailable``."""
    if record_key(key) not in storage.keys(record_key(key)):
        return
    listed = read_pruned(storage, key)
    if stage_id in listed:
        try:
            write_pruned(storage, key, listed - {stage_id})
        except QuotaExceeded:  # a shorter value: only when another writer filled the rest
            pass


class PruneNotes:
    """The record as one pruning save updates it (``app.store.quota.write_pruning``): ``note``
    lists the stage ids it is about to prune, ``take_back`` undoes that when the write did not
    happen. ``stored``: the stage ids the save started from (listed ids among them are dropped:
    they are stored)."""

    def __init__(self, storage: StringStorage, key: str, stored: Iterable[str]) -> None:
        self._storage = storage
        self._key = key
        self._stored = frozenset(stored)
        self._before: frozenset[str] | None = None

    def note(self, pruned: Iterable[str]) -> bool:
        """Say ``pruned`` is pruned; False when the record did not fit. Raises ``StorageUnavailable``."""
        if self._before is None:
            self._before = read_pruned(self._storage, self._key) - self._stored
        try:
            write_pruned(self._storage, self._key, self._before | set(pruned))
            return True
        except QuotaExceeded:
            return False

    def take_back(self) -> None:
        """Undo ``note`` (best effort). Raises ``StorageUnavailable``."""
        try:
            write_pruned(self._storage, self._key, self._before or ())
        except QuotaExceeded:
            pass
