"""What the panel shows for a message, derived purely from the live model.

No browser imports: the view (``app.browser.view``) turns these into DOM nodes,
and the CPython tests check the derivations.

- Tool-card status (DESIGN.md §6): ``ok`` (a result, no ``isError``), ``error``
  (``isError`` with a result), ``interrupted`` (no result once the turn is
  over), ``running`` (no result yet, turn in flight).
- Element count from ``result.details.content.elements`` (DESIGN.md §3, §6).
- Stored text is data: it is split into plain text and ``http(s)`` links only;
  nothing is ever parsed as HTML (DESIGN.md §5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from app.model import ToolCallPart

__all__ = ["CardStatus", "RENDER_WINDOW", "ToolCardView", "Segment", "tool_card_view", "link_segments"]

RENDER_WINDOW = 40
"""Messages rendered when a thread is shown; older ones follow on request ("show
earlier"), so a long thread costs start-up only what the screen can show."""

CardStatus = Literal["ok", "error", "interrupted", "running"]


@dataclass(frozen=True)
class ToolCardView:
    """Display facts of one tool call.

    ``element_count``: ``len(details.content.elements)``, or ``None`` when the
    content is null (the failure marker) or absent. ``action_types``: the
    ``type`` of each ``details.actions`` item (``""`` when it has none).
    ``summary``: the text items of the result's ``content`` joined by newlines.
    """

    status: CardStatus
    tool_name: str
    scene_id: str | None
    element_count: int | None
    action_types: tuple[str, ...]
    summary: str


def _get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


def tool_card_view(part: ToolCallPart, *, turn_running: bool = False) -> ToolCardView:
    """Derive the card of ``part``; ``turn_running``: its message is still streaming.

    Never raises on odd live data (a non-dict result, a non-list elements value).
    """
    result = part.result
    if result is None:
        status: CardStatus = "running" if turn_running else "interrupted"
    else:
        status = "error" if part.is_error else "ok"
    details = _get(result, "details")
    content = _get(details, "content")
    elements = _get(content, "elements")
    element_count = len(elements) if isinstance(elements, list) else (0 if isinstance(content, dict) else None)
    actions = _get(details, "actions")
    action_types = tuple(
        str(_get(action, "type")) if isinstance(_get(action, "type"), str) else ""
        for action in (actions if isinstance(actions, list) else [])
    )
    texts = [_get(item, "text") for item in (_get(result, "content") or []) if _get(item, "type") == "text"]
    scene_id = _get(details, "sceneId") if isinstance(_get(details, "sceneId"), str) else _get(part.args, "sceneId")
    return ToolCardView(
        status=status,
        tool_name=part.tool_name,
        scene_id=scene_id if isinstance(scene_id, str) else None,
        element_count=element_count,
        action_types=action_types,
        summary="\n".join(t for t in texts if isinstance(t, str)),
    )


@dataclass(frozen=True)
class Segment:
    """A run of message text: ``kind`` ``"text"`` or ``"link"`` (an ``http(s)`` URL)."""

    kind: Literal["text", "link"]
    text: str


_URL = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}。，！？）"


def link_segments(text: str) -> list[Segment]:
    """Split ``text`` into plain runs and ``http(s)`` links (trailing punctuation stays text).

    Any other scheme (``javascript:``, ``data:``) stays plain text.

    >>> [s.kind for s in link_segments("see https://example.org.")]
    ['text', 'link', 'text']
    """
    segments: list[Segment] = []
    position = 0
    for match in _URL.finditer(text):
        url = match.group().rstrip(_TRAILING)
        start, end = match.start(), match.start() + len(url)
        if start > position:
            segments.append(Segment("text", text[position:start]))
        segments.append(Segment("link", url))
        position = end
    if position < len(text):
        segments.append(Segment("text", text[position:]))
    return segments
