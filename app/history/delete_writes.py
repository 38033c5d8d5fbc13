"""Deleting a conversation and its undo (DESIGN.md §9). Pure Python, over ``HistoryRepository``.

A delete removes every record of one conversation in one transaction (its course's head too, when
it was the active one) and keeps what it removed, as stored, for ``UNDO_MS``: ``undo`` puts it back
exactly, unless that id came back meanwhile (an import of its export, a restored backup, another
tab's turn): then both are kept as one conversation, the union of their trees
(``app.history.merge.merge_conversation``), never the one written over by the other (DESIGN.md §5).
What was removed last also tells sync what the deleting device had (``deleted_paths``, §16, §17).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from app.history.access import HistoryAccess, guarded
from app.history.active import ActiveConversations, Changed
from app.history.branching import Branching
from app.history.changes import HistoryChange
from app.history.merge import join
from app.history.records import TaskMeta, TurnMeta
from app.history.repository import Conversation, HistoryRepository, Stored, Writes

__all__ = ["DeleteWrites", "UNDO_MS"]

UNDO_MS = 10_000
"""A delete can be undone for this long (DESIGN.md §9: at least 5 s)."""


@dataclass
class _Deleted:
    at: int
    stored: Stored
    was_head: bool
    stage_id: str


class DeleteWrites:
    """Deletes and their undo (module docstring). ``lock``: the history writes' lock (one change at a
    time in this tab, ``HistoryWrites.lock``); ``active``: this tab's active conversations (a deleted
    head ends its course's); ``changed``: told after each, a ``HistoryChange`` of kind ``delete`` or
    ``undo``; ``clock``: epoch ms."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, active: ActiveConversations,
                 lock: asyncio.Lock, *, changed: Changed, clock: Callable[[], int]) -> None:
        self._repository, self._access, self._active, self._lock = repository, access, active, lock
        self._changed, self._clock = changed, clock
        self._deleted: _Deleted | None = None

    @guarded(bool)
    async def delete(self, task_id: str) -> bool:
        """Delete one conversation; ``undo`` restores it within ``UNDO_MS``. True when it existed."""
        async with self._lock:
            stored = await self._repository.stored(task_id)
            meta = stored.meta_record
            if meta is None:
                return False
            stage_id = meta.get("stageId", "")
            head = await self._repository.head(stage_id) if isinstance(stage_id, str) else None
            was_head = head is not None and head.task_id == task_id
            writes = Writes()
            writes.remove(stored)
            if was_head:
                writes.end_head(stage_id)
                self._active.ended(stage_id)
            await self._repository.commit(writes)
            self._deleted = _Deleted(self._clock(), stored, was_head, stage_id)
        self._changed(HistoryChange("delete", task_id, stage_id))
        return True

    def can_undo(self) -> bool:
        """True while the last delete can still be undone."""
        return self._deleted is not None and self._clock() - self._deleted.at <= UNDO_MS

    async def undo(self) -> str | None:
        """Restore the last deleted conversation (within ``UNDO_MS``); returns its task id."""
        if not self.can_undo():
            return None
        deleted, self._deleted = self._deleted, None
        return await self._restore(deleted)

    @guarded()
    async def _restore(self, deleted: _Deleted) -> str:
        task_id = deleted.stored.task_id
        async with self._lock:
            writes = Writes()
            if not await self._repository.holds(task_id):
                writes.restore(deleted.stored)
            else:  # back meanwhile (an import, a restore, another tab's turn): kept with it, not written over
                here = await self._repository.conversation(task_id)
                gone = _conversation_of(deleted.stored)
                if here is not None and gone is not None:
                    merged, kept = join(here, gone)
                    if merged.how != "local":  # the deleted one held what is here now lacks
                        writes.expect(here.meta)
                        writes.keep(kept, merged.messages, merged.turns,
                                    branches=merged.branching.branches, shown=merged.branching.shown)
            if writes:
                await self._repository.commit(writes)
        self._changed(HistoryChange("undo", task_id, deleted.stage_id))
        return task_id

    @property
    def undo_was_head(self) -> bool:
        """True when the conversation the last delete removed was its course's active one."""
        return bool(self._deleted and self._deleted.was_head)

    def deleted_messages(self, task_id: str) -> list[dict] | None:
        """The messages of ``task_id`` when it is the conversation this tab deleted last (kept for
        ``undo``), else None: what a deletion says the deleting device had (``app.sync``, §16)."""
        if self._deleted is None or self._deleted.stored.task_id != task_id:
            return None
        record = self._deleted.stored.record("messages")
        messages = record.get("messages") if isinstance(record, dict) else None
        return messages if isinstance(messages, list) else None

    def deleted_paths(self, task_id: str) -> list[list[dict]] | None:
        """Every path of ``task_id``'s tree from a first message to a leaf (``Branching.paths``) when it
        is the conversation this tab deleted last, else None: what a deletion says the deleting device
        had of every branch (``app.sync``, DESIGN.md §16, §17)."""
        messages = self.deleted_messages(task_id)
        if messages is None:
            return None
        return Branching.of(self._deleted.stored.record("messages")).paths(messages)


def _conversation_of(stored: Stored) -> Conversation | None:
    """The conversation a delete removed (its records as stored), or None when its meta or its
    ``messages`` record cannot be read (then what is here now stays as it is)."""
    meta, record, turns = stored.record("conversations"), stored.record("messages"), stored.record("turns")
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        return None
    held = turns.get("turns") if isinstance(turns, dict) else None
    try:
        return Conversation(TaskMeta.model_validate(meta), record["messages"],
                            [TurnMeta.model_validate(t) for t in held if isinstance(t, dict)]
                            if isinstance(held, list) else [], Branching.of(record))
    except ValueError:  # pydantic's ValidationError: a damaged record
        return None
