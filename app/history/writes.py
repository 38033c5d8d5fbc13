"""Writing history: turns, New conversation, resume, start-up reconciliation (DESIGN.md §9).
Pure Python, over ``HistoryRepository``; which thread goes on from which is ``app.continuity``'s rule.

- a completed turn is written with its meta in ONE transaction (``record_turn``); a turn of a
  conversation another tab replaced as the head goes to that conversation (``record_turn_in``);
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
from dataclasses import dataclass
from typing import Any

from app.continuity import continues, home_of_ending_turn
from app.history.adopted import adopted_meta
from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.changes import HistoryChange
from app.history.records import TASK_ID, Stats, TaskMeta, TurnMeta, Usage, iso, new_task_id
from app.history.repository import HeldTurn, HistoryRepository, Writes
from app.history.text import title_of
from app.ports import TurnEnded
from app.records import RecordStoreError

__all__ = ["ActiveConversations", "HistoryWrites", "SLICE_MS", "at_once", "carried_over", "with_turn"]

_log = logging.getLogger(__name__)

SLICE_MS = 12
"""``HistoryWrites.add_synced`` gives the page back (its ``pause``) once building records took this long (ms)."""

@dataclass(frozen=True)
class _Remembered(HeldTurn):
    """A ``HeldTurn`` whose messages, turns and search record were kept in memory (``Written``), with
    the plain ``text`` the search record was made of."""

    text: str = ""


_ELSEWHERE = object()
"""``HistoryWrites._record_on_own_head``: the turn's conversation is not its course's head (nothing written)."""
_UNREAD = object()
"""``HistoryWrites._on_head``: the conversation's ``search`` record is not read yet."""

Changed = Callable[[HistoryChange], None]
"""``changed(change)``: after this tab changed history (``ChangeHub.publish``)."""


def with_turn(meta: TaskMeta, turns: list[TurnMeta], messages: list[dict], turn: TurnEnded,
              now: int) -> tuple[TaskMeta, TurnMeta]:
    """Append ``turn``'s meta (at ``now``, epoch ms) to ``turns`` (in place) and return ``meta`` with
    its stats, turn count, duration and title brought up to date, and the new turn meta (DESIGN.md §9
    per-turn meta; §12: ``droppedTurns`` kept only when there were any; a turn without reported
    usage adds nothing to the stats)."""
    counts = None if turn.usage is None else Usage.model_validate(
        {k: int(turn.usage.get(k, 0)) for k in ("inputTokens", "outputTokens", "totalTokens")})
    dropped = turn.dropped_turns
    added = TurnMeta(turnId=len(turns) + 1, timestamp=iso(now), usage=counts, model=turn.model,
                     duration=max(0, int(turn.duration_ms)), messageId=turn.message_id,
                     droppedTurns=int(dropped) if dropped and dropped > 0 else None)
    turns.append(added)
    usage = counts or Usage()
    stats = Stats(credits=meta.stats.credits, inputTokens=meta.stats.inputTokens + usage.inputTokens,
                  outputTokens=meta.stats.outputTokens + usage.outputTokens,
                  totalTokens=meta.stats.totalTokens + usage.totalTokens)
    meta = meta.model_copy(update={"taskName": meta.taskName or title_of(messages) or "",
                                   "updatedAt": max(now, meta.updatedAt), "stats": stats,
                                   "turnCount": len(turns), "durationMs": meta.durationMs + added.duration})
    return meta, added


def carried_over(meta: TaskMeta, held_turns: list[TurnMeta], messages: list[dict]) -> tuple[TaskMeta, list[TurnMeta]]:
    """A new conversation ``meta`` made of a thread that left the one it came from (the turns of that one
    in ``held_turns``): the turn metas whose ``messageId`` names an assistant message of ``messages`` go
    with it, renumbered from 1, and ``meta``'s turn count, duration and stats say them (DESIGN.md §9:
    a turn's meta stays with its messages; without it, 2 turns of messages would list as 1 turn).
    Returns ``(meta, turns)``; a turn meta without a ``messageId`` stays behind."""
    ids = {m.get("id") for m in messages if m.get("role") == "assistant" and isinstance(m.get("id"), str)}
    turns = [t.model_copy(update={"turnId": n}) for n, t in
             enumerate((t for t in held_turns if t.messageId in ids), start=1)]
    used = [t.usage or Usage() for t in turns]
    stats = Stats(credits=meta.stats.credits, inputTokens=sum(u.inputTokens for u in used),
                  outputTokens=sum(u.outputTokens for u in used), totalTokens=sum(u.totalTokens for u in used))
    return meta.model_copy(update={"turnCount": len(turns), "durationMs": sum(t.duration for t in turns),
                                   "stats": stats}), turns


