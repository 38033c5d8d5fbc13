"""Writing history: New conversation, resume, start-up reconciliation, synced additions (DESIGN.md §9).
Pure Python, over ``HistoryRepository``; which thread goes on from which is ``app.continuity``'s rule;
a completed turn is ``app.history.turn_writes``'.

- the id of a course's active conversation, allocated before its first turn (``head_task_id``);
- New conversation archives: the head goes, the conversation stays (``archive``); the first
  archive asks for persistent storage, never waiting for the answer (a prompt may stay open);
- resume makes a past conversation the head; the caller writes the active thread once (``resume``);
- reconciliation at start-up: localStorage wins for a course's active thread; a thread only there
  is adopted (``reconcile``);
- another device's conversations not kept here are added together (``add_synced``, §16).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from app.continuity import belongs, continues
from app.history.adopted import adopted_meta
from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.active import ActiveConversations, Changed, Written
from app.history.changes import HistoryChange
from app.history.records import TaskMeta, TurnMeta, new_task_id
from app.history.repository import HistoryRepository, Writes
from app.history.text import title_of
from app.history.tree import readable_path
from app.history.turn_writes import at_once, carried_over, with_turn
from app.records import RecordStoreError

__all__ = ["ActiveConversations", "Changed", "HistoryWrites", "SLICE_MS", "Written", "at_once", "carried_over",
           "with_turn"]

_log = logging.getLogger(__name__)

SLICE_MS = 12
"""``HistoryWrites.add_synced`` gives the page back (its ``pause``) once building records took this long (ms)."""


class HistoryWrites:
    """Heads, archive, resume, reconciliation and synced additions (module docstring). ``clock``: epoch ms;
    ``random_bytes``: for task ids; ``changed``: told each change this tab made (``HistoryChange``, carrying
    the conversation as written). Its ``lock`` is the one every history writer of the tab holds
    (``TurnWrites``, ``NameWrites``, ``SyncedWrites``)."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter,
                 active: ActiveConversations, *, clock: Callable[[], int], changed: Changed,
                 random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self._repository, self._access, self._segmenter = repository, access, segmenter
        self._active, self._clock, self._changed, self._random = active, clock, changed, random_bytes
        self._lock = asyncio.Lock()
        self.persist_requested = False
        self._persisting: asyncio.Future | None = None  # the one request of the page (a reference keeps it alive)

    @property
    def lock(self) -> asyncio.Lock:
        """Held while a change reads and writes history (one at a time in this tab)."""
        return self._lock

    def _adopted_meta(self, stage_id: str, messages: list[dict], now: int, task_id: str | None,
                      updated_at: int | None) -> tuple[TaskMeta, list[TurnMeta]]:
        """A new conversation of a thread whose turns ran without history: ``(meta, turns)``."""
        at = min(updated_at, now) if updated_at is not None and updated_at > 0 else now
        return adopted_meta(task_id or new_task_id(now, self._random), stage_id, title_of(messages) or "",
                            messages, at)

    @guarded()
    async def head_task_id(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """The task id of ``stage_id``'s active conversation (its head). With ``allocate``, a head that
        does not exist yet is allocated and written (``{stageId, taskId, syncedAt: None}``, no
        conversation record until its first turn, which then takes that id), so the conversation's
        scene checkpoints name the ``taskId`` its turns get (DESIGN.md §9, §10). ``None``: no head
        (without ``allocate``) or history unavailable."""
        async with self._lock:
            task_id = await self._repository.head_id(stage_id)
            if task_id is None and allocate:
                task_id = new_task_id(self._clock(), self._random)
                writes = Writes()
                writes.make_head(stage_id, task_id, None)
                await self._repository.commit(writes)
            return task_id

    @guarded()
    async def head_matched_at(self, stage_id: str) -> Any:
        """The ``updatedAt`` (ms) of the active thread history last matched ``stage_id``'s head to
        (``syncedAt``, DESIGN.md §9); ``None``: no head, none matched yet, or history unavailable."""
        head = await self._repository.head(stage_id)
        return head.matched_at if head is not None else None

    @guarded(lambda: None)
    async def add_synced(self, items: list[tuple[TaskMeta, list[dict], list[TurnMeta]]],
                         pause: Callable[[], Awaitable[None]] | None = None) -> list[bool] | None:
        """Add those of ``items`` ((meta, messages, turns) of distinct task ids) not kept here, in ONE
        transaction (``HistoryService.apply_synced_many``, DESIGN.md §16): whether each was added, all
        False when none was to add or the transaction aborted (another tab wrote one of those ids
        meanwhile: they are added, never put over); ``None`` when history is unavailable. ``pause`` is
        awaited each time building the records took ``SLICE_MS``, and once more after the last one
        built, so that the transaction's encoding (``commit``) starts a step of its own: no step holds
        both building and encoding (no long task; at 10,000 conversations those two together made the
        longest steps of a first sync)."""
        async with self._lock:
            held = await self._repository.held([meta.taskId for meta, _, _ in items])
            writes, since, built = Writes(), self._clock(), False
            for item, kept in zip(items, held):
                meta, messages, turns = item
                if not kept:
                    branching = getattr(item, "branching", None)  # a tree (DESIGN.md §17): kept beside the path
                    writes.keep(meta, messages, turns, new=True,  # its text and index terms: the costly part
                                branches=branching.branches if branching else None,
                                shown=branching.shown if branching else None)
                    if branching:
                        writes.keep_branching(meta.taskId, branching)
                    built = True
                    if pause is not None and self._clock() - since >= SLICE_MS:
                        await pause()  # the page's other work goes on between
                        since, built = self._clock(), False
            if not writes:
                return [False] * len(items)
            if pause is not None and built:
                await pause()
            try:
                await self._repository.commit(writes)
            except RecordStoreError as error:
                if error.kind != "aborted":
                    raise
                return [False] * len(items)
        return [not kept for kept in held]

    async def active(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]]:
        """The active conversation's meta and turns (read once per course, then kept)."""
        known = self._active.known(stage_id)
        return known if known is not None else await self._read_active(stage_id)

    @guarded(lambda: (None, []))
    async def _read_active(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]]:
        # a head whose meta cannot be read shows what its readable turns and fields say (§5), as its next turn writes
        meta, _ = await self._repository.head_meta_or_rebuilt(stage_id)
        turns = await self._repository.turns(meta.taskId) if meta else []
        self._active.set(stage_id, meta, turns)
        return meta, turns

    # -- archive, resume ---------------------------------------------------
    @guarded(writes=True)
    async def archive(self, stage_id: str, messages: list[dict], matched_at: int | None) -> str | None:
        """New conversation: keep the active conversation (``messages`` as last shown; adopted if history
        lacks it) and end it as the head. Returns its task id. Asks for persistent storage once
        (``_ask_persist``, never awaited: no write waits for the browser's answer).
        (``matched_at``: the thread's ``updatedAt``; the archived conversation has no head to stamp.)"""
        task_id = None
        async with self._lock:
            meta, _ = await self._repository.head_meta_or_rebuilt(stage_id)  # a damaged one keeps its turns (§5)
            writes = Writes()
            if messages:
                await self._segmenter.for_titles(messages)
                task_id = meta.taskId if meta else None
                if meta is None or not continues((await self._repository.form(meta.taskId)).messages, messages):
                    allocated = None if meta else await self._repository.head_id(stage_id)
                    task_id = (await self._adopt(writes, stage_id, messages, meta, allocated=allocated,
                                                 updated_at=matched_at)).taskId
            writes.end_head(stage_id)
            await self._repository.commit(writes)
            self._active.ended(stage_id)
        if not self.persist_requested:
            self.persist_requested = True
            self._persisting = asyncio.ensure_future(self._ask_persist())  # asked, never awaited here
        self._changed(HistoryChange("archive", task_id or "", stage_id,
                                    written=writes.kept(task_id) if task_id else None,
                                    form=writes.kept_form(task_id) if task_id else None))
        return task_id

    async def _ask_persist(self) -> None:
        """Ask the browser to keep this origin's storage (DESIGN.md §9: at the first archive), as a task
        of its own that no write waits for: Firefox answers with a permission prompt that stays pending
        until the person answers it, maybe never, and history's writes go one after another. Whatever
        the answer or failure, it is logged, never raised."""
        try:
            granted = await self._repository.persist()
        except Exception as error:  # noqa: BLE001 - a refusal or a dead page must not surface as an unhandled task
            _log.warning("persistent storage not asked: %s", error)
        else:
            _log.info("persistent storage %s", "granted" if granted else "not granted")

    async def _adopt(self, writes: Writes, stage_id: str, messages: list[dict], meta: TaskMeta | None, *,
                     allocated: str | None, pause: Callable[[], Awaitable[None]] | None = None,
                     updated_at: int | None = None) -> TaskMeta:
        """Keep ``messages`` as ``meta``'s conversation in ``writes`` (a continuation or a branch of it: its
        stored turn meta is kept, read from the store, not from this tab's cache, which a reload empties,
        and its tree grows by ``messages``, ``app.history.branches.StoredForm.written``: no branch is
        lost), or as a new one (``allocated``: the id its head was allocated, if any), whose turns are counted
        and dated by ``app.history.adopted`` (``updated_at``: the thread's ``updatedAt``, epoch ms;
        the clock when None or later). Returns the meta kept.
        ``pause``: awaited after the title and between the slices of the search record (start-up,
        DESIGN.md §13); without it all is built at once."""
        now = self._clock()
        turns: list[TurnMeta] = []
        branches, shown = None, None
        if meta is None:
            meta, turns = self._adopted_meta(stage_id, messages, now, allocated, updated_at)
        else:
            turns = await self._repository.turns(meta.taskId)
            messages, branches, shown = (await self._repository.form(meta.taskId)).written(messages)
            meta = meta.model_copy(update={"updatedAt": max(now, meta.updatedAt),
                                           "taskName": meta.taskName or title_of(messages) or ""})
        if pause is None:
            writes.keep(meta, messages, turns, branches=branches, shown=shown)
        else:
            await pause()
            await writes.keep_in_steps(meta, messages, turns, pause=pause, branches=branches, shown=shown)
        return meta

    @guarded()
    async def resume(self, stage_id: str, task_id: str, current: list[dict], current_matched_at: int | None,
                     matched_at: int) -> list[dict] | None:
        """Make ``task_id`` the head of ``stage_id``; returns its messages for the caller's one write
        of ``maic-agent-threads`` (stamped ``matched_at``), or None when it does not exist or is
        damaged (its ``messages`` record missing or not read whole, ``StoredForm.whole``: one notice,
        nothing written, DESIGN.md §5).
        ``current``: the active thread now (of ``updatedAt`` ``current_matched_at``); kept in history
        if it is not there yet."""
        await self._segmenter.for_titles(current)
        async with self._lock:
            meta = await self._repository.meta(task_id)
            form = await self._repository.whole_form(task_id) if meta is not None else None
            if meta is None or form is None:  # none, or damaged (one notice): never opened without what it lacks
                return None
            messages = readable_path(form.messages)  # a repeated id on: not shown (its record keeps it)
            writes = Writes()
            head = await self._repository.head_meta(stage_id)
            if current and (head is None or head.taskId != task_id):
                if head is None or not continues((await self._repository.form(head.taskId)).messages, current):
                    allocated = None if head else await self._repository.head_id(stage_id)
                    await self._adopt(writes, stage_id, current, head, allocated=allocated, updated_at=current_matched_at)
            meta = meta.model_copy(update={"stageId": stage_id})
            writes.make_head(stage_id, task_id, matched_at)
            await self._repository.commit(writes)
            self._active.set(stage_id, meta, await self._repository.turns(task_id))
        self._changed(HistoryChange("resume", task_id, stage_id))
        return messages

    @guarded(list)
    async def reconcile(self, threads: dict[str, tuple[list[dict], int]],
                        pause: Callable[[], Awaitable[None]] | None = None) -> list[str]:
        """Start-up: for each course's active thread in ``maic-agent-threads`` (``{stageId: (messages,
        updatedAt)}``), localStorage wins: history's head is brought in line, a thread history lacks is
        adopted as a conversation. A thread that is the start of what the head holds (the later turns
        did not fit in localStorage) is that conversation: the head stays whole, nothing is copied.
        Reads only heads whose ``syncedAt`` differs. Returns the adopted/updated stage ids.
        ``pause``: awaited after each course that was adopted or updated, and within one between its
        title, the halves of its search record and its transaction (the browser passes
        ``app.browser.tasks.next_task``: no step of start-up over 50 ms, DESIGN.md §13). Each course is
        written in a transaction of its own (its 5 records and its head), and announced as a turn is
        (``changed``: a ``record`` change carrying what it wrote), so that a list drawn while start-up
        reconciled shows it (DESIGN.md §5, §9: a thread kept while history was blocked is not hidden)."""
        changed = []
        for stage_id, (messages, updated_at) in threads.items():
            if messages and await self._reconcile_one(stage_id, messages, updated_at, pause):
                changed.append(stage_id)
                if pause is not None:
                    await pause()
        return changed

    async def _reconcile_one(self, stage_id: str, messages: list[dict], updated_at: int,
                             pause: Callable[[], Awaitable[None]] | None = None) -> bool:
        """``reconcile`` of one course; True when its head was adopted or updated."""
        head = await self._repository.head(stage_id)
        if head is not None and head.matched_at == updated_at:
            return False
        await self._segmenter.for_titles(messages)
        async with self._lock:
            meta, _ = await self._repository.head_meta_or_rebuilt(stage_id)  # a damaged one keeps its turns (§5)
            allocated = None if meta else await self._repository.head_id(stage_id)  # a head without turns yet
            held = await self._repository.form(meta.taskId) if meta else None
            old = held.messages if held else None
            # goes on from it, or is a branch of it, whichever first question of its tree it shows (§17): its tree grows
            goes_on = belongs(messages, old, sent_on=held is not None and held.starts(messages))
            writes = Writes()
            # history holds this thread and turns localStorage could not keep (too big for its
            # quota): the same conversation, kept whole, never copied (DESIGN.md §5, §9)
            # or the thread is exactly the head's shown path (another stamp): nothing to adopt, the
            # conversation's time and place in the list stay (§9)
            whole = meta is not None and (messages == old or (not goes_on and continues(old, messages)))
            if not whole:  # else another conversation: the stored head stays archived
                meta = await self._adopt(writes, stage_id, messages, meta if goes_on else None, allocated=allocated,
                                         pause=pause, updated_at=updated_at)
                if pause is not None:
                    await pause()  # the transaction (its JSON and the records' copy) is a slice of its own
            writes.make_head(stage_id, meta.taskId, updated_at)
            await self._repository.commit(writes)
            self._active.forget(stage_id)
        if not whole:  # written as a turn writes it: a list drawn (or opened) meanwhile shows it (§9)
            self._changed(HistoryChange("record", meta.taskId, stage_id, written=writes.kept(meta.taskId),
                                        form=writes.kept_form(meta.taskId)))
        return not whole
