"""The notices the panel shows, each distinct one once (DESIGN.md §5).

``Notices`` collects the thread store's notices after every store call and those raised outside
it (history unavailable, ``indexeddb-unavailable``); it drops a ``storage-full`` notice once its
course is no longer kept only in memory, and any notice the store says no longer holds.

A course kept only in memory whose thread history holds (its last turn recorded, or the thread
written from history: resume, another device's version) is said with ``storage-full-kept`` in
place of ``storage-full``: not saved in this browser's quick store, but kept in history; the
"lost on refresh" wording stays for a course history did not record (DESIGN.md §5: the notice
says what is true).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.ports import ThreadStorePort

__all__ = ["Notices"]

_FULL = ("storage-full", "storage-full-kept")
"""The codes of the notice naming a course kept only in memory: lost on refresh, or kept in history."""


class Notices:
    """Notices to show, oldest first (``app.store.Notice``: ``code``, ``params``).

    ``store``: the thread store whose notices are taken (``take_from_store``); ``changed()``: called
    when the list changed, so the view draws it.
    """

    def __init__(self, store: ThreadStorePort, changed: Callable[[], None]) -> None:
        self._store = store
        self._changed = changed
        self._items: list[Any] = []
        self._history_holds: set[str] = set()

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

    def held_by_history(self, stage_id: str, holds: bool) -> None:
        """History recorded course ``stage_id``'s thread as it is now (``holds``: its last turn was
        recorded, or the thread was written from history), or failed to (``holds`` False): its
        ``storage-full`` notice reads ``storage-full-kept`` while history holds it (module docstring)."""
        if holds:
            self._history_holds.add(stage_id)
        else:
            self._history_holds.discard(stage_id)
        self.take_from_store()

    def take_from_store(self) -> None:
        """Take the store's new notices; a ``storage-full`` notice stays only while its course
        is still kept in memory (``store.memory_only()``), worded as history holds it or not
        (``held_by_history``), any other while ``store.notice_holds`` it (read-only, pruned
        elsewhere), DESIGN.md §5."""
        items = list(self._items)
        for notice in self._store.take_notices():
            if notice not in items:
                items.append(notice)
        memory_only = self._store.memory_only()
        self._history_holds &= memory_only
        kept = []
        for n in items:
            if n.code in _FULL:
                stage_id = n.params.get("stage_id")
                if stage_id not in memory_only:
                    continue
                n = replace(n, code=_FULL[stage_id in self._history_holds])
            if self._store.notice_holds(n) and n not in kept:
                kept.append(n)
        if kept != self._items:
            self._items = kept
            self._changed()
