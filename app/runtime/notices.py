"""The notices the panel shows, each distinct one once (DESIGN.md §5).

``Notices`` collects the thread store's notices after every store call and those raised outside
it (history unavailable, ``indexeddb-unavailable``); it drops a ``storage-full`` notice once its
course is no longer kept only in memory, and any notice the store says no longer holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.ports import ThreadStorePort

__all__ = ["Notices"]


class Notices:
    """Notices to show, oldest first (``app.store.Notice``: ``code``, ``params``).

    ``store``: the thread store whose notices are taken (``take_from_store``); ``changed()``: called
    when the list changed, so the view draws it.
    """

    def __init__(self, store: ThreadStorePort, changed: Callable[[], None]) -> None:
        self._store = store
        self._changed = changed
        self._items: list[Any] = []

    @property
    def items(self) -> tuple[Any, ...]:
        """The notices to show, oldest first, each distinct one once."""
        return tuple(self._items)

    def add(self, notice: Any) -> None:
        """Show ``notice`` once (a new one calls ``changed``)."""
        if notice not in self._items:
            self._items.append(notice)
            self._changed()

    def dismiss(self, code: str) -> bool:
        """Remove the notices with ``code``; True when there were any (a new occurrence shows again)."""
        kept = [n for n in self._items if n.code != code]
        dropped = len(kept) != len(self._items)
        self._items = kept
        return dropped

    def take_from_store(self) -> None:
        """Take the store's new notices; a ``storage-full`` notice stays only while its course
        is still kept in memory (``store.memory_only()``), any other while ``store.notice_holds``
        it (read-only, pruned elsewhere), DESIGN.md §5."""
        fresh = False
        for notice in self._store.take_notices():
            if notice not in self._items:
                self._items.append(notice)
                fresh = True
        memory_only = self._store.memory_only()
        kept = [n for n in self._items
                if (n.code != "storage-full" or n.params.get("stage_id") in memory_only)
                and self._store.notice_holds(n)]
        if fresh or len(kept) != len(self._items):
            self._items = kept
            self._changed()
