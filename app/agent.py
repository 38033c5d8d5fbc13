"""The agent interface and the built-in deterministic demo agent (DESIGN.md §6).

An agent turns (history, user text) into an async stream of events; the runtime
(``app.runtime``) folds them into the assistant message. A real LLM back end
implements the same ``Agent`` protocol.

``DemoAgent`` needs no network and is deterministic (every choice is derived
from the input through ``zlib.crc32`` and a seeded ``random.Random``):

- plain text → a streamed reply that quotes the text, at least ten tokens, one
  token (a word or a punctuation mark, with its leading space) every
  ``delay_ms``;
- ``/regenerate <sceneId> [instruction]`` → a ``regenerate_scene`` tool call
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
    "UsageReport",
    "ToolCallFinished",
    "ToolCallStarted",
    "action_count",
    "element_count",
    "failure_result",
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


@dataclass(frozen=True)
class UsageReport:
    """The agent's own token counts for this turn so far (cumulative) and its model (DESIGN.md §9).

    The runtime keeps the last one of a turn, so a stopped turn records what it had.
    """

    input_tokens: int
    output_tokens: int
    model: str


AgentEvent = Union[TextDelta, ToolCallStarted, ToolCallFinished, UsageReport]


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


QUOTE_LIMIT = 160
"""Characters of the user's text the demo reply quotes at most."""


def reply_text(text: str) -> str:
    """The demo agent's answer to plain ``text`` (at least ten tokens)."""
    quoted = " ".join(text.split())
    if len(quoted) > QUOTE_LIMIT:  # quote long input in part: the reply stays short
        quoted = quoted[:QUOTE_LIMIT].rstrip() + "…"
    return (
        f"You said: “{quoted}”. I am the built-in demo agent, so I answer offline, one token at a time. "
        "Try /regenerate scene-1 to rebuild a scene, or /fail scene-1 to see a failing tool call."
    )


class DemoAgent:
    """The deterministic offline agent (see the module docstring).

    ``delay_ms``: pause before each streamed token (``?delay=`` in the URL);
    ``sleep``: the awaitable pause (``asyncio.sleep``; tests inject their own).
    Even with ``delay_ms=0`` it yields to the event loop between tokens.
    """

    def __init__(self, delay_ms: int = 0, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.delay_ms = max(0, int(delay_ms))
        self._sleep = sleep

    async def _tick(self) -> None:
        await self._sleep(self.delay_ms / 1000)

    MODEL = "demo"

    async def _stream(self, text: str, usage: list[int]) -> AsyncIterator[AgentEvent]:
        for token in tokenize(text):
            await self._tick()
            yield TextDelta(token)
            usage[1] += 1
            yield UsageReport(usage[0], usage[1], self.MODEL)

    async def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent]:
        """Answer ``text``; the tool call id is derived from the input and the history length.

        Usage: input tokens = tokens of every text in ``history`` and of ``text`` (what it reads);
        output tokens = tokens streamed, plus one per tool call event; reported after each one.
        """
        async for event in self._answer(history, text, [_input_tokens(history, text), 0]):
            yield event

    async def _answer(self, history: list[Message], text: str, usage: list[int]) -> AsyncIterator[AgentEvent]:
        yield UsageReport(usage[0], usage[1], self.MODEL)
        command, _, rest = text.strip().partition(" ")
        scene_id, _, instruction = rest.strip().partition(" ")
        if command not in ("/regenerate", "/fail") or not scene_id:
            async for event in self._stream(reply_text(text), usage):
                yield event
            return
        call_id = f"call-{_seed(text, str(len(history))):08x}-{len(history)}"
        failing = command == "/fail"
        args = {"sceneId": scene_id} | ({"instruction": instruction.strip()} if instruction.strip() else {})
        await self._tick()
        yield ToolCallStarted(call_id, REGENERATE_TOOL, args)
        usage[1] += 1
        yield UsageReport(usage[0], usage[1], self.MODEL)
        for _ in range(_WORK_TICKS):
            await self._tick()
        if failing:
            yield ToolCallFinished(call_id, failure_result(scene_id), is_error=True)
            summary = f"Sorry, scene {scene_id} could not be regenerated. Nothing was changed."
        else:
            yield ToolCallFinished(call_id, regenerate_result(scene_id, instruction.strip()))
            summary = f"Done: scene {scene_id} now has {element_count(scene_id)} elements, after {action_count(scene_id)} actions."
        usage[1] += 1
        yield UsageReport(usage[0], usage[1], self.MODEL)
        async for event in self._stream(summary, usage):
            yield event


def _input_tokens(history: list[Message], text: str) -> int:
    """Tokens the demo agent reads: every text part of the thread so far, and the new text."""
    from app.model import TextPart

    seen = [p.text for m in history for p in m.content if isinstance(p, TextPart)]
    return sum(len(tokenize(t)) for t in seen) + len(tokenize(text))
