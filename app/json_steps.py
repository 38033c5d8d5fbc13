"""Compact JSON of a list, encoded item by item with a pause after each big one (a long message
sends without a long main-thread task); one long JSON text parsed in steps (``loads_in_steps``:
a 10 MB server-sent event reads without one). A generator of steps (it yields ``None`` between
slices of work and returns its result) is run by ``run_steps`` (at once) or ``run_paused`` (a pause
awaited between its slices): the one idiom of sliced work in the house.

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
import os
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any

__all__ = ["LIFT_CHARS", "STEP_CHARS", "STEP_MS", "dumps_in_steps", "lift_long_texts", "loads_in_steps", "run_paused",
           "run_steps"]

STEP_CHARS = 256 * 1024
"""Items whose JSON is longer than this (characters) are followed by a pause."""
STEP_MS = 8
"""With a clock, the encoding pauses once this many ms went by since the last pause (DESIGN.md §16)."""


def run_steps(steps: Generator[None, None, Any]) -> Any:
    """A generator of steps (it yields ``None`` between slices of work) run to the end at once: its
    return value. Errors it raises pass through."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def run_paused(steps: Generator[None, None, Any], pause: Callable[[], Awaitable[None]]) -> Any:
    """A generator of steps run to the end with ``pause()`` awaited between its slices (the page
    gets its turn): its return value. Errors it raises pass through."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        await pause()


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
    (``path``: the keys that lead to ``value``). A container is walked for paths only when it holds
    such a string (``_holds_long``): a turn's records of a long conversation (thousands of messages,
    none long) are looked through once, without a path kept for each of their values."""
    if isinstance(value, str):
        if len(value) >= min_chars:
            into.append((list(path), value))
        return
    pairs = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, inner in pairs:
        if isinstance(inner, str):
            if len(inner) >= min_chars:
                into.append((path + [key], inner))
        elif isinstance(inner, (dict, list, tuple)) and _holds_long(inner, min_chars):
            _find_long(inner, path + [key], min_chars, into)


def _holds_long(value: dict | list | tuple, min_chars: int) -> bool:
    """True when ``value`` (a dict, list or tuple) holds, at any depth, a string of at least
    ``min_chars`` characters."""
    stack = [value]
    while stack:
        container = stack.pop()
        for inner in container.values() if isinstance(container, dict) else container:
            kind = type(inner)  # the exact types first: a JSON value is one of them, and this is the hot loop
            if kind is str:
                if len(inner) >= min_chars:
                    return True
            elif kind is dict or kind is list or kind is tuple:
                stack.append(inner)
            elif isinstance(inner, str):
                if len(inner) >= min_chars:
                    return True
            elif isinstance(inner, (dict, list, tuple)):
                stack.append(inner)
    return False


def loads_in_steps(text: str, *, step_chars: int = STEP_CHARS) -> Generator[None, None, Any]:
    """A generator of steps whose return value is ``json.loads(text)``: it yields ``None`` between
    slices of about ``step_chars`` characters of work, so a caller can give the page its turn
    (a server-sent event of 10 MB, DESIGN.md §12, was one ``json.loads`` of 100–250 ms in Pyodide).

    Each string value of at least ``step_chars`` characters is cut out of the text and decoded
    piece by piece (never inside an escape, never between the two escapes of a surrogate pair);
    the rest, small once those are out, is parsed whole and the strings put back. A text shorter
    than ``step_chars`` is parsed at once, with no step. Raises ``ValueError``
    (``json.JSONDecodeError``) where ``json.loads`` does.
    """
    if len(text) < step_chars:
        return json.loads(text)
    nonce = os.urandom(8).hex()  # a placeholder the text cannot have guessed
    kept: list[str] = []
    lifted: list[tuple[int, int]] = []
    at = since = 0
    while True:
        start = text.find('"', at)
        if start < 0:
            break
        end = start + 1
        while True:  # the closing quote: one not escaped by an odd run of backslashes
            end = text.find('"', end)
            if end < 0:
                return json.loads(text)  # a string that never ends: json.loads says where
            run = end - 1
            while text[run] == "\\":
                run -= 1
            if (end - 1 - run) % 2 == 0:
                break
            end += 1
            if end - since >= step_chars:
                yield
                since = end
        after = end + 1
        while after < len(text) and text[after] in " \t\n\r":
            after += 1
        if end - start > step_chars and not text.startswith(":", after):  # a long value (a key stays)
            kept.append(text[at:start])
            kept.append(f'"\\u0000{nonce}-{len(lifted)}"')
            lifted.append((start + 1, end))
        else:
            kept.append(text[at:end + 1])
        at = end + 1
        if at - since >= step_chars:
            yield
            since = at
    if not lifted:
        return json.loads(text)
    kept.append(text[at:])
    value = json.loads("".join(kept))
    strings = yield from _lifted_strings(text, lifted, nonce, step_chars)
    found: list[str] = []
    value = _put_back(value, strings, found)
    if len(found) != len(strings) or len(set(found)) != len(found):  # a placeholder dropped (a key given
        return json.loads(text)  # twice keeps its last value) or doubled: the text is parsed whole
    return value


