"""Naming and pinning a conversation (DESIGN.md §18): the one place of their rules. Pure Python.

- ``named``: what a rename stores: the text without control characters and noncharacters
  (``printable``), without bidi controls (an override would draw it
  reversed wherever it is not dropped: a Markdown heading), whitespace collapsed, at most ``NAME_GRAPHEMES``
  grapheme clusters cut like §9's titles (``app.history.text.cut_title``: never half an emoji, then
  "…"); an empty one, or one of invisible characters only (format characters: zero-width,
  soft hyphen), gives back the first-question title (``title_of``, §9);
- ``renamed_meta`` / ``pinned_meta``: a meta with its name or pin changed and the field's change
  time (``TaskMeta.changedAt``) set; neither moves ``updatedAt`` (the list's recency is the
  conversation's last turn, not its name's);
- ``merged_names``: two devices' metas of one conversation: each field takes its later change (§16);
- ``unless_later``: a change made here over the stored meta, each field kept as stored where the stored
  change is later (another tab's rename or pin made after this one but written first);
- ``pinned_first``: a list's pinned conversations, most recently pinned first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from app.history.records import TaskMeta
from app.history.text import _graphemes, cut_title, shown_title, title_of

__all__ = ["NAME_GRAPHEMES", "merged_names", "named", "pinned_first", "pinned_meta", "printable", "renamed_meta",
           "unless_later"]

NAME_GRAPHEMES = 200
"""The most grapheme clusters a name a person gives keeps (DESIGN.md §18)."""

_UNPRINTABLE = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufdd0-\ufdef"
                          + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(17))
                          + "]")
"""C0 and C1 control characters that are not white space (those collapse to one space as any white
space: tab, newline, U+001C-U+001F, NEL) and the 66 noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF)."""


def printable(text: str) -> str:
    r"""``text`` (a title: a rename, an imported ``taskName``) without C0/C1 control characters and
    noncharacters (DESIGN.md §18: a NUL or an escape stored in a title reached every list, export and
    synced copy); white-space controls are kept for the collapse that follows.

    >>> printable("a\x00b\ufffec\nd")
    'abc\nd'
    """
    return _UNPRINTABLE.sub("", text) if _UNPRINTABLE.search(text) else text


def named(text: str, messages: Sequence[dict[str, Any]], *,
          graphemes: Callable[[str], list[str]] = _graphemes) -> str:
    """The title stored for a rename to ``text`` of a conversation holding ``messages`` (slim, §3):
    ``text`` collapsed and cut at ``NAME_GRAPHEMES`` clusters ("…" after), or, when blank, the
    first-question title (``title_of``: 50 clusters), ``""`` when there is no user text either.
    ``graphemes``: the segmenter (pyuegc's, loaded on first use; the caller loads it in the page).

    >>> named("  Exam   plan ", []), named("", [{"role": "user", "content": [{"type": "text", "text": "Why?"}]}])
    ('Exam plan', 'Why?')
    """
    name = cut_title(shown_title(printable(text)), graphemes=graphemes, limit=NAME_GRAPHEMES)
    if not any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in name):  # nothing to see
        name = ""
    return name if name else (title_of(messages, graphemes=graphemes) or "")


def renamed_meta(meta: TaskMeta, text: str, messages: Sequence[dict[str, Any]], *, now: int,
                 graphemes: Callable[[str], list[str]] = _graphemes) -> TaskMeta:
    """``meta`` renamed to ``named(text, messages)``, its name's change time ``now`` (epoch ms)."""
    times = meta.changedAt.model_copy(update={"taskName": now})
    return meta.model_copy(update={"taskName": named(text, messages, graphemes=graphemes), "changedAt": times})


def pinned_meta(meta: TaskMeta, pinned: bool, *, now: int) -> TaskMeta:
    """``meta`` pinned (``pinnedAt`` = ``now``; one already pinned keeps its time, so its place) or
    unpinned (``pinnedAt`` None); the pin's change time is ``now`` either way."""
    times = meta.changedAt.model_copy(update={"pinned": now})
    at = (meta.pinnedAt if meta.pinnedAt is not None else now) if pinned else None
    return meta.model_copy(update={"pinnedAt": at, "changedAt": times})


def _later(a: TaskMeta, b: TaskMeta, field: str, value: Callable[[TaskMeta], Any]) -> TaskMeta:
    """Whichever of ``a``, ``b`` changed ``field`` later; at the same time, the one whose value sorts
    higher (both devices then pick the same, whichever merges)."""
    ta, tb = getattr(a.changedAt, field), getattr(b.changedAt, field)
    if ta != tb:
        return a if ta > tb else b
    return a if repr(value(a)) >= repr(value(b)) else b


def merged_names(kept: TaskMeta, other: TaskMeta) -> TaskMeta:
    """``kept`` with its name and pin each taken from whichever of ``kept`` and ``other`` changed it
    later (DESIGN.md §16, §18: a rename on one device and a pin on the other both arrive on both).
    Every other field is ``kept``'s.

    >>> from app.history.records import FieldTimes
    >>> a = TaskMeta(taskId="task_20260101_abcdef", taskName="a", stageId="s", createdAt=1, updatedAt=1,
    ...              changedAt=FieldTimes(taskName=5))
    >>> b = a.model_copy(update={"taskName": "b", "pinnedAt": 9, "changedAt": FieldTimes(taskName=3, pinned=9)})
    >>> m = merged_names(a, b); (m.taskName, m.pinnedAt)
    ('a', 9)
    """
    name = _later(kept, other, "taskName", lambda m: m.taskName)
    pin = _later(kept, other, "pinned", lambda m: m.pinnedAt)
    times = kept.changedAt.model_copy(update={"taskName": name.changedAt.taskName, "pinned": pin.changedAt.pinned})
    merged = kept.model_copy(update={"taskName": name.taskName, "pinnedAt": pin.pinnedAt, "changedAt": times})
    return kept if merged == kept else merged


def unless_later(stored: TaskMeta, changed: TaskMeta) -> TaskMeta:
    """``changed`` (``stored`` renamed or pinned here: ``renamed_meta``, ``pinned_meta``) with its name
    and pin each given back to ``stored``'s where ``stored`` changed that field later than ``changed``
    did: another tab's rename made after this one but written first stays (DESIGN.md §18, the later
    change of each field wins; §5). At the same time, ``changed`` (the change being made) wins.

    >>> from app.history.records import FieldTimes
    >>> held = TaskMeta(taskId="task_20260101_abcdef", taskName="later", stageId="s", createdAt=1, updatedAt=1,
    ...                 changedAt=FieldTimes(taskName=9))
    >>> unless_later(held, renamed_meta(held, "earlier", [], now=7)).taskName
    'later'
    """
    name = stored if stored.changedAt.taskName > changed.changedAt.taskName else changed
    pin = stored if stored.changedAt.pinned > changed.changedAt.pinned else changed
    times = changed.changedAt.model_copy(update={"taskName": name.changedAt.taskName, "pinned": pin.changedAt.pinned})
    kept = changed.model_copy(update={"taskName": name.taskName, "pinnedAt": pin.pinnedAt, "changedAt": times})
    return stored if kept == stored else kept


def pinned_first(metas: Iterable[Any]) -> list[Any]:
    """The pinned of ``metas`` (a ``pinnedAt`` that is not None), most recently pinned first (then by
    task id, so the order is the same on every read)."""
    pinned = [m for m in metas if getattr(m, "pinnedAt", None) is not None]
    return sorted(pinned, key=lambda m: (-m.pinnedAt, m.taskId))
