"""Keeping another device's conversations (DESIGN.md §16): its version of a conversation merged
with the one kept here (the union of both trees, §17 "Sync", ``app.history.merge``), its deletes
applied with the turns this device never sent kept apart. Pure Python over ``HistoryRepository``. Every change it publishes has the source ``sync``, so sync never
sends it back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from app.history.access import HistoryAccess, guarded
from app.history.branching import NO_BRANCHES, Branching
from app.history.changes import HistoryChange
from app.history.merge import Merged, merge_conversation, merged_meta, settled_meta
from app.history.name_writes import NameWrites
from app.history.names import merged_names
from app.history.records import TaskMeta, TurnMeta, new_task_id
from app.history.repository import Conversation, HistoryRepository, Writes
from app.history.active import ActiveConversations
from app.history.writes import HistoryWrites
from app.store import Notice

__all__ = ["SyncedWrites"]


class SyncedWrites:
    """Another device's changes kept here (module docstring). ``writes``: this tab's history writes
    (their lock: one change at a time; ``add_synced``); ``names``: names and pins (a later rename or
    pin of a conversation kept the same, §18); ``changed``: the history hub's ``publish``; ``tell``:
    a notice for the panel; ``clock`` (epoch ms) and ``random_bytes``: a kept-apart conversation's
    new task id; ``pause``: awaited between slices of a first sync's bulk write (None: none)."""

    def __init__(self, repository: HistoryRepository, access: HistoryAccess, writes: HistoryWrites,
                 active: ActiveConversations, names: NameWrites, *, changed: Callable[[HistoryChange], None],
                 tell: Callable[[Notice], None], clock: Callable[[], int], random_bytes: Callable[[int], bytes],
                 pause: Callable[[], Awaitable[None]] | None) -> None:
        self._repository, self._access, self._writes = repository, access, writes
        self._active, self._names, self._changed, self._tell = active, names, changed, tell
        self._clock, self._random, self._pause = clock, random_bytes, pause

    @guarded(lambda: "unavailable")
    async def apply(self, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                    branching: Branching = NO_BRANCHES) -> str:
        """Keep another device's version of a conversation (a synced document, ``app.sync.documents``:
        ``messages`` its shown path, ``branching`` its tree beside it). The two versions merge by the
        union of their trees (``app.history.merge.merge_conversation``, DESIGN.md §17 "Sync"), each
        side's choices dated by its ``shownAt``, else its conversation's ``updatedAt``; what is kept is
        written in the stored form (the shown path, and ``branches``, ``shown``, ``shownAt`` beside it).
        Returns

        - ``"added"``: not kept here before, now kept archived (which conversation is a course's active
          one stays per device); ``"remote"``: the other device's holds all of this one's and replaced it;
        - ``"merged"``: both changed it; the messages of both are kept as one tree, the turn metas of
          both (the caller sends the merged one back); ``"local"``: this one holds all of the other's
          (the caller sends this one); ``"same"``: nothing to do; ``"unavailable"``: history cannot be
          written.

        Two versions of the same messages, tree and turns whose metas differ (one device resumed it,
        another renamed it) settle on the later change of each field (``settled_meta``; the later
        ``shownAt``): ``"same"`` when that is the other's and this one differs from it by a rename or
        pin at most (that alone is stored here); ``"remote"`` when it is the other's and was written
        here whole; ``"local"`` when it is this one's, unchanged (the other lacks a field of it);
        ``"merged"`` when it takes fields of both (written here, and sent). The device already holding
        what both settle on writes and sends nothing, so two devices never send one conversation to
        each other for ever (§16).

        The change published (source ``sync``, carrying what was kept) says ``import`` for an added
        one, ``sync`` for a changed one; a changed one that is its course's active conversation
        carries its shown path as ``head`` (the device's active thread is rebuilt from history,
        DESIGN.md §16)."""
        head = None
        writes = Writes()
        async with self._writes.lock:
            held = await self._repository.conversation(meta.taskId)
            if held is None:
                writes.keep(meta, messages, turns, new=not await self._repository.holds(meta.taskId),
                            branches=branching.branches, shown=branching.shown)
                writes.keep_branching(meta.taskId, branching)
                await self._repository.commit(writes)
                outcome = "added"
            else:
                decided = await self._decided(held, meta, messages, turns, branching)
                if isinstance(decided, str):
                    return decided
                kept, merged, alike = decided
                writes.keep(kept, merged.messages, merged.turns, branches=merged.branching.branches,
                            shown=merged.branching.shown)
                writes.keep_branching(kept.taskId, merged.branching)
                await self._repository.commit(writes)
                if (await self._repository.head_id(kept.stageId)) == kept.taskId:
                    self._active.forget(kept.stageId)
                    head = None if alike else merged.messages  # the same thread: nothing to rebuild
                outcome = merged.how
        self._changed(HistoryChange("import" if outcome == "added" else "sync", meta.taskId, meta.stageId, "sync",
                                    written=writes.kept(meta.taskId), head=head))
        return outcome

    async def _decided(self, held: Conversation, meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                       branching: Branching) -> str | tuple[TaskMeta, Merged, bool]:
        """What ``apply`` keeps of ``held`` (this device's) and the other device's version: the outcome
        when nothing is to be written but a rename or pin at most (taken here), else the meta and the
        ``Merged`` to write and whether both held the same messages, turns and tree (so the active
        thread needs no rebuild). Called under the writers' lock."""
        merged = merge_conversation((held.messages, held.turns, held.branching), (messages, turns, branching),
                                    local_at=held.meta.updatedAt, remote_at=meta.updatedAt)
        alike = merged.how == "local" and held.messages == messages and held.turns == turns \
            and _same_tree(held.branching, branching)
        if alike:  # one conversation, two metas: both devices settle on the later change of each field
            kept, kept_branching = settled_meta(held.meta, meta), _settled_branching(held.branching, branching)
            theirs = kept == meta and kept_branching == branching
            if kept_branching == held.branching and kept == merged_names(held.meta, meta):
                await self._names.take_names(held.meta, meta)  # a later rename or pin at most (§18)
                return "same" if theirs else "local"
            return kept, Merged("remote" if theirs else "merged", held.messages, held.turns, kept_branching), True
        if merged.how == "local":
            await self._names.take_names(held.meta, meta)  # the later rename or pin of each (§18)
            return "local"
        return merged_meta(held.meta, meta, merged), merged, False

    async def apply_many(self, items: list[Conversation]) -> list[str]:
        """``apply`` for each of ``items`` ((meta, messages, turns), in arrival order): one
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
        for index, item in enumerate(items):
            meta, messages, turns = item
            branching = getattr(item, "branching", NO_BRANCHES)
            if index in added_at:
                outcomes.append("added")
                self._changed(HistoryChange("import", meta.taskId, meta.stageId, "sync",
                                            written=Conversation(meta, messages, turns, branching)))
            else:
                outcomes.append(await self.apply(meta, messages, turns, branching))
        return outcomes

    @guarded()
    async def remove(self, task_id: str, seen: Callable[[list[dict]], list[bool]] | None = None) -> str | None:
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

    @guarded()
    async def renew(self, task_id: str) -> str | None:
        """``task_id`` came back here (an undo) after its deletion went out: another device only ever
        sees that id deleted (DESIGN.md §16), so the conversation takes a new task id, whole (its meta
        but the id, names and pins included, its messages, the branches of its tree (§17) and turns),
        in one transaction that removes every record of ``task_id``; should it be its course's active conversation, the new one is.
        Returns the new task id (the caller sends it as any other), None when ``task_id`` is not kept
        here (or history is unavailable). Publishes the delete of ``task_id`` and the import of the
        new one, both with the source ``sync`` (what sync changed is never sent back as it is)."""
        async with self._writes.lock:
            held = await self._repository.conversation(task_id)
            if held is None:
                return None
            stored = await self._repository.stored(task_id)
            renewed = Conversation(held.meta.model_copy(update={"taskId": new_task_id(self._clock(), self._random)}),
                                   held.messages, held.turns, held.branching)
            stage_id = held.meta.stageId
            was_head = await self._repository.head_id(stage_id) == task_id
            writes = Writes()
            writes.remove(stored)
            writes.keep(*renewed, new=True, branches=renewed.branching.branches, shown=renewed.branching.shown)
            writes.keep_branching(renewed.meta.taskId, renewed.branching)  # its whole tree (DESIGN.md §17)
            if was_head:
                writes.make_head(stage_id, renewed.meta.taskId, None)
                self._active.forget(stage_id)  # read again: the same thread under its new id
            await self._repository.commit(writes)
        self._changed(HistoryChange("delete", task_id, stage_id, "sync"))
        self._changed(HistoryChange("import", renewed.meta.taskId, stage_id, "sync", written=renewed,
                                    head=renewed.messages if was_head else None))
        return renewed.meta.taskId


def _same_tree(held: Branching, other: Branching) -> bool:
    """True when ``held`` and ``other`` keep the same tree beside the same shown path (their choice
    times aside)."""
    return held.branches == other.branches and held.shown == other.shown


def _settled_branching(held: Branching, other: Branching) -> Branching:
    """``held`` dated by the later of both choice times (None when neither has one): what both devices
    keep of one tree (DESIGN.md §17 "Sync"), whichever settles it."""
    times = [at for at in (held.shown_at, other.shown_at) if at is not None]
    return replace(held, shown_at=max(times) if times else None)


def _unseen(held: Conversation, seen: Callable[[list[dict]], list[bool]], task_id: str) -> Conversation | None:
    """The turns of ``held``, on any branch (DESIGN.md §17: each path from a first message to a leaf,
    ``Branching.paths``), that ``seen`` says the deleting device never had, each message once, in one
    chain, as a conversation of id ``task_id`` (the title and course of ``held``; turn metas of its messages, renumbered; counts
    from them, ``merged_meta``), or None when there are none."""
    from app.history.merge import Merged, answered, split_turns

    messages, kept = [], set()
    for path in held.branching.paths(held.messages):
        for turn, had in zip(split_turns(path), seen(path)):
            for message in turn if not had else ():  # a message two unseen turns share (a question answered twice) once
                key = message.get("id") if isinstance(message.get("id"), str) else id(message)
                if key not in kept:
                    kept.add(key)
                    messages.append(message)
    if not messages:
        return None
    messages = answered(messages)
    ids = {m.get("id") for m in messages if m.get("id") is not None}
    metas = [t.model_copy(update={"turnId": n}) for n, t in
             enumerate((t for t in held.turns if t.messageId in ids), start=1)]
    meta = merged_meta(held.meta, held.meta, Merged("merged", messages, metas))
    return Conversation(meta.model_copy(update={"taskId": task_id}), messages, metas)
