"""Writing a completed turn to history (DESIGN.md §9): ONE transaction with its meta. Pure Python,
over ``HistoryRepository``; which thread goes on from which is ``app.continuity``'s rule.

- the common turn goes on the course's active conversation, read once (``record_turn``), or only its
  head and meta when this tab's last turn wrote it (``Written``);
- a turn of a conversation another tab replaced as the head goes to that conversation
  (``record_turn_in``);
- a thread that goes on from a conversation, or is a branch of it (``app.continuity.belongs``),
  grows its tree (``app.history.branches.StoredForm.written``, DESIGN.md §17); any other becomes a
  conversation of its own, carrying its turns' meta (``carried_over``): nothing is written over a conversation.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from app.continuity import belongs, branches_off, continues, home_of_ending_turn
from app.history.access import HistoryAccess, Segmenter, guarded
from app.history.active import ActiveConversations, Changed, Written
from app.history.branches import StoredForm
from app.history.changes import HistoryChange
from app.history.records import TASK_ID, Stats, TaskMeta, TurnMeta, Usage, iso, new_task_id
from app.history.repository import HeldTurn, HistoryRepository, Writes, unless_stale
from app.history.text import title_of
from app.ports import TurnEnded

__all__ = ["TurnWrites", "at_once", "carried_over", "with_turn"]

@dataclass(frozen=True)
class _Remembered(HeldTurn):
    """A ``HeldTurn`` whose messages, turns and search record were kept in memory (``Written``), with
    the plain ``text`` the search record was made of."""

    text: str = ""


_ELSEWHERE = object()
"""``TurnWrites._record_on_own_head``: the turn's conversation is not its course's head (nothing written)."""
_NOT_ITS_OWN = object()
"""``TurnWrites``: the turn's conversation holds none of the thread the turn was built on (its
``heads`` record named another conversation, or one not stored): nothing written."""
_UNREAD = object()
"""``TurnWrites._on_head``: the conversation's ``search`` record is not read yet."""

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


async def at_once() -> None:
    """No pause: the slices of a write follow each other at once."""