@dataclass(frozen=True)
class Written:
    """A course's active conversation as this tab's last turn wrote it: its ``meta`` record as
    stored (``TaskMeta.model_dump``), ``messages``, ``turns``, ``search`` record and plain ``text``.
    While the stored meta record is still ``meta`` (no other writer: every write of a conversation
    writes its meta), the next turn reads nothing more (``HistoryWrites._record_on_own_head``)."""

    task_id: str
    meta: dict
    messages: list[dict]
    turns: list[TurnMeta]
    search: dict
    text: str


class ActiveConversations:
    """Each course's active conversation (meta and turns) as this tab last read or wrote it, and
    what its last turn written here wrote (``Written``)."""

    def __init__(self) -> None:
        self._metas: dict[str, TaskMeta | None] = {}
        self._turns: dict[str, list[TurnMeta]] = {}
        self._written: dict[str, Written] = {}

    def known(self, stage_id: str) -> tuple[TaskMeta | None, list[TurnMeta]] | None:
        """``(meta, turns)`` when known (``meta`` None: the course has no active conversation)."""
        if stage_id not in self._metas:
            return None
        return self._metas[stage_id], self._turns.get(stage_id, [])

    def task_id(self, stage_id: str) -> str | None:
        """The task id of the active conversation this tab knows, if any."""
        meta = self._metas.get(stage_id)
        return meta.taskId if meta is not None else None

    def set(self, stage_id: str, meta: TaskMeta | None, turns: list[TurnMeta]) -> None:
        self._metas[stage_id], self._turns[stage_id] = meta, turns
        self._written.pop(stage_id, None)

    def wrote(self, stage_id: str, written: Written) -> None:
        """This tab's turn wrote ``written`` as ``stage_id``'s active conversation (after ``set``)."""
        self._written[stage_id] = written

    def written(self, stage_id: str) -> Written | None:
        """What this tab's last turn on ``stage_id`` wrote, while nothing else changed it here."""
        return self._written.get(stage_id)

    def ended(self, stage_id: str) -> None:
        """The course has no active conversation now."""
        self.set(stage_id, None, [])

    def forget(self, stage_id: str) -> None:
        """Read the course's active conversation again next time (another tab changed it)."""
        self._metas.pop(stage_id, None)
        self._turns.pop(stage_id, None)
        self._written.pop(stage_id, None)


async def at_once() -> None:
    """No pause: the slices of a write follow each other at once."""


