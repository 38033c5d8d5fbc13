"""The stored envelope and its entries: writing it whole, splicing one entry, scanning it back
(DESIGN.md §3).

The value under ``STORAGE_KEY`` is zustand ``persist``'s envelope::

    {"state":{"threads":{"<stageId>":{"messages":[...],"updatedAt":<ms>}}},"version":1}

written exactly as ``JSON.stringify`` writes it (``app.store.jsjson``). Each
``Thread`` caches its encoded fragment, and the envelope is the join of the
fragments, so a save re-encodes only the thread that changed (``splice_for``).
Reading a value laid out that way (``scan``) keeps each thread's stored text as
its fragment, so the first save after start-up or after another tab wrote hands
storage only its own entry, and a re-read parses only the threads whose text
changed (``merge_changes``, over ``StringStorage.read_changes``).

Everything here is pure: offsets are UTF-16 code units (what the browser's
string offsets count), and nothing raises except where said.

Example::

    >>> threads = {"a": Thread([], 1)}
    >>> envelope(threads)
    '{"state":{"threads":{"a":{"messages":[],"updatedAt":1}}},"version":1}'
    >>> splice_for(threads, {**threads, "b": Thread([], 2)}, "b")
    (54, 54, ',"b":{"messages":[],"updatedAt":2}')
"""

from __future__ import annotations

import functools
from json import JSONDecoder
from json.decoder import scanstring
from typing import Any

from app.storage import utf16_len
from app.store.encoded import Encoded, thread_json
from app.store.jsjson import js_json, js_key_order

__all__ = [
    "PREFIX", "STORAGE_KEY", "STORE_VERSION", "Entries", "Thread",
    "entry_spans", "entry_units", "envelope", "merge_changes", "reject_constant", "scan", "scan_entries", "splice_for",
]

STORAGE_KEY = "maic-agent-threads"
STORE_VERSION = 1
"""The envelope's ``version`` this app writes (DESIGN.md §3); older ones are migrated (``app.store.decode``)."""
PREFIX = '{"state":{"threads":{'

Json = Any
Entries = dict[str, tuple[Json, "str | None"]]
"""Read entries ``{stage_id: (value, text)}``: the parsed thread and its stored text, or the held
``Thread`` itself with ``text`` ``None`` when its fragment is exactly what is stored."""


class Thread:
    """One stored thread (slim ``messages``, ``updated_at`` ms) with its encoded JSON fragment,
    computed once, message by message (``app.store.encoded.thread_json``). ``like``: the thread
    this one replaces, whose messages' JSON is reused for the messages both hold (a save encodes
    only what the turn added). The messages list is kept as given: do not mutate it."""

    __slots__ = ("messages", "updated_at", "_fragment", "_units", "_parts", "_like")

    def __init__(self, messages: list[dict[str, Json]], updated_at: int, like: Thread | None = None) -> None:
        self.messages = messages
        self.updated_at = updated_at
        self._fragment: str | None = None
        self._units: int | None = None
        self._parts: list[Encoded] | None = None  # each message's JSON, once built here
        # what is reused from `like` (never `like` itself: no chain of threads is kept alive)
        self._like = (like.messages, like._parts) if like is not None and like._parts is not None else None

    def stored(self) -> dict[str, Json]:
        """The thread as the envelope holds it: ``{"messages": [...], "updatedAt": ms}``."""
        return {"messages": self.messages, "updatedAt": self.updated_at}

    def adopt(self, text: str | None) -> Thread:
        """Take ``text`` (this thread as the stored value writes it) as the fragment; returns self."""
        if text is not None and text != self._fragment:
            self._fragment, self._units, self._parts, self._like = text, None, None, None
        return self

    def fragment(self) -> str:
        """``JSON.stringify`` of ``stored()``, cached; built from each message's JSON, those of the
        messages ``like`` held reused."""
        if self._fragment is None:
            held, self._like = self._like, None
            self._fragment, self._units, self._parts = thread_json(self.messages, self.updated_at, held)
        return self._fragment

    def units(self) -> int:
        """UTF-16 length of ``fragment()`` (what offsets into the stored value count)."""
        if self._units is None:
            self._units = utf16_len(self.fragment())
        return self._units


def _suffix() -> str:
    return f'}}}},"version":{STORE_VERSION}}}'


def _entry(stage_id: str, thread: Thread) -> str:
    return f"{js_json(stage_id)}:{thread.fragment()}"


@functools.lru_cache(maxsize=4096)
def _key_units(stage_id: str) -> int:
    """UTF-16 length of ``stage_id`` as a JSON key with its colon."""
    return utf16_len(js_json(stage_id)) + 1


def entry_units(stage_id: str, thread: Thread) -> int:
    """UTF-16 length of the entry ``"<stage_id>":{…}`` in the stored value."""
    return _key_units(stage_id) + thread.units()


def envelope(threads: dict[str, Thread]) -> str:
    """The whole stored value holding ``threads`` (DESIGN.md §3), entries in JavaScript key order."""
    body = ",".join(_entry(k, threads[k]) for k in js_key_order(threads))
    return f"{PREFIX}{body}{_suffix()}"


