"""Live message model: what the AgentBar panel holds and renders.

Shapes follow assistant-ui's ``ThreadMessageLike`` (camelCase on the wire,
snake_case in Python). A live tool-call result is kept as free-form JSON data:
the regenerate tool returns heavy payloads (element data, base64 images) that
only the slim projection (``app.projection``, DESIGN.md §3) trims.

Example::

    >>> m = Message(role="user", content=[TextPart(text="hi")])
    >>> m.to_wire()
    {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "Message",
    "MessageStatus",
    "Part",
    "Role",
    "TextPart",
    "ToolCallPart",
    "WireModel",
    "COMPLETE",
]

Role = Literal["user", "assistant", "system"]


class WireModel(BaseModel):
    """Base for models that travel as camelCase JSON (``toolCallId``, ``isError``).

    Accepts both camelCase and snake_case input; ``to_wire()`` dumps camelCase
    and leaves out fields that are ``None``.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON-shaped dict (camelCase keys, ``None`` fields omitted)."""
        return self.model_dump(by_alias=True, exclude_none=True)


class TextPart(WireModel):
    """A text part: ``{"type": "text", "text": str}``."""

    type: Literal["text"] = "text"
    text: str


class ToolCallPart(WireModel):
    """A tool call made by the agent.

    ``args``: the call's arguments (any JSON object). ``result``: the tool's live
    result, ``None`` while the call runs or when it never finished (then the card
    is *interrupted*). ``is_error``: ``True`` when the tool failed.
    Wire shape: ``{"type": "tool-call", "toolCallId", "toolName", "args", "result"?, "isError"?}``.
    """

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    tool_name: str = "tool"
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    is_error: bool | None = None


Part = Annotated[Union[TextPart, ToolCallPart], Field(discriminator="type")]


class MessageStatus(WireModel):
    """Assistant message status: ``{"type": "running"|"complete"|"incomplete", "reason"?, "error"?}``.

    ``error`` (assistant-ui's field of a failed status): ``{"code", "params"}``
    of the failure the view localizes (DESIGN.md §12); stored only as the failed
    reply's marker text part (``app.projection.failed_marker``, inside the v1 shape).
    """

    type: Literal["running", "complete", "incomplete", "requires-action"]
    reason: str | None = None
    error: dict[str, Any] | None = None


COMPLETE = MessageStatus(type="complete", reason="stop")
"""The status every restored assistant message gets (DESIGN.md §3)."""


class Message(WireModel):
    """One chat message: ``{"id"?, "role", "content": [part…], "status"?}``.

    ``status`` is set only on assistant messages (assistant-ui rejects a status
    on user messages, DESIGN.md §3).
    """

    id: str | None = None
    role: Role
    content: list[Part] = Field(default_factory=list)
    status: MessageStatus | None = None
