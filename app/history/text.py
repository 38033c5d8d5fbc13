"""Text rules of history: titles, search folding and snippets, time labels (DESIGN.md §9).

- ``title_of``: the first user text, whitespace collapsed, cut at 50 grapheme
  clusters (extended grapheme clusters of UAX #29 through ``pyuegc``, a
  pure-Python wheel installed on first use, never at start-up); ``None``
  without user text (the view shows the localized "Untitled conversation").
- ``fold``: the search folding of DESIGN.md §14 (full case folding, Turkish
  dotted/dotless I, NFKC, accents ignored); ``fold_map`` is the same folding
  with the anchors that take a position in the folded text back to the text.
- ``snippet``: a window around the first match, split as (before, match, after)
  on grapheme-cluster boundaries of the original text.
- ``relative_label``: which ``Intl`` label a time gets (just now / minutes /
  hours / days / a date after 7 days; a future time is "just now").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from app.json_steps import run_steps
from app.projection import is_status_marker

__all__ = ["TITLE_GRAPHEMES", "copy_title", "cut_title", "shown_title", "fold", "fold_map", "fold_map_steps",
           "plain_text", "plain_text_steps", "relative_label", "relative_label_until", "snippet", "source_index",
           "title_of"]

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


def cut_title(text: str, *, graphemes: Callable[[str], list[str]] = _graphemes, limit: int = TITLE_GRAPHEMES) -> str:
    """A title given as text (an imported ``taskName``) under the rule of every title (DESIGN.md §9):
    lone surrogates replaced, whitespace collapsed, at most ``limit`` grapheme clusters (then "…";
    ``TITLE_GRAPHEMES`` for a title made of a question, ``app.history.names.NAME_GRAPHEMES`` for a
    name a person gave, §18). A title this rule already cut (``limit`` clusters and "…") is kept as
    it is, so an export imports back unchanged. ``""`` for a blank text (the view shows "Untitled
    conversation")."""
    collapsed = " ".join(clean(text).split())
    if len(collapsed) <= limit + 1:  # at most ``limit`` clusters, or ``limit`` and the cut mark
        if len(collapsed) <= limit or collapsed.endswith("…"):
            return collapsed
    head = collapsed[: (limit + 1) * 8]
    clusters = list(head) if _SIMPLE.match(head) else graphemes(head)
    if len(head) == len(collapsed) and (len(clusters) <= limit or (
            len(clusters) == limit + 1 and clusters[-1] == "…")):
        return collapsed
    return "".join(clusters[:limit]) + "…"


_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""Explicit bidi embeddings, overrides and isolates (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI)."""


def shown_title(text: str) -> str:
    """``text`` (a title, a snippet piece) as the list draws it: without explicit bidi embeddings,
    overrides and isolates, so a right-to-left override cannot draw a title reversed ("invoice‮gpj.exe"
    reading "invoiceexe.jpg") nor spill into the rest of its row; the marks (LRM, RLM, ALM) stay, they
    reorder nothing around them. The stored title is left as it is.

    >>> shown_title("invoice\u202egpj.exe")
    'invoicegpj.exe'
    """
    return _BIDI_CONTROLS.sub("", text) if _BIDI_CONTROLS.search(text) else text


_NUMBERED = re.compile(r"(.*) \((\d{1,9})\)\Z", re.DOTALL)


def copy_title(title: str, *, graphemes: Callable[[str], list[str]] = _graphemes) -> str:
    """The title of a copy of a conversation titled ``title`` (a restored conversation that diverged
    from the one kept here is added beside it, DESIGN.md §14), told apart by a number: "Title (2)",
    and "Title (3)" for a copy of "Title (2)". It keeps the rule of every title (``cut_title``, at most
    ``TITLE_GRAPHEMES`` clusters): a long title is cut ("…") to leave room for the number. ``""``
    (untitled: the view names it) stays ``""``.

    >>> copy_title("Hello"), copy_title("Hello (2)")
    ('Hello (2)', 'Hello (3)')
    """
    title = cut_title(title, graphemes=graphemes)
    if not title:
        return ""
    numbered = _NUMBERED.match(title)
    base, number = (numbered.group(1), int(numbered.group(2)) + 1) if numbered else (title, 2)
    suffix = f" ({number})"
    room = TITLE_GRAPHEMES - len(suffix)
    if len(base) <= room or _SIMPLE.match(base):
        clusters = list(base)  # no more clusters than code points: nothing to segment
    else:
        try:
            clusters = graphemes(base)
        except ImportError:  # the segmenter is not loaded in this page (a backup restore): code points
            clusters = list(base)  # are never fewer than clusters, so the cut still keeps the rule
    if len(clusters) > room:
        if clusters[-1] == "…":
            clusters.pop()
        base = "".join(clusters[: room - 1]) + "…"
    return base + suffix


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
    return run_steps(plain_text_steps(messages, slice_chars=0))


CLEAN_SLICE_CHARS = 256_000
"""Characters of a text part ``plain_text_steps`` cleans between two of its yields."""


def plain_text_steps(messages: Sequence[dict[str, Any]], *, slice_chars: int = CLEAN_SLICE_CHARS):
    """``plain_text`` as a generator that yields (``None``) after each ``slice_chars`` characters of
    a long text part (``0``: never), so a message of millions of characters (an import, DESIGN.md
    §14) is cleaned without a long task; its return value is ``plain_text(messages)``. ``clean``
    replaces each surrogate on its own, so a part cleaned slice by slice is the part cleaned whole."""
    lines = []
    for message in messages:
        for part in message.get("content") or [] if isinstance(message, dict) else []:
            if (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                    and not is_status_marker(part)):
                text = part["text"]
                if not slice_chars or len(text) <= slice_chars:
                    lines.append(clean(text))
                    continue
                pieces = []
                for at in range(0, len(text), slice_chars):
                    pieces.append(clean(text[at:at + slice_chars]))
                    yield
                lines.append("".join(pieces))
    return "\n".join(lines)


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_DOTLESS_I = str.maketrans({"ı": "i"})
_PIECES: dict[str, str] = {}  # folded form of each piece met (a character with its marks, mostly)


def _joins(char: str) -> bool:
    """True for a character that normalization binds to the one before it: a combining mark (any
    category M, any non-zero combining class) or a Hangul medial/final jamo."""
    return unicodedata.category(char)[0] == "M" or unicodedata.combining(char) > 0 or "\u1160" <= char <= "\u11ff"


def _fold_piece(piece: str) -> str:
    """The folding of one piece of text (§14): NFKC (full-width forms, ligatures), full case folding
    (``casefold``: "ß" and "ẞ" → "ss"), dotless ı → i (so I, ı, İ and i all meet at "i", as
    "İ".casefold() is "i" + U+0307), then NFD without combining marks (accents ignored), recomposed."""
    folded = unicodedata.normalize("NFKC", piece).casefold().translate(_DOTLESS_I)
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", bare)


def _pieces(text: str):
    """``text`` as ``(piece, folded piece)`` pairs whose foldings concatenate to ``fold(text)``: ASCII
    runs lower-cased at once, text that folds to itself as it is, and every other character with the
    marks it carries folded on its own (normalization never reaches across those boundaries)."""
    at = 0
    for run in _NON_ASCII.finditer(text):
        start = run.start()
        if start > at and _joins(text[start]):
            start -= 1  # the ASCII letter a leading mark belongs to goes with it
        if start > at:
            yield text[at:start], text[at:start].lower()
        yield from _split(text[start:run.end()])
        at = run.end()
    if at < len(text):
        yield text[at:], text[at:].lower()


def _split(chunk: str):
    """``_pieces`` of a non-ASCII chunk: as it is when it folds to itself, else halved (never before a
    character that joins the one before it) until each changed piece is one character with its marks."""
    folded = _PIECES.get(chunk) if len(chunk) <= 4 else None
    if folded is None:
        folded = _fold_piece(chunk)
        if len(chunk) <= 4 and len(_PIECES) < 65_536:  # bounded: the short pieces of real text are few
            _PIECES[chunk] = folded
    if folded == chunk:
        yield chunk, chunk
        return
    middle = len(chunk) // 2
    while middle < len(chunk) and _joins(chunk[middle]):
        middle += 1
    if middle == len(chunk):
        middle = len(chunk) // 2
        while middle > 0 and _joins(chunk[middle]):
            middle -= 1
    if middle == 0:  # one character with its marks
        yield chunk, folded
        return
    yield from _split(chunk[:middle])
    yield from _split(chunk[middle:])


def _changes(text: str) -> dict[str, str] | None:
    """Each distinct non-ASCII character of ``text`` whose folding is not itself, with its folding
    (each folded once, then remembered), or None when ``text`` holds a character that joins the one
    before it (then only ``_pieces`` folds it right)."""
    changes = {}
    for char in set(text):
        if char.isascii():
            continue
        done = _PIECES.get(char)
        if done is None:
            if _joins(char):
                return None
            done = _fold_piece(char)
            if len(_PIECES) < 65_536:
                _PIECES[char] = done
        if done != char:
            changes[char] = done
    return changes


def _by_character(text: str, changes: dict[str, str]) -> tuple[str, list[list[int]]]:
    """``fold_map`` of text whose characters fold one by one: the changed ones replaced (a C-speed
    scan, Python only at each of them), then ASCII lower-cased (every other character is its own
    lower case once ``changes`` are out: ``casefold`` covers ``lower``)."""
    if not changes:
        return text.lower(), []
    out, anchors, last, drift = [], [], 0, 0
    for match in re.finditer("[" + "".join(map(re.escape, changes)) + "]", text):
        folded = changes[match.group()]
        out += (text[last:match.start()], folded)
        last = match.end()
        if len(folded) != 1:
            drift += len(folded) - 1
            anchors.append([last + drift, last])
    out.append(text[last:])
    return "".join(out).lower(), anchors


def fold(text: str) -> str:
    """The search folding of DESIGN.md §14, one function for the index and the keyword: full Unicode
    case folding ("STRASSE" and "Straße" → "strasse"), Turkish dotted/dotless I both ways ("İstanbul",
    "ISTANBUL", "ıstanbul" → "istanbul"), compatibility forms (NFKC: full-width letters, ligatures),
    accents ignored (NFD without combining marks). Lengths change: ``fold_map`` maps positions back."""
    return fold_map(text)[0]


def fold_map(text: str) -> tuple[str, list[list[int]]]:
    """``(fold(text), anchors)``: ``anchors`` are ``[folded index, text index]`` pairs, sorted, one
    wherever the two offsets start to differ by another amount; a folded position ``p`` comes from
    ``text`` near ``source_index(anchors, p)`` (exact at piece starts). ``[]`` when every index agrees."""
    if text.isascii():
        return text.lower(), []
    changes = _changes(text)
    if changes is not None:
        return _by_character(text, changes)
    out, anchors, source, target = [], [], 0, 0
    for piece, folded in _pieces(text):
        out.append(folded)
        source, target = source + len(piece), target + len(folded)
        if len(piece) != len(folded):
            anchors.append([target, source])
    return "".join(out), anchors


FOLD_SLICE_CHARS = 64_000
"""Characters of text ``fold_map_steps`` folds between two of its yields."""


def fold_map_steps(text: str, *, slice_chars: int = FOLD_SLICE_CHARS):
    """``fold_map`` as a generator that yields (``None``) between slices of about ``slice_chars``
    characters, so a text of millions of characters (an imported message, DESIGN.md §14) is folded
    without a long task; its return value is ``fold_map(text)``, exactly. The text is cut only before
    a character that joins nothing before it (``_joins``: normalization never reaches across such a
    boundary, as ``_pieces`` relies on), and each slice's anchors are moved by the slices before it."""
    if len(text) <= slice_chars:
        return fold_map(text)
    out, anchors, source, target = [], [], 0, 0
    while source < len(text):
        end = min(source + max(slice_chars, 1), len(text))
        while end < len(text) and _joins(text[end]):
            end += 1
        folded, moved = fold_map(text[source:end])
        anchors += [[at + target, from_ + source] for at, from_ in moved]
        out.append(folded)
        source, target = end, target + len(folded)
        if source < len(text):
            yield
    return "".join(out), anchors


def source_index(anchors: Sequence[Sequence[int]], position: int) -> int:
    """The index in the text of folded ``position`` (``fold_map``'s anchors; the page's adapter
    applies the same rule when it cuts an excerpt)."""
    source = position
    for folded_at, text_at in anchors:
        if folded_at > position:
            break
        source = text_at + (position - folded_at)
    return source


def snippet(excerpt: str, needle: str, *, cut_before: bool, cut_after: bool,
            graphemes: Callable[[str], list[str]] | None = None) -> tuple[str, str, str] | None:
    """``(before, match, after)`` of the first match of the folded ``needle`` in ``excerpt`` (original
    text), "…" where cut. The match is whole grapheme clusters of the original text (an accent folded
    away stays marked with its letter): each cluster is folded on its own, and the clusters the match
    touches are marked. ``graphemes``: the segmenter (``pyuegc``), needed only when ``excerpt`` is not
    made of characters that stand alone. Lone surrogates at the cut edges are dropped.
    """
    if not needle:
        return None
    if graphemes is None:
        graphemes = _graphemes
    clusters = list(excerpt) if _SIMPLE.match(excerpt) else graphemes(excerpt)
    owner: list[int] = []
    folded = []
    for index, cluster in enumerate(clusters):
        piece = fold(cluster)
        folded.append(piece)
        owner.extend([index] * len(piece))
    at = "".join(folded).find(needle)
    if at < 0:
        return None
    first, last = owner[at], owner[at + len(needle) - 1]
    before, match, after = "".join(clusters[:first]), "".join(clusters[first:last + 1]), "".join(clusters[last + 1:])
    before, after = clean(_trim_lone(before)), clean(_trim_lone(after))
    return ("…" if cut_before else "") + before, match, after + ("…" if cut_after else "")


def needs_clusters(excerpt: str) -> bool:
    """True when ``snippet`` of ``excerpt`` needs the grapheme segmenter."""
    return not _SIMPLE.match(excerpt)


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


def relative_label_until(then_ms: int, now_ms: int) -> int | None:
    """The epoch ms at which ``relative_label(then_ms, ·)`` first reads otherwise than at ``now_ms``
    (a boundary of its unit); ``None`` when it never does (a date: 7 days or older)."""
    age = now_ms - then_ms
    if age < _MINUTE:
        return then_ms + _MINUTE
    for unit, limit in ((_MINUTE, _HOUR), (_HOUR, _DAY), (_DAY, 7 * _DAY)):
        if age < limit:
            return then_ms + (age // unit + 1) * unit
    return None
