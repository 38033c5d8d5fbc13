"""``HistoryService``: every conversation of every course, over a ``RecordBackend`` (DESIGN.md §9).

The seed's ChatHistoryManager in the browser. Pure Python: the backend is
IndexedDB in the page (``app.browser.indexeddb``) and ``MemoryBackend`` in tests.
The service is the one face the page and the runtime use; its parts each hold one concern:

- ``app.history.repository``: the tables, indexes and record shapes (the only module naming them);
- ``app.history.access``: the store opened once; any backend failure makes history unavailable
  with ONE notice, and the core (§3–§5) never sees it; a damaged record is skipped with one notice;
- ``app.history.writes``: turns, archive, resume, start-up reconciliation;
- ``app.history.reads``: the list in pages, what arrived above it, search, export reads;
- here: delete keeps what it removed for ``undo`` during ``UNDO_MS`` (``delete``, ``undo``),
  import adds a conversation from a file (``import_bundle``), and another device's conversation is
  kept or merged (``apply_synced``) or removed (``remove_synced``), DESIGN.md §16.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from app.history.access import NOTICE_CODES, HistoryAccess, Segmenter, guarded
from app.history.changes import ChangeHub, HistoryChange
from app.history.merge import merge_conversation, merged_meta
from app.history.reads import PAGE_SIZE, HistoryReads, Page, SearchHit, SearchPage
from app.history.records import Stats, TaskMeta, TurnMeta, new_task_id
from app.history.repository import Conversation, Damaged, HistoryRepository, Stored, Writes
from app.history.text import cut_title, text_needs_segmenter
from app.history.writes import ActiveConversations, HistoryWrites, at_once
from app.records import RecordBackend, RecordStoreError
from app.store import Notice

__all__ = ["ConversationStats", "Damaged", "HistoryService", "NOTICE_CODES", "Page", "SearchHit", "SearchPage",
           "PAGE_SIZE",
           "UNDO_MS", "Stats"]

UNDO_MS = 10_000
"""A delete can be undone for this long (DESIGN.md §9: at least 5 s)."""


@dataclass
class _Deleted:
    at: int
    stored: Stored
    was_head: bool
    stage_id: str


@dataclass
class ConversationStats:
    """Stats of a conversation (seed §9.4): turns, tokens, mean response time in ms."""

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    mean_duration_ms: int = 0

    @classmethod
    def of(cls, meta: TaskMeta | None) -> "ConversationStats":
        """The stats of ``meta`` (all zero for None)."""
        if meta is None:
            return cls()
        return cls(meta.turnCount, meta.stats.inputTokens, meta.stats.outputTokens, meta.stats.totalTokens,
                   round(meta.durationMs / meta.turnCount) if meta.turnCount else 0)


class HistoryService:
    """History of every course's conversations (module docstring).

    ``backend``: an ``app.records.RecordBackend``; ``clock``: epoch ms;
    ``random_bytes``: for task ids; ``prepare``: awaited once before the first
    title is made (the browser installs the grapheme wheel there);
    ``on_notice(Notice)``: history notices (``history-*`` codes, and sync's ``sync-deleted-*``);
    ``changes``: the ``ChangeHub`` on which every change is published (``HistoryChange``: ``record``,
    ``archive``, ``resume``, ``delete``, ``undo``, ``import``, ``sync``, with its source and what it
    wrote; a change of the course's active conversation by sync carries its thread as ``head``),
    for the list, the active thread, other tabs and sync; one is made when none is given. The
    service hears its hub too: another tab's change makes it read that course's active
    conversation again (``forget_active``).
    """

    def __init__(self, backend: RecordBackend, *, clock: Callable[[], int],
                 random_bytes: Callable[[int], bytes] = os.urandom,
                 prepare: Callable[[], Awaitable[None]] | None = None,
                 on_notice: Callable[[Notice], None] | None = None,
                 changes: ChangeHub | None = None,
                 pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._on_notice = on_notice
        self.changes = changes if changes is not None else ChangeHub()
        self._clock = clock
        self._random = random_bytes
        self._pause = pause
        self._repository = HistoryRepository(backend, on_damaged=lambda: self._access.notice("history-damaged"))
        self._access = HistoryAccess(self._repository, notify=self._tell)
        segmenter = Segmenter(prepare)
        self._active = ActiveConversations()
        self._writes = HistoryWrites(self._repository, self._access, segmenter, self._active, clock=clock,
                                     changed=self._changed, random_bytes=random_bytes, pause=pause)
        self._reads = HistoryReads(self._repository, self._access, segmenter, pause=pause)
        self._segmenter = segmenter
        self._deleted: _Deleted | None = None
        self.changes.subscribe(self._heard)

    def _tell(self, notice: Notice) -> None:
        if self._on_notice:
            self._on_notice(notice)

    def _changed(self, change: HistoryChange) -> None:
        self.changes.publish(change)

    def _heard(self, change: HistoryChange) -> None:
        if change.elsewhere:  # another tab changed that course's active conversation, maybe
            self.forget_active(change.stage_id)

    # -- availability ------------------------------------------------------
    @property
    def available(self) -> bool | None:
        """True once open, False once history is unavailable, None until opened."""
        return self._access.available

    @property
    def failure(self) -> str | None:
        """The ``RecordStoreError.kind`` that stopped history last, if any."""
        return self._access.failure

    @property
    def persist_requested(self) -> bool:
        """True once persistent storage was asked for (at the first archive)."""
        return self._writes.persist_requested

    async def open(self) -> bool:
        """Open the backend once; False (and one notice) when history is unavailable."""
        return await self._access.open()

    @property
    def keeps_conversations(self) -> bool:
        """False once history is known to be unavailable, or while its last write failed for lack of
        space: New conversation could then lose the thread for good, which the page must say before
        doing it (DESIGN.md §5, §9)."""
        return self._access.available is not False and not self._access.full

    def on_backend_event(self, kind: str, detail: str = "") -> None:
        """The backend closed the connection (another tab upgrades, the database was deleted/evicted)."""
        self._access.fail(RecordStoreError(kind, detail))

    # -- the active conversation (app.history.writes) ------------------------
    async def head_task_id(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """``HistoryWrites.head_task_id``: the task id of ``stage_id``'s head, allocated when missing."""
        return await self._writes.head_task_id(stage_id, allocate=allocate)

    async def record_turn(self, stage_id: str, messages: list[dict], matched_at: int, *, usage: dict[str, int] | None,
                          model: str, duration_ms: int, message_id: str | None, task_id: str | None = None,
                          own: list[dict] | None = None, dropped_turns: int = 0) -> TurnMeta | None:
        """``HistoryWrites.record_turn``: a completed turn on ``stage_id``'s active conversation."""
        return await self._writes.record_turn(stage_id, messages, matched_at, usage=usage, model=model,
                                              duration_ms=duration_ms, message_id=message_id, task_id=task_id,
                                              own=own, dropped_turns=dropped_turns)

    async def record_turn_in(self, task_id: str, stage_id: str, messages: list[dict], *,
                             usage: dict[str, int] | None, model: str, duration_ms: int,
                             message_id: str | None, dropped_turns: int = 0) -> TurnMeta | None:
        """``HistoryWrites.record_turn_in``: a completed turn of a conversation no longer the head."""
        return await self._writes.record_turn_in(task_id, stage_id, messages, usage=usage, model=model,
                                                 duration_ms=duration_ms, message_id=message_id,
                                                 dropped_turns=dropped_turns)

    async def active(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]]:
        """The active conversation's meta and turns (read once per course, then kept)."""
        return await self._writes.active(stage_id)

    def forget_active(self, stage_id: str) -> None:
        """Drop the cached active meta of ``stage_id`` (another tab changed it)."""
        self._active.forget(stage_id)

    async def archive(self, stage_id: str, messages: list[dict], matched_at: int | None) -> str | None:
        """``HistoryWrites.archive``: New conversation keeps the active one and ends it as the head."""
        return await self._writes.archive(stage_id, messages, matched_at)

    async def resume(self, stage_id: str, task_id: str, current: list[dict], current_matched_at: int | None,
                     matched_at: int) -> list[dict] | None:
        """``HistoryWrites.resume``: make ``task_id`` the head of ``stage_id``; returns its messages."""
        return await self._writes.resume(stage_id, task_id, current, current_matched_at, matched_at)

    async def reconcile(self, threads: dict[str, tuple[list[dict], int]],
                        pause: Callable[[], Awaitable[None]] | None = None) -> list[str]:
        """``HistoryWrites.reconcile``: start-up, localStorage wins; returns the stage ids brought in line
        (``pause``: awaited between adopted courses, DESIGN.md §13)."""
        return await self._writes.reconcile(threads, pause)

    # -- delete, undo ------------------------------------------------------
    @guarded(bool)
    async def delete(self, task_id: str) -> bool:
        """Delete one conversation; ``undo`` restores it within ``UNDO_MS``. True when it existed."""
        async with self._writes.lock:
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
        async with self._writes.lock:
            writes = Writes()
            writes.restore(deleted.stored)
            await self._repository.commit(writes)
        self._changed(HistoryChange("undo", deleted.stored.task_id, deleted.stage_id))
        return deleted.stored.task_id

    @property
    def undo_was_head(self) -> bool:
        """True when the conversation the last delete removed was its course's active one."""
        return bool(self._deleted and self._deleted.was_head)

    # -- list, search (app.history.reads) ------------------------------------
    async def total(self, stage_id: str, since_ms: int | None = None) -> int:
        """How many conversations ``stage_id`` has (updated at or after ``since_ms`` when given)."""
        return await self._reads.total(stage_id, since_ms)

    async def page(self, stage_id: str, cursor: tuple | None = None, *, sort: str = "newest",
                   since_ms: int | None = None) -> Page:
        """``HistoryReads.page``: the next ``PAGE_SIZE`` conversations after ``cursor`` in ``sort`` order."""
        return await self._reads.page(stage_id, cursor, sort=sort, since_ms=since_ms)

    async def newer(self, stage_id: str, top: tuple[int, str] | None) -> list[TaskMeta | Damaged]:
        """Every conversation above ``top`` (what arrived or moved up while the list was open), newest first."""
        return await self._reads.newer(stage_id, top)

    async def get(self, task_id: str) -> TaskMeta | None:
        """One conversation's meta."""
        return await self._reads.get(task_id)

    async def search(self, stage_id: str, keyword: str, cursor: tuple | None = None, *,
                     since_ms: int | None = None, sort: str = "newest") -> SearchPage:
        """``HistoryReads.search``: the next page of conversations of ``stage_id`` matching ``keyword`` (§14)."""
        return await self._reads.search(stage_id, keyword, cursor, since_ms=since_ms, sort=sort)

    # -- export, import ----------------------------------------------------
    async def bundle(self, task_id: str) -> Conversation | None:
        """(meta, messages, turns) of one conversation, for export."""
        return await self._reads.bundle(task_id)

    def conversation_pages(self, per: int) -> AsyncIterator[list[Conversation]]:
        """Every conversation kept, ``per`` at a time (``HistoryRepository.conversation_pages``: what
        sync sends at its first sync, §16). A failure of the store is raised as it is."""
        return self._repository.conversation_pages(per)

    @guarded(lambda: "unavailable")
    async def import_bundle(self, stage_id: str, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                            pause: Callable[[], Awaitable[None]] | None = None) -> str:
        """Add an imported conversation to ``stage_id``'s history (archived). Returns ``"ok"``,
        ``"exists"`` (that task id is already kept: nothing changed) or ``"unavailable"``. A kept
        record of that task id that cannot be read (``Damaged``) is replaced: a corrected file
        repairs it (DESIGN.md §14). ``pause``: awaited between the slices of its records
        (``Writes.keep_in_steps``: a long conversation is not one task)."""
        if text_needs_segmenter(" ".join(meta.taskName.split())):
            await self._segmenter.for_titles([{"role": "user", "content": [{"type": "text", "text": meta.taskName}]}])
        async with self._writes.lock:
            held = await self._repository.holds(meta.taskId)
            if held and await self._repository.meta(meta.taskId) is not None:
                return "exists"
            # the file's title obeys the rule of every title: 50 grapheme clusters (DESIGN.md §9)
            record = meta.model_copy(update={"stageId": stage_id, "taskName": cut_title(meta.taskName)})
            writes = Writes()
            # "add" (new): another tab's import of it meanwhile aborts this one
            await writes.keep_in_steps(record, messages, turns, pause=pause or at_once, new=not held)
            await self._repository.commit(writes)
        self._changed(HistoryChange("import", meta.taskId, stage_id, "import", written=writes.kept(meta.taskId)))
        return "ok"

    # -- sync (DESIGN.md §16) ------------------------------------------------
    @guarded(lambda: "unavailable")
    async def apply_synced(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta]) -> str:
        """Keep another device's version of a conversation (a synced document, ``app.sync.documents``).
        Which conversation continues which is ``app.continuity``'s through
        ``app.history.merge.merge_conversation``. Returns

        - ``"added"``: not kept here before, now kept archived (which conversation is a course's active
          one stays per device); ``"remote"``: the other device's continues this one's and replaced it;
        - ``"merged"``: both changed it; the turns of both are kept, in time order (the caller sends
          the merged one back); ``"local"``: this one continues the other's (the caller sends this
          one); ``"same"``: nothing to do; ``"unavailable"``: history cannot be written.

        The change published (source ``sync``, carrying what was kept) says ``import`` for an added
        one, ``sync`` for a changed one; a changed one that is its course's active conversation
        carries its messages as ``head`` (the device's active thread is rebuilt from history,
        DESIGN.md §16)."""
        head = None
        writes = Writes()
        async with self._writes.lock:
            held = await self._repository.conversation(meta.taskId)
            if held is None:
                writes.keep(meta, messages, turns, new=not await self._repository.holds(meta.taskId))
                await self._repository.commit(writes)
                outcome = "added"
            else:
                merged = merge_conversation((held.messages, held.turns), (messages, turns))
                if merged.how == "local":
                    same = held.messages == messages and held.turns == turns and held.meta == meta
                    return "same" if same else "local"
                kept = merged_meta(held.meta, meta, merged)
                writes.keep(kept, merged.messages, merged.turns)
                await self._repository.commit(writes)
                if (await self._repository.head_id(kept.stageId)) == kept.taskId:
                    self._active.forget(kept.stageId)
                    head = merged.messages
                outcome = merged.how
        self._changed(HistoryChange("import" if outcome == "added" else "sync", meta.taskId, meta.stageId, "sync",
                                    written=writes.kept(meta.taskId), head=head))
        return outcome

    async def apply_synced_many(self, items: list[Conversation]) -> list[str]:
        """``apply_synced`` for each of ``items`` ((meta, messages, turns), in arrival order): one
        outcome each, in order. The conversations not kept here (most of them in a first sync) are
        written together in ONE transaction, after one read that tells them apart; the others, and a
        task id met again later in ``items``, go one by one through ``apply_synced`` after them (a
        later one of the same id then builds on the earlier). Should that transaction abort (another
        tab wrote one of those ids meanwhile: they are added, never put over), each goes one by one
        instead; ``"unavailable"`` for every item when history cannot be read or written (§16)."""
        first: dict[str, int] = {}
        for index, (meta, _, _) in enumerate(items):
            first.setdefault(meta.taskId, index)
        added = await self._writes.add_synced([items[i] for i in first.values()], self._pause)
        if added is None:
            return ["unavailable"] * len(items)
        added_at = {index for index, was_added in zip(first.values(), added) if was_added}
        outcomes = []
        for index, (meta, messages, turns) in enumerate(items):
            if index in added_at:
                outcomes.append("added")
                self._changed(HistoryChange("import", meta.taskId, meta.stageId, "sync",
                                            written=Conversation(meta, messages, turns)))
            else:
                outcomes.append(await self.apply_synced(meta, messages, turns))
        return outcomes

    def deleted_messages(self, task_id: str) -> list[dict] | None:
        """The messages of ``task_id`` when it is the conversation this tab deleted last (kept for
        ``undo``), else None: what a deletion says the deleting device had (``app.sync``, §16)."""
        if self._deleted is None or self._deleted.stored.task_id != task_id:
            return None
        record = next((r for table, r in self._deleted.stored.records if table == "messages"), None)
        messages = record.get("messages") if isinstance(record, dict) else None
        return messages if isinstance(messages, list) else None

    @guarded()
    async def remove_synced(self, task_id: str, seen: Callable[[list[dict]], list[bool]] | None = None) -> str | None:
        """Another device deleted ``task_id``: remove it here too, with no undo (the delete was made
        there; it wins, DESIGN.md §16). Returns the task id of the conversation kept apart (below),
        ``""`` when nothing was kept apart, None when ``task_id`` was not kept here (or history is
        unavailable). ``seen(messages)``: for each turn of
        ``messages`` (``app.history.merge.split_turns``), whether the deleting device had it (None: it
        had every turn). Turns it never had (made here while apart) are not lost: they become a
        conversation of their own, archived, or the course's active one when the deleted one was
        (its change carries what the course's thread now is as ``head``), and a ``sync-deleted-kept``
        notice says so (``title``: the deleted conversation's, ``count``: the turns kept), said before
        the changes are published. A course whose active conversation it was and that keeps nothing
        has none after, its thread emptied (the delete's change carries ``head`` ``[]``) and
        ``sync-deleted-active`` said: the panel never goes on showing a deleted conversation as live
        (a next turn would bring it back under a new id). Changes have the source ``sync``."""
        kept: Conversation | None = None
        async with self._writes.lock:
            stored = await self._repository.stored(task_id)
            meta = stored.meta_record
            if meta is None:
                return None
            stage_id = meta.get("stageId", "") if isinstance(meta.get("stageId"), str) else ""
            was_head = bool(stage_id) and await self._repository.head_id(stage_id) == task_id
            held = await self._repository.conversation(task_id) if seen is not None else None
            writes = Writes()
            writes.remove(stored)
            if held is not None:
                kept = _unseen(held, seen, new_task_id(self._clock(), self._random))
                if kept is not None:
                    writes.keep(*kept, new=True)
            if was_head:
                writes.end_head(stage_id)
                if kept is not None:
                    writes.make_head(stage_id, kept.meta.taskId, None)
                    self._active.forget(stage_id)  # read again: the kept-apart one is active now
                else:
                    self._active.ended(stage_id)
            await self._repository.commit(writes)
        if kept is not None:  # said before the thread is rebuilt: the panel draws both at once
            self._tell(Notice("sync-deleted-kept", {"title": kept.meta.taskName, "count": len(kept.turns) or 1}))
        elif was_head:
            self._tell(Notice("sync-deleted-active", {}))
        self._changed(HistoryChange("delete", task_id, stage_id, "sync",
                                    head=[] if was_head and kept is None else None))
        if kept is not None:
            self._changed(HistoryChange("import", kept.meta.taskId, stage_id, "sync", written=kept,
                                        head=kept.messages if was_head else None))
        return kept.meta.taskId if kept is not None else ""


def _unseen(held: Conversation, seen: Callable[[list[dict]], list[bool]], task_id: str) -> Conversation | None:
    """The turns of ``held`` that ``seen`` says the deleting device never had, as a conversation of
    id ``task_id`` (the title and course of ``held``; turn metas of its messages, renumbered; counts
    from them, ``merged_meta``), or None when there are none."""
    from app.history.merge import Merged, answered, split_turns

    turns = split_turns(held.messages)
    messages = [m for turn, had in zip(turns, seen(held.messages)) if not had for m in turn]
    if not messages:
        return None
    messages = answered(messages)
    ids = {m.get("id") for m in messages if m.get("id") is not None}
    metas = [t.model_copy(update={"turnId": n}) for n, t in
             enumerate((t for t in held.turns if t.messageId in ids), start=1)]
    meta = merged_meta(held.meta, held.meta, Merged("merged", messages, metas))
    return Conversation(meta.model_copy(update={"taskId": task_id}), messages, metas)
