"""The agent interface and the built-in deterministic demo agent (DESIGN.md §6).

An agent turns (history, user text) into an async stream of events; the runtime
(``app.runtime``) folds them into the assistant message. A real LLM back end
implements the same ``Agent`` protocol.

``DemoAgent`` needs no network and is deterministic in its content (every
choice is derived from the input through ``zlib.crc32`` and a seeded
``random.Random``); only tool call ids are fresh random values, unique per call
across courses, conversations and tabs (DESIGN.md §5), since a scene's restore
snapshot is keyed by its call's id:

- plain text → a streamed reply that quotes the text (in the page's language,
  ``demo.*`` of app/locales), at least ten tokens, one
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
import math
import os
import random
import re
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from app.checkpoints.documents import (Background, Box, SceneDocument, SceneElement, base_document,
                                       document_json)
from app.model import Message
from app.tool_texts import ACTION_TYPES, written

__all__ = [
    "Agent",
    "AgentEvent",
    "DemoAgent",
    "TextDelta",
    "UsageSoFar",
    "ToolCallFinished",
    "ToolCallStarted",
    "RUN_STAGE",
    "action_count",
    "element_count",
    "failure_result",
    "parse_command",
    "regenerate_result",
    "reply_text",
    "tokenize",
]

REGENERATE_TOOL = "regenerate_scene"
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
class UsageSoFar:
    """The agent's own token counts for this turn so far (cumulative) and its model (DESIGN.md §9).

    The runtime keeps the last one of a turn, so a stopped turn records what it had.
    """

    input_tokens: int
    output_tokens: int
    model: str

    def to_turn_meta(self) -> dict[str, Any]:
        """The §9 per-turn meta fields it fills: ``{"model", "usage": {inputTokens, outputTokens, totalTokens}}``."""
        return {"model": self.model, "usage": {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                                               "totalTokens": self.input_tokens + self.output_tokens}}


AgentEvent = Union[TextDelta, ToolCallStarted, ToolCallFinished, UsageSoFar]


class Agent(Protocol):
    """Anything that answers one user turn as an async stream of ``AgentEvent``.

    ``history`` holds the thread's messages before this turn (read only).
    Cancelling the consuming task cancels the stream (``asyncio.CancelledError``).
    ``mask_secret(text)``: the user's ``text`` as the thread stores it, with any secret of the agent
    (an API key) masked (DESIGN.md §12); an agent without a secret returns it unchanged.
    """

    def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent]: ...

    def mask_secret(self, text: str) -> str: ...


_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into stream tokens: a word or one punctuation mark, each with its leading whitespace.

    >>> tokenize('Hi, "you".')
    ['Hi', ',', ' "', 'you', '"', '.']

    Trailing whitespace belongs to no token and is cut before matching: the pattern would try
    every position of a whitespace run that no token follows, each time to its end (quadratic:
    3,000 trailing spaces took 0.26 s, 6,000 took 1 s).
    """
    return _TOKEN.findall(text.rstrip())


def _seed(*parts: str) -> int:
    return zlib.crc32("\x1f".join(parts).encode("utf-8", "surrogatepass"))  # a text may hold a lone surrogate


def element_count(scene_id: str) -> int:
    """Elements in the regenerated scene ``scene_id``: 24–48, fixed per id.

    >>> element_count("scene-1") == element_count("scene-1") and 24 <= element_count("scene-1") <= 48
    True
    """
    return 24 + _seed("elements", scene_id) % 25


def action_count(scene_id: str) -> int:
    """Actions in the regenerate result for ``scene_id``: 3–5, fixed per id."""
    return 3 + _seed("actions", scene_id) % 3


