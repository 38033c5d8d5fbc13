"""``SelectedAgent``: the runtime's one agent, delegating each turn to the agent the settings pick.

The runtime keeps the agent it was built with; the settings dialog can change
the choice at any time, so the runtime is given a ``SelectedAgent`` whose
``choose`` callable is asked at the start of every turn (a turn in flight keeps
the agent it started with).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from app.agent import Agent
from app.model import Message

__all__ = ["SelectedAgent"]


class SelectedAgent:
    """An ``Agent`` that runs each turn on ``choose()`` (e.g. the demo agent or an ``OpenAIAgent``)."""

    def __init__(self, choose: Callable[[], Agent]) -> None:
        self._choose = choose

    def mask_secret(self, text: str) -> str:
        """``text`` with the chosen agent's secret masked (``Agent.mask_secret``, DESIGN.md §12)."""
        return self._choose().mask_secret(text)

    async def run(self, history: list[Message], text: str) -> AsyncIterator:
        """Delegate to the agent chosen now; its events pass through unchanged."""
        async for event in self._choose().run(history, text):
            yield event
