"""Which conversation is a course's active one, as this tab knows it (DESIGN.md §9, §10).

``Conversations`` remembers, per course, the id of its active conversation (history's head
``taskId``), allocated when a conversation starts so its turns and scene versions share it. New
conversation, resume and another tab's change let it go (``forget``); the next look-up asks history
again. Whether a change of another writer moves an ending turn elsewhere is ``app.continuity``'s
rule, not this module's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from app.ports import HistoryPort

__all__ = ["Conversations"]

_log = logging.getLogger("app.runtime")


class Conversations:
    """Per-course active conversation ids. ``history``: optional (``None``: ids live in memory only);
    ``clock``: epoch ms, for an id allocated without history (``app.history.records.new_task_id``)."""

    def __init__(self, history: HistoryPort | None, clock: Callable[[], int]) -> None:
        self._history = history
        self._clock = clock
        self._ids: dict[str, asyncio.Future] = {}  # stage id → its active conversation's id (or None)
        self._changes: dict[str, int] = {}  # stage id → times its conversation was let go

    def key(self, stage_id: str) -> tuple[str | None, int]:
        """What a view keyed on the active conversation compares: ``(conversation_id, n)`` where ``n``
        counts the times the course's conversation was let go (New conversation, resume, another
        tab), so a change shows even while the id is not known yet."""
        return self.known_id(stage_id), self._changes.get(stage_id, 0)

    def known(self) -> set[str]:
        """The courses whose conversation was looked up (or is being)."""
        return set(self._ids)

    def forget(self, stage_id: str) -> None:
        """Let ``stage_id``'s conversation go: the next look-up asks history again."""
        self._ids.pop(stage_id, None)
        self._changes[stage_id] = self._changes.get(stage_id, 0) + 1

    def known_id(self, stage_id: str) -> str | None:
        """The id once known, without waiting; ``None`` until ``id`` has found or allocated it."""
        known = self._ids.get(stage_id)
        return known.result() if known is not None and known.done() else None

    async def id(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """The id of course ``stage_id``'s active conversation: history's head ``taskId``, allocated
        (and written as the head, ``HistoryService.head_task_id``) when the conversation starts.
        Without history (or with history unavailable) an in-memory id per conversation.
        ``allocate=False`` only looks: ``None`` when the course has no conversation yet. Never raises."""
        known = self._ids.get(stage_id)
        if known is not None:
            found = await asyncio.shield(known)
            if found is not None or not allocate:
                return found
            if self._ids.get(stage_id) is not known:
                return await self.id(stage_id, allocate=allocate)
        future = asyncio.ensure_future(self._head_task_id(stage_id, allocate))
        self._ids[stage_id] = future
        return await asyncio.shield(future)

    async def _head_task_id(self, stage_id: str, allocate: bool) -> str | None:
        task_id = None
        if self._history is not None:
            try:
                task_id = await self._history.head_task_id(stage_id, allocate=allocate)
            except Exception:  # noqa: BLE001 - history never reaches the core (DESIGN.md §9)
                _log.exception("history could not name the conversation of %r", stage_id)
        if task_id is None and allocate:
            from app.history.records import new_task_id

            task_id = new_task_id(self._clock())  # history unavailable: this conversation's id in memory
        return task_id
