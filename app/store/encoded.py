"""A stored thread's JSON built message by message, and long texts encoded ahead in slices
(DESIGN.md §3, §16: nothing blocks the main thread over 50 ms).

``thread_json`` writes exactly ``js_json({"messages": messages, "updatedAt": ms})`` (what
``JSON.stringify`` writes, ``app.store.jsjson``), but as the join of one JSON text per message:
a save reuses the texts of the messages the thread it replaces already held (``like``), so the
end of a turn encodes only the turn's own messages, never the whole thread again.

A text of at least ``LONG_CHARS`` characters (a pasted document, a reply of megabytes) is the
costly part of those: ``encode_ahead_steps`` encodes it beforehand as a generator of steps
(``app.json_steps.run_paused`` gives the page its turn between slices of ``SLICE_CHARS``),
and keeps the result (its JSON string literal and UTF-16 length) for the next ``thread_json``
that meets the same text, which takes it (it is kept no longer). Slices never split a surrogate pair, so the pieces join to exactly the
text ``js_json`` writes for the whole.

Example::

    >>> thread_json([{"role": "user", "content": []}], 5)[0]
    '{"messages":[{"role":"user","content":[]}],"updatedAt":5}'
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Sequence
from typing import Any

from app.storage import utf16_len
from app.store.jsjson import js_json

__all__ = ["AHEAD_CHARS", "LONG_CHARS", "SLICE_CHARS", "Encoded", "encode_ahead_steps", "message_json",
           "text_literal_steps", "thread_json"]

Json = Any
Encoded = tuple[str, int]
"""A JSON text and its length in UTF-16 units (what offsets into the stored value count)."""

LONG_CHARS = 65_536
"""Texts at least this long (characters) are encoded on their own, and may be encoded ahead."""
SLICE_CHARS = 262_144
"""Characters of a long text encoded per step of ``text_literal_steps``."""
AHEAD_CHARS = 24_000_000
"""The most characters of texts kept encoded ahead (the oldest are let go first)."""

_ahead: dict[str, Encoded] = {}
"""Texts encoded ahead, oldest first: text → its JSON string literal and that literal's UTF-16 length."""
_OPEN, _SEP = '{"messages":[', '],"updatedAt":'


def _cut(text: str, at: int) -> int:
    """A slice end at or after ``at`` that does not fall between the two halves of a surrogate pair."""
    if 0 < at < len(text) and "\ud800" <= text[at - 1] <= "\udbff" and "\udc00" <= text[at] <= "\udfff":
        return at + 1
    return at


def text_literal_steps(text: str, *, slice_chars: int = SLICE_CHARS) -> Generator[None, None, Encoded]:
    """``(js_json(text), its UTF-16 length)`` as a generator of steps that yields after each slice of
    ``slice_chars`` characters of ``text`` (none for a text that short)."""
    pieces, units, at = [], 2, 0
    while at < len(text):
        end = _cut(text, min(at + slice_chars, len(text)))
        piece = js_json(text[at:end])[1:-1]
        pieces.append(piece)
        units += utf16_len(piece)
        at = end
        if at < len(text):
            yield
    return '"' + "".join(pieces) + '"', units


def _long_texts(value: Json, into: list[str]) -> None:
    """Every string value (not key) of ``value`` of at least ``LONG_CHARS`` characters, into ``into``."""
    if isinstance(value, str):
        if len(value) >= LONG_CHARS:
            into.append(value)
    elif isinstance(value, dict):
        for inner in value.values():
            if not isinstance(inner, (int, float, bool)) and inner is not None:
                _long_texts(inner, into)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            if not isinstance(inner, (int, float, bool)) and inner is not None:
                _long_texts(inner, into)


def encode_ahead_steps(messages: Sequence[dict[str, Json]], *,
                       slice_chars: int = SLICE_CHARS) -> Generator[None, None, int]:
    """Encode the long texts of slim ``messages`` ahead of their save, as a generator of steps
    (``text_literal_steps``); returns how many it encoded. Texts already kept are not encoded
    again; the oldest kept ones are let go past ``AHEAD_CHARS`` characters in all."""
    found: list[str] = []
    _long_texts(list(messages), found)
    count = 0
    for text in found:
        if text in _ahead:
            continue
        literal = yield from text_literal_steps(text, slice_chars=slice_chars)
        _ahead[text] = literal
        count += 1
        while sum(len(t) for t in _ahead) > AHEAD_CHARS and len(_ahead) > 1:
            del _ahead[next(iter(_ahead))]
    return count


def _literal(text: str) -> Encoded:
    held = _ahead.pop(text, None)  # taken once: the thread keeps its messages' JSON from then on
    if held is not None:
        return held
    encoded = js_json(text)
    return encoded, utf16_len(encoded)


def _lifted(value: Json, mark: str, texts: list[str]) -> Json:
    """``value`` with each long string value replaced by ``mark + index`` (its index in ``texts``)."""
    if isinstance(value, str):
        if len(value) >= LONG_CHARS:
            texts.append(value)
            return f"{mark}{len(texts) - 1}"
        return value
    if isinstance(value, dict):
        return {key: _lifted(inner, mark, texts) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lifted(inner, mark, texts) for inner in value]
    return value


def message_json(message: Json) -> Encoded:
    """``js_json(message)`` and its UTF-16 length; each long text in it taken as encoded ahead
    (``encode_ahead_steps``) when it was, else encoded on its own. Raises as ``js_json`` does."""
    found: list[str] = []
    _long_texts(message, found)
    if not found:
        encoded = js_json(message)
        return encoded, utf16_len(encoded)
    nonce = os.urandom(8).hex()
    texts: list[str] = []
    skeleton = js_json(_lifted(message, f"\u0000{nonce}:", texts))
    pieces = re.split(f'"\\\\u0000{nonce}:(\\d+)"', skeleton)
    out, units = [], 0
    for at, piece in enumerate(pieces):
        if at % 2 == 0:
            out.append(piece)
            units += utf16_len(piece)
        else:
            literal, literal_units = _literal(texts[int(piece)])
            out.append(literal)
            units += literal_units
    return "".join(out), units


def thread_json(messages: Sequence[Json], updated_at: int,
                like: tuple[Sequence[Json], Sequence[Encoded]] | None = None) -> tuple[str, int, list[Encoded]]:
    """``(js_json({"messages": messages, "updatedAt": updated_at}), its UTF-16 length, each message's
    Encoded)``. ``like``: another thread's messages and their ``Encoded``, reused for each message
    equal to the one at the same place there (the thread this save replaces). Raises as ``js_json``."""
    held_messages, held = like if like is not None else ((), ())
    parts: list[Encoded] = []
    for at, message in enumerate(messages):
        if at < len(held) and at < len(held_messages) and (held_messages[at] is message
                                                           or held_messages[at] == message):
            parts.append(held[at])
        else:
            parts.append(message_json(message))
    tail = _SEP + js_json(updated_at) + "}"
    pieces = [_OPEN]
    for at, (piece, _) in enumerate(parts):
        pieces.extend((",", piece) if at else (piece,))
    pieces.append(tail)
    text = "".join(pieces)  # one copy of a reply of megabytes, not one per concatenation
    units = len(_OPEN) + sum(u for _, u in parts) + max(len(parts) - 1, 0) + len(tail)
    return text, units, parts
