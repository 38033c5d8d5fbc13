"""One message's row, decided once (DESIGN.md §13, §15): what the panel shows for a message, in the
reader's locale, for the two that draw it: the paint record (``app.paint``, drawn by
``static/paint.js`` before Python starts) and the live panel (``app.browser.message_nodes``). Both
draw the same ``MessageRow``, so a row painted before Python starts is the row Python then renders
(no redraw, no flash).

A row is the message's attributes (role, status, id, its label) and its pieces in order:

- ``TextPiece``: one text part; whether the live panel shows it as Markdown (a finished reply of
  ordinary length) and, for a long text, the start shown collapsed;
- ``CardPiece``: one tool call's card: its status (``ok``, ``error``, ``interrupted``, ``running``),
  name, badge and lines;
- ``NotePiece``: the reply's status note: thinking (nothing yet), stopped, failed (why, localized)
  or cut at the server's length limit (DESIGN.md §12).

Pure: no browser imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Union

from app.agents.errors import describe as describe_error
from app.model import Message, TextPart, ToolCallPart
from app.presentation import ToolCardView, card_text, collapsed_prefix, tool_card_view

__all__ = ["RowState", "NoteKind", "TextPiece", "CardLine", "CardPiece", "NotePiece", "Piece", "MessageRow",
           "message_row", "row_state"]

RowState = Literal["complete", "running", "stopped", "failed", "cut"]
"""What a row says of its message: ``complete`` (also every user message), ``running`` (streaming),
``stopped`` (the user stopped it, or it was interrupted), ``failed`` (its agent raised) or ``cut``
(the server ended it at its length limit)."""

NoteKind = Literal["thinking", "stopped", "failed", "cut"]


@dataclass(frozen=True)
class TextPiece:
    """One text part: ``text`` whole; ``markdown``: the live panel renders it as Markdown (an
    assistant reply no longer streaming, not long; the paint record draws it as plain text);
    ``collapsed``: for a long text, the start a fresh render shows (``presentation.collapsed_prefix``),
    else ``None``."""

    text: str
    markdown: bool
    collapsed: str | None


@dataclass(frozen=True)
class CardLine:
    """One line of a tool card: its ``data-testid``, ``text``, and ``auto_dir`` (``dir="auto"``:
    text of the model or the tool, in any script)."""

    testid: str
    text: str
    auto_dir: bool = False


@dataclass(frozen=True)
class CardPiece:
    """One tool call's card: ``view`` its display facts, ``name`` and ``badge`` in the reader's
    locale, ``lines`` in order, ``attrs`` the card element's attributes (class, testid, status,
    call id, tool name, element count when known)."""

    tool_call_id: str
    view: ToolCardView
    name: str
    badge: str
    lines: tuple[CardLine, ...]
    attrs: dict[str, str]


@dataclass(frozen=True)
class NotePiece:
    """The reply's status note: ``kind``, its localized ``text``, and the element it is drawn as
    (``tag``, ``classes``, ``testid`` or ``None``, further ``attrs``)."""

    kind: NoteKind
    text: str
    tag: Literal["div", "p"]
    classes: str
    testid: str | None
    attrs: dict[str, str] = field(default_factory=dict)


Piece = Union[TextPiece, CardPiece, NotePiece]


@dataclass(frozen=True)
class MessageRow:
    """A message's row: ``role``, ``state`` (``RowState``), ``attrs`` of the row element (class,
    testid, role, message id, status type, tabindex, its localized ``aria-label``) and ``pieces``."""

    role: str
    state: RowState
    attrs: dict[str, str]
    pieces: tuple[Piece, ...]


def row_state(message: Message) -> RowState:
    """``message``'s ``RowState`` from its status (``app.projection``: ``STOPPED``, ``FAILED``, ``CUT``)."""
    status = message.status
    if status is None or status.type in ("complete", "requires-action"):
        return "complete"
    if status.type == "running":
        return "running"
    return {"error": "failed", "length": "cut"}.get(status.reason or "", "stopped")


def _card(part: ToolCallPart, running: bool, t: Callable[..., str]) -> CardPiece:
    view = tool_card_view(part, turn_running=running)
    text = card_text(view, t)
    lines = [CardLine("tool-card-elements", text.elements)] if text.elements is not None else []
    if text.actions is not None:
        lines.append(CardLine("tool-card-actions", text.actions))
    if text.summary:
        lines.append(CardLine("tool-card-summary", text.summary, auto_dir=True))
    attrs = {"class": "tool-card", "data-testid": "tool-card", "data-status": view.status,
             "data-tool-call-id": part.tool_call_id, "data-tool-name": view.tool_name}
    if view.element_count is not None:
        attrs["data-element-count"] = str(view.element_count)
    return CardPiece(part.tool_call_id, view, text.name, text.badge, tuple(lines), attrs)


def _note(message: Message, state: RowState, t: Callable[..., str]) -> NotePiece | None:
    if state == "failed":  # DESIGN.md §12: the failure, localized, inside the failed message
        error = (message.status.error if message.status else None) or {}
        return NotePiece("failed", describe_error(t, error), "p", "turn-error", "turn-error",
                         {"role": "alert", "data-code": str(error.get("code") or "unknown")})
    if state == "cut":  # DESIGN.md §12: the server ended the reply at its length limit
        return NotePiece("cut", t("model.turnCut"), "p", "turn-cut", "turn-cut", {"role": "note"})
    empty_reply = not message.content and message.role == "assistant"
    if state == "stopped" and (empty_reply or (message.status is not None and message.status.reason == "cancelled")):
        return NotePiece("stopped", t("edit.agent.stopped"), "div", "bubble muted", "agent-stopped")
    if state == "running" and empty_reply:
        return NotePiece("thinking", t("edit.agent.thinking"), "div", "bubble muted", None)
    return None


def message_row(message: Message, t: Callable[..., str]) -> MessageRow:
    """The row of ``message`` in the locale of ``t`` (``app.i18n.Translator`` or any
    ``(key, **params) -> str``): its attributes and pieces (module docstring). Never raises on odd
    live data (a tool result of any shape)."""
    state = row_state(message)
    running = state == "running"
    pieces: list[Piece] = []
    for part in message.content:
        if isinstance(part, TextPart):
            collapsed = collapsed_prefix(part.text)
            markdown = message.role == "assistant" and not running and collapsed is None
            pieces.append(TextPiece(part.text, markdown, collapsed))
        elif isinstance(part, ToolCallPart):
            pieces.append(_card(part, running, t))
    note = _note(message, state, t)
    if note is not None:
        pieces.append(note)
    attrs = {"class": "message", "data-testid": "agent-message", "data-role": message.role}
    if message.id:
        attrs["data-message-id"] = message.id  # history's turn-meta finds its message by it (§9)
    if message.status is not None:
        attrs["data-status"] = message.status.type
    attrs["tabindex"] = "-1"
    attrs["role"] = "article"  # a named article: who said it is read out (a generic div's label is not)
    attrs["aria-label"] = t("edit.agent.you" if message.role == "user" else "edit.agent.assistant")
    return MessageRow(message.role, state, attrs, tuple(pieces))
