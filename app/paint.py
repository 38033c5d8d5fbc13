"""The paint record: a course's newest rows, decided in Python, drawn before Python starts (DESIGN.md §13).

After each render the app keeps, per course, a small record of what the panel
shows: the rows of the newest messages as a tree of plain nodes (tag, a few
attributes, text), the localized labels of the page shell, the locale and its
direction, and the course title. It lives outside ``maic-agent-threads``
(Cache Storage, ``static/paint.js``), so it never competes with the stored
threads for the ``localStorage`` quota.

On the next visit ``static/paint.js`` draws it with ``textContent`` only, before
Pyodide loads, when it matches the stored thread (same course, locale and
``updatedAt``: ``recordMatches`` there, the rule's one place, since it decides
before Python runs; ``tests/unit/test_paint.py`` runs it); Python's first render then
replaces the painted rows in one task. The script checks every node against the
same allow-lists as ``validate_record`` (``PAINT_TAGS``, ``PAINT_ATTRS``,
``MAX_NODES``, ``MAX_DEPTH``, ``MAX_TEXT``) and draws nothing when any check
fails; ``tests/unit/test_paint.py`` checks that both lists agree.

Record (JSON, compact)::

    {"v": 1, "stageId": str, "updatedAt": int ms, "locale": "en-US", "dir": "ltr"|"rtl",
     "title": str, "labels": {i18n key: text}, "rows": [node, ...], "bar": [node]?}
    node = {"t": tag, "a": {attr: str}?, "x": text?, "c": [node, ...]?}

Also here: the composer's message sent before ready (``PendingSend``), kept in
``sessionStorage`` by ``static/paint.js`` and sent once by Python when ready.

Pure: no browser imports; the browser layer (``app.browser.paint``) stores and reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.message_actions import ActionButton, message_actions
from app.message_row import CardPiece, Piece, TextPiece, message_row
from app.model import Message, TextPart
from app.presentation import RENDER_WINDOW
from app.store.jsjson import js_json

__all__ = [
    "PAINT_VERSION", "PAINT_TAGS", "PAINT_ATTRS", "MAX_NODES", "MAX_DEPTH", "MAX_TEXT", "PENDING_KEY",
    "PaintNode", "PaintRecord", "PendingSend", "build_record", "checkpoint_bar", "encode_record", "validate_record",
    "parse_pending", "pending_to_send", "paint_cache_key", "in_flight_text", "picker_positions", "record_due",
]

PAINT_VERSION = 1
"""``v`` of a record this code writes and draws; any other value draws nothing."""

PAINT_TAGS = ("div", "p", "span", "button")
"""The only elements a record may create (no links, no images, no scripts)."""

PAINT_ATTRS = (
    "class", "dir", "role", "type", "tabindex", "disabled", "aria-label", "aria-expanded",
    "data-testid", "data-role", "data-status", "data-long", "data-chars", "data-code",
    "data-element-count", "data-tool-name", "data-tool-call-id", "data-message-id", "data-painted",
    "data-index", "data-count", "data-label",
)
"""The only attributes a record may set (no ``on*`` handlers, no ``href``/``src``/``style``)."""

MAX_NODES = 4000
"""Nodes in one record at most (40 rows of a few nodes each need a few hundred)."""

MAX_DEPTH = 6
"""Nesting of nodes at most (row → card → head → name is 4)."""

MAX_TEXT = 200_000
"""Characters of text in one record at most (40 collapsed rows hold at most 60,000)."""

PENDING_KEY = "agentbar-pending-send"
"""``sessionStorage`` key of the message sent before ready (``PendingSend``)."""


def paint_cache_key(stage_id: str) -> str:
    """The Cache Storage request path of ``stage_id``'s record (relative to the page):
    ``paint/<percent-encoded id>``, the same as ``encodeURIComponent`` in ``static/paint.js``.

    >>> paint_cache_key("intro ml/2")
    'paint/intro%20ml%2F2'
    """
    from urllib.parse import quote

    return "paint/" + quote(stage_id, safe="-_.!~*'()")


class PaintNode(BaseModel):
    """One node of a painted row: ``t`` a tag of ``PAINT_TAGS``, ``a`` attributes of
    ``PAINT_ATTRS`` (string values), ``x`` its text (set as ``textContent``), ``c`` children."""

    model_config = ConfigDict(strict=True, defer_build=True)  # built at first use, after ready (§13)

    t: Literal["div", "p", "span", "button"]
    a: dict[str, str] = Field(default_factory=dict)
    x: str | None = None
    c: list[PaintNode] = Field(default_factory=list)

    @field_validator("a")
    @classmethod
    def _known_attrs(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(PAINT_ATTRS))
        if unknown:
            raise ValueError(f"attributes not allowed in a paint record: {unknown}")
        return value


class PaintRecord(BaseModel):
    """A course's paint record (module docstring): ``updatedAt`` is the stored thread's, in ms."""

    model_config = ConfigDict(strict=True, defer_build=True)  # built at first use, after ready (§13)

    v: Literal[1]
    stageId: str
    updatedAt: int
    locale: str
    dir: Literal["ltr", "rtl"]
    title: str
    labels: dict[str, str] = Field(default_factory=dict)
    rows: list[PaintNode]
    bar: list[PaintNode] = Field(default_factory=list)


def _walk(nodes: Iterable[PaintNode], depth: int = 1) -> Iterable[tuple[PaintNode, int]]:
    for node in nodes:
        yield node, depth
        yield from _walk(node.c, depth + 1)


def validate_record(text: str) -> PaintRecord | None:
    """The record in JSON ``text``, or ``None`` when it is not one this code would draw: not
    JSON, another ``v``, a tag or attribute off the allow-lists, over ``MAX_NODES`` nodes,
    ``MAX_DEPTH`` levels or ``MAX_TEXT`` characters. Never raises (DESIGN.md §5, §13)."""
    try:  # json.loads, not pydantic's parser: a lone surrogate (``\\ud800``) is valid JSON
        record = PaintRecord.model_validate(json.loads(text))
    except (ValidationError, ValueError, TypeError):
        return None
    count = chars = 0
    for node, depth in _walk([*record.rows, *record.bar]):
        count += 1
        chars += len(node.x or "") + sum(len(v) for v in node.a.values())
        if count > MAX_NODES or depth > MAX_DEPTH or chars > MAX_TEXT:
            return None
    return record


def _node(tag: str, text: str | None = None, children: list[PaintNode] | None = None, **attrs: str | None) -> PaintNode:
    clean = {name.rstrip("_").replace("_", "-"): value for name, value in attrs.items() if value is not None}
    return PaintNode(t=tag, a=clean, x=text, c=children or [])


def _bubble(piece: TextPiece, t: Callable[..., str]) -> PaintNode:
    """The live bubble of ``app.browser.message_nodes.MessageNodes``, collapsed (a fresh render
    never starts expanded); painted text is plain (links and Markdown come with Python's render)."""
    if piece.collapsed is None:
        return _node("div", piece.text, class_="bubble", data_testid="agent-message-text", dir="auto")
    return _node("div", None, [
        _node("div", piece.collapsed + "…", class_="text-chunk", data_testid="agent-text-chunk"),
        _node("button", t("longText.showAll"), class_="expand-button", data_testid="agent-message-expand",
              type="button", aria_expanded="false", data_chars=str(len(piece.text)), disabled=""),
    ], class_="bubble", data_testid="agent-message-text", dir="auto", data_long="collapsed")


def _card(piece: CardPiece) -> PaintNode:
    lines = [PaintNode(t="div", a={"class": "tool-card-head"}, c=[
        _node("span", piece.name, class_="tool-card-name", dir="auto"), _node("span", piece.badge, class_="badge")])]
    lines += [_node("p", line.text, class_="tool-card-line", data_testid=line.testid, dir="auto" if line.auto_dir else None)
              for line in piece.lines]
    return PaintNode(t="div", a=dict(piece.attrs), c=lines)


def _piece(piece: Piece, t: Callable[..., str]) -> PaintNode:
    if isinstance(piece, TextPiece):
        return _bubble(piece, t)
    if isinstance(piece, CardPiece):
        return _card(piece)
    attrs = {"class": piece.classes, **({"data-testid": piece.testid} if piece.testid else {}), **piece.attrs}
    return PaintNode(t=piece.tag, a=attrs, x=piece.text)


def _button(action: ActionButton, classes: str = "") -> PaintNode:
    return _node("button", None, class_=f"message-action {classes}".strip(), data_testid=action.testid,
                 type="button", aria_label=action.label, data_label=action.text, disabled="")


def _actions(message: Message, siblings: tuple[int, int], t: Callable[..., str], rtl: bool) -> PaintNode:
    """The message's actions and branch picker as ``MessageNodes._actions`` draws them (DESIGN.md
    §17), every button disabled: inert until ready."""
    actions = message_actions(message.role, siblings, t, has_id=bool(message.id), rtl=rtl)
    children = []
    picker = actions.picker
    if picker is not None:
        children.append(_node("div", None, [
            _button(picker.previous, "branch-arrow"),
            _node("span", None, class_="branch-position", data_label=picker.position, role="img",
                  aria_label=picker.version, dir="ltr"),
            _button(picker.following, "branch-arrow"),
        ], class_="branch-picker", data_testid="branch-picker", role="group", aria_label=picker.label,
            data_index=str(picker.index), data_count=str(picker.count)))
    children += [_button(action) for action in actions.buttons]
    return _node("div", None, children, class_="message-actions", data_testid="message-actions")


def _row(message: Message, t: Callable[..., str], siblings: tuple[int, int] = (1, 1), rtl: bool = False) -> PaintNode:
    """One message's row (``app.message_row``, as the live panel draws it on a fresh render: no
    snapshot buttons, a reload has none; its actions and picker under it, §17), marked
    ``data-painted="true"``."""
    row = message_row(message, t)
    children = [_piece(piece, t) for piece in row.pieces]
    if row.state != "running":
        children.append(_actions(message, siblings, t, rtl))
    return PaintNode(t="div", a={**row.attrs, "data-painted": "true"}, c=children)


def checkpoint_bar(summary: str, t: Callable[..., str]) -> PaintNode:
    """The panel's status line as ``app.browser.checkpoint_view`` draws it, holding the
    ``summary`` text it showed and its menu button (``app.browser.panel_menu``), closed and disabled
    until Python is ready (DESIGN.md §10): painted so that the log keeps its height when Python's
    own line takes its place."""
    return _node("div", None, [
        _node("span", summary, class_="checkpoint-summary-text"),
        _node("div", None, [_node("button", "⋯", class_="panel-menu-button", type="button", disabled="",
                                  aria_expanded="false", aria_label=t("edit.agent.menu"))],
              class_="panel-menu"),
    ], class_="checkpoint-bar", data_painted="true")


def build_record(stage_id: str, updated_at: int, messages: list[Message], t: Callable[..., str], *,
                 locale: str, rtl: bool, title: str, label_keys: Iterable[str] = (),
                 bar_summary: str | None = None, window: int = RENDER_WINDOW,
                 siblings: Callable[[str | None], tuple[int, int]] = lambda _id: (1, 1)) -> PaintRecord:
    """The record of course ``stage_id`` whose stored thread has ``updated_at`` (ms) and the live
    ``messages``: the newest ``window`` rows as a fresh render shows them (a "show earlier"
    button first when older ones exist), ``labels`` of ``label_keys`` translated by ``t``
    (``app.i18n.Translator`` or any ``(key, **params) -> str``), ``title`` the course heading,
    and the scene-version bar (``checkpoint_bar``) when ``bar_summary`` is given; ``siblings(id)``:
    a message's ``(index, count)`` at its fork, for its branch picker (DESIGN.md §17)."""
    start = max(0, len(messages) - window)
    rows = [_row(message, t, siblings(message.id), rtl) for message in messages[start:]]
    if start:
        rows.insert(0, _node("button", t("edit.agent.showEarlier"), class_="earlier-button",
                             data_testid="agent-load-earlier", type="button", disabled="", data_painted="true"))
    labels = {key: t(key) for key in dict.fromkeys(label_keys)}
    bar = [checkpoint_bar(bar_summary, t)] if bar_summary is not None else []
    return PaintRecord(v=PAINT_VERSION, stageId=stage_id, updatedAt=updated_at, locale=locale,
                       dir="rtl" if rtl else "ltr", title=title, labels=labels, rows=rows, bar=bar)


def picker_positions(messages: list[Message], siblings: Callable[[str | None], tuple[int, int]], *,
                     window: int = RENDER_WINDOW) -> tuple[tuple[str | None, int, int], ...]:
    """The branch pickers a record of ``messages`` draws (``build_record`` with the same ``siblings``
    and ``window``): ``(message id, index, count)`` of each of the newest ``window`` messages that has
    siblings (``count > 1``), in order. A record is out of date when these differ from the live
    ones even though its thread's ``updatedAt`` did not change: history's tree, which brings the
    pickers, arrives after ready (DESIGN.md §13, §17)."""
    positions = []
    for message in messages[max(0, len(messages) - window):]:
        index, count = siblings(message.id)
        if count > 1:
            positions.append((message.id, index, count))
    return tuple(positions)


def record_due(written: tuple[int | None, tuple] | None, updated_at: int | None, pickers: tuple) -> bool:
    """Whether a course's paint record must be written (or removed) again: ``written`` is what was
    last written for it, ``(updatedAt, picker_positions)``, or None (nothing yet, or a record drawn
    at boot not known); ``updated_at`` its stored thread's ``updatedAt`` now (None: no stored thread,
    the record is removed); ``pickers``: the live ``picker_positions``. Due when the thread changed,
    or when the pickers did while the thread did not (history's tree arrived, DESIGN.md §13, §17)."""
    if written is None or written[0] != updated_at:
        return True
    return updated_at is not None and written[1] != pickers


def encode_record(record: PaintRecord) -> str:
    """Compact JSON of ``record`` (empty ``a``/``c`` and null ``x`` left out), non-ASCII kept literal and
    a lone surrogate escaped as ``JSON.stringify`` does (``app.store.jsjson.js_json``), so a stored text
    holding one is painted exactly as the live view shows it (pydantic's encoder refuses it)."""
    return js_json(record.model_dump(mode="json", exclude_defaults=True))


# ---- typing before ready ----------------------------------------------------------------


class PendingSend(BaseModel):
    """The composer's message before ready (``sessionStorage[PENDING_KEY]``): ``state`` ``queued``
    (Send was pressed: Python sends it once when ready) or ``draft`` (the page was reloaded
    before ready: it is back in the composer, sent only when the user sends it)."""

    model_config = ConfigDict(strict=True, defer_build=True)  # built at first use, after ready (§13)

    stageId: str
    text: str
    state: Literal["queued", "draft"]


def parse_pending(text: Any) -> PendingSend | None:
    """The pending message in ``text`` (JSON), or ``None`` for anything else (never raises)."""
    if not isinstance(text, str):
        return None
    try:  # json.loads, as in ``validate_record``: the text may hold a lone surrogate
        return PendingSend.model_validate(json.loads(text))
    except (ValidationError, ValueError, TypeError):
        return None


def in_flight_text(messages: list[Message], stored: list[dict] | None = None) -> str | None:
    """The text of the user message a running turn answers: the last user message of ``messages``
    when only assistant messages follow it (its text parts joined by blank lines); ``None`` when there
    is none, it has no text, or ``stored`` (the course's stored slim messages) holds it by id: a
    regenerated answer's question, which a reload shows as stored (a draft of it, sent again, asked
    it a second time). Kept as a draft while the turn runs (``app.browser.paint``).

    >>> from app.model import Message, TextPart
    >>> q = Message(id="q", role="user", content=[TextPart(text="why?")])
    >>> in_flight_text([q]), in_flight_text([q], [{"id": "q", "role": "user"}])
    ('why?', None)
    """
    for message in reversed(messages):
        if message.role == "user":
            if stored and message.id and any(isinstance(m, dict) and m.get("id") == message.id for m in stored):
                return None
            texts = [part.text for part in message.content if isinstance(part, TextPart)]
            return "\n\n".join(texts) if any(t.strip() for t in texts) else None
        if message.role != "assistant":
            return None
    return None


def pending_to_send(pending: PendingSend | None, stage_id: str | None) -> str | None:
    """The text to send once ready: a ``queued`` message of the shown course with some text;
    ``None`` otherwise (a draft stays in the composer; another course's message is not sent
    here). The caller removes the entry before sending, so it is sent once (DESIGN.md §13).

    >>> pending_to_send(PendingSend(stageId="a", text="hi", state="queued"), "a")
    'hi'
    >>> pending_to_send(PendingSend(stageId="a", text="hi", state="draft"), "a") is None
    True
    """
    if pending is None or pending.state != "queued" or pending.stageId != stage_id or not pending.text.strip():
        return None
    return pending.text

