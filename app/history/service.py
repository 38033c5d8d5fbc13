"""``HistoryService``: every conversation of every course, over a ``RecordBackend`` (DESIGN.md §9).

The seed's ChatHistoryManager in the browser. Pure Python: the backend is
IndexedDB in the page (``app.browser.indexeddb``) and ``MemoryBackend`` in tests.
The service is the one face the page and the runtime use; its parts each hold one concern:

- ``app.history.repository``: the tables, indexes and record shapes (the only module naming them);
- ``app.history.access``: the store opened once; any backend failure makes history unavailable
  with ONE notice, and the core (§3–§5) never sees it; a damaged record is skipped with one notice;
- ``app.history.turn_writes``: a completed turn; ``app.history.writes``: heads, archive, resume,
  start-up reconciliation;
- ``app.history.reads``: the list in pages, what arrived above it, search, export reads;
- ``app.history.delete_writes``: delete keeps what it removed for ``undo`` during ``UNDO_MS``;
- ``app.history.import_writes``: an import adds a conversation from a file, or joins it with the one
  kept under its id (DESIGN.md §14);
- here: another device's conversation is kept or merged (``apply_synced``) or removed
  (``remove_synced``), DESIGN.md §16.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from dataclasses import dataclass

from app.history.access import NOTICE_CODES, HistoryAccess, Segmenter
from app.history.branching import NO_BRANCHES, Branching
from app.history.changes import ChangeHub, HistoryChange
from app.history.reads import PAGE_SIZE, HistoryReads, Page, SearchHit, SearchPage
from app.history.records import Stats, TaskMeta, TurnMeta
from app.history.repository import Conversation, Damaged, HistoryRepository
from app.history.search_index import SearchIndex
from app.history.name_writes import NameWrites
from app.history.names import pinned_meta, renamed_meta
from app.history.tree import Tree
from app.history.synced_writes import SyncedWrites
from app.history.active import ActiveConversations
from app.history.branch_writes import BranchWrites
from app.history.delete_writes import UNDO_MS, DeleteWrites
from app.history.import_writes import ImportWrites
from app.history.turn_writes import TurnWrites, at_once
from app.history.writes import HistoryWrites
from app.ports import TurnEnded
from app.records import RecordBackend, RecordStoreError
from app.store import Notice

_log = logging.getLogger(__name__)


def _logged(task: asyncio.Future) -> None:
    """Log a failed background write (a name written again, ``NameWrites.heard``) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        _log.error("writing a name again failed", exc_info=task.exception())