def _png(width: int, height: int, rows: list[bytes]) -> bytes:
    """A valid RGB PNG of ``width`` × ``height`` pixels from its ``rows`` of RGB bytes (stdlib only)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def _rgb(hue: float, lightness: float, saturation: float) -> tuple[int, int, int]:
    import colorsys  # here, not at the top: its import (hashlib, urllib) was 10-100 ms before ready (§13)

    red, green, blue = colorsys.hls_to_rgb(hue % 1.0, lightness, saturation)
    return round(red * 255), round(green * 255), round(blue * 255)


def _hex(hue: float, lightness: float, saturation: float) -> str:
    return "#%02x%02x%02x" % _rgb(hue, lightness, saturation)


_GRAIN = 3
"""Film grain of a picture: 0 to ``_GRAIN`` added to each channel (pictures stay a few KB of base64)."""
_GRAIN_TABLE = bytes(b % (_GRAIN + 1) for b in range(256))


def _picture(rng: random.Random, hue: float, width: int = 72, height: int = 48) -> str:
    """A small landscape picture as a ``data:image/png;base64`` URL: a sky shading into a hill,
    a sun, and a light film grain (so each is a few kilobytes: the heavy live result stays heavy)."""
    sun_x, sun_y, sun_r = rng.uniform(0.2, 0.8) * width, rng.uniform(0.15, 0.4) * height, height * 0.14
    phase, ground = rng.uniform(0, 6.3), rng.uniform(0.55, 0.7) * height

    def pixel(rgb: tuple[int, ...]) -> bytes:
        return bytes(min(c, 255 - _GRAIN) for c in rgb)

    sky_top, sky_low = _rgb(hue, 0.55, 0.55), _rgb(hue + 0.05, 0.82, 0.5)
    hill, sun = pixel(_rgb(hue + 0.3, 0.38, 0.45)), pixel(_rgb(0.12, 0.75, 0.9))
    horizon = [ground + height * 0.08 * math.sin(x / width * 6.3 + phase) for x in range(width)]
    rows = []
    for y in range(height):
        t = y / (height - 1)
        sky = pixel(tuple(round(a + (b - a) * t) for a, b in zip(sky_top, sky_low)))
        reach = sun_r ** 2 - (y - sun_y) ** 2  # the sun's half-width on this row, squared
        row = b"".join(hill if y >= horizon[x] else sun if (x - sun_x) ** 2 <= reach else sky for x in range(width))
        # grain added as one big integer: every byte is at most 255 - _GRAIN, so no byte carries
        grain = rng.randbytes(len(row)).translate(_GRAIN_TABLE)
        rows.append((int.from_bytes(row, "big") + int.from_bytes(grain, "big")).to_bytes(len(row), "big"))
    return "data:image/png;base64," + base64.b64encode(_png(width, height, rows)).decode("ascii")


def _backdrop(hue: float, width: int = 48, height: int = 27) -> str:
    """The slide's background: a very light vertical shade of ``hue`` (a PNG data URL)."""
    top, low = _rgb(hue, 0.985, 0.4), _rgb(hue, 0.93, 0.45)
    rows = [bytes(round(a + (b - a) * y / (height - 1)) for a, b in zip(top, low)) * width for y in range(height)]
    return "data:image/png;base64," + base64.b64encode(_png(width, height, rows)).decode("ascii")


def _image(rng: random.Random, width: int = 28, height: int = 24, spread: int = 90) -> str:
    """A PNG data URL of ``width`` × ``height`` noisy pixels around a random tint: a heavy image that
    does not compress (the benchmark's large documents are made of these)."""
    tint = (rng.randrange(60, 200), rng.randrange(60, 200), rng.randrange(60, 200))
    rows = [bytes(min(255, max(0, c + rng.randrange(-spread, spread + 1))) for _ in range(width) for c in tint)
            for _ in range(height)]
    return "data:image/png;base64," + base64.b64encode(_png(width, height, rows)).decode("ascii")


RUN_STAGE: ContextVar[str | None] = ContextVar("RUN_STAGE", default=None)
"""The course a turn runs on; the runtime sets it in the turn's task, so the tool reads
that course's scenes even when another course is shown meanwhile (DESIGN.md §4)."""


BULLETS = 4
"""Bullet points a regenerated slide has at most."""
BULLET_CHARS = 90
"""Characters of one bullet point at most (a longer phrase is cut with an ellipsis)."""
BULLET = "• "
PICTURES = 4
_PHRASE_END = re.compile(r"[,;.!?\n，；、。！？]+")


def _bullets(instruction: str, current: SceneDocument | None, title: str) -> list[str]:
    """The phrases a regenerated slide lists: the instruction's (split at punctuation), else the
    current slide's own bullet points, else its body text's; at least the title."""
    texts = [e.text for e in (current.elements if current is not None else ()) if e.kind == "text" and e.text]
    own = [t[len(BULLET):] for t in texts if t.startswith(BULLET)]
    body = [t for t in texts[1:] if not t.startswith(BULLET)] if not own else []
    source = [instruction] if instruction else own or body or [title]
    phrases = [" ".join(p.split()) for text in source for p in _PHRASE_END.split(text) if p.strip()]
    return [p if len(p) <= BULLET_CHARS else p[:BULLET_CHARS - 1].rstrip() + "…" for p in phrases[:BULLETS]] or [title]


