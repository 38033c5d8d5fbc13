"""``ended``: a ``TurnEnded`` for tests that hand history a finished turn (DESIGN.md §15)."""

from __future__ import annotations

from typing import Any

from app.ports import TurnEnded


def ended(stage_id: str, messages: list[dict[str, Any]], *, usage: dict[str, int] | None = None, model: str = "demo",
          duration_ms: int = 1, message_id: str | None = None, conversation_id: str | None = None,
          dropped_turns: int = 0, at: int = 0, base: list[dict[str, Any]] | None = None) -> TurnEnded:
    """The end of a turn on course ``stage_id`` whose thread after the turn is ``messages``."""
    return TurnEnded(stage_id=stage_id, messages=messages, base=[] if base is None else base, usage=usage,
                     model=model, duration_ms=duration_ms, conversation_id=conversation_id,
                     message_id=message_id, at=at, dropped_turns=dropped_turns)
