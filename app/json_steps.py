"""Compact JSON of a list, encoded item by item with a pause after each big one (a long message
sends without a long main-thread task).

A turn holding a 2 MB message hands IndexedDB about 6 MB of JSON (the messages,
their plain text and its folded form, DESIGN.md §9); encoded in one go that is
one main-thread task of 100–300 ms in Pyodide. ``dumps_in_steps`` writes the
same text, ``json.dumps(items, ensure_ascii=False, separators=(",", ":"),
allow_nan=False)``, but awaits ``pause()`` after every item whose JSON is longer
than ``step_chars``, so the browser can run other tasks (input, paint) between
them. Small payloads never pause: their write reaches the database exactly as
before.

Example::

    >>> import asyncio
    >>> asyncio.run(dumps_in_steps([["put", "t", {"a": "ü"}], 1]))
    '[["put","t",{"a":"ü"}],1]'
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["LIFT_CHARS", "STEP_CHARS", "STEP_MS", "dumps_in_steps", "lift_long_texts"]

STEP_CHARS = 256 * 1024
"""Items whose JSON is longer than this (characters) are followed by a pause."""
STEP_MS = 8
"""With a clock, the encoding pauses once this many ms went by since the last pause (DESIGN.md §16)."""


async def dumps_in_steps(items: Sequence[Any], *, step_chars: int = STEP_CHARS,
                         pause: Callable[[], Awaitable[Any]] = lambda: asyncio.sleep(0),
                         clock: Callable[[], float] | None = None, step_ms: float = STEP_MS) -> str:
    """The compact JSON text of the list ``items`` (non-ASCII literal), pausing after big items and,
    with ``clock`` (ms), after the item that ends ``step_ms`` of encoding since the last pause: many
    small items (the ten conversations of a sync slice, about 160,000 characters of records) are
    encoded in pieces too. A write encoded within ``step_ms`` never pauses.

    Raises what ``json.dumps`` raises (``TypeError`` for a value JSON has not,
    ``ValueError`` for NaN or infinity).
    """
    pieces = []
    since = clock() if clock is not None else 0.0
    for item in items:
        piece = json.dumps(item, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        pieces.append(piece)
        if len(piece) > step_chars or (clock is not None and clock() - since >= step_ms):
            await pause()
            since = clock() if clock is not None else 0.0
    return "[" + ",".join(pieces) + "]"


LIFT_CHARS = 65_536
"""Strings at least this long (characters) leave a write's JSON text (``lift_long_texts``)."""


def lift_long_texts(values: list, *, min_chars: int = LIFT_CHARS) -> tuple[list, list[tuple[list, str]]]:
    """``(kept, lifted)``: ``values`` (JSON-shaped: dicts, lists, tuples, strings, numbers) with
    every string of at least ``min_chars`` characters set to ``None``, and those strings as ``(path,
    text)``, ``path`` the keys and indexes that lead to it from ``values``. A write of an imported
    message of millions of characters (its plain text and folding too, DESIGN.md §14) sends the
    rest as JSON and each long string to the page's store on its own, in pieces, which puts it back
    at its path: encoding it as JSON, decoding and parsing it again, held the page for seconds in
    one task. Containers on a lifted path are copied (tuples become lists); ``values`` is left as
    it was, and when nothing is lifted it is returned itself."""
    lifted: list[tuple[list, str]] = []
    _find_long(values, [], min_chars, lifted)
    if not lifted:
        return values, []
    kept: Any = list(values)
    for path, _ in lifted:
        at = kept
        for key in path[:-1]:
            inner = at[key]
            at[key] = dict(inner) if isinstance(inner, dict) else list(inner)
            at = at[key]
        at[path[-1]] = None
    return kept, lifted


def _find_long(value: Any, path: list, min_chars: int, into: list) -> None:
    """Each string of ``value`` of at least ``min_chars`` characters, with its path, into ``into``
    (``path``: the keys that lead to ``value``, appended to and taken back as the walk goes)."""
    if isinstance(value, str):
        if len(value) >= min_chars:
            into.append((list(path), value))
        return
    pairs = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, inner in pairs:
        if isinstance(inner, (str, dict, list, tuple)) and not (isinstance(inner, str) and len(inner) < min_chars):
            path.append(key)
            _find_long(inner, path, min_chars, into)
            path.pop()