def _lifted_strings(text: str, lifted: list[tuple[int, int]], nonce: str,
                   step_chars: int) -> Generator[None, None, dict[str, str]]:
    """The long strings ``loads_in_steps`` cut out of ``text`` (``lifted``: each one's span inside its
    quotes), decoded a piece of about ``step_chars`` characters per step, as placeholder → value."""
    strings = {}
    for number, (start, end) in enumerate(lifted):
        pieces = []
        while start < end:
            cut = _cut(text, start, min(start + step_chars, end), end)
            yield
            pieces.append(json.loads('"' + text[start:cut] + '"'))
            start = cut
        strings[f"\u0000{nonce}-{number}"] = "".join(pieces)
    return strings


def _put_back(value: Any, strings: dict[str, str], found: list[str]) -> Any:
    """``value`` with each string that is a key of ``strings`` replaced by its value (containers
    changed in place), each key met appended to ``found``."""
    if isinstance(value, str):
        if value in strings:
            found.append(value)
            return strings[value]
        return value
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, (str, dict, list)):
                value[key] = _put_back(inner, strings, found)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            if isinstance(inner, (str, dict, list)):
                value[index] = _put_back(inner, strings, found)
    return value


def _cut(text: str, start: int, cut: int, end: int) -> int:
    """Where a piece of the JSON string ``text[start:end]`` that would end at ``cut`` can end: never
    inside an escape (at most 6 characters) nor between the two escapes of a ``\\uD8xx\\uDCxx``
    pair. Backslashes in a run escape each other two by two from the run's start."""
    if cut >= end:
        return end
    last = text.rfind("\\", start, cut)
    if last < cut - 12:
        return cut  # no escape reaches ``cut``: a plain character ends the piece
    run = last
    while run > start and text[run - 1] == "\\":
        run -= 1
    if last < cut - 1 and (last - run) % 2 == 1:
        return cut  # an even run ends before ``cut``: plain characters after it
    if last == cut - 1:
        at = run + 2 * ((cut - run) // 2)  # the run may go on past ``cut``: cut between two escapes
    else:
        at = last  # the escape ``last`` opens (its letter after it) may reach ``cut``
        if text[last + 1] != "u" or last + 6 < cut:
            at = cut
        elif last + 6 == cut and not (_high_escape(text, last, start) and text.startswith("\\u", cut)):
            at = cut
    if text.startswith("\\u", at) and at - 6 >= start and _high_escape(text, at - 6, start):
        at -= 6  # the low half of a pair: the piece ends before the high half
    return at if at > start else end


def _high_escape(text: str, at: int, start: int) -> bool:
    """Whether ``text[at:at + 6]`` is an unescaped ``\\uD800``–``\\uDBFF`` escape."""
    if not text.startswith("\\u", at) or text[at + 2:at + 3] not in ("d", "D") or text[at + 3:at + 4] not in tuple("89abAB"):
        return False
    run = at
    while run > start and text[run - 1] == "\\":
        run -= 1
    return (at - run) % 2 == 0
