"""Writing a conversation's name and pin (DESIGN.md §18). Pure Python, over ``HistoryRepository``;
the rules (what a name is, which change wins) are ``app.history.names``'.

- ``set_names``: a rename or a pin made here, one transaction (a rename re-indexes the title only);
- ``take_names``: another device's later rename or pin of a conversation kept here (§16);
- ``heard``: another tab changed a conversation this tab named: when that tab's write, read before
  this tab's later one, landed over it, this tab's name (or pin) is written again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.changes import HistoryChange
from app.history.names import NAME_GRAPHEMES, merged_names, unless_later
from app.history.records import TaskMeta
from app.history.repository import HistoryRepository, Writes, unless_stale
from app.history.active import ActiveConversations, Changed

__all__ = ["NameWrites"]

_KEPT = 32
"""How many of this tab's last names and pins ``heard`` can write again (one per conversation and kind)."""


class NameWrites:
    """Names and pins written to history (module docstring). ``lock``: the history writes' lock (one
    change at a time in this tab, ``HistoryWrites.lock``); ``changed``: told after each change, a
    ``HistoryChange`` of kind ``rename`` or ``pin`` (source ``this-tab`` for ``set_names``, ``sync``
    for ``take_names``: sync never sends its own changes back); ``active``: this tab's active conversations, kept in step."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter,
                 active: ActiveConversations, lock: asyncio.Lock, changed: Changed) -> None:
        self._repository, self._access, self._segmenter = repository, access, segmenter
        self._active, self._lock, self._changed = active, lock, changed
        self._made: dict[tuple[str, str], TaskMeta] = {}  # (task id, kind) → the meta this tab wrote last

    @guarded(writes=True)
    async def set_names(self, task_id: str, change: Callable[[TaskMeta, list[dict]], TaskMeta],
                        kind: str, name: str | None = None) -> TaskMeta | None:
        """Apply ``change(meta, messages)`` (``app.history.names``' ``renamed_meta`` or ``pinned_meta``)
        to ``task_id``'s stored meta and store it (a rename re-indexes the title, ``Writes.set_names``);
        ``changed`` hears ``kind`` (``rename`` or ``pin``); ``name``: a rename's text (the grapheme
        segmenter is loaded first when cutting it, or the first-question title it gives back, needs it). Returns the new meta; None when ``task_id``
        has no readable meta. ``updatedAt`` stays: the list's recency is the conversation's last turn.
        A field another tab changed later than ``change`` (its rename written first) is kept as stored
        (``unless_later``, DESIGN.md §18: the later change wins); nothing is stored when that leaves
        nothing to change."""
        async def attempt(expect: bool) -> tuple[TaskMeta | None, TaskMeta | None]:
            """The meta read, and the meta stored (None: nothing to store)."""
            meta = await self._repository.meta(task_id)
            if meta is None:
                return None, None
            held = (await self._repository.form(task_id)).messages
            messages = held if isinstance(held, list) else []
            if name is not None and not name.strip():
                await self._segmenter.for_titles(messages)
            elif name is not None and len(name) > NAME_GRAPHEMES:
                await self._segmenter.load()  # a long name is cut on grapheme clusters (never half an emoji)
            changed = unless_later(meta, change(meta, messages))  # another tab's later change stays
            if changed == meta:
                return meta, None
            await self._store_names(meta, changed, expect=expect)  # another tab's turn meanwhile: again
            return meta, changed

        async with self._lock:
            meta, changed = await unless_stale(attempt)
        if meta is None or changed is None:
            return meta
        self._made.pop((task_id, kind), None)
        self._made[(task_id, kind)] = changed
        if len(self._made) > _KEPT:
            self._made.pop(next(iter(self._made)))
        self._changed(HistoryChange(kind, task_id, meta.stageId))
        return changed

    async def heard(self, task_id: str) -> None:
        """Another tab changed ``task_id``'s name or pin. Each of them this tab changed later (by the
        time of its change) is written again: two tabs that read the conversation before either wrote
        may write in the other order, the earlier change last (DESIGN.md §18: the later change wins;
        §5: nothing lost silently). Fields compare as sync's do (``merged_names``: the same winner in
        every tab, so the tabs agree and stop)."""
        for kind in ("rename", "pin"):
            made = self._made.get((task_id, kind))
            if made is not None:
                await self.set_names(task_id, lambda meta, _, made=made: merged_names(meta, made), kind)

    async def take_names(self, held: TaskMeta, other: TaskMeta) -> TaskMeta:
        """``held`` (a stored meta) with the name and pin of ``other`` (another device's meta of the same
        conversation) where ``other`` changed them later (``merged_names``, DESIGN.md §16, §18), stored
        when that changed anything and told as ``rename`` (``pin`` when only the pin changed): the
        open list draws it afresh. The caller holds ``lock``."""
        named = merged_names(held, other)
        if named != held:
            await self._store_names(held, named)
            kind = "rename" if named.taskName != held.taskName else "pin"
            self._changed(HistoryChange(kind, held.taskId, held.stageId, "sync"))
        return named

    async def _store_names(self, meta: TaskMeta, changed: TaskMeta, *, expect: bool = False) -> None:
        """Store ``changed`` over ``meta`` (a new name re-indexes the title, ``Writes.set_names``), and
        keep this tab's active conversation in step. ``expect``: only while the conversation is still
        as read (``Writes.expect``), else ``RecordStoreError`` kind ``stale`` and nothing is written."""
        writes = Writes()
        if expect:
            writes.expect(meta)
        search = await self._repository.search_record(meta.taskId) if changed.taskName != meta.taskName else None
        writes.set_names(changed, search)
        await self._repository.commit(writes)
        if self._active.task_id(meta.stageId) == meta.taskId:
            _, turns = self._active.known(meta.stageId) or (None, [])
            self._active.set(meta.stageId, changed, turns)
