"""Reading the stored value: decode, migrate, validate per thread (DESIGN.md §3, §5).

Pure functions that return what they found; nothing here writes storage, changes
the store's mode or says anything to the user (the facade, ``app.store.facade``,
does that from the outcomes).

Reading is liberal (§3): a value is *damaged* only when reading it loses
something. Validation is per thread and per message (§5): an invalid thread or
message is dropped, the rest kept.

Example::

    >>> found = read_value('{"state":{"threads":{"a":{"messages":[],"updatedAt":1}}},"version":1}', {})
    >>> (found.version, found.damaged, found.canonical, list(found.entries))
    (1, False, True, ['a'])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.projection import serialize_thread
from app.store import envelope
from app.store.envelope import Entries, Thread, reject_constant, scan

__all__ = ["MIGRATIONS", "Fresh", "ReadValue", "decode", "fresh_threads", "read_value", "validate_thread"]

Json = Any


def _migrate_v0(state: dict[str, Json]) -> dict[str, Json]:
    """v0 → v1: a message's ``content`` was a plain string; threads had no ``updatedAt`` (→ 0)."""
    threads = state.get("threads")
    for thread in threads.values() if isinstance(threads, dict) else ():
        if not isinstance(thread, dict):
            continue
        thread.setdefault("updatedAt", 0)
        for message in thread.get("messages") if isinstance(thread.get("messages"), list) else ():
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                message["content"] = [{"type": "text", "text": message["content"]}]
    return state


MIGRATIONS: dict[int, Callable[[dict[str, Json]], dict[str, Json]]] = {0: _migrate_v0}
"""``MIGRATIONS[n]`` turns a version-``n`` ``state`` into version ``n + 1``; applied in order (DESIGN.md §5)."""


def decode(raw: str) -> tuple[int, dict[str, Json] | None, bool]:
    """``(version, threads, damaged)`` from a stored value; never raises.

    ``threads`` is ``None`` when the value holds no readable ``threads`` object.

    No ``version`` counts as the current one (zustand compat, DESIGN.md §3).
    Older versions are migrated here. ``damaged``: something did not fit the
    envelope shape (unparseable, not an object, no ``state``, ``threads`` not an
    object, unknown keys, a version without a migration path).
    """
    current = envelope.STORE_VERSION
    try:
        data = json.loads(raw, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return current, None, True
    if not isinstance(data, dict):
        return current, None, True
    version = data.get("version", current)
    damaged = not data.keys() <= {"state", "version"}
    if type(version) is not int:
        version, damaged = current, True
    state = data.get("state")
    if not isinstance(state, dict):
        return version, None, True
    for step in range(version, current):
        if step not in MIGRATIONS:
            damaged = True
            break
        state = MIGRATIONS[step](state)
    threads = state.get("threads")
    if not isinstance(threads, dict):
        return version, None, True
    return version, threads, damaged or not state.keys() <= {"threads"}


@dataclass(frozen=True)
class ReadValue:
    """What a stored value holds, before validation (``read_value``).

    ``version``: the envelope's (after migration, the threads are in the current
    shape). ``entries``: ``Entries``. ``canonical``: laid out exactly as
    ``envelope`` writes it (a later save can splice). ``damaged``: the envelope
    itself lost something. ``keep_all``: nothing readable at all, so a tab keeps
    every thread it held (DESIGN.md §5).
    """

    version: int
    entries: Entries
    canonical: bool = False
    damaged: bool = False
    keep_all: bool = False


def read_value(raw: str, held: dict[str, Thread], *, unparseable: bool = False) -> ReadValue:
    """Read ``raw`` (the stored value; ``unparseable``: storage already found it so): scanned
    keeping each entry's text when laid out as ``envelope`` writes it, else decoded and
    migrated whole (``decode``). ``held``: this tab's threads (reused, not parsed again, where
    their fragment is what is stored). Never raises."""
    if not unparseable:
        scanned = scan(raw, held)
        if scanned is not None:
            return ReadValue(envelope.STORE_VERSION, scanned[0], canonical=scanned[1])
    version, decoded, damaged = (envelope.STORE_VERSION, None, True) if unparseable else decode(raw)
    entries: Entries = {k: (v, None) for k, v in (decoded or {}).items()}
    return ReadValue(version, entries, damaged=damaged, keep_all=decoded is None)


def validate_thread(raw: Json) -> tuple[Thread | None, bool]:
    """``(thread, damaged)`` for one stored thread (DESIGN.md §5, per thread and per message).

    A thread whose ``messages`` is not a list is dropped; invalid messages and
    parts are dropped as ``serialize_thread`` drops them; a non-int ``updatedAt``
    becomes 0.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        return None, True
    stored = raw["messages"]
    messages = serialize_thread(stored)
    updated_at = raw.get("updatedAt")
    valid_time = type(updated_at) is int
    thread = Thread(messages, updated_at if valid_time else 0)
    # A thread stored as written now compares equal at once; only another spelling is walked
    # (``_as_written_now``: a Python pass over every value, ~20k calls for 20 courses at start-up, §13).
    respelled = messages != stored and messages != _as_written_now(stored)
    return thread, not valid_time or len(raw) != 2 or respelled


def _as_written_now(value: Json) -> Json:
    """``value`` with every ``"content": {}`` object written ``{"elements": []}``, as the slim
    projection writes it now (DESIGN.md §3: ``[]`` when there is no elements list).

    Earlier versions of this app wrote ``{}`` there; such a stored thread is valid data in the
    older spelling, so reading it must not count as damage (no backup, no notice; §5's liberal
    reading). User and assistant ``content`` is a list, so only tool-call details match.
    """
    if isinstance(value, list):
        return [_as_written_now(item) for item in value]
    if isinstance(value, dict):
        return {k: ({"elements": []} if k == "content" and v == {} else _as_written_now(v)) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Fresh:
    """Validated threads (``fresh_threads``). ``damaged``: a thread or message was dropped or
    repaired. ``kept_held``: this tab's version was kept instead of a damaged stored one.
    ``repaired``: the courses whose thread was taken as read with something of it dropped or
    repaired (history may hold it whole: ``app.history.active_thread.ActiveThread.mend``)."""

    threads: dict[str, Thread]
    damaged: bool = False
    kept_held: bool = False
    repaired: tuple[str, ...] = ()


def fresh_threads(entries: Entries, held: dict[str, Thread]) -> Fresh:
    """Validate read ``entries`` per thread (DESIGN.md §5), reusing this tab's ``held`` thread
    when equal, and keeping it instead of a damaged version (a tab never drops completed
    turns it holds because another tab wrote a damaged value)."""
    fresh: dict[str, Thread] = {}
    damaged = kept_held = False
    repaired: list[str] = []
    for stage_id, (value, text) in entries.items():
        cached = held.get(stage_id)
        if isinstance(value, Thread):  # its stored text is this tab's fragment
            fresh[stage_id] = value
            continue
        if cached is not None and value == cached.stored():
            fresh[stage_id] = cached.adopt(text)
            continue
        thread, bad = validate_thread(value)
        damaged |= bad
        if bad and cached is not None:
            fresh[stage_id], kept_held = cached, True  # the damaged version would lose what this tab held
        elif thread is not None:
            fresh[stage_id] = thread.adopt(None if bad else text)
            if bad:
                repaired.append(stage_id)
    return Fresh(fresh, damaged, kept_held, tuple(repaired))