__all__ = ["ConversationStats", "Damaged", "HistoryService", "NOTICE_CODES", "Page", "SearchHit", "SearchPage",
           "PAGE_SIZE",
           "UNDO_MS", "Stats"]

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
    conversation again (``forget_active``). ``on_opened()``: told when the open another tab blocked
    went through at last (``on_backend_event``); the page then calls ``reopen``.
    """

    def __init__(self, backend: RecordBackend, *, clock: Callable[[], int],
                 random_bytes: Callable[[int], bytes] = os.urandom,
                 prepare: Callable[[], Awaitable[None]] | None = None,
                 on_notice: Callable[[Notice], None] | None = None,
                 changes: ChangeHub | None = None,
                 pause: Callable[[], Awaitable[None]] | None = None,
                 on_opened: Callable[[], None] | None = None) -> None:
        self._on_notice = on_notice
        self._on_opened = on_opened
        self.changes = changes if changes is not None else ChangeHub()
        self._clock = clock
        self._random = random_bytes
        self._pause = pause
        self._repository = HistoryRepository(backend, on_damaged=lambda: self._access.notice("history-damaged"))
        self._access = HistoryAccess(self._repository, notify=self._tell)
        segmenter = Segmenter(prepare)
        self._active = ActiveConversations()
        self._writes = HistoryWrites(self._repository, self._access, segmenter, self._active, clock=clock,
                                     changed=self._changed, random_bytes=random_bytes)
        self._turns = TurnWrites(self._repository, self._access, segmenter, self._active, self._writes.lock,
                                 clock=clock, changed=self._changed, random_bytes=random_bytes, pause=pause)
        self._branches = BranchWrites(self._repository, self._access, self._active, self._writes.lock, clock=clock,
                                      changed=self._changed, pause=pause or at_once)
        self._names = NameWrites(self._repository, self._access, segmenter, self._active, self._writes.lock,
                                 self._changed)
        self._synced = SyncedWrites(self._repository, self._access, self._writes, self._active, self._names,
                                    changed=self._changed, tell=self._tell, clock=clock, random_bytes=random_bytes,
                                    pause=self._pause)
        self._reads = HistoryReads(self._repository, SearchIndex(backend, self._repository), self._access, segmenter,
                                   pause=pause)
        self._segmenter = segmenter
        self._deletes = DeleteWrites(self._repository, self._access, self._active, self._writes.lock,
                                     changed=self._changed, clock=clock)
        self._imports = ImportWrites(self._repository, self._access, segmenter, self._active, self._writes.lock,
                                     changed=self._changed, clock=clock, random_bytes=random_bytes)
        self.changes.subscribe(self._heard)

    def _tell(self, notice: Notice) -> None:
        if self._on_notice:
            self._on_notice(notice)

    def _changed(self, change: HistoryChange) -> None:
        self.changes.publish(change)

    def _heard(self, change: HistoryChange) -> None:
        if change.elsewhere:  # another tab changed that course's active conversation, maybe
            self.forget_active(change.stage_id)
            if change.kind in ("rename", "pin") and change.task_id:  # its write may have landed over this tab's later one
                try:
                    asyncio.get_running_loop()
                except RuntimeError:
                    return
                asyncio.ensure_future(self._names.heard(change.task_id)).add_done_callback(_logged)

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
        """The backend closed the connection (another tab upgrades, the database was deleted/evicted),
        or (``opened``) an open another tab blocked went through at last: ``on_opened`` is told, and
        the page takes history back up (``reopen``)."""
        if kind == "opened":
            if self._on_opened is not None:
                self._on_opened()
            return
        self._access.fail(RecordStoreError(kind, detail))

    async def reopen(self) -> bool:
        """``HistoryAccess.reopen``: history blocked by another tab opens now that the block lifted;
        True when it is open again."""
        return await self._access.reopen()

    # -- the active conversation (app.history.writes, app.history.turn_writes) --
    async def head_task_id(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """``HistoryWrites.head_task_id``: the task id of ``stage_id``'s head, allocated when missing."""
        return await self._writes.head_task_id(stage_id, allocate=allocate)

    async def head_matched_at(self, stage_id: str) -> Any:
        """``HistoryWrites.head_matched_at``: the stamp of the thread ``stage_id``'s head was matched to."""
        return await self._writes.head_matched_at(stage_id)

    async def record_turn(self, event: TurnEnded, matched_at: int, thread: list[dict] | None = None) -> TurnMeta | None:
        """``TurnWrites.record_turn``: the turn ``event`` on its course's active conversation."""
        return await self._turns.record_turn(event, matched_at, thread)

    async def record_turn_in(self, task_id: str, event: TurnEnded) -> TurnMeta | None:
        """``TurnWrites.record_turn_in``: the turn ``event`` of a conversation no longer the head."""
        return await self._turns.record_turn_in(task_id, event)

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

    # -- branches (app.history.branch_writes, DESIGN.md §17) ----------------
    async def branches(self, stage_id: str) -> Tree | None:
        """The tree of ``stage_id``'s active conversation as stored; None when the course has none (or
        history is unavailable)."""
        task_id = await self._writes.head_task_id(stage_id, allocate=False)
        return await self._branches.tree(task_id) if task_id is not None else None

    async def branches_in(self, task_id: str) -> Tree | None:
        """``BranchWrites.tree``: the tree of conversation ``task_id`` (a resumed or searched one)."""
        return await self._branches.tree(task_id)

    async def show_path(self, stage_id: str, path: list[dict]) -> Tree | None:
        """``show_path_in`` on ``stage_id``'s active conversation (None when the course has none)."""
        task_id = await self._writes.head_task_id(stage_id, allocate=False)
        return await self._branches.show_path_in(task_id, path) if task_id is not None else None

    async def show_path_in(self, task_id: str, path: list[dict]) -> Tree | None:
        """``BranchWrites.show_path_in``: ``path`` becomes the shown path of conversation ``task_id``."""
        return await self._branches.show_path_in(task_id, path)

    # -- delete, undo ------------------------------------------------------
    async def delete(self, task_id: str) -> bool:
        """``DeleteWrites.delete``: delete one conversation; ``undo`` restores it within ``UNDO_MS``.
        True when it existed."""
        return await self._deletes.delete(task_id)

    def can_undo(self) -> bool:
        """True while the last delete can still be undone."""
        return self._deletes.can_undo()

    async def undo(self) -> str | None:
        """Restore the last deleted conversation (within ``UNDO_MS``); returns its task id."""
        return await self._deletes.undo()

    @property
    def undo_was_head(self) -> bool:
        """True when the conversation the last delete removed was its course's active one."""
        return self._deletes.undo_was_head

    # -- names and pins (DESIGN.md §18) ----------------------------------------
    async def rename(self, task_id: str, text: str, *, at: int | None = None) -> TaskMeta | None:
        """Rename ``task_id`` to ``text`` (``app.history.names.named``: blank gives back the
        first-question title; at most 200 clusters). ``at``: when the person renamed it (epoch ms, the
        service's clock; default: now): of two tabs' renames, the later by this time wins, whichever is
        written first (DESIGN.md §18). Returns the new meta (None: not kept, or history unavailable);
        the hub (``changes``) hears ``rename``."""
        now = self._clock() if at is None else at
        return await self._names.set_names(task_id, lambda meta, messages: renamed_meta(meta, text, messages, now=now),
                                            "rename", text)

    async def pin(self, task_id: str, pinned: bool, *, at: int | None = None) -> TaskMeta | None:
        """Pin (``pinned`` True) or unpin ``task_id``: pinned conversations lead their course's list,
        most recently pinned first. ``at``: when the person pinned it, as for ``rename``. Returns the new
        meta (None: not kept, or history unavailable); the hub (``changes``) hears ``pin``."""
        now = self._clock() if at is None else at
        return await self._names.set_names(task_id, lambda meta, _: pinned_meta(meta, pinned, now=now), "pin")

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

    async def damaged(self, task_id: str) -> bool:
        """``HistoryReads.damaged``: conversation ``task_id`` is stored but cannot be read (what a
        resume refused for that reason says, DESIGN.md §5)."""
        return await self._reads.damaged(task_id)

    async def search(self, stage_id: str, keyword: str, cursor: tuple | None = None, *,
                     since_ms: int | None = None, sort: str = "newest") -> SearchPage:
        """``HistoryReads.search``: the next page of conversations of ``stage_id`` matching ``keyword`` (§14)."""
        return await self._reads.search(stage_id, keyword, cursor, since_ms=since_ms, sort=sort)

    # -- export, import ----------------------------------------------------
    async def bundle(self, task_id: str) -> Conversation | None:
        """(meta, messages, turns) of one conversation, for export: a ``Conversation`` whose ``tree``
        holds every branch (DESIGN.md §17)."""
        return await self._reads.bundle(task_id)

    def conversation_pages(self, per: int) -> AsyncIterator[list[Conversation]]:
        """Every conversation kept, ``per`` at a time (``HistoryRepository.conversation_pages``: what
        sync sends at its first sync, §16). A failure of the store is raised as it is."""
        return self._repository.conversation_pages(per)

    async def import_bundle(self, stage_id: str, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                            pause: Callable[[], Awaitable[None]] | None = None, *,
                            branches: list[dict] | None = None, shown: dict[str, str] | None = None) -> str:
        """``ImportWrites.import_bundle``: add an imported conversation to ``stage_id``'s history, or join
        it with the one kept under its task id (``"ok"``, ``"exists"``, ``"extended"``, ``"copy"`` or
        ``"unavailable"``)."""
        return await self._imports.import_bundle(stage_id, meta, messages, turns, pause, branches=branches, shown=shown)

    # -- sync (DESIGN.md §16; app.history.synced_writes) -----------------------
    async def apply_synced(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                           branching: Branching = NO_BRANCHES) -> str:
        """Keep another device's version of a conversation, ``branching`` its tree beside the shown path
        ``messages`` (``SyncedWrites.apply``: ``"added"``, ``"remote"``, ``"merged"``, ``"local"``,
        ``"same"`` or ``"unavailable"``)."""
        return await self._synced.apply(meta, messages, turns, branching)

    async def apply_synced_many(self, items: list[Conversation]) -> list[str]:
        """``apply_synced`` for each of ``items`` in arrival order, those new here in one transaction
        (``SyncedWrites.apply_many``): one outcome each, in order."""
        return await self._synced.apply_many(items)

    def deleted_messages(self, task_id: str) -> list[dict] | None:
        """``DeleteWrites.deleted_messages``: the messages of ``task_id`` when this tab deleted it last."""
        return self._deletes.deleted_messages(task_id)

    def deleted_paths(self, task_id: str) -> list[list[dict]] | None:
        """``DeleteWrites.deleted_paths``: every path of ``task_id``'s tree when this tab deleted it last."""
        return self._deletes.deleted_paths(task_id)

    async def renew_synced(self, task_id: str) -> str | None:
        """``task_id``, undone after its deletion went out, comes back under a new task id, whole
        (``SyncedWrites.renew``, DESIGN.md §16). Returns the new id (None: not kept here)."""
        return await self._synced.renew(task_id)

    async def remove_synced(self, task_id: str, seen: Callable[[list[dict]], list[bool]] | None = None) -> str | None:
        """Another device deleted ``task_id``: removed here too, no undo, the turns it never had kept
        apart (``SyncedWrites.remove``). Returns the kept-apart task id, ``""`` when nothing was kept
        apart, None when ``task_id`` was not kept here (or history is unavailable)."""
        return await self._synced.remove(task_id, seen)