class HistoryWrites:
    """Turns, archive, resume, reconciliation and synced additions (module docstring). ``clock``: epoch ms;
    ``random_bytes``: for task ids; ``changed``: told each change this tab made (``HistoryChange``, carrying
    the conversation as written); ``pause``: awaited
    between the slices of a turn's search record (``Writes.keep_in_steps``: a message of millions of
    characters is folded and indexed without a long task, DESIGN.md §13, §14); without it, at once."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter,
                 active: ActiveConversations, *, clock: Callable[[], int], changed: Changed,
                 random_bytes: Callable[[int], bytes] = os.urandom,
                 pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._repository, self._access, self._segmenter = repository, access, segmenter
        self._active, self._clock, self._changed, self._random = active, clock, changed, random_bytes
        self._pause = pause or at_once
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

    def _new_meta(self, stage_id: str, messages: list[dict], now: int, task_id: str | None = None) -> TaskMeta:
        return TaskMeta(taskId=task_id or new_task_id(now, self._random), taskName=title_of(messages) or "",
                        stageId=stage_id, createdAt=now, updatedAt=now)

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

    # -- turns -------------------------------------------------------------
    async def record_turn(self, event: TurnEnded, matched_at: int, thread: list[dict] | None = None) -> TurnMeta | None:
        """The completed turn ``event`` on its course's active conversation (created at its first turn):
        ``thread`` the course's whole slim thread as saved (another tab's turns merged in; ``None``:
        ``event.messages``), ``matched_at`` its ``updatedAt``. Returns the turn meta.

        The turn goes where ``app.continuity.home_of_ending_turn`` says, asked with what history
        holds: when another tab made another conversation the head (or archived it) in a moment
        this tab's save could not see, the turn goes to ``event.conversation_id`` with
        ``event.messages`` (this tab's thread, before any merge), as ``record_turn_in``: never onto
        the other conversation's messages (DESIGN.md §9: a turn stays with the conversation it
        continues). A thread that neither goes on from the head's messages nor is their start (the
        head kept a turn too big for localStorage, and a reload went on from the shorter stored
        thread) becomes a conversation of its own and the course's head; the old one stays whole,
        archived (DESIGN.md §9: nothing is deleted but by a delete)."""
        task_id = event.conversation_id
        if task_id is not None and TASK_ID.match(task_id):
            added = await self._record_on_own_head(event, matched_at, thread)
            if added is not _ELSEWHERE:  # written (or history failed: None)
                return added
            switched_to = await self._switched_to(event.stage_id, task_id)
            # the runtime asked the thread store before it published the turn: here only history's head tells
            home = home_of_ending_turn(task_id, keeps_conversations=True, switched_to=switched_to,
                                       thread_replaced=lambda: False)
            if home is not None:
                return await self._record_in(home, event.stage_id, event.messages, event)
        return await self._record_on_head(event.stage_id, event.messages if thread is None else thread, matched_at,
                                          event)

    @guarded()
    async def _switched_to(self, stage_id: str, task_id: str) -> str | None:
        """``stage_id``'s head as history holds it, in the terms of ``app.continuity.switched_after``:
        the head's id (``task_id`` itself while it still is the head); ``""`` when there is none and
        ``task_id`` was kept (archived by New conversation); ``None`` when history holds neither (no
        signal) or could not be read."""
        head = await self._repository.head_id(stage_id)
        if head is not None:
            return head
        return "" if await self._repository.holds(task_id) else None

    @guarded(writes=True)
    async def _record_on_own_head(self, event: TurnEnded, matched_at: int, thread: list[dict] | None) -> Any:
        """The common turn: its conversation (``event.conversation_id``) still is its course's head.
        History is read ONCE (``HistoryRepository.for_turn``: the head and the conversation's meta,
        messages, turns and search record together), then written as ``_record_on_head`` writes.
        ``_ELSEWHERE`` (nothing written) when the head is another or none, or the conversation is
        not readable: the caller asks where the turn goes."""
        messages = event.messages if thread is None else thread
        await self._segmenter.for_titles(messages)
        async with self._lock:
            held = await self._held_for_turn(event.stage_id, event.conversation_id)
            if held.head is None or held.head.task_id != held.task_id or held.meta is None:
                return _ELSEWHERE
            text = held.text if isinstance(held, _Remembered) else None
            added, meta, writes = await self._on_head(event.stage_id, messages, matched_at, event, held.meta,
                                                      held.messages, held.turns, held.search, text)
        self._changed(HistoryChange("record", meta.taskId, event.stage_id, written=writes.kept(meta.taskId)))
        return added

    async def _held_for_turn(self, stage_id: str, task_id: str) -> HeldTurn:
        """What a turn of ``task_id`` needs of history (``HistoryRepository.for_turn``). When this tab's
        last turn on ``stage_id`` wrote that conversation (``ActiveConversations.written``) and its
        stored meta record is still the one written, only the head and that meta are read: the
        messages, turns and search record are those kept in memory (no copy of the whole conversation
        crosses from IndexedDB). Otherwise the whole is read."""
        known = self._active.written(stage_id)
        if known is not None and known.task_id == task_id:
            head, raw = await self._repository.head_and_meta(stage_id, task_id)
            if raw == known.meta:
                meta = self._repository.meta_of(raw)
                if meta is not None:
                    return _Remembered(task_id, head, meta, True, known.messages, list(known.turns), known.search,
                                       known.text)
        return await self._repository.for_turn(stage_id, task_id)

    @guarded(writes=True)
    async def _record_on_head(self, stage_id: str, messages: list[dict], matched_at: int, turn: TurnEnded) -> TurnMeta:
        await self._segmenter.for_titles(messages)
        async with self._lock:
            meta = await self._repository.head_meta(stage_id)
            held = await self._repository.messages(meta.taskId) if meta else None
            turns = await self._repository.turns(meta.taskId) if meta else []
            added, meta, writes = await self._on_head(stage_id, messages, matched_at, turn, meta, held, turns, _UNREAD,
                                                      None)
        self._changed(HistoryChange("record", meta.taskId, stage_id, written=writes.kept(meta.taskId)))
        return added

    async def _on_head(self, stage_id: str, messages: list[dict], matched_at: int, turn: TurnEnded,
                       meta: TaskMeta | None, held: Any, turns: list[TurnMeta],
                       search: Any, text: str | None) -> tuple[TurnMeta, TaskMeta, Writes]:
        """Write the turn on ``stage_id``'s head (lock held): ``meta``, ``held`` (messages as stored),
        ``turns`` and ``search`` (its ``search`` record; ``_UNREAD``: read here when needed) as read;
        ``text``: the plain text that record was made of, when kept in memory (``Written``).
        Returns the turn meta, the conversation's meta and the writes committed; what they wrote is
        remembered (``ActiveConversations.wrote``) for the course's next turn."""
        diverged = isinstance(held, list) and not continues(messages, held) and not continues(held, messages)
        if diverged:  # e.g. the head kept a turn too big for localStorage and a reload went on without it
            # the thread becomes its own conversation; the head's stays whole, archived (§9)
            meta, turns = carried_over(self._new_meta(stage_id, messages, self._clock()), turns, messages)
        elif meta is None:  # the first turn: the conversation takes the id allocated for its head
            meta = self._new_meta(stage_id, messages, self._clock(), await self._repository.head_id(stage_id))
        # the stored index of a conversation this turn goes on from: only the new messages are indexed
        goes_on = held is not None and not diverged and continues(messages, held)
        if goes_on and search is _UNREAD:
            search = await self._repository.search_record(meta.taskId)
        meta, added = with_turn(meta, turns, messages, turn, self._clock())
        writes = Writes()
        await writes.keep_in_steps(meta, messages, turns, pause=self._pause, new=diverged, held_messages=held,
                                   held_search=search if goes_on else None, held_text=text)
        writes.make_head(stage_id, meta.taskId, matched_at)
        await self._repository.commit(writes)
        self._active.set(stage_id, meta, turns)
        kept, (record, plain) = writes.kept(meta.taskId), writes.kept_index(meta.taskId)
        self._active.wrote(stage_id, Written(meta.taskId, meta.model_dump(), kept.messages, list(kept.turns), record,
                                             plain))
        return added, meta, writes

    async def record_turn_in(self, task_id: str, event: TurnEnded) -> TurnMeta | None:
        """The completed turn ``event`` of conversation ``task_id`` of its course, no longer the course's
        active one: another tab resumed another conversation or started a new one while the turn ran
        (DESIGN.md §9: its turns stay with the conversation they continue). ``event.messages``: that
        conversation's whole slim thread with the turn. The head is left as it is; the conversation
        is created under ``task_id`` if history has no record of it yet; should the messages not go on
        from what ``task_id`` holds, they become a conversation of their own (nothing is written over
        a conversation's messages). Returns the turn meta, or
        ``None`` when history could not write it (``ValueError`` for a malformed ``task_id``)."""
        if not TASK_ID.match(task_id):
            raise ValueError(f"not a task id: {task_id!r}")
        return await self._record_in(task_id, event.stage_id, event.messages, event)

    @guarded(writes=True)
    async def _record_in(self, task_id: str, stage_id: str, messages: list[dict], turn: TurnEnded) -> TurnMeta:
        await self._segmenter.for_titles(messages)
        async with self._lock:
            meta = await self._repository.meta(task_id)
            held = await self._repository.messages(task_id) if meta else None
            turns = await self._repository.turns(task_id) if meta else []
            if meta is not None and isinstance(held, list) and not continues(messages, held):
                # the thread does not go on from it: its own, never over it
                meta, turns = carried_over(self._new_meta(stage_id, messages, self._clock()), turns, messages)
            elif meta is None:
                meta = self._new_meta(stage_id, messages, self._clock(), task_id)
            goes_on = meta is not None and meta.taskId == task_id and continues(messages, held)
            search = await self._repository.search_record(task_id) if goes_on else None
            meta, added = with_turn(meta, turns, messages, turn, self._clock())
            writes = Writes()
            await writes.keep_in_steps(meta, messages, turns, pause=self._pause, held_messages=held, held_search=search)
            await self._repository.commit(writes)
            if self._active.task_id(stage_id) == task_id:  # this tab still took it for the active one
                self._active.forget(stage_id)
        self._changed(HistoryChange("record", meta.taskId, stage_id, written=writes.kept(meta.taskId)))
        return added

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
                    writes.keep(meta, messages, turns, new=True)  # its text and index terms: the costly part
                    if getattr(item, "branching", None):  # a tree (DESIGN.md §17): kept beside the shown path
                        writes.keep_branching(meta.taskId, item.branching)
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
        meta = await self._repository.head_meta(stage_id)
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
            meta = await self._repository.head_meta(stage_id)
            writes = Writes()
            if messages:
                await self._segmenter.for_titles(messages)
                task_id = meta.taskId if meta else None
                if meta is None or not continues(await self._repository.messages(meta.taskId), messages):
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
                                    written=writes.kept(task_id) if task_id else None))
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
        """Keep ``messages`` as ``meta``'s conversation in ``writes`` (a continuation of it: its stored
        turn meta is kept, read from the store, not from this tab's cache, which a reload empties), or
        as a new one (``allocated``: the id its head was allocated, if any), whose turns are counted
        and dated by ``app.history.adopted`` (``updated_at``: the thread's ``updatedAt``, epoch ms;
        the clock when None or later). Returns the meta kept.
        ``pause``: awaited after the title and between the slices of the search record (start-up,
        DESIGN.md §13); without it all is built at once."""
        now = self._clock()
        turns: list[TurnMeta] = []
        if meta is None:
            meta, turns = self._adopted_meta(stage_id, messages, now, allocated, updated_at)
        else:
            turns = await self._repository.turns(meta.taskId)
            meta = meta.model_copy(update={"updatedAt": max(now, meta.updatedAt),
                                           "taskName": meta.taskName or title_of(messages) or ""})
        if pause is None:
            writes.keep(meta, messages, turns)
        else:
            await pause()
            await writes.keep_in_steps(meta, messages, turns, pause=pause)
        return meta

    @guarded()
    async def resume(self, stage_id: str, task_id: str, current: list[dict], current_matched_at: int | None,
                     matched_at: int) -> list[dict] | None:
        """Make ``task_id`` the head of ``stage_id``; returns its messages for the caller's one write
        of ``maic-agent-threads`` (stamped ``matched_at``), or None when it does not exist.
        ``current``: the active thread now (of ``updatedAt`` ``current_matched_at``); kept in history
        if it is not there yet."""
        await self._segmenter.for_titles(current)
        async with self._lock:
            meta = await self._repository.meta(task_id)
            messages = await self._repository.messages(task_id)
            if meta is None or not isinstance(messages, list):
                return None
            writes = Writes()
            head = await self._repository.head_meta(stage_id)
            if current and (head is None or head.taskId != task_id):
                if head is None or not continues(await self._repository.messages(head.taskId), current):
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
        written in a transaction of its own (its 5 records and its head)."""
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
            meta = await self._repository.head_meta(stage_id)
            allocated = None if meta else await self._repository.head_id(stage_id)  # a head without turns yet
            old = await self._repository.messages(meta.taskId) if meta else None
            goes_on = continues(messages, old)
            writes = Writes()
            # history holds this thread and turns localStorage could not keep (too big for its
            # quota): the same conversation, kept whole, never copied (DESIGN.md §5, §9)
            whole = meta is not None and not goes_on and continues(old, messages)
            if not whole:  # else another conversation: the stored head stays archived
                meta = await self._adopt(writes, stage_id, messages, meta if goes_on else None, allocated=allocated,
                                         pause=pause, updated_at=updated_at)
                if pause is not None:
                    await pause()  # the transaction (its JSON and the records' copy) is a slice of its own
            writes.make_head(stage_id, meta.taskId, updated_at)
            await self._repository.commit(writes)
            self._active.forget(stage_id)
        return not whole
