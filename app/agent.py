"""The agent interface and the built-in deterministic demo agent (DESIGN.md §6).

An agent turns (history, user text) into an async stream of events; the runtime
(``app.runtime``) folds them into the assistant message. A real LLM back end
implements the same ``Agent`` protocol.

``DemoAgent`` needs no network and is deterministic in its content (every
choice is derived from the input through ``zlib.crc32`` and a seeded
``random.Random``); only tool call ids are fresh random values, unique per call
across courses, conversations and tabs (DESIGN.md §5), since a scene's restore
snapshot is keyed by its call's id:

- plain text → a streamed reply that quotes the text, at least ten tokens, one
  token (a word or a punctuation mark, with its leading space) every
  ``delay_ms``;
- ``/regenerate <sceneId> [instruction]`` (any whitespace after the command:
  spaces, U+3000, tabs, newlines) → a ``regenerate_scene`` tool call
  whose live result is heavy (``element_count(sceneId)`` elements, some with
  base64 images, a background image, several actions), then a short summary;
- ``/fail <sceneId>`` → a failing ``regenerate_scene`` call (``is_error``,
  ``details.content: None``), then a short apology.

Example::

    >>> import asyncio
    >>> async def collect(text):
    ...     return [e async for e in DemoAgent().run([], text)]
    >>> events = asyncio.run(collect("/fail scene-2"))
    >>> [type(e).__name__ for e in events][:2]
    ['ToolCallStarted', 'ToolCallFinished']
    >>> events[1].is_error, events[1].result["details"]["content"]
    (True, None)
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from app.model import Message

__all__ = [
    "Agent",
    "AgentEvent",
    "DemoAgent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "action_count",
    "element_count",
    "failure_result",
    "parse_command",
    "regenerate_result",
    "reply_text",
    "tokenize",
]

REGENERATE_TOOL = "regenerate_scene"
ACTION_TYPES = ("update_element", "add_element", "remove_element", "set_background", "reorder_elements")
_WORK_TICKS = 3
"""Ticks (of ``delay_ms``) a tool call spends running between its start and its result."""


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant's text to append (one token with its leading whitespace)."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The agent calls ``tool_name`` with ``args``; the result follows in a ``ToolCallFinished``."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCallFinished:
    """The live ``result`` of the call ``tool_call_id``; ``is_error`` when the tool failed."""

    tool_call_id: str
    result: dict[str, Any]
    is_error: bool = False


AgentEvent = Union[TextDelta, ToolCallStarted, ToolCallFinished]


class Agent(Protocol):
    """Anything that answers one user turn as an async stream of ``AgentEvent``.

    ``history`` holds the thread's messages before this turn (read only).
    Cancelling the consuming task cancels the stream (``asyncio.CancelledError``).
    """

    def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent]: ...


_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into stream tokens: a word or one punctuation mark, each with its leading whitespace.

    >>> tokenize('Hi, "you".')
    ['Hi', ',', ' "', 'you', '"', '.']
    """
    return _TOKEN.findall(text)


def _seed(*parts: str) -> int:
    return zlib.crc32("\x1f".join(parts).encode("utf-8"))


def element_count(scene_id: str) -> int:
    """Elements in the regenerated scene ``scene_id``: 24–48, fixed per id.

    >>> element_count("scene-1") == element_count("scene-1") and 24 <= element_count("scene-1") <= 48
    True
    """
    return 24 + _seed("elements", scene_id) % 25


def action_count(scene_id: str) -> int:
    """Actions in the regenerate result for ``scene_id``: 3–5, fixed per id."""
    return 3 + _seed("actions", scene_id) % 3


