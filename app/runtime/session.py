"""One course's live thread and the folding of agent events into its reply (DESIGN.md §4, §12).

Pure and browser-free: ``Session`` holds a course's live messages and its turn in flight;
``Sessions`` the courses held in memory (the shown one, and those with a turn or a write pending);
``apply_event`` folds one ``app.agent.AgentEvent`` into the assistant message being streamed;
``end_reply`` gives the reply the status its turn ended with.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.agent import AgentEvent, TextDelta, ToolCallFinished, ToolCallStarted, UsageSoFar
from app.agents.errors import error_payload
from app.agents.events import UsageReported
from app.model import COMPLETE, Message, MessageStatus, TextPart, ToolCallPart
from app.ports import ThreadStorePort
from app.projection import CUT, FAILED, STOPPED, live_thread
from app.runtime.notices import Notices

__all__ = ["CANCELLED", "RUNNING", "Session", "Sessions", "apply_event", "end_reply", "new_id"]

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
    usage: UsageSoFar | UsageReported | None = None  # the agent's last usage report of the turn in flight
    recording: asyncio.Future | None = field(default=None, repr=False)  # the ended turn's history write (§9)
    conversation: asyncio.Future | None = field(default=None, repr=False)  # id of the conversation the turn continues
    switched_to: str | None = None  # during the turn another tab resumed this id ("" for New conversation)
    cut: bool = False  # the agent said the server cut the reply at its length limit (§12 turn-cut)
    tree: Any = field(default=None, repr=False)  # the conversation's tree (app.history.tree.Tree), §17; None: not yet

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

    def hold(self, pending: Awaitable[Any] | None, wait_s: float, released: Callable[[Session], None]) -> None:
        """Read as running until ``pending`` (the ended turn's history write) lands, so a reload once the
        panel says idle never loses it (DESIGN.md §9); at most ``wait_s`` seconds (a history that hangs,
        e.g. blocked by another tab, must not hold the panel). ``released(self)`` once it lets go."""
        if not isinstance(pending, asyncio.Future) or pending.done():
            return
        self.recording = pending

        def release(*_: Any) -> None:
            if self.recording is pending:
                self.recording = None
                released(self)
        pending.add_done_callback(release)
        asyncio.get_running_loop().call_later(wait_s, release)


class Sessions:
    """The courses held in memory (DESIGN.md §4): the shown one (``shown_id``) and any with a turn in
    flight or its history write pending; an idle course is read back from ``store`` when shown again.
    ``notices``: take the store's notices after each read; ``adopted(session)``: called for each
    session put in (a load, a resume, New conversation), so its conversation tree is found (§17)."""

    def __init__(self, store: ThreadStorePort, notices: Notices,
                 adopted: Callable[[Session], None] | None = None) -> None:
        self._store = store
        self._notices = notices
        self._adopted = adopted
        self._held: dict[str, Session] = {}
        self.shown_id: str | None = None

    def __getitem__(self, stage_id: str) -> Session:
        return self._held[stage_id]

    def __contains__(self, stage_id: object) -> bool:
        return stage_id in self._held

    def get(self, stage_id: str) -> Session | None:
        """``stage_id``'s session, or ``None`` when it is not held."""
        return self._held.get(stage_id)

    @property
    def shown(self) -> Session | None:
        """The shown course's session (``None`` while the stage loads)."""
        return self._held.get(self.shown_id) if self.shown_id is not None else None

    def put(self, session: Session) -> Session:
        """Hold ``session`` as its course's (replacing any other); returns it."""
        self._held[session.stage_id] = session
        if self._adopted is not None:
            self._adopted(session)
        return session

    def holds(self, session: Session) -> bool:
        """True while ``session`` is its course's (not superseded by New conversation, resume, a reload)."""
        return self._held.get(session.stage_id) is session

    def running(self) -> set[str]:
        """The courses with a turn in flight."""
        return {stage_id for stage_id, session in self._held.items() if session.task}

    def load(self, stage_id: str) -> Session:
        """Read ``stage_id``'s stored thread into a session of its own and hold it; returns it."""
        base = self._store.load(stage_id) or []
        self._notices.take_from_store()
        return self.put(Session(stage_id, live_thread(base), base))

    def forget_if_idle(self, session: Session | None) -> None:
        """Let ``session`` go when idle and not shown (read back from the store when shown again)."""
        if (session and not session.busy and session.stage_id != self.shown_id and self.holds(session)):
            del self._held[session.stage_id]


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