def splice_for(written: dict[str, Thread], threads: dict[str, Thread], stage_id: str) -> tuple[int, int, str] | None:
    """The edit turning ``envelope(written)`` into ``envelope(threads)`` when they differ
    only in ``stage_id``'s entry: ``(start, end, text)`` in UTF-16 units, else ``None``.

    Costs O(number of threads) plus the size of the new entry, never the size of
    everything stored.
    """
    others = threads.keys() - {stage_id}
    if others != written.keys() - {stage_id} or any(written[k] is not threads[k] for k in others):
        return None
    order = js_key_order(threads)
    offset = len(PREFIX)
    for key in order:
        if key == stage_id:
            break
        offset += entry_units(key, threads[key]) + 1  # the entry and its comma
    entry = _entry(stage_id, threads[stage_id])
    old = written.get(stage_id)
    if old is not None:
        return offset, offset + entry_units(stage_id, old), entry
    if len(order) == 1:
        return offset, offset, entry
    if order[-1] == stage_id:  # appended: after the last entry, which has no comma
        return offset - 1, offset - 1, "," + entry
    return offset, offset, entry + ","


def reject_constant(name: str) -> None:
    """``parse_constant`` for ``json``: NaN / Infinity are not JSON (``JSON.parse`` rejects them too).
    Raises ``ValueError``."""
    raise ValueError(f"{name} is not JSON")


_DECODER = JSONDecoder(parse_constant=reject_constant)


def scan(raw: str, held: dict[str, Thread]) -> tuple[Entries, bool] | None:
    """Read a value laid out exactly as ``envelope`` (``JSON.stringify``) writes it, keeping
    each thread's stored text: ``(entries, canonical)`` (``Entries``), or ``None``
    when the value has another layout (the caller then decodes it whole).

    An entry whose text is exactly a ``held`` thread's fragment is that ``Thread``
    (not parsed again). ``canonical``: keys are encoded and ordered as JavaScript
    writes them, so the value equals ``envelope`` of the threads and a later save
    can splice into it. Never raises.
    """
    suffix = _suffix()
    if not (raw.startswith(PREFIX) and raw.endswith(suffix)) or len(raw) < len(PREFIX) + len(suffix):
        return None
    scanned = scan_entries(raw, len(PREFIX), len(raw) - len(suffix), held)
    if scanned is None:
        return None
    entries, canonical = scanned
    return entries, canonical and list(entries) == js_key_order(entries)


def scan_entries(raw: str, pos: int, body_end: int, held: dict[str, Thread]) -> tuple[Entries, bool] | None:
    """The entries ``"<stageId>":{…}`` joined by commas in ``raw[pos:body_end]`` (see ``scan``);
    ``canonical`` here covers the keys' encoding only. ``None`` for anything else."""
    entries: Entries = {}
    canonical = True
    try:
        while pos < body_end:
            if raw[pos] != '"':
                return None
            key, key_end = scanstring(raw, pos + 1)
            if raw[key_end] != ":" or key in entries:
                return None
            canonical = canonical and raw[pos:key_end] == js_json(key)
            start = key_end + 1
            cached = held.get(key)
            if cached is not None and raw.startswith(cached.fragment(), start):
                end = start + len(cached.fragment())  # a JSON object ends where its text ends
                entries[key] = (cached, None)
            else:
                value, end = _DECODER.raw_decode(raw, start)
                entries[key] = (value, raw[start:end])
            if end > body_end or (end != body_end and raw[end] != ","):
                return None
            pos = end + 1 if end != body_end else end
            if end != body_end and pos == body_end:
                return None  # a trailing comma
    except (ValueError, IndexError, RecursionError):
        return None
    return entries, canonical


def entry_spans(written: dict[str, Thread]) -> tuple[list[int], list[int]]:
    """``(starts, ends)``: UTF-16 offsets of each entry of ``envelope(written)`` (``written`` in
    JavaScript key order), as ``StringStorage.read_changes`` takes them."""
    starts, ends, pos = [], [], len(PREFIX)
    for stage_id, thread in written.items():
        starts.append(pos)
        pos += entry_units(stage_id, thread)
        ends.append(pos)
        pos += 1
    return starts, ends


def merge_changes(written: dict[str, Thread], change: tuple[int, int, str]) -> tuple[Entries, bool] | None:
    """The stored entries after another writer changed ``envelope(written)`` as ``change`` says
    (``(first, last, text)`` from ``StringStorage.read_changes``): ``(entries, canonical)`` as
    ``scan`` gives them, unchanged entries as the held ``Thread``; ``None`` when ``text`` is not
    entries or repeats a key (the caller reads the whole value)."""
    first, last, text = change
    scanned = scan_entries(text, 0, len(text), written)
    if scanned is None:
        return None
    order = list(written)
    keys = order[:first] + list(scanned[0]) + order[last:]
    if len(set(keys)) != len(keys):
        return None
    entries: Entries = {k: (written[k], None) for k in order[:first]}
    entries.update(scanned[0])
    entries.update((k, (written[k], None)) for k in order[last:])
    return entries, scanned[1] and keys == js_key_order(keys)