def regenerate_document(scene_id: str, instruction: str = "", current: SceneDocument | None = None) -> SceneDocument:
    """The scene document ``regenerate_scene`` makes from ``current`` (DESIGN.md §10).

    Deterministic: the same current document, scene id and instruction give the same
    document. A slide of ``element_count(scene_id)`` elements, every box on the 960 × 540
    slide, in one colour theme drawn from the input:

    - the current title (kept) over an accent bar;
    - up to ``BULLETS`` bullet points: the instruction's phrases (without one, the current
      slide's bullet points or body text, ``_bullets``);
    - a bar chart on a panel (baseline, three grid lines, bars each with its value above it,
      and a marker over the highest bar when the count is odd): it takes what is left of the count;
    - ``PICTURES`` pictures (base64 PNGs of a few KB each) under the bullets, and a PNG
      background, so the live result stays heavy (the slim projection drops it, §3).

    Element ids name their slot (``<sceneId>-title``, ``<sceneId>-el-<i>``), so the diff of two
    regenerates lists what was redone as changed, not as removed and added.
    """
    basis = document_json(current) if current is not None else ""
    rng = random.Random(_seed("scene", scene_id, instruction, basis))
    hue = rng.random()
    title = current.title if current is not None else scene_id
    bullets = _bullets(instruction, current, title)
    count = element_count(scene_id)
    ink, accent = _hex(hue, 0.2, 0.35), _hex(hue, 0.45, 0.65)
    parts: list[dict[str, Any]] = [
        {"kind": "text", "box": Box(x=48, y=28, w=864, h=72), "text": title, "color": "#1d2433", "size": 48},
        {"kind": "shape", "box": Box(x=48, y=106, w=120, h=6), "color": accent},
    ]
    room = 264 / len(bullets)  # the bullets share the column above the pictures
    for n, bullet in enumerate(bullets):
        parts.append({"kind": "text", "box": Box(x=48, y=round(132 + n * room, 2), w=412, h=round(room - 8, 2)),
                      "text": BULLET + bullet, "color": ink, "size": 30})
    parts += _chart(rng, hue, ink, accent, count - len(parts) - PICTURES)
    for n in range(PICTURES):
        parts.append({"kind": "image", "box": Box(x=48 + n * 104, y=412, w=92, h=64),
                      "src": _picture(rng, hue + 0.15 * n)})
    elements = [SceneElement(id=f"{scene_id}-title" if n == 0 else f"{scene_id}-el-{n}", **part)
                for n, part in enumerate(parts)]
    return SceneDocument(title=title, background=Background(kind="image", value=_backdrop(hue)),
                         elements=tuple(elements))


def _chart(rng: random.Random, hue: float, ink: str, accent: str, count: int) -> list[dict[str, Any]]:
    """``count`` parts of the slide's bar chart (``regenerate_document``): a panel, a baseline, three
    grid lines, bars each with its value above it (values drawn from ``rng``, 12–96), and a marker
    over the highest bar when what is left after panel and lines is odd; boxes in slide pixels."""
    left, right, base, top = 516.0, 892.0, 476.0, 196.0
    parts: list[dict[str, Any]] = [
        {"kind": "shape", "box": Box(x=492, y=124, w=420, h=384), "color": _hex(hue, 0.95, 0.5)},
        {"kind": "shape", "box": Box(x=left, y=base, w=right - left, h=3), "color": _hex(hue, 0.3, 0.2)},
    ]
    for step in (1, 2, 3):
        parts.append({"kind": "shape", "box": Box(x=left, y=base - step * (base - top) / 4, w=right - left, h=1.5),
                      "color": _hex(hue, 0.82, 0.25)})
    rest = count - len(parts)
    bars, marker = rest // 2, rest % 2
    slot = (right - left) / max(bars, 1)
    values = [rng.randrange(12, 97) for _ in range(bars)]
    for n, value in enumerate(values):
        height = (base - top) * value / 100
        x = left + n * slot
        parts.append({"kind": "shape", "box": Box(x=round(x + slot * 0.18, 2), y=round(base - height, 2),
                                                  w=round(slot * 0.64, 2), h=round(height, 2)),
                      "color": _hex(hue + n * 0.04, 0.5 + 0.2 * (n % 2), 0.55)})
        parts.append({"kind": "text", "box": Box(x=round(x, 2), y=round(base - height - 30, 2), w=round(slot, 2), h=26),
                      "text": str(value), "color": ink, "size": 20})
    if marker:
        highest = max(range(bars), key=values.__getitem__) if bars else 0
        x = left + highest * slot + slot / 2 - 6
        y = base - (base - top) * (values[highest] if values else 50) / 100 - 46
        parts.append({"kind": "shape", "box": Box(x=round(x, 2), y=round(y, 2), w=12, h=12), "color": accent})
    return parts


