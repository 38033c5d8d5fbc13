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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from app.courses import find_course
from app.model import ToolCallPart
from app.tool_texts import action_names, shown

__all__ = ["CardStatus", "CardText", "card_text", "RENDER_WINDOW", "RENDER_SLACK", "LONG_TEXT_CHARS",
           "COLLAPSED_CHARS", "CHUNK_CHARS", "ToolCardView", "Segment", "tool_card_view", "link_segments", "window_start", "collapsed_prefix",
           "text_chunks", "isolated_segments", "notice_segments", "command_segments", "streamed_text_update"]

RENDER_WINDOW = 40
"""Messages rendered when a thread is shown; older ones follow on request ("show
earlier"), so a long thread costs start-up only what the screen can show."""

RENDER_SLACK = 20
"""Messages a session may add beyond ``RENDER_WINDOW`` before the oldest rendered ones are
dropped from the DOM again (the window stays bounded during a session as after a reload); dropping
in batches keeps it off most turns."""

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
    texts: tuple[str, ...] = ()
    """The text items of the result's ``content``, one by one (``summary`` joins them)."""


@dataclass(frozen=True)
class CardText:
    """What a tool card reads in the page's locale (``card_text``): its ``name``, status ``badge``,
    and its lines: ``elements`` and ``actions`` (``None`` when the card has none) and ``summary``
    (``""`` when the result says nothing)."""

    name: str
    badge: str
    elements: str | None
    actions: str | None
    summary: str


_BADGES = {"ok": "edit.agent.tool.done", "error": "edit.agent.tool.failed",
           "interrupted": "edit.agent.tool.interrupted", "running": "edit.agent.tool.running"}


def card_text(card: ToolCardView, translate: Callable[..., str]) -> CardText:
    """The texts of ``card`` in the reader's locale (DESIGN.md §6, §7): the tool's name, its badge,
    the element count, the action types by their localised names, and each text of the result as
    ``app.tool_texts.shown`` gives it (the app's own tool texts localised, any other as stored). The
    stored result is not touched (§3). ``translate``: an ``app.i18n.Translator`` or any
    ``(key, **params) -> str``. Both the live view and the paint record draw from it."""
    t = translate
    name = (t("edit.agent.tool.regenerateScene", sceneId=card.scene_id or "?") if card.tool_name == "regenerate_scene"
            else t("edit.agent.tool.generic", name=card.tool_name))
    elements = None if card.element_count is None else t("edit.agent.tool.elements", count=card.element_count)
    actions = (t("edit.agent.tool.actions", count=len(card.action_types), types=action_names(card.action_types, t))
               if card.action_types else None)
    summary = "\n".join(shown(text, t) for text in card.texts) if card.texts else card.summary
    return CardText(name=name, badge=t(_BADGES[card.status]), elements=elements, actions=actions, summary=summary)


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
    items = _get(result, "content")
    texts = [t for t in (_get(item, "text") for item in (items if isinstance(items, list) else [])
                         if _get(item, "type") == "text") if isinstance(t, str)]
    scene_id = _get(details, "sceneId") if isinstance(_get(details, "sceneId"), str) else _get(part.args, "sceneId")
    return ToolCardView(
        status=status,
        tool_name=part.tool_name,
        scene_id=scene_id if isinstance(scene_id, str) else None,
        element_count=element_count,
        action_types=action_types,
        summary="\n".join(texts),
        texts=tuple(texts),
    )


@dataclass(frozen=True)
class Segment:
    """A run of message text: ``kind`` ``"text"``, ``"link"`` (an ``http(s)`` URL) or ``"isolate"``
    (a value to keep in its own bidi run, ``isolated_segments``)."""

    kind: Literal["text", "link", "isolate"]
    text: str


_URL = re.compile(r"https?://[^\s<>\"'`\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+", re.IGNORECASE)
"""A link ends at white space, quotes, angle brackets and at bidi controls: a right-to-left override
inside a URL would draw its text reversed, so the link shown would not read as the address it opens."""
_TRAILING = ".,;:!?)]}。，！？）"


