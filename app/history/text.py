"""Text rules of history: titles, search folding and snippets, time labels (DESIGN.md §9).

- ``title_of``: the first user text, whitespace collapsed, cut at 50 grapheme
  clusters (extended grapheme clusters of UAX #29 through ``pyuegc``, a
  pure-Python wheel installed on first use, never at start-up); ``None``
  without user text (the view shows the localized "Untitled conversation").
- ``fold``: case folding that keeps every index (one character → one
  character), so positions found in the folded text are positions in the text.
- ``snippet``: a window around the first match, split as (before, match, after).
- ``relative_label``: which ``Intl`` label a time gets (just now / minutes /
  hours / days / a date after 7 days; a future time is "just now").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from app.projection import is_status_marker

__all__ = ["TITLE_GRAPHEMES", "cut_title", "fold", "plain_text", "relative_label", "snippet", "title_of"]

TITLE_GRAPHEMES = 50
_LONE = re.compile("[\ud800-\udfff]")
_MINUTE, _HOUR, _DAY = 60_000, 3_600_000, 86_400_000
# Characters that are a grapheme cluster on their own whatever surrounds them (UAX #29: none is
# Extend, SpacingMark, Prepend, ZWJ, Regional_Indicator, a Hangul jamo or a control). Text made only
# of these is cut by code point, without loading the segmenter (Latin, Greek, Cyrillic, Arabic
# letters, CJK ideographs, kana, Hangul syllables, common punctuation).
_SIMPLE = re.compile("[\x20-\x7e\u00a0-\u02ff\u0370-\u03ff\u0400-\u0482\u048a-\u052f\u0621-\u064a"
                     "\u0660-\u0669\u2010-\u2027\u2030-\u205e\u3000-\u3029\u3030-\u303f\u3041-\u3096"
                     "\u309b-\u30ff\u4e00-\u9fff\uac00-\ud7a3\uff01-\uff9d]*\\Z")


def _graphemes(text: str) -> list[str]:
    from pyuegc import EGC  # imported on first use (installed on demand in the browser)

    return EGC(text)


def clean(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (they cannot be encoded, shown or exported)."""
    return _LONE.sub("\ufffd", text) if _LONE.search(text) else text


