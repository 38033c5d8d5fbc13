"""Slim projection: live messages <-> the stored thread shape (DESIGN.md §3).

``serialize_thread`` keeps exactly what the cards render (text, tool-card
metadata, the element count) and drops heavy payloads (element data, base64,
backgrounds). It is pure, never raises on arbitrary JSON input, and is
idempotent: its output is also its own fixed point, so "what
``serialize_thread`` would write" is the definition of a valid stored thread
that the thread store (``app.store``) validates against.

Interrupted tool calls (DESIGN.md §4) are decided here, in ``_slim_tool_call``:
the runtime saves only completed (or stopped) turns, so a tool call that has no
result when serialized never got one; it is written with ``isError: true`` and
no ``result`` and restores as an interrupted card.

Every output dict has its keys in the order DESIGN.md §3 writes them, so the
encoded value is byte-stable.

Example::

    >>> serialize_thread([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]
    >>> deserialize_thread([{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])[0].status.type
    'complete'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.model import COMPLETE, Message

__all__ = ["KEPT_ARGS", "STORED_ROLES", "deserialize_thread", "serialize_thread"]

STORED_ROLES = ("user", "assistant")
"""Roles that are stored; any other message is dropped."""

KEPT_ARGS = ("sceneId", "instruction")
"""The tool-call arguments kept (string values only)."""

Json = Any


def serialize_thread(messages: Sequence[dict[str, Json] | Message]) -> list[dict[str, Json]]:
    """Project live messages (``Message`` models or their ``to_wire()`` dicts) to slim stored form.

    Output: ``[{"role", "id"?, "content": [part…]}]`` with parts
    ``{"type": "text", "text"}`` and
    ``{"type": "tool-call", "toolCallId", "toolName", "args", "isError"?, "result"?}``.
    Messages with another role, or whose parts all drop out, are dropped.
    """
    if not isinstance(messages, (list, tuple)):
        return []
    slim = (_slim_message(m) for m in messages)
    return [m for m in slim if m is not None]


def deserialize_thread(saved: Sequence[dict[str, Json]]) -> list[Message]:
    """Rebuild live messages from stored slim messages.

    Assistant messages get status ``{"type": "complete", "reason": "stop"}``; user
    messages get no status (assistant-ui rejects one). Invalid items are dropped
    exactly as ``serialize_thread`` drops them.
    """
    return [
        Message.model_validate({**m, "status": COMPLETE.to_wire()} if m["role"] == "assistant" else m)
        for m in serialize_thread(saved)
    ]


def _slim_message(message: Json) -> dict[str, Json] | None:
    if isinstance(message, Message):
        message = message.to_wire()
    if not isinstance(message, dict) or message.get("role") not in STORED_ROLES:
        return None
    content = message.get("content")
    if isinstance(content, str):  # ThreadMessageLike allows plain-string content
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    parts = [p for p in map(_slim_part, content) if p is not None]
    if not parts:
        return None
    slim: dict[str, Json] = {"role": message["role"]}
    if isinstance(message.get("id"), str):
        slim["id"] = message["id"]
    slim["content"] = parts
    return slim


def _slim_part(part: Json) -> dict[str, Json] | None:
    if not isinstance(part, dict):
        return None
    if part.get("type") == "text":
        return {"type": "text", "text": part["text"]} if isinstance(part.get("text"), str) else None
    if part.get("type") == "tool-call":
        return _slim_tool_call(part)
    return None


def _slim_tool_call(part: dict[str, Json]) -> dict[str, Json] | None:
    """A tool-call part; ``None`` without a string ``toolCallId``.

    ``isError: true`` is written when the live part says so or has no result
    (an interrupted call, DESIGN.md §4); it is never written as ``false``.
    """
    if not isinstance(part.get("toolCallId"), str):
        return None
    name, args, result = part.get("toolName"), part.get("args"), part.get("result")
    slim: dict[str, Json] = {
        "type": "tool-call",
        "toolCallId": part["toolCallId"],
        "toolName": name if isinstance(name, str) else "tool",
        "args": {k: args[k] for k in KEPT_ARGS if isinstance(args.get(k), str)} if isinstance(args, dict) else {},
    }
    if part.get("isError") is True or result is None:
        slim["isError"] = True
    if result is not None:
        slim["result"] = _slim_result(result)
    return slim


def _slim_result(result: Json) -> dict[str, Json]:
    """``{"content": [text items], "details"?: {...}}``; ``details`` only when the live one is an object."""
    content = result.get("content") if isinstance(result, dict) else None
    slim: dict[str, Json] = {
        "content": [
            {"type": "text", "text": c["text"]}
            for c in (content if isinstance(content, list) else ())
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        ]
    }
    details = result.get("details") if isinstance(result, dict) else None
    if isinstance(details, dict):
        slim["details"] = _slim_details(details)
    return slim


def _slim_details(details: dict[str, Json]) -> dict[str, Json]:
    """``{"sceneId"?, "content": null | {"elements": [{}…]}, "actions": [{"type"?}…]}``.

    ``content`` stays ``null`` only when the live value is ``null`` (the failure
    marker); otherwise one empty object per live element keeps the count.
    """
    slim: dict[str, Json] = {}
    if isinstance(details.get("sceneId"), str):
        slim["sceneId"] = details["sceneId"]
    if "content" in details and details["content"] is None:
        slim["content"] = None
    else:
        content = details.get("content")
        elements = content.get("elements") if isinstance(content, dict) else None
        slim["content"] = {"elements": [{} for _ in elements] if isinstance(elements, list) else []}
    actions = details.get("actions")
    slim["actions"] = [
        {"type": a["type"]} if isinstance(a, dict) and isinstance(a.get("type"), str) else {}
        for a in (actions if isinstance(actions, list) else ())
    ]
    return slim