def regenerate_result(scene_id: str, instruction: str = "", current: SceneDocument | None = None) -> dict[str, Any]:
    """The heavy live result of ``regenerate_scene`` (what the slim projection must trim).

    ``{"content": [text item, image item], "details": {"sceneId", "content":
    <the new SceneDocument as a dict: title, background, elements>, "actions": [...]}}``
    (``regenerate_document``).
    """
    document = regenerate_document(scene_id, instruction, current)
    rng = random.Random(_seed("preview", scene_id, instruction))
    elements = document.elements
    count = len(elements)
    actions = [
        {
            "type": ACTION_TYPES[i % len(ACTION_TYPES)],
            "elementId": elements[i].id,
            "payload": {"text": f"{instruction or 'Refreshed'} ({i + 1})", "x": elements[i].box.x},
        }
        for i in range(action_count(scene_id))
    ]
    return {
        "content": [
            {"type": "text", "text": written("regenerated", sceneId=scene_id, count=count)},
            {"type": "image", "data": _picture(rng, rng.random()).partition(",")[2], "mimeType": "image/png"},
        ],
        "details": {"sceneId": scene_id, "content": document.model_dump(mode="json", exclude_none=True), "actions": actions},
    }


def failure_result(scene_id: str, *, missing: bool = False) -> dict[str, Any]:
    """The live result of a failed ``regenerate_scene`` call (``details.content`` is ``None``);
    ``missing``: the course has no scene ``scene_id``."""
    text = written("noSuchScene" if missing else "toldToFail", sceneId=scene_id)
    return {
        "content": [{"type": "text", "text": text}],
        "details": {"sceneId": scene_id, "content": None, "actions": []},
    }


_WORD = re.compile(r"\S+")

QUOTE_LIMIT = 160
"""Characters of the user's text the demo reply quotes at most."""


Translate = Callable[..., str]


def _english() -> Translate:
    from app.i18n import DEFAULT_LOCALE, Translator

    return Translator(DEFAULT_LOCALE)