def _image(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode("ascii")


def regenerate_result(scene_id: str, instruction: str = "") -> dict[str, Any]:
    """The heavy live result of ``regenerate_scene`` (what the slim projection must trim).

    ``{"content": [text item, image item], "details": {"sceneId", "content":
    {"elements": [...], "background": {...}}, "actions": [...]}}``; every fourth
    element is an image with a ~3 KB base64 ``src``.
    """
    rng = random.Random(_seed("scene", scene_id, instruction))
    count = element_count(scene_id)
    elements = []
    for i in range(count):
        kind = ("image", "text", "shape", "text")[i % 4]
        element = {
            "id": f"{scene_id}-el-{i}",
            "type": kind,
            "x": rng.randrange(0, 960),
            "y": rng.randrange(0, 540),
            "text": f"Element {i + 1} of {scene_id}",
        }
        if kind == "image":
            element["src"] = "data:image/png;base64," + _image(rng, 2048)
        elements.append(element)
    actions = [
        {
            "type": ACTION_TYPES[i % len(ACTION_TYPES)],
            "elementId": elements[i]["id"],
            "payload": {"text": f"{instruction or 'Refreshed'} ({i + 1})", "x": elements[i]["x"]},
        }
        for i in range(action_count(scene_id))
    ]
    return {
        "content": [
            {"type": "text", "text": f"Regenerated scene {scene_id} with {count} elements."},
            {"type": "image", "data": _image(rng, 1536), "mimeType": "image/png"},
        ],
        "details": {
            "sceneId": scene_id,
            "content": {
                "elements": elements,
                "background": {"type": "image", "src": "data:image/png;base64," + _image(rng, 3072)},
            },
            "actions": actions,
        },
    }


def failure_result(scene_id: str) -> dict[str, Any]:
    """The live result of a failed ``regenerate_scene`` call (``details.content`` is ``None``)."""
    return {
        "content": [{"type": "text", "text": f"Regenerating scene {scene_id} failed: the demo agent was told to fail."}],
        "details": {"sceneId": scene_id, "content": None, "actions": []},
    }


_WORD = re.compile(r"\S+")

QUOTE_LIMIT = 160
"""Characters of the user's text the demo reply quotes at most."""


def reply_text(text: str) -> str:
    """The demo agent's answer to plain ``text`` (at least ten tokens)."""
    words, size = [], 0
    for word in _WORD.finditer(text):  # lazily: a 2 MB message is not split whole
        words.append(word.group())
        size += len(words[-1]) + 1
        if size > QUOTE_LIMIT + 1:
            break
    quoted = " ".join(words)
    if len(quoted) > QUOTE_LIMIT:  # quote long input in part: the reply stays short
        quoted = quoted[:QUOTE_LIMIT].rstrip() + "…"
    return (
        f"You said: “{quoted}”. I am the built-in demo agent, so I answer offline, one token at a time. "
        "Try /regenerate scene-1 to rebuild a scene, or /fail scene-1 to see a failing tool call."
    )


def parse_command(text: str) -> tuple[str, str, str]:
    """``(command, scene_id, instruction)`` of a demo command; words split on any Unicode whitespace.

    >>> parse_command("/regenerate\\u3000scene-1\\tmake it\\n blue ")
    ('/regenerate', 'scene-1', 'make it\\n blue')
    """
    words = text.split(maxsplit=2)
    words += [""] * (3 - len(words))
    return words[0], words[1], words[2].strip()


class DemoAgent:
    """The deterministic offline agent (see the module docstring).

    ``delay_ms``: pause before each streamed token (``?delay=`` in the URL);
    ``sleep``: the awaitable pause (``asyncio.sleep``; tests inject their own).
    ``new_id``: makes each tool call's id (default: 64 random bits as hex).
    Even with ``delay_ms=0`` it yields to the event loop between tokens.
    """

    def __init__(self, delay_ms: int = 0, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 new_id: Callable[[], str] = lambda: os.urandom(8).hex()) -> None:
        self.delay_ms = max(0, int(delay_ms))
        self._sleep = sleep
        self._new_id = new_id

    async def _tick(self) -> None:
        await self._sleep(self.delay_ms / 1000)

    async def _stream(self, text: str) -> AsyncIterator[AgentEvent]:
        for token in tokenize(text):
            await self._tick()
            yield TextDelta(token)

    async def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent]:
        """Answer ``text``; each tool call gets a fresh id from ``new_id``."""
        command, scene_id, instruction = parse_command(text)
        if command not in ("/regenerate", "/fail") or not scene_id:
            async for event in self._stream(reply_text(text)):
                yield event
            return
        call_id = f"call-{self._new_id()}"
        failing = command == "/fail"
        args = {"sceneId": scene_id} | ({"instruction": instruction.strip()} if instruction.strip() else {})
        await self._tick()
        yield ToolCallStarted(call_id, REGENERATE_TOOL, args)
        for _ in range(_WORK_TICKS):
            await self._tick()
        if failing:
            yield ToolCallFinished(call_id, failure_result(scene_id), is_error=True)
            summary = f"Sorry, scene {scene_id} could not be regenerated. Nothing was changed."
        else:
            yield ToolCallFinished(call_id, regenerate_result(scene_id, instruction.strip()))
            summary = f"Done: scene {scene_id} now has {element_count(scene_id)} elements, after {action_count(scene_id)} actions."
        async for event in self._stream(summary):
            yield event
