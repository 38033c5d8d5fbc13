"""One course's live thread and the folding of agent events into its reply (DESIGN.md §4, §12).

Pure and browser-free: ``Session`` holds a course's live messages and its turn in flight;
``apply_event`` folds one ``app.agent.AgentEvent`` into the assistant message being streamed;
``end_reply`` gives the reply the status its turn ended with.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from app.agent import AgentEvent, TextDelta, ToolCallFinished, ToolCallStarted, UsageReport
from app.agents.errors import error_payload
from app.agents.events import UsageReported
from app.model import COMPLETE, Message, MessageStatus, TextPart, ToolCallPart
from app.projection import CUT, FAILED, STOPPED

__all__ = ["CANCELLED", "RUNNING", "Session", "apply_event", "end_reply", "new_id"]

_log = logging.getLogger("app.runtime")

RUNNING = MessageStatus(type="running")
CANCELLED = STOPPED
"""Status of an assistant message whose turn was stopped (stored with a marker, ``app.projection``)."""


@dataclass
class Session:
    """One course's live thread; ``task`` is its turn in flight, if any.

    ``base``: the stored slim messages the live thread was built on (what the
    store held when it was loaded or last saved); a save hands it to the store
    so that turns another tab saved on this course meanwhile are kept.
    """

    stage_id: str
    messages: list[Message]
    base: list[dict[str, Any]] = field(default_factory=list, repr=False)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    started_at: int = 0  # clock() at send, for the turn's duration (DESIGN.md §9)
    usage: UsageReport | UsageReported | None = None  # the agent's last usage report of the turn in flight
    recording: asyncio.Future | None = field(default=None, repr=False)  # the ended turn's history write (§9)
    conversation: asyncio.Future | None = field(default=None, repr=False)  # id of the conversation the turn continues
    switched_to: str | None = None  # during the turn another tab resumed this id ("" for New conversation)
    cut: bool = False  # the agent said the server cut the reply at its length limit (§12 turn-cut)

    @property
    def busy(self) -> bool:
        """True while a turn runs here or its history write holds the panel (DESIGN.md §9)."""
        return bool(self.task or self.recording)

    def conversation_id(self) -> str | None:
        """The id of the conversation the turn continues, once known (taken at send)."""
        pending = self.conversation
        if pending is None or not pending.done() or pending.cancelled() or pending.exception() is not None:
            return None
        return pending.result() if isinstance(pending.result(), str) else None

    def turn_meta(self) -> dict[str, Any]:
        """``{"model", "usage", "droppedTurns"?}`` of the turn: usage ``None`` = not reported (DESIGN.md
        §12: a server without usage, or a turn that failed first)."""
        return self.usage.to_turn_meta() if self.usage is not None else {"model": "", "usage": None}


def new_id() -> str:
    """A fresh message id (16 hex digits)."""
    return os.urandom(8).hex()  # not uuid: importing it costs ~25 ms at start-up in Pyodide


def end_reply(reply: Message, task: asyncio.Task[None], *, cut: bool, stage_id: str) -> None:
    """Give ``reply`` the status its turn ended with (DESIGN.md §4, §12): ``CANCELLED`` when stopped,
    ``FAILED`` (with the agent's reason) when it raised, each tool call without a result marked
    ``is_error``; else ``CUT`` when the server cut it, ``COMPLETE`` otherwise."""
    error = None if task.cancelled() else task.exception()
    if error is not None:
        _log.error("agent turn on %r failed", stage_id, exc_info=error)
    if task.cancelled() or error is not None:
        reply.status = CANCELLED if error is None else _failed(error)
        for part in reply.content:
            if isinstance(part, ToolCallPart) and part.result is None:
                part.is_error = True  # interrupted: saved with isError and no result
    else:
        reply.status = CUT if cut else COMPLETE


def _failed(error: BaseException) -> MessageStatus:
    """``FAILED``, carrying ``{"code", "params"}`` when the agent said why (``app.agents.errors.ModelError``)."""
    payload = error_payload(error)
    return FAILED if payload["code"] == "unknown" else FAILED.model_copy(update={"error": payload})


def apply_event(reply: Message, event: AgentEvent) -> ToolCallPart | None:
    """Fold one agent event into the assistant message; returns the tool call a result finished."""
    if isinstance(event, TextDelta):
        last = reply.content[-1] if reply.content else None
        if isinstance(last, TextPart):
            last.text += event.text
        else:
            reply.content.append(TextPart(text=event.text))
    elif isinstance(event, ToolCallStarted):
        reply.content.append(ToolCallPart(tool_call_id=event.tool_call_id, tool_name=event.tool_name, args=event.args))
    elif isinstance(event, ToolCallFinished):
        for part in reply.content:
            if isinstance(part, ToolCallPart) and part.tool_call_id == event.tool_call_id:
                part.result, part.is_error = event.result, (True if event.is_error else None)
                return part
    return None
