"""Slim projection: live messages <-> the stored thread shape (DESIGN.md §3).

``serialize_thread`` keeps exactly what the cards render (text, tool-card
metadata, the element count) and drops heavy payloads (element data, base64,
backgrounds). It is pure, never raises on arbitrary JSON input, and is
idempotent: its output is also its own fixed point, so "what
``serialize_thread`` would write" is the definition of a valid stored thread
that the thread store (``app.store``) validates against.

The projection adds nothing the live message lacks (DESIGN.md §3, last two
rules), so what it writes for a live message is what the TS original writes and
what the TS original wrote reads back unchanged: a result key (``content``,
``details``, ``details.content``, ``details.actions``) is written only when the
live result has it, a result that is not an object is dropped, and ``isError``
comes only from the live part (the runtime marks interrupted calls, §4).

Stopped replies (DESIGN.md §4: a stopped turn is saved with what it had) carry
a marker that stays inside the v1 contract: an assistant message whose live
status is ``{"type": "incomplete", "reason": "cancelled"}`` is stored with one
empty text part ``{"type": "text", "text": ""}`` at its end (``STOPPED_MARKER``).
It is an ordinary text part, so the TS original reads it and shows nothing for
it; a reply stopped before any output is stored as that part alone, so it is not
dropped and a reload never shows two user messages in a row. ``deserialize_thread``
derives the status back from it: an assistant message ending with an empty text
part is restored as stopped, the marker removed. Live replies never end with an
empty text part otherwise (streamed text is appended to the last text part).

Failed replies (DESIGN.md §5 nothing is lost silently, §12 a failed turn ends
"with a localized message in the thread") are stored the same way: what they
had, then one text part ``failed_marker(error)`` holding why the turn failed,
``FAILED_PREFIX`` followed by the compact JSON ``{"code", "params"}`` of the
live status's ``error`` (``app.agents.errors``; ``{"code": "unknown",
"params": {}}`` when the agent did not say why). It is the live status written
down, so the projection still adds nothing the live message lacks; the TS
original shows it as a line of text. ``deserialize_thread`` restores an
assistant message ending with such a part (its JSON canonical, so the round
trip is exact) as failed with that ``error``, the marker removed, so a reload
shows the same ``turn-error`` and the model is never sent the marker. A reply
that failed before any output is stored as the marker alone, so the user's
message is never left without its answer.

Replies the server cut at its length limit (DESIGN.md §12 ``turn-cut``:
``finish_reason: "length"``; live status ``{"type": "incomplete", "reason":
"length"}``, assistant-ui's own) are stored the same way too: what they had,
then one text part ``CUT_MARKER`` (``FAILED_PREFIX``'s invisible separator, then
``turn-cut``). ``deserialize_thread`` restores an assistant message ending with
exactly that part as cut, the marker removed, so a reload shows the same
``turn-cut`` and the model is never sent the marker. Readers of stored messages
tell the three markers from text with ``is_status_marker``.

Every output dict has its keys in the order DESIGN.md §3 writes them, so the
encoded value is byte-stable.

Example::

    >>> serialize_thread([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]
    >>> deserialize_thread([{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])[0].status.type
    'complete'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.continuity import derived_ids
from app.model import COMPLETE, Message, MessageStatus

__all__ = [
    "CUT", "CUT_MARKER", "FAILED", "FAILED_PREFIX", "KEPT_ARGS", "STOPPED", "STOPPED_MARKER", "STORED_ROLES",
    "deserialize_thread", "failed_marker", "failure_of", "is_slim_message", "is_status_marker", "live_thread",
    "serialize_thread",
]

STORED_ROLES = ("user", "assistant")
"""Roles that are stored; any other message is dropped."""

KEPT_ARGS = ("sceneId", "instruction")
"""The tool-call arguments kept (string values only)."""

Json = Any

STOPPED = MessageStatus(type="incomplete", reason="cancelled")
"""Status of a stopped reply, live and as restored from ``STOPPED_MARKER``."""

STOPPED_MARKER: dict[str, str] = {"type": "text", "text": ""}
"""The last part of a stored stopped assistant message (module docstring)."""

FAILED = MessageStatus(type="incomplete", reason="error")
"""Status of a failed reply (its agent raised); ``error`` carries ``{"code", "params"}`` when known."""

FAILED_PREFIX = "\u2063turn-error "
"""Start of the text of a failed reply's marker part: U+2063 (invisible separator), which no
typed or streamed reply starts a separate last part with, then a readable tag (module docstring)."""

_UNKNOWN_ERROR: dict[str, Json] = {"code": "unknown", "params": {}}

CUT = MessageStatus(type="incomplete", reason="length")
"""Status of a reply the server cut at its length limit (``finish_reason: "length"``, DESIGN.md §12)."""

CUT_MARKER: dict[str, str] = {"type": "text", "text": "\u2063turn-cut"}
"""The last part of a stored cut assistant message (module docstring)."""

_STOPPED_WIRE, _CUT_WIRE = STOPPED.to_wire(), CUT.to_wire()
# Every assistant message's status is compared with these: dumped once here, not twice per message
# (hydrate projects every stored course before ready: 4,000 dumps for 20 × 100 messages, DESIGN.md §13).


def failed_marker(error: dict[str, Json] | None) -> dict[str, str]:
    """The marker part stored at the end of a failed reply: ``{"type": "text", "text": FAILED_PREFIX + json}``.

    ``error``: the live status's ``{"code": str, "params": {…}}`` (``None``: not said, stored as
    code ``unknown``); params that are not JSON are left out.

    >>> failed_marker({"code": "server", "params": {"status": 500}})["text"][1:]
    'turn-error {"code":"server","params":{"status":500}}'
    """
    payload = _error_payload(error) or _UNKNOWN_ERROR
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = json.dumps({"code": payload["code"], "params": {}}, ensure_ascii=False, separators=(",", ":"))
    return {"type": "text", "text": FAILED_PREFIX + text}


def _error_payload(error: Json) -> dict[str, Json] | None:
    """``{"code", "params"}`` when ``error`` has that shape (a string code, object params), else ``None``."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return None
    params = error.get("params", {})
    return {"code": error["code"], "params": params} if isinstance(params, dict) else None


