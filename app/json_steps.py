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

__all__ = ["STEP_CHARS", "STEP_MS", "dumps_in_steps"]

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