class TurnWrites:
    """Completed turns written to history (module docstring). ``lock``: the history writes' lock (one
    change at a time in this tab, ``HistoryWrites.lock``); ``active``: this tab's active conversations,
    kept in step; ``clock``: epoch ms; ``random_bytes``: for task ids; ``changed``: told each turn
    written (a ``HistoryChange`` of kind ``record``, carrying the conversation as written); ``pause``:
    awaited between the slices of a turn's search record (``Writes.keep_in_steps``: a message of
    millions of characters is folded and indexed without a long task, DESIGN.md §13, §14); without
    it, at once."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, segmenter: Segmenter,
                 active: ActiveConversations, lock: asyncio.Lock, *, clock: Callable[[], int], changed: Changed,
                 random_bytes: Callable[[int], bytes] = os.urandom,
                 pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._repository, self._access, self._segmenter = repository, access, segmenter
        self._active, self._lock, self._clock, self._changed = active, lock, clock, changed
        self._random, self._pause = random_bytes, pause or at_once

    def _new_meta(self, stage_id: str, messages: list[dict], now: int, task_id: str | None = None) -> TaskMeta:
        return TaskMeta(taskId=task_id or new_task_id(now, self._random), taskName=title_of(messages) or "",
                        stageId=stage_id, createdAt=now, updatedAt=now)

    async def record_turn(self, event: TurnEnded, matched_at: int, thread: list[dict] | None = None) -> TurnMeta | None:
        """The completed turn ``event`` on its course's active conversation (created at its first turn):
        ``thread`` the course's whole slim thread as saved (another tab's turns merged in; ``None``:
        ``event.messages``), ``matched_at`` its ``updatedAt``. Returns the turn meta.

        The turn goes where ``app.continuity.home_of_ending_turn`` says, asked with what history
        holds: when another tab made another conversation the head (or archived it) in a moment
        this tab's save could not see, the turn goes to ``event.conversation_id`` with
        ``event.messages`` (this tab's thread, before any merge), as ``record_turn_in``: never onto
        the other conversation's messages (DESIGN.md §9: a turn stays with the conversation it
        continues). A thread that is a branch of the head's conversation (``app.continuity.branches_off``:
        a reply regenerated, a question edited, or the head kept a turn too big for localStorage and
        a reload went on from the shorter stored thread) grows its tree, the old path kept as a branch
        (DESIGN.md §17). Any other thread that neither goes on from the head's messages nor is their
        start becomes a conversation of its own and the course's head; the old one stays whole,
        archived (DESIGN.md §9: nothing is deleted but by a delete)."""
        task_id = event.conversation_id
        on_head = event.messages if thread is None else thread
        if task_id is not None and TASK_ID.match(task_id):
            added = await self._record_on_own_head(event, matched_at, thread)
            if added is _NOT_ITS_OWN:  # its head names a conversation without the thread shown (§5): the one with it
                added = await self._record_at_home(event, matched_at, thread, head=True)
                return await self._record_on_head(event.stage_id, on_head, matched_at, event) \
                    if added is _NOT_ITS_OWN else added
            if added is not _ELSEWHERE:  # written (or history failed: None)
                return added
            switched_to = await self._switched_to(event.stage_id, task_id)
            # the runtime asked the thread store before it published the turn: here only history's head tells
            home = home_of_ending_turn(task_id, keeps_conversations=True, switched_to=switched_to,
                                       thread_replaced=lambda: False)
            if home is not None:
                added = await self._record_in(home, event.stage_id, event.messages, event, own=True)
                if added is _NOT_ITS_OWN:  # held by another conversation of the course: that one grows
                    added = await self._record_at_home(event, matched_at, thread, head=False)
                if added is _NOT_ITS_OWN:  # by none: kept under its own id, as a conversation of its own
                    added = await self._record_in(home, event.stage_id, event.messages, event)
                return added
        if event.base and await self._head_lacks(event.stage_id, event.base):  # an allocated or unknown head
            added = await self._record_at_home(event, matched_at, thread, head=True)
            if added is not _NOT_ITS_OWN:
                return added
        return await self._record_on_head(event.stage_id, on_head, matched_at, event)

    @guarded(lambda: False)
    async def _head_lacks(self, stage_id: str, base: list[dict]) -> bool:
        """True when ``stage_id``'s head has no conversation stored whose tree ``base`` starts in (an
        allocated head, or one naming no stored conversation)."""
        head = await self._repository.head_id(stage_id)
        return head is None or not (await self._repository.form(head)).starts(base)

    async def _record_at_home(self, event: TurnEnded, matched_at: int, thread: list[dict] | None, *,
                              head: bool) -> Any:
        """The turn ``event`` whose conversation holds none of the thread it was built on (DESIGN.md §5:
        a damaged ``heads`` record; §17: no copy conversation is made): recorded in the course's
        conversation that holds it (``HistoryRepository.holding``), made the course's head first when
        ``head`` (the thread shown is the course's active one) or when it is already. ``_NOT_ITS_OWN``
        (nothing written) when no conversation holds it (or history could not be read)."""
        stage_id = event.stage_id
        home, is_head = await self._home(stage_id, event.base, head)
        if home is None:
            return _NOT_ITS_OWN
        if not is_head:
            return await self._record_in(home, stage_id, event.messages, event)
        return await self._record_on_head(stage_id, event.messages if thread is None else thread, matched_at, event)

    @guarded(lambda: (None, False), writes=True)
    async def _home(self, stage_id: str, base: list[dict], head: bool) -> tuple[str | None, bool]:
        """The conversation of ``stage_id`` that holds ``base`` (``HistoryRepository.holding``; None:
        none) and whether it is the course's head now: made so here when ``head``."""
        home = await self._repository.holding(stage_id, base)
        if home is None:
            return None, False
        async with self._lock:
            if await self._repository.head_id(stage_id) == home:
                return home, True
            if not head:
                return home, False
            writes = Writes()
            writes.make_head(stage_id, home, None)
            await self._repository.commit(writes)
            self._active.forget(stage_id)
        return home, True

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
        A turn built on no stored thread (``event.base`` empty: the panel showed none of it, its
        stored thread damaged and dropped) is not taken for an edit of its first question.
        History is read ONCE (``HistoryRepository.for_turn``: the head and the conversation's meta,
        messages, turns and search record together), then written as ``_record_on_head`` writes.
        ``_ELSEWHERE`` (nothing written) when the head is another or none, or the conversation is
        not readable: the caller asks where the turn goes."""
        messages = event.messages if thread is None else thread
        await self._segmenter.for_titles(messages)
        async def attempt(expect: bool) -> tuple[TurnMeta, TaskMeta, Writes] | None:
            held = await self._held_for_turn(event.stage_id, event.conversation_id)
            if held.head is None or held.head.task_id != held.task_id or held.meta is None:
                return None
            if event.base and isinstance(held.messages, list) and not held.form.starts(event.base):
                return _NOT_ITS_OWN  # the head names a conversation that holds none of the thread shown
            text = held.text if isinstance(held, _Remembered) else None
            # sent on it only when built on a thread of it: a question from an empty panel (its stored
            # thread damaged and dropped, §5) edits no first question of it (§17)
            return await self._on_head(event.stage_id, messages, matched_at, event, held.meta, held.form, held.turns,
                                       held.search, text, sent_on=bool(event.base), expect=expect)

        async with self._lock:
            done = await unless_stale(attempt)
        if done is None or done is _NOT_ITS_OWN:
            return _ELSEWHERE if done is None else done
        added, meta, writes = done
        self._changed(HistoryChange("record", meta.taskId, event.stage_id, written=writes.kept(meta.taskId),
                                    form=writes.kept_form(meta.taskId)))
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
                                       known.branches, known.shown, text=known.text)
        return await self._repository.for_turn(stage_id, task_id)

    @guarded(writes=True)
    async def _record_on_head(self, stage_id: str, messages: list[dict], matched_at: int, turn: TurnEnded) -> TurnMeta:
        await self._segmenter.for_titles(messages)
        async def attempt(expect: bool) -> tuple[TurnMeta, TaskMeta, Writes]:
            # a head whose meta cannot be read is rebuilt from what is readable: its turns and tree stay (§5)
            meta, damaged = await self._repository.head_meta_or_rebuilt(stage_id)
            held = await self._repository.form(meta.taskId) if meta else StoredForm(None)
            turns = await self._repository.turns(meta.taskId) if meta else []
            # a rebuilt meta is not what is stored: the write expects the record as it was read
            return await self._on_head(stage_id, messages, matched_at, turn, meta, held, turns, _UNREAD, None,
                                       expect=expect, stored_raw=damaged)

        async with self._lock:
            added, meta, writes = await unless_stale(attempt)
        self._changed(HistoryChange("record", meta.taskId, stage_id, written=writes.kept(meta.taskId),
                                    form=writes.kept_form(meta.taskId)))
        return added

    async def _on_head(self, stage_id: str, messages: list[dict], matched_at: int, turn: TurnEnded,
                       meta: TaskMeta | None, held: StoredForm, turns: list[TurnMeta],
                       search: Any, text: str | None, *, sent_on: bool = False,
                       expect: bool = False, stored_raw: dict | None = None) -> tuple[TurnMeta, TaskMeta, Writes]:
        """Write the turn on ``stage_id``'s head (lock held): ``meta``, ``held`` (its ``messages`` record
        as stored), ``turns`` and ``search`` (its ``search`` record; ``_UNREAD``: read here when needed)
        as read; ``text``: the plain text that record was made of, when kept in memory (``Written``);
        ``sent_on``: the turn was sent on this conversation (its conversation id) and built on a thread
        of it (``TurnEnded.base`` not empty: a thread of another first message is its first question
        edited; from an empty panel, a conversation of its own); ``expect``: the
        writes land only if ``meta``'s conversation is still as read (``Writes.expect``), else
        ``RecordStoreError`` kind ``stale`` and nothing is written; ``stored_raw``: the stored record
        ``meta`` was rebuilt from (it could not be read, ``rebuilt_meta``), then expected as read
        (``Writes.expect``).
        A thread that is a branch of the conversation (``app.continuity.branches_off``: a question
        edited, a reply regenerated) grows its tree (``app.history.branches.StoredForm.written``,
        DESIGN.md §17).
        Returns the turn meta, the conversation's meta and the writes committed; what they wrote is
        remembered (``ActiveConversations.wrote``) for the course's next turn."""
        stored, read = held.messages, meta
        branch = branches_off(messages, stored, sent_on=sent_on or held.starts(messages))  # any first question of its tree
        diverged = isinstance(stored, list) and not belongs(messages, stored) and not continues(stored, messages) \
            and not branch
        if diverged:  # a thread of another first message, or one without ids, that does not go on from the head's
            # the thread becomes its own conversation; the head's stays whole, archived (§9)
            meta, turns = carried_over(self._new_meta(stage_id, messages, self._clock()), turns, messages)
        elif meta is None:  # the first turn: the conversation takes the id allocated for its head
            meta = self._new_meta(stage_id, messages, self._clock(), await self._repository.head_id(stage_id))
        # the stored index of a conversation this turn goes on from: only the new messages are indexed
        goes_on = stored is not None and not diverged and continues(messages, stored)
        if goes_on and search is _UNREAD:
            search = await self._repository.search_record(meta.taskId)
        form = StoredForm(messages) if diverged else held.written(messages) if branch or goes_on else \
            StoredForm(messages, held.branches, held.shown)
        meta, added = with_turn(meta, turns, form.messages, turn, self._clock())
        writes = Writes()
        if expect and read is not None:
            writes.expect(read, stored_raw)
        await writes.keep_in_steps(meta, form.messages, turns, pause=self._pause, new=diverged, held_messages=stored,
                                   held_search=search if goes_on else None, held_text=text, branches=form.branches,
                                   shown=form.shown, held_branches=held.branches)
        writes.make_head(stage_id, meta.taskId, matched_at)
        await self._repository.commit(writes)
        self._active.set(stage_id, meta, turns)
        kept, (record, plain) = writes.kept(meta.taskId), writes.kept_index(meta.taskId)
        self._active.wrote(stage_id, Written(meta.taskId, meta.model_dump(), kept.messages, list(kept.turns), record,
                                             plain, form.branches, form.shown))
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
    async def _record_in(self, task_id: str, stage_id: str, messages: list[dict], turn: TurnEnded, *,
                         own: bool = False) -> Any:
        """``record_turn_in``'s write. ``own``: only when ``task_id`` holds the thread the turn was built
        on (``turn.base``, when there is one), else ``_NOT_ITS_OWN`` and nothing written."""
        await self._segmenter.for_titles(messages)

        async def attempt(expect: bool) -> Any:
            # a meta that cannot be read is rebuilt from what is readable: its turns and tree stay (§5)
            meta, damaged = await self._repository.meta_or_rebuilt(task_id, stage_id)
            read = meta
            held = await self._repository.form(task_id) if meta else StoredForm(None)
            if own and turn.base and not (isinstance(held.messages, list) and held.starts(turn.base)):
                return _NOT_ITS_OWN
            turns = await self._repository.turns(task_id) if meta else []
            form = StoredForm(messages)
            if meta is not None and isinstance(held.messages, list) and \
                    not belongs(messages, held.messages, sent_on=held.starts(messages)):
                # the thread neither goes on from it nor is a branch of it: its own, never over it
                meta, turns = carried_over(self._new_meta(stage_id, messages, self._clock()), turns, messages)
            elif meta is None:
                meta = self._new_meta(stage_id, messages, self._clock(), task_id)
            else:  # it goes on from it, or is a branch of it (§17): its tree grows
                form = held.written(messages)
            goes_on = meta is not None and meta.taskId == task_id and continues(messages, held.messages)
            search = await self._repository.search_record(task_id) if goes_on else None
            meta, added = with_turn(meta, turns, form.messages, turn, self._clock())
            writes = Writes()
            if expect and read is not None:  # another tab's write of it meanwhile: read again
                writes.expect(read, damaged)  # a rebuilt meta is not what is stored: the record as read
            await writes.keep_in_steps(meta, form.messages, turns, pause=self._pause, held_messages=held.messages,
                                       held_search=search, branches=form.branches, shown=form.shown,
                                       held_branches=held.branches)
            await self._repository.commit(writes)
            return meta, added, writes

        async with self._lock:
            done = await unless_stale(attempt)
            if done is _NOT_ITS_OWN:
                return done
            meta, added, writes = done
            if self._active.task_id(stage_id) == task_id:  # this tab still took it for the active one
                self._active.forget(stage_id)
        self._changed(HistoryChange("record", meta.taskId, stage_id, written=writes.kept(meta.taskId),
                                    form=writes.kept_form(meta.taskId)))
        return added