def link_segments(text: str) -> list[Segment]:
    """Split ``text`` into plain runs and ``http(s)`` links (trailing punctuation stays text).

    Any other scheme (``javascript:``, ``data:``) stays plain text; a bidi control ends the link (``_URL``).

    >>> [s.kind for s in link_segments("see https://example.org.")]
    ['text', 'link', 'text']
    >>> [(s.kind, s.text) for s in link_segments("https://example.com/\u202eabc")]
    [('link', 'https://example.com/'), ('text', '\u202eabc')]
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


# ---- render window, bounded during a session as after a reload ---------------------------


def window_start(total: int, start: int, *, grew: bool, window: int = RENDER_WINDOW,
                 slack: int = RENDER_SLACK) -> int:
    """Index of the first message to render, given ``total`` messages and the current ``start``.

    A thread is shown from its newest ``window`` messages (as after a reload);
    while a session adds messages (``grew``) the rendered span may reach
    ``window + slack``, then it is cut back to the newest ``window``, so the
    DOM stays bounded however long the session runs. Messages shown on request
    ("show earlier", a smaller ``start``) stay until the thread grows past the
    bound. A ``start`` beyond ``total`` (the thread shrank) starts afresh.

    >>> window_start(100, 60, grew=True), window_start(121, 60, grew=True), window_start(121, 60, grew=False)
    (60, 81, 60)
    """
    if start > total or start < 0:
        return max(0, total - window)
    if grew and total - start > window + slack:
        return total - window
    return start


# ---- long text (a long paragraph never freezes the page) ---------------------------------

LONG_TEXT_CHARS = 4000
"""A text part longer than this renders collapsed (its first ``COLLAPSED_CHARS``) with a
"show all" control: Chromium's line breaking of one long run costs superlinear time
(measured: 200,000 chars in one ``pre-wrap`` run took ~4 s of layout, 20,000 took 70 ms)."""

COLLAPSED_CHARS = 1500
"""Characters of a long text part shown while collapsed."""

CHUNK_CHARS = 2000
"""A text shown in full is laid out in runs of at most this many characters, each its own
block, so layout time stays linear in the text's length."""

_BREAK_LOOKBACK = 200


def _cut(text: str, limit: int) -> int:
    """An index ≤ ``limit`` to cut ``text`` at: after the last whitespace within the final
    ``_BREAK_LOOKBACK`` characters, else ``limit`` (never between a surrogate-free code point
    pair, since Python strings hold code points)."""
    if len(text) <= limit:
        return len(text)
    floor = max(1, limit - _BREAK_LOOKBACK)
    for index in range(limit, floor - 1, -1):
        if text[index - 1].isspace():
            return index
    return limit


def collapsed_prefix(text: str, *, long: int = LONG_TEXT_CHARS, shown: int = COLLAPSED_CHARS) -> str | None:
    """The part of ``text`` to show collapsed, or ``None`` when ``text`` is short enough to show whole.

    Cut at a whitespace near ``shown`` characters when there is one.

    >>> collapsed_prefix("short") is None
    True
    >>> len(collapsed_prefix("x" * 5000))
    1500
    """
    if len(text) <= long:
        return None
    return text[:_cut(text, shown)]


def streamed_text_update(old_len: int, new_len: int, *, expanded: bool = False,
                         long: int = LONG_TEXT_CHARS) -> str | None:
    """How a streamed text part's bubble follows its growth from ``old_len`` to ``new_len``
    characters without being rebuilt (DESIGN.md §12: per token only the growing message is touched):

    - ``"append"``: shown whole before and after: the new characters are appended;
    - ``"length"``: collapsed before and after (``collapsed_prefix`` cuts within the first
      ``COLLAPSED_CHARS``, so the shown start stays): only the "show all" control's count changes;
    - ``None``: the bubble is rebuilt (it crossed the collapse limit, is shown expanded, or shrank).

    >>> streamed_text_update(10, 12), streamed_text_update(5000, 5010), streamed_text_update(3990, 4010)
    ('append', 'length', None)
    """
    if not old_len < new_len:
        return None
    if new_len <= long:
        return "append"
    if old_len > long and not expanded:
        return "length"
    return None


