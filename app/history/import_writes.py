"""Importing a conversation from a file (DESIGN.md §14): JSON exports, ChatGPT's export, the
original's value. Pure Python, over ``HistoryRepository``.

A file's conversation is added to a course's history, archived. When one is kept under its task id
already, the two are compared as a backup's restore compares them (``app.backup.format.plan_merge``):
nothing changes when the kept one holds every message of the file's; the two become one, the union of
both trees, when the file continued or branched it elsewhere; another conversation under a kept id is
added beside it under a new id and a copy's title. A kept conversation that cannot be read is
replaced: a corrected file repairs it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.active import ActiveConversations, Changed
from app.history.branching import Branching
from app.history.changes import HistoryChange
from app.history.merge import join
from app.history.names import NAME_GRAPHEMES
from app.history.records import TaskMeta, TurnMeta, new_task_id
from app.history.repository import Conversation, HistoryRepository, Writes
from app.history.text import TITLE_GRAPHEMES, copy_title, cut_title, text_needs_segmenter, title_of
from app.history.tree import Tree, kinship
from app.history.turn_writes import at_once

__all__ = ["ImportWrites"]


class ImportWrites:
    """Imports of one conversation each (module docstring). ``lock``: the history writes' lock
    (``HistoryWrites.lock``); ``active``: this tab's active conversations (a join with a course's
    active one drops what was remembered of it); ``changed``: told after each, an ``import`` change;
    ``clock``: epoch ms and ``random_bytes``: for the id of a copy."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter,
                 active: ActiveConversations, lock: asyncio.Lock, *, changed: Changed, clock: Callable[[], int],
                 random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self._repository, self._access, self._segmenter, self._active, self._lock = (
            repository, access, segmenter, active, lock)
        self._changed, self._clock, self._random = changed, clock, random_bytes

    @guarded(lambda: "unavailable")
    async def import_bundle(self, stage_id: str, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                            pause: Callable[[], Awaitable[None]] | None = None, *,
                            branches: list[dict] | None = None, shown: dict[str, str] | None = None) -> str:
        """Add an imported conversation to ``stage_id``'s history (archived). Returns ``"ok"``,
        ``"exists"`` (the conversation kept under that task id holds every message of it: nothing
        changed), ``"extended"`` (the kept one is that conversation, continued or branched in the file:
        the union of both trees replaces it, as a backup's restore does, §14), ``"copy"`` (the kept one
        under that id is another conversation: the file's is added under a new id and a copy's title)
        or ``"unavailable"``. A kept conversation of that task id that cannot be read (its meta or its
        ``messages`` record, ``HistoryRepository.damaged``) is replaced: a corrected file repairs it. ``pause``: awaited between the slices of its records
        (``Writes.keep_in_steps``: a long conversation is not one task). ``branches``, ``shown``: the
        rest of its tree in the stored form (``app.history.export.parse_export``'s ``Conversation``,
        DESIGN.md §17); ``messages`` is then the shown path."""
        if text_needs_segmenter(" ".join(meta.taskName.split())):
            await self._segmenter.for_titles([{"role": "user", "content": [{"type": "text", "text": meta.taskName}]}])
        if meta.changedAt.taskName and len(meta.taskName) > NAME_GRAPHEMES:
            await self._segmenter.load()  # a name past 200 code points may be cut past the 400 checked above
        outcome = "ok"
        async with self._lock:
            held = await self._repository.holds(meta.taskId)
            here = await self._repository.conversation(meta.taskId) \
                if held and not await self._repository.damaged(meta.taskId) else None  # a damaged one is replaced
            if here is not None:
                outcome = _joined(here, messages, branches or [], shown or {})
                if outcome == "exists":
                    return outcome
                if outcome == "extended":
                    written, head = await self._extend(here, meta, messages, turns,
                                                       Branching(list(branches or []), dict(shown or {})))
                    self._changed(HistoryChange("import", meta.taskId, here.meta.stageId, "import", written=written,
                                                head=head))
                    return outcome
                # another conversation under a kept id: added beside it, told apart (as a restore does, §14)
                meta = meta.model_copy(update={"taskId": new_task_id(self._clock(), self._random),
                                               "taskName": copy_title(meta.taskName)})
                held = False
            # the file's title obeys the rule of every title: 50 grapheme clusters (DESIGN.md §9), or 200
            # for a name a person gave it (§18: its export says when it was renamed)
            limit = NAME_GRAPHEMES if meta.changedAt.taskName else TITLE_GRAPHEMES
            title = cut_title(meta.taskName, limit=limit)
            if not title:  # a file with a blank title: its first question titles it, as any title (§9)
                await self._segmenter.for_titles(messages)
                title = title_of(messages) or ""
            record = meta.model_copy(update={"stageId": stage_id, "taskName": title})
            writes = Writes()
            # "add" (new): another tab's import of it meanwhile aborts this one
            await writes.keep_in_steps(record, messages, turns, pause=pause or at_once, new=not held,
                                       branches=branches, shown=shown)
            await self._repository.commit(writes)
        self._changed(HistoryChange("import", meta.taskId, stage_id, "import", written=writes.kept(meta.taskId)))
        return outcome

    async def _extend(self, here: Conversation, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                      branching: Branching) -> tuple[Conversation | None, list[dict] | None]:
        """``import_bundle``'s join (lock held): ``here`` and the file's version of it as one, the union
        of both trees (``app.history.merge.merge_conversation``), written only while ``here`` is as read,
        its ``updatedAt`` later than ``here``'s (what a tab remembered of it is stale, as it is after a
        turn). Returns what was written, and the shown path when the conversation is its course's
        active one (the change's ``head``: the panel shows what the file added, DESIGN.md §16's rule
        for another device's version); then the course's remembered state is dropped, so its next turn
        reads the conversation whole and never writes over what the file added."""
        theirs = Conversation(meta.model_copy(update={"stageId": here.meta.stageId}), messages, turns, branching)
        merged, kept = join(here, theirs)
        writes = Writes()
        writes.expect(here.meta)
        await writes.keep_in_steps(kept, merged.messages, merged.turns, pause=at_once,
                                   branches=merged.branching.branches, shown=merged.branching.shown)
        await self._repository.commit(writes)
        if await self._repository.head_id(kept.stageId) != kept.taskId:
            return writes.kept(kept.taskId), None
        self._active.forget(kept.stageId)
        return writes.kept(kept.taskId), list(merged.messages)


def _joined(here: Conversation, messages: list[dict], branches: list[dict], shown: dict[str, str]) -> str:
    """An imported conversation against the one kept under its task id, as trees (as a backup's
    restore compares them, ``app.backup.format.plan_merge``): ``exists`` when ``here`` holds every
    message of it, ``copy`` when they share no message or a message of one id differs in content or
    place (another conversation), else ``extended`` (one conversation, continued or branched)."""
    return {"apart": "copy", "held": "exists", "grows": "extended"}[
        kinship(here.tree, Tree.from_record(messages, branches, shown))]