def reply_text(text: str, translate: Translate | None = None) -> str:
    """The demo agent's answer to plain ``text`` (at least ten tokens in every locale), in the page's
    language: ``translate`` (``app.i18n.Translator``; en-US when ``None``) of ``demo.reply``."""
    words, size = [], 0
    for word in _WORD.finditer(text):  # lazily: a 2 MB message is not split whole
        words.append(word.group())
        size += len(words[-1]) + 1
        if size > QUOTE_LIMIT + 1:
            break
    quoted = " ".join(words)
    if len(quoted) > QUOTE_LIMIT:  # quote long input in part: the reply stays short
        quoted = quoted[:QUOTE_LIMIT].rstrip() + "…"
    return (translate or _english())("demo.reply", quoted=quoted)


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
    ``translate``: the page's ``app.i18n.Translator``: its replies and summaries are the locale's
    ``demo.*`` texts (the in-browser demo speaks the page's language); en-US when ``None``.
    Even with ``delay_ms=0`` it yields to the event loop between tokens.
    """

    def __init__(self, delay_ms: int = 0, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 new_id: Callable[[], str] = lambda: os.urandom(8).hex(),
                 scenes: Callable[[str, str], SceneDocument | None] | None = None,
                 translate: Translate | None = None) -> None:
        self._translate = translate
        self.delay_ms = max(0, int(delay_ms))
        self._sleep = sleep
        self._new_id = new_id
        self._scenes = scenes or base_document
        """``scenes(stage_id, scene_id)``: the scene's current document, ``None`` when there is none."""

    def mask_secret(self, text: str) -> str:
        """``text`` unchanged: the demo has no secret (``Agent.mask_secret``, DESIGN.md §12)."""
        return text

    def regenerate_scene(self, scene_id: str, instruction: str = "") -> tuple[dict[str, Any], bool]:
        """Run the ``regenerate_scene`` tool on the running course's current document of ``scene_id``.

        The course is the one whose turn runs (``RUN_STAGE``, set by the runtime); the
        document comes from ``scenes``. Returns ``(live result, is_error)``: a scene the
        course does not have fails like ``/fail`` (``failure_result(missing=True)``,
        DESIGN.md §10). Any agent's tool call runs through here, so the
        demo and a model back end make the same documents.
        """
        current = self._scenes(RUN_STAGE.get() or "", scene_id)
        if current is None:
            return failure_result(scene_id, missing=True), True
        return regenerate_result(scene_id, instruction, current), False

    @property
    def _t(self) -> Translate:
        if self._translate is None:
            self._translate = _english()
        return self._translate

    async def _tick(self) -> None:
        await self._sleep(self.delay_ms / 1000)

    MODEL = "demo"

    async def _stream(self, text: str, usage: list[int]) -> AsyncIterator[AgentEvent]:
        for token in tokenize(text):
            await self._tick()
            yield TextDelta(token)
            usage[1] += 1
            yield UsageSoFar(usage[0], usage[1], self.MODEL)

    async def run(self, history: list[Message], text: str) -> AsyncIterator[AgentEvent]:
        """Answer ``text``; each tool call gets a fresh id from ``new_id``.

        Usage: input tokens = tokens of every text in ``history`` and of ``text`` (what it reads);
        output tokens = tokens streamed, plus one per tool call event; reported after each one.
        """
        async for event in self._answer(history, text, [await _input_tokens(history, text), 0]):
            yield event

    async def _answer(self, history: list[Message], text: str, usage: list[int]) -> AsyncIterator[AgentEvent]:
        yield UsageSoFar(usage[0], usage[1], self.MODEL)
        command, scene_id, instruction = parse_command(text)
        if command not in ("/regenerate", "/fail") or not scene_id:
            async for event in self._stream(reply_text(text, self._t), usage):
                yield event
            return
        call_id = f"call-{self._new_id()}"
        failing = command == "/fail"
        args = {"sceneId": scene_id} | ({"instruction": instruction.strip()} if instruction.strip() else {})
        await self._tick()
        yield ToolCallStarted(call_id, REGENERATE_TOOL, args)
        usage[1] += 1
        yield UsageSoFar(usage[0], usage[1], self.MODEL)
        for _ in range(_WORK_TICKS):
            await self._tick()
        if failing:
            result, is_error = failure_result(scene_id), True
        else:
            result, is_error = self.regenerate_scene(scene_id, instruction.strip())
        yield ToolCallFinished(call_id, result, is_error=is_error)
        t = self._t
        if is_error:
            summary = t("demo.failed", scene=scene_id)
        else:
            summary = t("demo.done", scene=scene_id, elements=t("demo.elements", count=element_count(scene_id)),
                        actions=t("demo.actions", count=action_count(scene_id)))
        usage[1] += 1
        yield UsageSoFar(usage[0], usage[1], self.MODEL)
        async for event in self._stream(summary, usage):
            yield event


async def _input_tokens(history: list[Message], text: str) -> int:
    """Tokens the demo agent reads: every text part of the thread so far, and the new text
    (counted in steps: a 2 MB message is not one long main-thread task, ``count_tokens_in_steps``)."""
    from app.model import TextPart

    seen = [p.text for m in history for p in m.content if isinstance(p, TextPart)]
    total = 0
    for t in [*seen, text]:
        total += await count_tokens_in_steps(t)
    return total


def count_tokens(text: str) -> int:
    """``len(tokenize(text))`` without building the list (half the time on a 2 MB message).

    >>> count_tokens('Hi, "you".') == len(tokenize('Hi, "you".'))
    True

    Trailing whitespace is cut first, as in ``tokenize`` (a whitespace run no token follows
    would cost time quadratic in its length).
    """
    return _TOKEN.subn("", text.rstrip())[1]


COUNT_STEP_CHARS = 256 * 1024
"""Characters counted between two pauses of ``count_tokens_in_steps``."""
_TOKEN_END = re.compile(r"\S(?=\s)")


async def count_tokens_in_steps(text: str, step: int = COUNT_STEP_CHARS,
                                pause: Callable[[], Awaitable[Any]] = lambda: asyncio.sleep(0)) -> int:
    """``count_tokens(text)``, counted in slices of about ``step`` characters with ``pause()``
    between them (none for a text of at most ``step``).

    A slice ends where a non-space is followed by a space: no token spans that point (every
    non-space belongs to a token, a token's leading spaces follow it), so the counts add up.
    """
    total, start = 0, 0
    while len(text) - start > step:
        end = _TOKEN_END.search(text, start + step)
        if end is None:
            break
        total += count_tokens(text[start:end.end()])
        start = end.end()
        await pause()
    return total + count_tokens(text[start:] if start else text)
