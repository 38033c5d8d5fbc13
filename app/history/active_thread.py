"""A course's active thread made a history conversation's (DESIGN.md §9 resume, §16 sync), the
service the drawer calls (§15: a view calls services; services never call views). Pure Python.

- ``resume``: a kept conversation becomes the course's active one: history's head moves (in the
  recorder's queue, after the writes queued before it) and its messages become the active thread
  with ONE write of ``maic-agent-threads`` (``AgentRuntime.replace_thread``); opened from a search
  hit whose keyword lies on another branch only, that branch is stored as shown first
  (``app.history.hit_branch``, §17), so the thread, the panel and other tabs show it;
- ``follow``: another device's version of the course's active conversation (a change on history's
  hub carrying ``head``, ``HistoryService.apply_synced``/``remove_synced``) is rebuilt as the
  active thread the same way, so the next turn goes on from what both devices said; while a turn
  runs there the thread stays (where that turn ends is ``app.continuity``'s).

Both write the slim projection of the messages history holds (``app.projection.serialize_thread``,
DESIGN.md §3): a stored message with a field §3 does not define (another writer's, an older
version's) is written without it, never as a thread the next load reads as damaged (§5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.history.changes import HistoryChange
from app.history.hit_branch import hit_message_steps
from app.json_steps import run_paused, run_steps
from app.projection import serialize_thread

if TYPE_CHECKING:
    from app.history.recorder import HistoryRecorder
    from app.history.service import HistoryService

__all__ = ["ActiveThread"]


class ActiveThread:
    """Resume and sync's rebuild of a course's active thread (module docstring).

    ``runtime``: the ``AgentRuntime`` (``replace_thread``); ``store``: its ``ThreadStore``
    (``load``, ``updated_at``); ``service``: the ``HistoryService``; ``recorder``: the runtime's
    ``HistoryRecorder`` (history's writes, one after another); ``clock``: epoch ms; ``pause``: awaited
    between the slices of a search hit's look through a long conversation (the browser's next task,
    DESIGN.md §13; None: at once)."""

    def __init__(self, runtime: Any, store: Any, service: HistoryService, recorder: HistoryRecorder,
                 clock: Callable[[], int], *, pause: Callable[[], Awaitable[None]] | None = None) -> None:
        self._runtime, self._store, self._service, self._recorder, self._clock = (
            runtime, store, service, recorder, clock)
        self._pause = pause

    async def resume(self, stage_id: str, task_id: str, keyword: str = "") -> list[dict] | None:
        """Make conversation ``task_id`` course ``stage_id``'s active one (``HistoryService.resume``:
        the thread shown now is kept in history if it is not there yet) and its messages the active
        thread. Returns them (their slim projection), or None when history holds no such conversation
        (nothing changed).

        ``keyword``: the search that found it (``""``: opened from the list). When it points at a
        message on a branch not shown (``hit_message``), that branch is stored as the shown one
        (``HistoryService.show_path_in``) before the resume, so the thread written is that branch.
        This is also how the conversation already active switches to the hit's branch."""
        if keyword.strip():
            await self.show_hit(stage_id, task_id, keyword)
        current = self._store.load(stage_id) or []
        matched_at = self._clock()  # the head's match and the thread's stamp: a reload finds them matched
        messages = await self._recorder.run(stage_id, lambda: self._service.resume(
            stage_id, task_id, current, self._store.updated_at(stage_id), matched_at))
        if messages is None:
            return None
        messages = serialize_thread(messages)  # what the thread store reads back (module docstring)
        self._runtime.replace_thread(stage_id, messages, updated_at=matched_at)
        return messages

    async def mend(self, stage_id: str) -> bool:
        """After a damaged ``maic-agent-threads`` value lost messages of course ``stage_id``'s thread
        (the store kept the rest, DESIGN.md §5: ``ThreadStore.take_repaired``): when the course's
        active conversation in history holds every message the thread still has, and the thread is
        not the start of its path to the last of them, that path becomes the thread (``resume``):
        an answer is never shown under a question it did not answer, and what the value lost is
        shown again (§16: the active thread is a device's view, rebuilt from history). False when
        nothing changed: the thread is that path's start, holds a message the tree lacks or one
        without an id (localStorage wins, §9), or the course has no conversation in history."""
        thread = self._store.load(stage_id) or []
        ids = [m.get("id") if isinstance(m, dict) else None for m in thread]
        if not ids or not all(isinstance(i, str) for i in ids):
            return False
        tree = await self._service.branches(stage_id)
        if tree is None or not all(i in tree for i in ids):
            return False
        path = tree.show(ids[-1]).path()
        if [m.get("id") for m in path[:len(ids)]] == ids:
            return False  # the thread is what history holds (or its start): nothing was put out of place
        task_id = await self._service.head_task_id(stage_id, allocate=False)
        if task_id is None:
            return False
        if tree.show(ids[-1]).path_ids() != tree.path_ids():  # the thread's branch is shown there too
            await self._recorder.run(stage_id, lambda: self._service.show_path_in(task_id, path))
        return await self.resume(stage_id, task_id) is not None

    async def settle(self, pause: Callable[[], Awaitable[Any]]) -> None:
        """At start-up, before reconciling (``HistoryView.start``): each course whose stored thread lost
        messages to a damaged value is mended from history (``mend``; the store's ``take_repaired``),
        then each whose stored thread is a strict start of what history holds shows history's path
        (``catch_up``), so reconciling never keeps either as a branch of its own conversation
        (DESIGN.md §5, §17). ``pause`` is awaited after each course written (a task each, §13)."""
        for stage_id in self._store.take_repaired():
            await self.mend(stage_id)
            await pause()
        for stage_id in self._store.stage_ids():  # a turn history recorded that localStorage could not keep
            if await self.catch_up(stage_id):
                await pause()

    async def catch_up(self, stage_id: str) -> bool:
        """At start-up, after a turn too big for ``maic-agent-threads`` that history recorded (it stayed
        in memory, DESIGN.md §5): when course ``stage_id``'s stored thread is a strict start of the
        shown path of the course's active conversation in history, that path becomes the thread
        (``resume``), so the turn the user saw is shown after the reload and the next one goes on
        below it, never as a branch of it (§16, §17). Only a course whose head was matched to another
        stamp than the stored thread's is read (``HistoryService.head_matched_at``). False when
        nothing changed: the thread is that path, is not its start, has a message without an id,
        or the course has no conversation in history."""
        thread = self._store.load(stage_id) or []
        ids = [m.get("id") if isinstance(m, dict) else None for m in thread]
        if not ids or not all(isinstance(i, str) for i in ids):
            return False
        if await self._service.head_matched_at(stage_id) in (None, self._store.updated_at(stage_id)):
            return False  # history was matched to this very thread (or holds none)
        tree = await self._service.branches(stage_id)
        if tree is None:
            return False
        shown = list(tree.path_ids())
        if len(shown) <= len(ids) or shown[:len(ids)] != ids:
            return False
        task_id = await self._service.head_task_id(stage_id, allocate=False)
        return task_id is not None and await self.resume(stage_id, task_id) is not None

    async def show_hit(self, stage_id: str, task_id: str, keyword: str) -> bool:
        """Store the branch of conversation ``task_id`` (of course ``stage_id``) that holds ``keyword``
        as its shown one, when its shown path holds it nowhere (``hit_message``), in the recorder's
        queue (after the writes queued before it). True when another branch is now shown; the thread
        store is not written (``resume`` does that). The tree is looked through in slices
        (``hit_message_steps``, ``pause`` between them)."""
        return bool(await self._recorder.run(stage_id, lambda: self._show_hit(task_id, keyword)))

    async def _show_hit(self, task_id: str, keyword: str) -> bool:
        tree = await self._service.branches_in(task_id)
        if tree is None:
            return False
        steps = hit_message_steps(tree, keyword)
        ident = run_steps(steps) if self._pause is None else await run_paused(steps, self._pause)
        if ident is None:
            return False
        return await self._service.show_path_in(task_id, tree.show(ident).path()) is not None

    def follow(self, change: HistoryChange) -> bool:
        """When ``change`` moved its course's active thread (``change.head``: what it now holds, ``[]``
        when another device deleted it), make that the active thread: True when it was rebuilt; False
        when the change moved none, the thread already is that, or a turn runs on the course. When the
        thread already is that path in the same conversation, the tree beside it may have grown (a reply
        regenerated on the other device): the runtime reads it again, so its pickers count the new
        siblings (§17). The same path in another conversation (another device deleted the active one
        and the turns it never had were kept apart, ``HistoryService.remove_synced``) is rebuilt, so
        the next turn goes on in that conversation, never in the deleted one (§16)."""
        if change.head is None:
            return False
        head = serialize_thread(change.head)  # the slim projection (module docstring)
        known = self._runtime.conversation_id(change.stage_id)
        if self._store.load(change.stage_id) == head and known in (None, change.task_id):
            self._runtime.conversation_changed_elsewhere(change.stage_id, change.kind, change.task_id)
            return False
        # another path, or the same path in another conversation (what another device's delete left of
        # this one's turns, kept apart): the thread is written anew and its conversation read again
        return bool(self._runtime.replace_thread(change.stage_id, head))
