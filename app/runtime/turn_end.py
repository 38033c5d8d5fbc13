"""The end of a turn as one typed event, and history's part in it (DESIGN.md §4, §9, §15).

When a turn ends, ``app.runtime.AgentRuntime`` serializes the course's live thread once into a
``TurnEnded`` and hands it to the subscribers registered when the runtime was wired, in order: the
thread store's write first (the runtime's own), then history's record of it (``HistoryTurns``),
then any other. A subscriber may answer with a pending write; the turn reads as running until it
lands (at most ``app.runtime.RECORD_WAIT_S``). Where a turn goes when another writer moved its
course on is ``app.continuity.home_of_ending_turn``'s rule; ``HistoryTurns.kept_apart`` records such
a turn in its own conversation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.ports import HistoryPort, ThreadStorePort, TurnEnded

__all__ = ["HistoryTurns", "TurnEnded", "TurnSubscriber"]

_log = logging.getLogger("app.runtime")


TurnSubscriber = Callable[[TurnEnded], Awaitable[Any] | None]
"""Called with each ``TurnEnded``; answers with a pending write the turn waits for, or ``None``."""


class HistoryTurns:
    """History's subscriber to the end of turns and to New conversation (DESIGN.md §9). ``history``: the queued writer
    (``HistoryRecorder``); ``store``: read for the course's thread as the thread store's write left it."""

    def __init__(self, history: HistoryPort, store: ThreadStorePort) -> None:
        self._history = history
        self._store = store

    @property
    def keeps_conversations(self) -> bool:
        """True while history can record a turn in a conversation of its own."""
        return self._history.keeps_conversations

    def turn_ended(self, event: TurnEnded) -> Awaitable[Any]:
        """Record a turn saved to its course's thread: the thread as stored (another tab's turns merged
        in), with this tab's own thread beside it (``HistoryService.record_turn``)."""
        stored = self._store.load(event.stage_id)
        return self._history.turn_completed(event, self._store.updated_at(event.stage_id), stored)

    def archived(self, stage_id: str, base: list[dict[str, Any]]) -> None:
        """New conversation on ``stage_id``: the stored thread ``base`` stays in history (§4, §9)."""
        self._history.archived(stage_id, base, self._store.updated_at(stage_id))

    def kept_apart(self, event: TurnEnded, task_id: str, *, wait_s: float, fallback: Callable[[], None],
                   kept: Callable[[], None]) -> Awaitable[Any]:
        """Record a turn in conversation ``task_id``, which another writer replaced as its course's active
        one (``app.continuity.home_of_ending_turn``); returns the write. ``kept()`` once it landed;
        ``fallback()`` (once) when history failed or did not finish within ``wait_s`` seconds: the
        caller saves the turn to the course's thread instead, never lost (DESIGN.md §5, §9)."""
        pending = self._history.turn_completed_in(task_id, event)
        fell_back: list[bool] = []

        def fall_back() -> None:
            if not fell_back:
                fell_back.append(True)
                _log.error("history did not keep a turn of %r in its conversation: saved to the thread",
                           event.stage_id)
                fallback()

        def recorded(done: asyncio.Future) -> None:
            if done.cancelled() or done.exception() is not None or done.result() is None:
                fall_back()
            elif not fell_back:
                kept()
        # A history write that hangs past wait_s (the panel is released then) must not leave the
        # turn only in memory: it is saved to the thread too (kept twice rather than lost).
        asyncio.get_running_loop().call_later(wait_s, lambda: None if pending.done() else fall_back())
        pending.add_done_callback(recorded)
        return pending
