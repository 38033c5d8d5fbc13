"""``HistoryService``: every conversation of every course, over a ``RecordBackend`` (DESIGN.md §9).

The seed's ChatHistoryManager in the browser. Pure Python: the backend is
IndexedDB in the page (``app.browser.indexeddb``) and ``MemoryBackend`` in tests.

Tables (``app.records.SCHEMA``): ``conversations`` (``TaskMeta`` records),
``messages`` (``{taskId, messages}``: the slim projection, §3), ``turns``
(``{taskId, turns}``), ``search`` (``{taskId, stageId, updatedAt,
folded}``), ``texts`` (``{taskId, text}``, for snippets) and ``heads`` (``{stageId, taskId, syncedAt}``: the conversation
that is a course's active thread in ``maic-agent-threads``; ``syncedAt`` is
that thread's ``updatedAt`` when history last matched it).

Rules, each in one method:

- a completed turn is written with its meta in ONE transaction (``record_turn``);
- New conversation archives: the head goes, the conversation stays (``archive``);
  the first archive asks for persistent storage;
- resume makes a past conversation the head; the caller writes the active
  thread once (``resume``);
- delete keeps what it removed for ``undo`` during ``UNDO_MS`` (``delete``, ``undo``);
- reconciliation at start-up: localStorage wins for a course's active thread;
  a thread only there is adopted (``reconcile``);
- the list pages on the cursor (``updatedAt``, ``taskId``), newest first, 10 a page
  (``page``), and ``newer`` returns what arrived or moved above the list's top;
- search folds case, finds text inside unspaced CJK sentences, filters by time
  and sorts (``search``);
- any backend failure makes history unavailable with ONE notice; the core
  (§3–§5) never sees it. A damaged record is skipped with one notice.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.continuity import continues
from app.history.records import TASK_ID, Stats, TaskMeta, TurnMeta, Usage, iso, new_task_id
from app.history.text import (cut_title, fold, fold_map, needs_clusters, needs_segmenter, plain_text, snippet,
                               text_needs_segmenter, title_of)
from app.records import HIGHEST, LOWEST, RecordStoreError
from app.store import Notice

__all__ = ["Damaged", "HistoryService", "Page", "SearchHit", "PAGE_SIZE", "UNDO_MS", "Stats"]

_log = logging.getLogger(__name__)

PAGE_SIZE = 10
UNDO_MS = 10_000
"""A delete can be undone for this long (DESIGN.md §9: at least 5 s)."""
LIST_INDEX = "[stageId+updatedAt+taskId]"
SEARCH_INDEX = "[stageId+updatedAt]"
SNIPPET_BEFORE, SNIPPET_AFTER = 24, 60
FOLD_VERSION = 2
"""The folding a ``search`` record's ``folded`` text was made with (2: DESIGN.md §14's; records
without it were lower-cased only and are folded again the first time their course is searched)."""
REFOLD_BATCH = 50

NOTICE_CODES = {
    "unavailable": "history-unavailable", "blocked": "history-blocked", "version": "history-unavailable",
    "versionchange": "history-version-change", "deleted": "history-evicted", "closed": "history-unavailable",
    "quota": "history-full", "aborted": "history-unavailable", "failed": "history-unavailable",
}


@dataclass(frozen=True)
class Page:
    """One page of the list: ``items`` in the list's order; ``cursor`` for the next page; ``has_more``;
    ``total``: how many the list holds (its course, in its time range), read with the page."""

    items: list[TaskMeta | Damaged]
    cursor: tuple | None
    has_more: bool
    total: int = 0


@dataclass(frozen=True)
class Damaged:
    """A stored conversation whose meta cannot be read (a record an older version wrote with a value
    IndexedDB could not keep exactly, or changed by hand): listed so that it can be deleted or a
    corrected file imported over it, never hidden (DESIGN.md §5, §14). Reads like a ``TaskMeta`` with
    nothing known: no title, no counts; ``updatedAt`` as stored when it is a number, else 0."""

    taskId: str
    stageId: str
    updatedAt: int
    createdAt: int = 0
    taskName: str = ""
    stats: Stats = field(default_factory=Stats)
    turnCount: int = 0
    durationMs: int = 0
    damaged: bool = True


@dataclass(frozen=True)
class SearchHit:
    """A conversation that matches: its meta and the snippet ``(before, match, after)``."""

    meta: TaskMeta
    snippet: tuple[str, str, str]


@dataclass
class _Deleted:
    at: int
    records: list[tuple[str, dict]]
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
        if meta is None:
            return cls()
        return cls(meta.turnCount, meta.stats.inputTokens, meta.stats.outputTokens, meta.stats.totalTokens,
                   round(meta.durationMs / meta.turnCount) if meta.turnCount else 0)


class HistoryService:
    """History of every course's conversations (module docstring).

    ``backend``: an ``app.records.RecordBackend``; ``clock``: epoch ms;
    ``random_bytes``: for task ids; ``prepare``: awaited once before the first
    title is made (the browser installs the grapheme wheel there);
    ``on_notice(Notice)``: history notices (``history-*`` codes);
    ``on_change(kind, task_id, stage_id)``: after this tab changed history
    (``record``, ``archive``, ``resume``, ``delete``, ``undo``, ``import``),
    for the view and other tabs.
    """

    def __init__(self, backend: Any, *, clock: Callable[[], int], random_bytes: Callable[[int], bytes] = os.urandom,
                 prepare: Callable[[], Awaitable[None]] | None = None,
                 on_notice: Callable[[Notice], None] | None = None,
                 on_change: Callable[[str, str, str], None] | None = None) -> None:
        self._db = backend
        self._clock = clock
        self._random = random_bytes
        self._prepare = prepare
        self._prepared = False
        self.on_notice = on_notice
        self.on_change = on_change
        self.available: bool | None = None  # None until opened
        self.failure: str | None = None
        self._notified: set[str] = set()
        self._opening: asyncio.Future | None = None
        self._lock = asyncio.Lock()
        self._deleted: _Deleted | None = None
        self._turns: dict[str, list[TurnMeta]] = {}  # active conversation's turns per course
        self._metas: dict[str, TaskMeta | None] = {}  # active conversation's meta per course
        self.persist_requested = False
        self._full = False  # the last write failed with "quota"
        self._refolded: set[str] = set()  # courses whose search records all carry FOLD_VERSION

    # -- availability ------------------------------------------------------
    async def open(self) -> bool:
        """Open the backend once; False (and one notice) when history is unavailable."""
        if self.available is not None:
            return self.available
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)
        return bool(self.available)

    @property
    def keeps_conversations(self) -> bool:
        """False once history is known to be unavailable, or while its last write failed for lack of
        space: New conversation could then lose the thread for good, which the page must say before
        doing it (DESIGN.md §5, §9)."""
        return self.available is not False and not self._full

    async def _open(self) -> None:
        try:
            await self._db.open()
            self.available = True
        except RecordStoreError as error:
            self._fail(error)

    def _fail(self, error: RecordStoreError) -> None:
        """History stops (unavailable) with one notice of its kind; the core goes on."""
        _log.warning("history unavailable: %s", error)
        if error.kind != "quota":  # a full disk leaves reading possible; the next write tries again
            self.available = False
        self.failure = error.kind
        self._notice(NOTICE_CODES.get(error.kind, "history-unavailable"))

    def on_backend_event(self, kind: str, detail: str = "") -> None:
        """The backend closed the connection (another tab upgrades, the database was deleted/evicted)."""
        self._fail(RecordStoreError(kind, detail))

    def _notice(self, code: str, **params: Any) -> None:
        if code in self._notified:
            return
        self._notified.add(code)
        if self.on_notice:
            self.on_notice(Notice(code, params))

    async def _guard(self, work: Callable[[], Awaitable[Any]], default: Any = None, *, writes: bool = False) -> Any:
        if not await self.open():
            return default
        try:
            result = await work()
        except RecordStoreError as error:
            self._full = error.kind == "quota"
            self._fail(error)
            return default
        if writes:
            self._full = False  # a write worked (again): the lack of space is over
        return result

    async def _ensure_titles(self, messages: list[dict]) -> None:
        """Load the grapheme segmenter (once) if the title of ``messages`` needs it."""
        if not self._prepared and needs_segmenter(messages):
            await self._ensure_segmenter()

    async def _ensure_segmenter(self) -> None:
        """Load the grapheme segmenter (once): titles and snippets cut on grapheme clusters."""
        if not self._prepared:
            if self._prepare is not None:
                await self._prepare()
            self._prepared = True

    # -- records -----------------------------------------------------------
    def _meta(self, raw: Any) -> TaskMeta | None:
        """A stored meta, or None (one ``history-damaged`` notice) when it is damaged."""
        if raw is None:
            return None
        try:
            return TaskMeta.model_validate(raw)
        except ValidationError:
            self._notice("history-damaged")
            return None

    def _listed(self, raw: Any) -> TaskMeta | Damaged | None:
        """A list row: its meta, or ``Damaged`` (one ``history-damaged`` notice) when the record cannot
        be read but names a conversation (a task id) that can still be deleted; None otherwise."""
        meta = self._meta(raw)
        if meta is not None or not isinstance(raw, dict):
            return meta
        task_id, stage_id, updated = raw.get("taskId"), raw.get("stageId"), raw.get("updatedAt")
        if not isinstance(task_id, str) or not TASK_ID.match(task_id):
            return None
        number = isinstance(updated, (int, float)) and not isinstance(updated, bool) and abs(updated) < 2**53
        return Damaged(task_id, stage_id if isinstance(stage_id, str) else "", int(updated) if number else 0)

    def _turn_list(self, raw: Any) -> list[TurnMeta]:
        turns = []
        for item in (raw or {}).get("turns", []) if isinstance(raw, dict) else []:
            try:
                turns.append(TurnMeta.model_validate(item))
            except ValidationError:
                self._notice("history-damaged")
        return turns

    def _ops(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta], head: bool,
             synced_at: int | None) -> list[tuple[str, str, Any]]:
        text = plain_text(messages)
        folded, anchors = fold_map(text)
        search = {"taskId": meta.taskId, "stageId": meta.stageId, "updatedAt": meta.updatedAt, "folded": folded,
                  "fold": FOLD_VERSION}
        if anchors:  # where folded positions and text positions part (DESIGN.md §14 folding)
            search["anchors"] = anchors
        ops = [("put", "conversations", meta.model_dump()),
               ("put", "messages", {"taskId": meta.taskId, "messages": messages}),
               ("put", "turns", {"taskId": meta.taskId, "turns": [t.record() for t in turns]}),
               ("put", "search", search),
               ("put", "texts", {"taskId": meta.taskId, "text": text})]
        if head:
            ops.append(("put", "heads", {"stageId": meta.stageId, "taskId": meta.taskId, "syncedAt": synced_at}))
        return ops

    def _new_meta(self, stage_id: str, messages: list[dict], now: int, task_id: str | None = None) -> TaskMeta:
        return TaskMeta(taskId=task_id or new_task_id(now, self._random), taskName=title_of(messages) or "",
                        stageId=stage_id, createdAt=now, updatedAt=now)

    async def _head_id(self, stage_id: str) -> str | None:
        """The task id ``heads`` names for ``stage_id`` (it may have no conversation record yet)."""
        head = await self._db.get("heads", stage_id)
        task_id = head.get("taskId") if isinstance(head, dict) else None
        return task_id if isinstance(task_id, str) and TASK_ID.match(task_id) else None

    async def _head_meta(self, stage_id: str) -> TaskMeta | None:
        head = await self._db.get("heads", stage_id)
        if not isinstance(head, dict) or not isinstance(head.get("taskId"), str):
            return None
        return self._meta(await self._db.get("conversations", head["taskId"]))

    async def head_task_id(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """The task id of ``stage_id``'s active conversation (its head). With ``allocate``, a head that
        does not exist yet is allocated and written (``{stageId, taskId, syncedAt: None}``, no
        conversation record until its first turn, which then takes that id), so the conversation's
        scene checkpoints name the ``taskId`` its turns get (DESIGN.md §9, §10). ``None``: no head
        (without ``allocate``) or history unavailable."""
        async def work():
            async with self._lock:
                task_id = await self._head_id(stage_id)
                if task_id is None and allocate:
                    task_id = new_task_id(self._clock(), self._random)
                    await self._db.write([("put", "heads", {"stageId": stage_id, "taskId": task_id, "syncedAt": None})])
                return task_id
        return await self._guard(work)

    # -- turns -------------------------------------------------------------
    async def record_turn(self, stage_id: str, messages: list[dict], synced_at: int, *, usage: dict[str, int] | None,
                          model: str, duration_ms: int, message_id: str | None, task_id: str | None = None,
                          own: list[dict] | None = None, dropped_turns: int = 0) -> TurnMeta | None:
        """A completed turn on ``stage_id``'s active conversation (created at its first turn):
        ``messages`` the whole slim thread as saved, ``synced_at`` its ``updatedAt``. Returns the turn meta.

        ``task_id``: the conversation the turn continues (taken when it started). When another tab
        made another conversation the head meanwhile, in a moment this tab's save could not see
        (DESIGN.md §9: a turn stays with the conversation it continues), the turn goes to ``task_id``
        with ``own`` (this tab's thread, before any merge), as ``record_turn_in``: never onto the
        other conversation's messages."""
        if task_id is not None and TASK_ID.match(task_id) and own is not None:
            head = await self._guard(lambda: self._head_id(stage_id))
            if head is not None and head != task_id or head is None and await self._guard(
                    lambda: self._db.get("conversations", task_id)) is not None:
                return await self.record_turn_in(task_id, stage_id, own, usage=usage, model=model,
                                                 duration_ms=duration_ms, message_id=message_id,
                                                 dropped_turns=dropped_turns)

        async def work():
            await self._ensure_titles(messages)
            async with self._lock:
                meta = await self._head_meta(stage_id)
                turns = self._turn_list(await self._db.get("turns", meta.taskId)) if meta else []
                if meta is None:  # the first turn: the conversation takes the id allocated for its head
                    meta = self._new_meta(stage_id, messages, self._clock(), await self._head_id(stage_id))
                meta, turn = self._add_turn(meta, turns, messages, usage, model, duration_ms, message_id,
                                            dropped_turns)
                await self._db.write(self._ops(meta, messages, turns, True, synced_at))
                self._turns[stage_id], self._metas[stage_id] = turns, meta
            self._changed("record", meta.taskId, stage_id)
            return turn
        return await self._guard(work, writes=True)

    async def record_turn_in(self, task_id: str, stage_id: str, messages: list[dict], *,
                             usage: dict[str, int] | None, model: str, duration_ms: int,
                             message_id: str | None, dropped_turns: int = 0) -> TurnMeta | None:
        """A completed turn of conversation ``task_id`` of ``stage_id`` that is no longer the course's
        active one: another tab resumed another conversation or started a new one while the turn ran
        (DESIGN.md §9: its turns stay with the conversation they continue). ``messages``: that
        conversation's whole slim thread with the turn. The head is left as it is; the conversation
        is created under ``task_id`` if history has no record of it yet; should ``messages`` not go on
        from what ``task_id`` holds, they become a conversation of their own (nothing is written over
        a conversation's messages). Returns the turn meta, or
        ``None`` when history could not write it (``ValueError`` for a malformed ``task_id``)."""
        if not TASK_ID.match(task_id):
            raise ValueError(f"not a task id: {task_id!r}")

        async def work():
            await self._ensure_titles(messages)
            async with self._lock:
                meta = self._meta(await self._db.get("conversations", task_id))
                stored = await self._db.get("messages", task_id) if meta else None
                held = stored.get("messages") if isinstance(stored, dict) else None
                if meta is not None and isinstance(held, list) and not continues(messages, held):
                    meta, task_id_kept = None, None  # the thread does not go on from it: its own, never over it
                else:
                    task_id_kept = task_id
                turns = self._turn_list(await self._db.get("turns", task_id)) if meta else []
                if meta is None:
                    meta = self._new_meta(stage_id, messages, self._clock(), task_id_kept)
                meta, turn = self._add_turn(meta, turns, messages, usage, model, duration_ms, message_id,
                                            dropped_turns)
                await self._db.write(self._ops(meta, messages, turns, False, None))
                cached = self._metas.get(stage_id)
                if cached is not None and cached.taskId == task_id:  # this tab still took it for the active one
                    self.forget_active(stage_id)
            self._changed("record", meta.taskId, stage_id)
            return turn
        return await self._guard(work, writes=True)

    def _add_turn(self, meta: TaskMeta, turns: list[TurnMeta], messages: list[dict], usage: dict[str, int] | None,
                  model: str, duration_ms: int, message_id: str | None,
                  dropped_turns: int = 0) -> tuple[TaskMeta, TurnMeta]:
        """Append the turn's meta to ``turns`` (in place) and return ``meta`` with its stats, turn count,
        duration and title brought up to date, and the new turn (DESIGN.md §9 per-turn meta; §12:
        ``dropped_turns`` earlier turns left out for the server's context, kept only when there were any)."""
        now = self._clock()
        counts = None if usage is None else Usage.model_validate(
            {k: int(usage.get(k, 0)) for k in ("inputTokens", "outputTokens", "totalTokens")})
        turn = TurnMeta(turnId=len(turns) + 1, timestamp=iso(now), usage=counts, model=model,
                        duration=max(0, int(duration_ms)), messageId=message_id,
                        droppedTurns=int(dropped_turns) if dropped_turns and dropped_turns > 0 else None)
        turns.append(turn)
        added = counts or Usage()  # a turn without reported usage adds nothing to the stats
        stats = Stats(credits=meta.stats.credits, inputTokens=meta.stats.inputTokens + added.inputTokens,
                      outputTokens=meta.stats.outputTokens + added.outputTokens,
                      totalTokens=meta.stats.totalTokens + added.totalTokens)
        meta = meta.model_copy(update={"taskName": meta.taskName or title_of(messages) or "",
                                       "updatedAt": max(now, meta.updatedAt), "stats": stats,
                                       "turnCount": len(turns), "durationMs": meta.durationMs + turn.duration})
        return meta, turn

    async def active(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]]:
        """The active conversation's meta and turns (read once per course, then kept)."""
        if stage_id in self._metas:
            return self._metas[stage_id], self._turns.get(stage_id, [])

        async def work():
            meta = await self._head_meta(stage_id)
            turns = self._turn_list(await self._db.get("turns", meta.taskId)) if meta else []
            self._metas[stage_id], self._turns[stage_id] = meta, turns
            return meta, turns
        return await self._guard(work, (None, []))

    def forget_active(self, stage_id: str) -> None:
        """Drop the cached active meta of ``stage_id`` (another tab changed it)."""
        self._metas.pop(stage_id, None)
        self._turns.pop(stage_id, None)

    # -- archive, resume ---------------------------------------------------
    async def archive(self, stage_id: str, messages: list[dict], synced_at: int | None) -> str | None:
        """New conversation: keep the active conversation (``messages`` as last shown; adopted if history
        lacks it) and end it as the head. Returns its task id. Asks for persistent storage once."""
        async def work():
            task_id = None
            async with self._lock:
                meta = await self._head_meta(stage_id)
                ops: list = [("delete", "heads", stage_id)]
                if messages:
                    await self._ensure_titles(messages)
                    stored = await self._db.get("messages", meta.taskId) if meta else None
                    if meta is None or not isinstance(stored, dict) or not continues(stored.get("messages"), messages):
                        ops = await self._adopt_ops(stage_id, messages, meta, synced_at, head=False,
                                                    task_id=None if meta else await self._head_id(stage_id)) + ops
                    task_id = (meta.taskId if meta else ops[0][2]["taskId"])
                await self._db.write(ops)
                self._metas[stage_id], self._turns[stage_id] = None, []
            if not self.persist_requested:
                self.persist_requested = True
                try:
                    await self._db.persist()
                except RecordStoreError:
                    pass
            self._changed("archive", task_id or "", stage_id)
            return task_id
        return await self._guard(work, writes=True)

    async def _adopt_ops(self, stage_id: str, messages: list[dict], meta: TaskMeta | None, synced_at: int | None,
                         *, head: bool, task_id: str | None = None) -> list:
        """Write ``messages`` as ``meta``'s conversation (a continuation of it: its stored turn meta is
        kept, read from the store, not from this tab's cache, which a reload empties), or as a new one
        (``task_id``: the id its head was allocated, if any)."""
        now = self._clock()
        turns: list[TurnMeta] = []
        if meta is None:
            meta = self._new_meta(stage_id, messages, now, task_id)
        else:
            turns = self._turn_list(await self._db.get("turns", meta.taskId))
            meta = meta.model_copy(update={"updatedAt": max(now, meta.updatedAt),
                                           "taskName": meta.taskName or title_of(messages) or ""})
        return self._ops(meta, messages, turns, head, synced_at)

    async def resume(self, stage_id: str, task_id: str, current: list[dict], current_synced_at: int | None,
                     synced_at: int) -> list[dict] | None:
        """Make ``task_id`` the head of ``stage_id``; returns its messages for the caller's one write
        of ``maic-agent-threads`` (stamped ``synced_at``), or None when it does not exist.
        ``current``: the active thread now; kept in history if it is not there yet."""
        async def work():
            await self._ensure_titles(current)
            async with self._lock:
                meta = self._meta(await self._db.get("conversations", task_id))
                stored = await self._db.get("messages", task_id)
                if meta is None or not isinstance(stored, dict) or not isinstance(stored.get("messages"), list):
                    return None
                ops: list = []
                head = await self._head_meta(stage_id)
                if current and (head is None or head.taskId != task_id):
                    kept = await self._db.get("messages", head.taskId) if head else None
                    if head is None or not isinstance(kept, dict) or not continues(kept.get("messages"), current):
                        ops += await self._adopt_ops(stage_id, current, head, current_synced_at, head=False,
                                                     task_id=None if head else await self._head_id(stage_id))
                meta = meta.model_copy(update={"stageId": stage_id})
                ops.append(("put", "heads", {"stageId": stage_id, "taskId": task_id, "syncedAt": synced_at}))
                await self._db.write(ops)
                self._metas[stage_id] = meta
                self._turns[stage_id] = self._turn_list(await self._db.get("turns", task_id))
            self._changed("resume", task_id, stage_id)
            return stored["messages"]
        return await self._guard(work)

    async def reconcile(self, threads: dict[str, tuple[list[dict], int]]) -> list[str]:
        """Start-up: for each course's active thread in ``maic-agent-threads`` (``{stageId: (messages,
        updatedAt)}``), localStorage wins: history's head is brought in line, a thread history lacks is
        adopted as a conversation. A thread that is the start of what the head holds (the later turns
        did not fit in localStorage) is that conversation: the head stays whole, nothing is copied.
        Reads only heads whose ``syncedAt`` differs. Returns the adopted/updated stage ids."""
        async def work():
            changed = []
            for stage_id, (messages, updated_at) in threads.items():
                if not messages:
                    continue
                head = await self._db.get("heads", stage_id)
                if isinstance(head, dict) and head.get("syncedAt") == updated_at:
                    continue
                await self._ensure_titles(messages)
                async with self._lock:
                    meta = await self._head_meta(stage_id)
                    allocated = None if meta else await self._head_id(stage_id)  # a head without turns yet
                    stored = await self._db.get("messages", meta.taskId) if meta else None
                    old = stored.get("messages") if isinstance(stored, dict) else None
                    goes_on = continues(messages, old)
                    if meta is not None and not goes_on and continues(old, messages):
                        # history holds this thread and turns localStorage could not keep (too big for
                        # its quota): the same conversation, kept whole, never copied (DESIGN.md §5, §9)
                        await self._db.write([("put", "heads", {"stageId": stage_id, "taskId": meta.taskId,
                                                                "syncedAt": updated_at})])
                        self._metas.pop(stage_id, None)
                        self._turns.pop(stage_id, None)
                        continue
                    if meta is not None and not goes_on:
                        meta = None  # another conversation: the stored head stays archived
                    if meta is not None:
                        self._turns[stage_id] = self._turn_list(await self._db.get("turns", meta.taskId))
                    await self._db.write(await self._adopt_ops(stage_id, messages, meta, updated_at, head=True,
                                                               task_id=allocated))
                    self._metas.pop(stage_id, None)
                    self._turns.pop(stage_id, None)
                changed.append(stage_id)
            return changed
        return await self._guard(work, [])

    # -- delete, undo ------------------------------------------------------
    async def delete(self, task_id: str) -> bool:
        """Delete one conversation; ``undo`` restores it within ``UNDO_MS``. True when it existed."""
        async def work():
            async with self._lock:
                records = []
                for table in ("conversations", "messages", "turns", "search", "texts"):
                    record = await self._db.get(table, task_id)
                    if record is not None:
                        records.append((table, record))
                meta = next((r for t, r in records if t == "conversations"), None)
                if meta is None:
                    return False
                stage_id = meta.get("stageId", "")
                head = await self._db.get("heads", stage_id) if isinstance(stage_id, str) else None
                was_head = isinstance(head, dict) and head.get("taskId") == task_id
                ops = [("delete", t, task_id) for t, _ in records]
                if was_head:
                    ops.append(("delete", "heads", stage_id))
                    self._metas[stage_id], self._turns[stage_id] = None, []
                await self._db.write(ops)
                self._deleted = _Deleted(self._clock(), records, was_head, stage_id)
            self._changed("delete", task_id, stage_id)
            return True
        return bool(await self._guard(work, False))

    def can_undo(self) -> bool:
        """True while the last delete can still be undone."""
        return self._deleted is not None and self._clock() - self._deleted.at <= UNDO_MS

    async def undo(self) -> str | None:
        """Restore the last deleted conversation (within ``UNDO_MS``); returns its task id."""
        if not self.can_undo():
            return None
        deleted, self._deleted = self._deleted, None

        async def work():
            async with self._lock:
                await self._db.write([("put", t, r) for t, r in deleted.records])
            task_id = deleted.records[0][1]["taskId"]
            self._changed("undo", task_id, deleted.stage_id)
            return task_id
        return await self._guard(work)

    @property
    def undo_was_head(self) -> bool:
        return bool(self._deleted and self._deleted.was_head)

    # -- list, search ------------------------------------------------------
    async def total(self, stage_id: str, since_ms: int | None = None) -> int:
        """How many conversations ``stage_id`` has (updated at or after ``since_ms`` when given)."""
        lower = [stage_id, since_ms] if since_ms is not None else [stage_id, LOWEST]
        return await self._guard(lambda: self._db.count("conversations", LIST_INDEX, lower, [stage_id, HIGHEST]), 0)

    async def page(self, stage_id: str, cursor: tuple | None = None, *, sort: str = "newest",
                   since_ms: int | None = None) -> Page:
        """The next ``PAGE_SIZE`` conversations after ``cursor`` (from the start when None) in ``sort``
        order: ``newest`` / ``oldest`` (``updatedAt``, then ``taskId``) or ``tokens`` (most total tokens
        first, then newest); only those updated at or after ``since_ms`` when given (DESIGN.md §9).
        ``cursor`` is the previous page's ``Page.cursor`` with the same ``sort`` and ``since_ms``: the key
        of its last item, never an offset, so nothing is shown twice or skipped."""
        if sort == "tokens":
            return await self._tokens_page(stage_id, cursor, since_ms)
        oldest = sort == "oldest"

        async def work():
            low = [stage_id, since_ms] if since_ms is not None else [stage_id, LOWEST]
            lower, upper = low, [stage_id, HIGHEST]
            if cursor is not None:
                lower, upper = ([stage_id, cursor[0], cursor[1]], upper) if oldest else (low, [stage_id, cursor[0], cursor[1]])
            rows, total = await self._db.query_count(  # one read for the page and the list's total
                "conversations", LIST_INDEX, lower, upper, low, [stage_id, HIGHEST],
                lower_open=oldest and cursor is not None, upper_open=not oldest and cursor is not None,
                reverse=not oldest, limit=PAGE_SIZE + 1)
            has_more = len(rows) > PAGE_SIZE
            rows = rows[:PAGE_SIZE]
            items = [m for m in map(self._listed, rows) if m is not None]
            last = rows[-1] if rows else None
            next_cursor = (last["updatedAt"], last["taskId"]) if isinstance(last, dict) and "updatedAt" in last else cursor
            return Page(items, next_cursor, has_more, total)
        return await self._guard(work, Page([], None, False))

    async def _tokens_page(self, stage_id: str, cursor: tuple | None, since_ms: int | None) -> Page:
        """``page`` sorted by most tokens: the course's metas in range are read and ordered here (no
        index holds tokens); only the page's own records are validated. Cursor: the last item's
        ``(-totalTokens, -updatedAt, taskId)``."""
        def key(raw: Any) -> tuple:
            stats = raw.get("stats") if isinstance(raw, dict) else None
            tokens = stats.get("totalTokens") if isinstance(stats, dict) else 0
            tokens = tokens if isinstance(tokens, int) else 0
            updated = raw.get("updatedAt") if isinstance(raw, dict) else 0
            return (-tokens, -(updated if isinstance(updated, int) else 0), str(raw.get("taskId", "")) if isinstance(raw, dict) else "")

        async def work():
            lower = [stage_id, since_ms] if since_ms is not None else [stage_id, LOWEST]
            rows = sorted(((key(r), r) for r in await self._db.query("conversations", LIST_INDEX, lower,
                                                                    [stage_id, HIGHEST])), key=lambda kr: kr[0])
            total = len(rows)
            if cursor is not None:
                after = tuple(cursor)
                rows = [kr for kr in rows if kr[0] > after]
            shown = rows[:PAGE_SIZE]
            items = [m for m in (self._listed(r) for _, r in shown) if m is not None]
            return Page(items, shown[-1][0] if shown else cursor, len(rows) > PAGE_SIZE, total)
        return await self._guard(work, Page([], None, False))

    async def newer(self, stage_id: str, top: tuple[int, str] | None) -> list[TaskMeta | Damaged]:
        """Every conversation above ``top`` (what arrived or moved up while the list was open), newest first."""
        async def work():
            lower = [stage_id, top[0], top[1]] if top else [stage_id, LOWEST]
            rows = await self._db.query("conversations", LIST_INDEX, lower, [stage_id, HIGHEST],
                                        lower_open=top is not None, reverse=True)
            return [m for m in map(self._listed, rows) if m is not None]
        return await self._guard(work, [])

    async def get(self, task_id: str) -> TaskMeta | None:
        """One conversation's meta."""
        return await self._guard(lambda: self._read_meta(task_id))

    async def _read_meta(self, task_id: str) -> TaskMeta | None:
        return self._meta(await self._db.get("conversations", task_id))

    async def search(self, stage_id: str, keyword: str, *, since_ms: int | None = None,
                     sort: str = "newest") -> list[SearchHit]:
        """Conversations of ``stage_id`` whose text holds ``keyword`` (folded as DESIGN.md §14 says:
        ``app.history.text.fold``; a keyword inside an unspaced CJK sentence matches), updated at or
        after ``since_ms``; ``sort``: ``newest`` | ``oldest`` | ``tokens`` (most total tokens first).
        A course's records of an earlier folding are folded again at its first search (``_refold``)."""
        needle = fold(" ".join(keyword.split()))
        if not needle:
            return []

        async def work():
            await self._refold(stage_id)
            lower = [stage_id, since_ms if since_ms is not None else LOWEST]
            hits = await self._db.scan("search", SEARCH_INDEX, lower, [stage_id, HIGHEST], "folded", needle,
                                       SNIPPET_BEFORE, SNIPPET_AFTER, "texts", "text")
            metas = await self._db.bulk_get("conversations", [key for key, _, _ in hits])
            if any(needs_clusters(excerpt) for _, _, excerpt in hits):
                await self._ensure_segmenter()  # a snippet marks whole grapheme clusters (§14)
            found = []
            for (key, at, excerpt), raw in zip(hits, metas):
                meta = self._meta(raw)
                piece = snippet(excerpt, needle, cut_before=at > SNIPPET_BEFORE, cut_after=True) if meta else None
                if meta is not None and piece is not None:
                    found.append(SearchHit(meta, piece))
            if sort == "tokens":
                found.sort(key=lambda h: (-h.meta.stats.totalTokens, -h.meta.updatedAt, h.meta.taskId))
            elif sort == "oldest":
                found.sort(key=lambda h: (h.meta.updatedAt, h.meta.taskId))
            else:
                found.sort(key=lambda h: (-h.meta.updatedAt, h.meta.taskId), reverse=False)
            return found
        return await self._guard(work, [])

    async def _refold(self, stage_id: str) -> None:
        """Fold again (``fold_map`` of the kept text) the search records of ``stage_id`` written before
        ``FOLD_VERSION``, once per course and session, ``REFOLD_BATCH`` per transaction with a pause
        between: a search finds in old conversations what it finds in new ones (DESIGN.md §14)."""
        if stage_id in self._refolded:
            return
        rows = await self._db.query("search", SEARCH_INDEX, [stage_id, LOWEST], [stage_id, HIGHEST])
        stale = [r for r in rows if isinstance(r, dict) and r.get("fold") != FOLD_VERSION and "taskId" in r]
        for start in range(0, len(stale), REFOLD_BATCH):
            batch = stale[start:start + REFOLD_BATCH]
            texts = await self._db.bulk_get("texts", [r["taskId"] for r in batch])
            ops = []
            for record, kept in zip(batch, texts):
                text = kept.get("text") if isinstance(kept, dict) else None
                if not isinstance(text, str):
                    continue
                folded, anchors = fold_map(text)
                fresh = {**record, "folded": folded, "fold": FOLD_VERSION}
                fresh.pop("anchors", None)
                if anchors:
                    fresh["anchors"] = anchors
                ops.append(("put", "search", fresh))
            if ops:
                await self._db.write(ops)
            await asyncio.sleep(0)
        self._refolded.add(stage_id)

    # -- export, import ----------------------------------------------------
    async def bundle(self, task_id: str) -> tuple[TaskMeta, list[dict], list[TurnMeta]] | None:
        """(meta, messages, turns) of one conversation, for export."""
        async def work():
            meta = self._meta(await self._db.get("conversations", task_id))
            stored = await self._db.get("messages", task_id)
            if meta is None or not isinstance(stored, dict):
                return None
            return meta, stored.get("messages") or [], self._turn_list(await self._db.get("turns", task_id))
        return await self._guard(work)

    async def import_bundle(self, stage_id: str, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta]) -> str:
        """Add an imported conversation to ``stage_id``'s history (archived). Returns ``"ok"``,
        ``"exists"`` (that task id is already kept: nothing changed) or ``"unavailable"``. A kept
        record of that task id that cannot be read (``Damaged``) is replaced: a corrected file
        repairs it (DESIGN.md §14)."""
        async def work():
            if text_needs_segmenter(" ".join(meta.taskName.split())):
                await self._ensure_titles([{"role": "user", "content": [{"type": "text", "text": meta.taskName}]}])
            async with self._lock:
                kept = await self._db.get("conversations", meta.taskId)
                if kept is not None and self._meta(kept) is not None:
                    return "exists"
                # the file's title obeys the rule of every title: 50 grapheme clusters (DESIGN.md §9)
                record = meta.model_copy(update={"stageId": stage_id, "taskName": cut_title(meta.taskName)})
                ops = self._ops(record, messages, turns, False, None)
                if kept is None:  # "add": should another tab import it meanwhile, nothing is written twice
                    ops[0] = ("add", "conversations", record.model_dump())
                await self._db.write(ops)
            self._changed("import", meta.taskId, stage_id)
            return "ok"
        return await self._guard(work, "unavailable")

    def _changed(self, kind: str, task_id: str, stage_id: str) -> None:
        if self.on_change:
            self.on_change(kind, task_id, stage_id)