def text_chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Split ``text`` into consecutive runs of at most ``size`` characters, each cut after a
    whitespace when one lies near the limit (so words and URLs stay whole); ``"".join`` of
    the result is ``text``.

    >>> text_chunks("ab cd ef", 4)
    ['ab ', 'cd ', 'ef']
    """
    chunks: list[str] = []
    position = 0
    while len(text) - position > size:
        end = position + _cut(text[position:position + size + 1], size)
        chunks.append(text[position:end])
        position = end
    if position < len(text) or not chunks:
        chunks.append(text[position:])
    return chunks


_MARK = "\ue000"


def isolated_segments(translate: Any, key: str, params: dict[str, Any], isolate: tuple[str, ...]) -> list[Segment]:
    """``translate(key, **params)`` split into text runs and ``"isolate"`` runs holding the
    values of the ``isolate`` params, so the view can wrap those in ``<bdi>`` (an LTR
    storage key inside Arabic text is otherwise reordered by the bidi algorithm). ``translate``:
    ``app.i18n.Translator`` or any ``(key, **params) -> str``.

    >>> isolated_segments(lambda key, **p: f"kept under {p['name']}.", "x", {"name": "a.b"}, ("name",))
    [Segment(kind='text', text='kept under '), Segment(kind='isolate', text='a.b'), Segment(kind='text', text='.')]
    """
    values = [str(params[name]) for name in isolate if name in params]
    marked = {**params, **{name: f"{_MARK}{i}{_MARK}" for i, name in enumerate(n for n in isolate if n in params)}}
    pieces = translate(key, **marked).split(_MARK)
    segments: list[Segment] = []
    for index, piece in enumerate(pieces):
        if index % 2 == 1 and piece.isdigit() and int(piece) < len(values):
            segments.append(Segment("isolate", values[int(piece)]))
        elif piece:
            segments.append(Segment("text", piece))
    return segments


NOTICE_ISOLATED = ("backup_key", "file_name", "stage_id")
"""Notice params drawn in their own bidi run (a key, a file name, a course's title or id)."""


def notice_segments(translate: Any, code: str, params: dict[str, Any]) -> list[Segment]:
    """The text of notice ``code`` (``notice.<code>``) as ``isolated_segments``, with a course
    named by its title where one is known: ``stage_id`` becomes the demo course's title
    (``app.courses.find_course``); a course opened by URL keeps its id (it has no title of its own).

    >>> t = lambda key, **p: f"course {p['stage_id']} is full"
    >>> [s.text for s in notice_segments(t, "storage-full", {"stage_id": "intro-ml"}) if s.kind == "isolate"]
    ['Introduction to Machine Learning']
    """
    values = dict(params)
    stage_id = values.get("stage_id")
    if isinstance(stage_id, str):
        course = find_course(stage_id)
        values["stage_id"] = stage_id if course.is_placeholder else course.title
    return isolated_segments(translate, f"notice.{code}", values, NOTICE_ISOLATED)


_COMMAND = re.compile("[\u2066\u2068]?(/(?:regenerate|fail)[ \u00a0]scene-[0-9]+)\u2069?")
"""A demo command in a hint (``/regenerate scene-1``), with the isolate a catalogue may wrap it in."""


def command_segments(text: str) -> list[Segment]:
    """``text`` (a hint naming a demo command) split into text runs and ``"isolate"`` runs holding each
    command (the catalogue's own LRI … PDI around it dropped), so the view draws the command as one
    left-to-right run kept on one line (``<bdi dir=ltr>``): in right-to-left text it was broken over two
    lines and read in the wrong order.

    >>> command_segments("أو جرّب \u2066/regenerate scene-1\u2069.")
    [Segment(kind='text', text='أو جرّب '), Segment(kind='isolate', text='/regenerate scene-1'), Segment(kind='text', text='.')]
    """
    segments: list[Segment] = []
    position = 0
    for found in _COMMAND.finditer(text):
        if found.start() > position:
            segments.append(Segment("text", text[position:found.start()]))
        segments.append(Segment("isolate", found.group(1).replace("\u00a0", " ")))
        position = found.end()
    if position < len(text) or not segments:
        segments.append(Segment("text", text[position:]))
    return segments
