"""The thread's messages in the Chat Completions protocol (DESIGN.md §12).

``chat_messages(history, text, ...)`` maps the live thread (``app.model.Message``)
to the ``messages`` list of ``POST /chat/completions``:

- a user message → ``{"role": "user", "content": <its text parts joined>}``;
- an assistant message → its parts in order: text before a tool call becomes
  the ``content`` of an assistant message carrying ``tool_calls`` (consecutive
  calls grouped), each call followed by a ``{"role": "tool", "tool_call_id",
  "content"}`` message holding the *slim text* of its result (the result's
  text items — what the slim projection of §3 keeps — marked when it failed or
  never finished); text after the last call becomes a plain assistant message;
- messages with nothing to send are left out, and so is a turn whose reply
  sends nothing (a turn that failed or was stopped before any text or tool
  call): the model never sees two user messages in a row (§12); only the last
  ``max_turns`` turns (a turn = a user message and everything up to the next
  one) are sent (``past_turns`` gives them one list per turn, so a context-size
  retry can leave out more of the oldest, ``app.agents.context``);
- an optional system prompt comes first, the new user ``text`` last.

Tool-call ids (§12 "Tool-call ids"): the id the thread stores (unique, §5) is
the app's own, with the model's appended after ``CALL_ID_SEPARATOR``
(``stored_call_id``). The model's id goes back unchanged (``wire_call_id``),
so a call and its ``tool`` message always match, also after a reload; a stored
id without the model's (the demo agent's, or a call the server gave no usable
id) goes out as nine letters and digits derived from it. ``wire_messages`` puts
the sent ids in a request's messages; no two calls of a request share a sent id
(a server that repeats its ids: the later call gets the next derived candidate).
``strict``: every id in the one form every server accepts, nine ASCII letters
and digits (Mistral's API and its chat templates in llama.cpp and vLLM refuse any
other): the model's own when it has that form, else derived. The agent sends
``strict`` ids once a server refused the ids a conversation begun on another
server carries (llama.cpp's are 32 characters, OpenAI's ``call_…``), so the
conversation goes on after the base URL changed (``app.agents.openai``).

Example::

    >>> from app.model import Message, TextPart
    >>> history = [Message(role="user", content=[TextPart(text="hi")]),
    ...            Message(role="assistant", content=[TextPart(text="hello")])]
    >>> chat_messages(history, "again", max_turns=5)
    [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'}, {'role': 'user', 'content': 'again'}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from app.model import Message, TextPart, ToolCallPart

__all__ = ["CALL_ID_SEPARATOR", "DEFAULT_MAX_TURNS", "chat_messages", "past_turns", "slim_result_text",
           "stored_call_id", "tool_call_message", "wire_call_id", "wire_messages"]

DEFAULT_MAX_TURNS = 20
"""Recent turns sent with each request unless the settings say otherwise."""

_KEPT_ARGS = ("sceneId", "instruction")

CALL_ID_SEPARATOR = "~"
"""Between the app's unique part and the model's id in a stored tool-call id (``stored_call_id``)."""

_MAX_MODEL_ID = 64


def stored_call_id(app_id: str, model_id: object) -> str:
    """The id a tool call is stored under: ``app_id`` (unique, §5), then ``CALL_ID_SEPARATOR`` and the
    model's id when it is a usable one (1–64 printable ASCII characters without spaces); else ``app_id``.

    >>> stored_call_id("call_0a1b", "Xy12ab9Zq"), stored_call_id("call_0a1b", None)
    ('call_0a1b~Xy12ab9Zq', 'call_0a1b')
    """
    usable = (isinstance(model_id, str) and 0 < len(model_id) <= _MAX_MODEL_ID and model_id.isascii()
              and model_id.isprintable() and " " not in model_id)
    return f"{app_id}{CALL_ID_SEPARATOR}{model_id}" if usable else app_id


_SENT_FORM = re.compile(r"[A-Za-z0-9]{9}")
"""The tool-call id form every server accepts (module docstring)."""


def wire_call_id(stored_id: str, attempt: int = 0, *, strict: bool = False) -> str:
    """The id sent to the model for a stored tool call: the model's own (``stored_call_id``), unchanged,
    else nine lower-case hex digits derived from ``stored_id`` (the same every time). ``strict``: the
    model's own only when it is nine ASCII letters and digits. ``attempt`` > 0: the next derived
    candidate, for when a call before it in the request already took this one (``wire_messages``).

    >>> wire_call_id("call_0a1b~Xy12ab9Zq"), wire_call_id("call_0a1b~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5")
    ('Xy12ab9Zq', '0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5')
    >>> wire_call_id("call_0a1b~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", strict=True)
    'afbf9a05b'
    >>> len(wire_call_id("call_0a1b")), wire_call_id("call_0a1b~Xy12ab9Zq", 1) != "Xy12ab9Zq"
    (9, True)
    """
    _, separator, model_id = stored_id.partition(CALL_ID_SEPARATOR)
    if attempt == 0 and separator and model_id and (not strict or _SENT_FORM.fullmatch(model_id)):
        return model_id
    import hashlib  # here, not at the top: hashlib is a start-up cost these rare ids need not add (§13)

    seed = stored_id if attempt == 0 else f"{stored_id}#{attempt}"
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:9]


def wire_messages(messages: Sequence[dict[str, Any]], *, strict: bool = False) -> list[dict[str, Any]]:
    """``messages`` (Chat Completions, carrying *stored* tool-call ids) with each id replaced by its
    sent id (``wire_call_id``, ``strict`` passed on): the same stored id gets the same sent id in an assistant's
    ``tool_calls`` and in its ``tool`` message; distinct stored ids get distinct sent ids (the first
    call in the request keeps its candidate, a later one that would collide takes the next).
    The given dicts are not changed; messages without tool-call ids are passed through as they are.

    >>> sent = wire_messages([tool_call_message([("call_1~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", "t", {})], None),
    ...                       {"role": "tool", "tool_call_id": "call_1~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", "content": "ok"}])
    >>> sent[0]["tool_calls"][0]["id"] == sent[1]["tool_call_id"] == "0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5"
    True
    """
    sent: dict[str, str] = {}  # stored id -> sent id
    taken: set[str] = set()

    def sent_id(stored_id: Any) -> Any:
        if not isinstance(stored_id, str):
            return stored_id
        if stored_id not in sent:
            attempt = 0
            while (candidate := wire_call_id(stored_id, attempt, strict=strict)) in taken:
                attempt += 1
            sent[stored_id] = candidate
            taken.add(candidate)
        return sent[stored_id]

    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("tool_calls"):
            message = {**message, "tool_calls": [{**call, "id": sent_id(call.get("id"))} if isinstance(call, dict)
                                                 else call for call in message["tool_calls"]]}
        elif message.get("role") == "tool" and "tool_call_id" in message:
            message = {**message, "tool_call_id": sent_id(message["tool_call_id"])}
        out.append(message)
    return out


def slim_result_text(part: ToolCallPart) -> str:
    """The ``tool`` message content for a call: its result's text items (what the slim projection keeps).

    >>> slim_result_text(ToolCallPart(tool_call_id="c", result={"content": [{"type": "text", "text": "ok"}]}))
    'ok'
    >>> slim_result_text(ToolCallPart(tool_call_id="c", is_error=True))
    'Error: the call was interrupted before it returned a result.'
    """
    result = part.result
    if result is None:
        return "Error: the call was interrupted before it returned a result."
    texts = []
    content = result.get("content") if isinstance(result, dict) else None
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
    text = "\n".join(texts) or ("Done." if not part.is_error else "The call failed.")
    return f"Error: {text}" if part.is_error else text


def tool_call_message(calls: Sequence[tuple[str, str, dict[str, Any]]], content: str | None) -> dict[str, Any]:
    """An assistant message carrying ``tool_calls`` from ``(id, name, args)`` triples."""
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [{"id": cid, "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
                       for cid, name, args in calls],
    }


def _assistant(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    text: list[str] = []
    calls: list[ToolCallPart] = []

    def flush_calls() -> None:
        if calls:
            triples = [(c.tool_call_id, c.tool_name,
                        {k: v for k, v in c.args.items() if k in _KEPT_ARGS and isinstance(v, str)}) for c in calls]
            out.append(tool_call_message(triples, "".join(text)))
            out.extend({"role": "tool", "tool_call_id": c.tool_call_id, "content": slim_result_text(c)}
                       for c in calls)
            calls.clear()
            text.clear()

    for part in message.content:
        if isinstance(part, ToolCallPart):
            calls.append(part)
        elif isinstance(part, TextPart):
            flush_calls()
            text.append(part.text)
    flush_calls()
    if "".join(text).strip():
        out.append({"role": "assistant", "content": "".join(text)})
    return out


def past_turns(history: Sequence[Message]) -> list[list[dict[str, Any]]]:
    """The thread's turns as Chat Completions messages, oldest first: one list per turn (its user
    message, then its reply's messages). A turn whose reply sends nothing is left out (module docstring).
    Tool calls carry their *stored* ids: the request's ``wire_messages`` gives them their sent ones."""
    turns: list[list[dict[str, Any]]] = []
    for message in history:
        if message.role == "user":
            content = "".join(p.text for p in message.content if isinstance(p, TextPart))
            if content.strip():
                turns.append([{"role": "user", "content": content}])
        elif message.role == "assistant":
            mapped = _assistant(message)
            if mapped:
                if not turns:
                    turns.append([])
                turns[-1].extend(mapped)
    return [turn for turn in turns if any(m["role"] != "user" for m in turn)]


def chat_messages(history: Sequence[Message], text: str, *, max_turns: int = DEFAULT_MAX_TURNS,
                  system: str | None = None, strict: bool = False) -> list[dict[str, Any]]:
    """The request's ``messages`` for the new user ``text`` after ``history`` (see the module docstring).

    ``max_turns`` ≥ 0 past turns are kept (0: only the new text); ``strict``: the tool-call ids in the
    one form every server accepts (``wire_messages``).
    """
    turns = past_turns(history)
    kept = turns[max(0, len(turns) - max_turns):] if max_turns > 0 else []  # fewer turns than the cap: all
    messages = [{"role": "system", "content": system}] if system else []
    for turn in kept:
        messages.extend(turn)
    messages.append({"role": "user", "content": text})
    return wire_messages(messages, strict=strict)
