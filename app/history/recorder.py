"""``HistoryRecorder``: the runtime's history collaborator (DESIGN.md §9).

``AgentRuntime(..., history=HistoryRecorder(service))`` calls ``turn_completed``
and ``archived`` synchronously; the recorder runs the service's writes as
tasks, one after another in call order, so the turn's own completion (the
localStorage save, §4) never waits for IndexedDB, and a history failure never
reaches the runtime (the service turns it into one notice).

The page makes the recorder before history is loaded (``HistoryRecorder()``, DESIGN.md §13:
history's modules are imported after ready): what is queued until ``attach(service)`` waits
for it, in call order, so a turn sent right at ready is still recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.history.service import HistoryService
    from app.ports import TurnEnded

__all__ = ["HistoryRecorder"]


class HistoryRecorder:
    """Queues history writes of the runtime (module docstring); each subscriber (``subscribe``) hears
    ``stage_id`` after each, whether it wrote or failed. ``service``: the ``HistoryService``, or
    ``None`` until ``attach``."""

    def __init__(self, service: HistoryService | None = None) -> None:
        self.service = service
        self._listeners: dict[object, Callable[[str], None]] = {}
        self._tail: asyncio.Future | None = None
        self._attached: asyncio.Future | None = None

    def attach(self, service: HistoryService) -> None:
        """History is loaded: what was queued runs now, in call order, on ``service``."""
        self.service = service
        if self._attached is not None and not self._attached.done():
            self._attached.set_result(None)

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(stage_id)`` after each queued write of course ``stage_id`` from now on (the
        stats and turn meta are drawn again); returns the function that ends the subscription."""
        key = object()
        self._listeners[key] = listener
        return lambda: self._listeners.pop(key, None) and None

    async def _loaded(self) -> None:
        if self.service is None:
            if self._attached is None:
                self._attached = asyncio.get_running_loop().create_future()
            await self._attached

    def _schedule(self, stage_id: str, make: Callable[[], Awaitable[Any]], *, told: bool = True) -> asyncio.Future:
        previous = self._tail

        async def step():
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self._loaded()
            result = await make()
            if told:
                for listener in list(self._listeners.values()):
                    listener(stage_id)
            return result
        self._tail = asyncio.ensure_future(step())
        return self._tail

    def turn_completed(self, event: TurnEnded, updated_at: int | None,
                       thread: list[dict] | None = None) -> asyncio.Future:
        """The turn ``event`` saved to its course's thread: record it with its meta (usage, model, duration,
        dropped turns; DESIGN.md §12, §15) on ``thread``, the course's thread as stored (another tab's turns
        merged in; ``None``: ``event.messages``), whose ``updatedAt`` is ``updated_at``
        (``HistoryService.record_turn``)."""
        kept = list(event.messages if thread is None else thread)
        return self._schedule(event.stage_id, lambda: self.service.record_turn(event, updated_at, kept))

    def turn_completed_in(self, task_id: str, event: TurnEnded) -> asyncio.Future:
        """The turn ``event`` of conversation ``task_id``, which another tab replaced as its course's active
        one while the turn ran: record it there (``HistoryService.record_turn_in``; the future's result is
        ``None`` when history could not)."""
        return self._schedule(event.stage_id, lambda: self.service.record_turn_in(task_id, event))

    @property
    def keeps_conversations(self) -> bool:
        """True while history is open and can record conversations (``HistoryService.available`` and
        ``keeps_conversations``)."""
        return self.service is not None and self.service.available is True and bool(self.service.keeps_conversations)

    def adopted(self, stage_id: str, messages: list[dict], updated_at: int) -> asyncio.Future:
        """The course's thread as stored before an edit or a regenerate replaces its path: history
        adopts it or brings the active conversation in line with it (``HistoryService.reconcile`` for
        that course alone), in the queue before the branch's turn (``HistoryPort.adopted``)."""
        threads = {stage_id: (list(messages), updated_at)}
        return self._schedule(stage_id, lambda: self.service.reconcile(threads))

    def archived(self, stage_id: str, messages: list[dict], updated_at: int | None) -> asyncio.Future:
        """New conversation: keep the thread in history and end it as the active one."""
        return self._schedule(stage_id, lambda: self.service.archive(stage_id, list(messages), updated_at))

    def head_task_id(self, stage_id: str, *, allocate: bool = True) -> asyncio.Future:
        """The task id of ``stage_id``'s active conversation, allocated when ``allocate`` and there is
        none (``HistoryService.head_task_id``), after the writes queued before (an archive ends the head
        first). Its subscribers are not told: nothing was recorded."""
        return self._schedule(stage_id, lambda: self.service.head_task_id(stage_id, allocate=allocate), told=False)

    def branches(self, stage_id: str) -> asyncio.Future:
        """The tree of ``stage_id``'s active conversation (``HistoryService.branches``; ``None``: none),
        read after the writes queued before (a turn's reply is in it). Its subscribers are not told."""
        return self._schedule(stage_id, lambda: self.service.branches(stage_id), told=False)

    def show_path(self, stage_id: str, path: list[dict]) -> asyncio.Future:
        """The person showed another branch of ``stage_id``'s active conversation: ``path`` becomes its
        shown path in history (``HistoryService.show_path``), in the queue after the writes before."""
        shown = list(path)
        return self._schedule(stage_id, lambda: self.service.show_path(stage_id, shown))

    def run(self, stage_id: str, make: Callable[[], Awaitable[Any]]) -> asyncio.Future:
        """Any other history operation, in the same queue (resume, delete, undo, import)."""
        return self._schedule(stage_id, make)

    async def drain(self) -> None:
        """Wait until every queued write is done."""
        while self._tail is not None and not self._tail.done():
            await asyncio.gather(self._tail, return_exceptions=True)