def user_texts(messages: Sequence[dict[str, Any]]):
    """Text of user messages' text parts, in order (slim messages, DESIGN.md §3)."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            for part in message.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                    yield part["text"]


_WORD = re.compile(r"\S+")  # \s is str.isspace, as str.split() splits


def first_user_text(messages: Sequence[dict[str, Any]], limit: int | None = None) -> str | None:
    """The first non-blank user text, whitespace collapsed (what a title is made of).

    ``limit``: only the first ``limit + 1`` characters of the collapsed text are made (enough to
    tell it is longer than ``limit``), so a 2 MB message costs what its first words cost.
    """
    for text in user_texts(messages):
        if limit is None:
            collapsed = " ".join(clean(text).split())
        else:
            words, size = [], 0
            for word in _WORD.finditer(text):
                words.append(word.group())
                size += len(words[-1]) + 1
                if size > limit + 1:
                    break
            collapsed = clean(" ".join(words)[: limit + 1])
        if collapsed:
            return collapsed
    return None


def needs_segmenter(messages: Sequence[dict[str, Any]]) -> bool:
    """True when the title of ``messages`` needs the grapheme segmenter (not every character stands alone)."""
    return text_needs_segmenter(first_user_text(messages, TITLE_GRAPHEMES * 8))


def text_needs_segmenter(text: str | None) -> bool:
    """True when cutting ``text`` (whitespace already collapsed) at ``TITLE_GRAPHEMES`` clusters needs
    the grapheme segmenter."""
    return text is not None and len(text) > TITLE_GRAPHEMES and not _SIMPLE.match(text[: TITLE_GRAPHEMES * 8])


def cut_title(text: str, *, graphemes: Callable[[str], list[str]] = _graphemes) -> str:
    """A title given as text (an imported ``taskName``) under the rule of every title (DESIGN.md §9):
    lone surrogates replaced, whitespace collapsed, at most ``TITLE_GRAPHEMES`` grapheme clusters (then
    "…"). A title this rule already cut (``TITLE_GRAPHEMES`` clusters and "…") is kept as it is, so an
    export imports back unchanged. ``""`` for a blank text (the view shows "Untitled conversation")."""
    collapsed = " ".join(clean(text).split())
    if len(collapsed) <= TITLE_GRAPHEMES + 1:  # at most 50 clusters, or 50 and the cut mark
        if len(collapsed) <= TITLE_GRAPHEMES or collapsed.endswith("…"):
            return collapsed
    head = collapsed[: (TITLE_GRAPHEMES + 1) * 8]
    clusters = list(head) if _SIMPLE.match(head) else graphemes(head)
    if len(head) == len(collapsed) and (len(clusters) <= TITLE_GRAPHEMES or (
            len(clusters) == TITLE_GRAPHEMES + 1 and clusters[-1] == "…")):
        return collapsed
    return "".join(clusters[:TITLE_GRAPHEMES]) + "…"


def title_of(messages: Sequence[dict[str, Any]], *, graphemes: Callable[[str], list[str]] = _graphemes) -> str | None:
    """The title of a conversation: first non-blank user text, whitespace collapsed, at most
    ``TITLE_GRAPHEMES`` grapheme clusters (then "…"); ``None`` when there is no user text."""
    collapsed = first_user_text(messages, TITLE_GRAPHEMES * 8)  # (one more than ``head`` below holds)
    if collapsed is not None:
        if len(collapsed) <= TITLE_GRAPHEMES:  # fewer code points than the limit: fewer clusters too
            return collapsed
        head = collapsed[: TITLE_GRAPHEMES * 8]  # a cluster is rarely longer; bounds the work on 10,000-char texts
        clusters = list(head) if _SIMPLE.match(head) else graphemes(head)
        if len(clusters) <= TITLE_GRAPHEMES and len(head) == len(collapsed):
            return collapsed
        return "".join(clusters[:TITLE_GRAPHEMES]) + "…"
    return None


def plain_text(messages: Sequence[dict[str, Any]]) -> str:
    """Searchable text of slim messages: every text part, one per line (a reply's status marker,
    ``app.projection.is_status_marker``: stopped, failed or cut, is not text and is left out)."""
    lines = []
    for message in messages:
        for part in message.get("content") or [] if isinstance(message, dict) else []:
            if (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                    and not is_status_marker(part)):
                lines.append(clean(part["text"]))
    return "\n".join(lines)


def fold(text: str) -> str:
    """Lower-case ``text`` character by character, keeping a character whose lower case is longer
    (``İ``), so that ``len(fold(t)) == len(t)`` and indexes agree."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


def snippet(excerpt: str, needle: str, *, cut_before: bool, cut_after: bool) -> tuple[str, str, str] | None:
    """``(before, match, after)`` of the first folded match of ``needle`` in ``excerpt``, "…" where cut.

    Lone surrogates at the cut edges (a window may split a surrogate pair) are dropped.
    """
    at = fold(excerpt).find(needle)
    if at < 0:
        return None
    before, match, after = excerpt[:at], excerpt[at: at + len(needle)], excerpt[at + len(needle):]
    before, after = clean(_trim_lone(before)), clean(_trim_lone(after))
    return ("…" if cut_before else "") + before, match, after + ("…" if cut_after else "")


def _trim_lone(text: str) -> str:
    if text and "\udc00" <= text[0] <= "\udfff":
        text = text[1:]
    if text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]
    return text


def relative_label(then_ms: int, now_ms: int) -> tuple[str, int]:
    """``("now", 0)``, ``("minute"|"hour"|"day", n)`` (n ≥ 1, meaning n ago) or ``("date", 0)``
    after 7 days; a future time (another device's clock) is ``("now", 0)`` (DESIGN.md §9)."""
    age = now_ms - then_ms
    if age < _MINUTE:
        return ("now", 0)
    if age < _HOUR:
        return ("minute", age // _MINUTE)
    if age < _DAY:
        return ("hour", age // _HOUR)
    if age < 7 * _DAY:
        return ("day", age // _DAY)
    return ("date", 0)