def failure_of(part: Json) -> dict[str, Json] | None:
    """The ``{"code", "params"}`` a stored failed marker part holds; ``None`` when ``part`` is not one
    (also when its JSON is not the canonical form ``failed_marker`` writes: then it stays ordinary
    text). Readers of stored messages (history search, exports) use it to tell the marker from text."""
    if not isinstance(part, dict):
        return None
    text = part.get("text") if part.get("type") == "text" else None
    if not isinstance(text, str) or not text.startswith(FAILED_PREFIX):
        return None
    try:
        payload = _error_payload(json.loads(text[len(FAILED_PREFIX):]))
    except ValueError:
        return None
    return payload if payload is not None and failed_marker(payload) == part else None


def is_status_marker(part: Json) -> bool:
    """True when a stored part is a reply's status marker (stopped, failed or cut: module docstring),
    not text the reply had; readers of stored messages (history search, exports) skip or describe it."""
    return part == STOPPED_MARKER or part == CUT_MARKER or failure_of(part) is not None


def is_slim_message(message: Json) -> bool:
    """True when ``message`` is a stored slim message the thread reads whole: a dict of a stored role
    whose ``content`` is a string or a non-empty list of parts that each read (a text part with a string ``text``,
    a tool call with a string ``toolCallId``). A message that is not (a part whose text is null, say)
    would be dropped, or lose a part, when read (``serialize_thread``): history lists its
    conversation as damaged instead of showing it without it (DESIGN.md §5).

    >>> is_slim_message({"role": "user", "content": [{"type": "text", "text": "a"}]})
    True
    >>> is_slim_message({"role": "assistant", "content": [{"type": "text", "text": None}]})
    False
    """
    if not isinstance(message, dict) or message.get("role") not in STORED_ROLES:
        return False
    content = message.get("content")
    if isinstance(content, str):  # plain-string content reads as one text part
        return True
    return isinstance(content, list) and bool(content) and all(_slim_part(part) is not None for part in content)


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

    Assistant messages get status ``{"type": "complete", "reason": "stop"}``, or
    ``STOPPED`` when they end with ``STOPPED_MARKER``, ``CUT`` when they end with
    ``CUT_MARKER``, or ``FAILED`` with its
    ``error`` when they end with a ``failed_marker`` (the marker is then left out
    of the live content); user messages get no status (assistant-ui rejects one).
    Invalid items are dropped exactly as ``serialize_thread`` drops them.
    """
    live = []
    for m in serialize_thread(saved):
        if m["role"] == "assistant":
            last = m["content"][-1]
            failure = failure_of(last)
            if last == STOPPED_MARKER:
                status = STOPPED
            elif last == CUT_MARKER:
                status = CUT
            elif failure is not None:
                status = FAILED if failure == _UNKNOWN_ERROR else FAILED.model_copy(update={"error": failure})
            else:
                status = COMPLETE
            content = m["content"][:-1] if status is not COMPLETE else m["content"]
            m = {**m, "content": content, "status": status.to_wire()}
        live.append(Message.model_validate(m))
    return live


def live_thread(saved: Sequence[dict[str, Json]]) -> list[Message]:
    """The live messages of a course's stored thread (``deserialize_thread``), each with an id: a
    message stored without one (the TS original writes none) gets its derived id
    (``app.continuity.derived_ids``), the id history adopts it with and every tab reads it with, so
    the panel can edit, regenerate and branch from it while ``saved`` is not rewritten on that
    account; the next save writes the ids (DESIGN.md §3, §17).

    >>> [m.id for m in live_thread([{"role": "user", "id": "u1", "content": [{"type": "text", "text": "a"}]}])]
    ['u1']
    """
    live = deserialize_thread(saved)
    if all(m.id for m in live) and len({m.id for m in live}) == len(live):
        return live
    return deserialize_thread(derived_ids(saved))  # ``saved`` is slim already: the ids history derives


def _slim_message(message: Json) -> dict[str, Json] | None:
    if isinstance(message, Message):
        message = message.to_wire()
    if not isinstance(message, dict) or message.get("role") not in STORED_ROLES:
        return None
    status = message.get("status") if message["role"] == "assistant" else None
    stopped = status == _STOPPED_WIRE
    cut = status == _CUT_WIRE
    failed = isinstance(status, dict) and (status.get("type"), status.get("reason")) == ("incomplete", "error")
    content = message.get("content")
    if isinstance(content, str):  # ThreadMessageLike allows plain-string content
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    parts = [p for p in map(_slim_part, content) if p is not None]
    if stopped and (not parts or parts[-1] != STOPPED_MARKER):
        parts.append(dict(STOPPED_MARKER))
    if cut and (not parts or parts[-1] != CUT_MARKER):
        parts.append(dict(CUT_MARKER))
    if failed:
        marker = failed_marker(status.get("error"))
        if not parts or parts[-1] != marker:
            parts.append(marker)
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

    ``isError: true`` only when the live part says so (never written as
    ``false``); ``result`` only when the live result is an object.
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
    if part.get("isError") is True:
        slim["isError"] = True
    if isinstance(result, dict):
        slim["result"] = _slim_result(result)
    return slim


def _slim_result(result: dict[str, Json]) -> dict[str, Json]:
    """``{"content"?: [text items], "details"?: {...}}``: each key only when the live one is a
    list (``content``) or an object (``details``)."""
    slim: dict[str, Json] = {}
    content = result.get("content")
    if isinstance(content, list):
        slim["content"] = [
            {"type": "text", "text": c["text"]}
            for c in content
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        ]
    details = result.get("details")
    if isinstance(details, dict):
        slim["details"] = _slim_details(details)
    return slim


def _slim_details(details: dict[str, Json]) -> dict[str, Json]:
    """``{"sceneId"?, "content"?: null | {"elements"?: [{}…]}, "actions"?: [{"type"?}…]}``.

    ``content`` is ``null`` when the live value is ``null`` (the failure marker),
    ``{"elements": [{}…]}`` when the live one is an object (one empty object per
    live element keeps the count; ``[]`` when it has no elements list, or a value
    that is not a list, as the TS original writes it), else absent.
    ``actions`` only when the live value is a list.
    """
    slim: dict[str, Json] = {}
    if isinstance(details.get("sceneId"), str):
        slim["sceneId"] = details["sceneId"]
    if "content" in details:
        content = details["content"]
        if content is None:
            slim["content"] = None
        elif isinstance(content, dict):
            elements = content.get("elements")
            slim["content"] = {"elements": [{} for _ in elements] if isinstance(elements, list) else []}
    actions = details.get("actions")
    if isinstance(actions, list):
        slim["actions"] = [
            {"type": a["type"]} if isinstance(a, dict) and isinstance(a.get("type"), str) else {} for a in actions
        ]
    return slim
