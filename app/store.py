"""The persisted thread store: one slim thread per course over a ``StringStorage``.

The stored value is zustand ``persist``'s envelope (DESIGN.md §3)::

    {"state":{"threads":{"<stageId>":{"messages":[...],"updatedAt":<ms>}}},"version":1}

encoded exactly as JavaScript's ``JSON.stringify`` writes the same data
(``_js_json``, ``_js_key_order``). Each thread's encoded fragment is cached, and
the envelope is the join of the fragments, so a save re-encodes only the thread
that changed. A save re-reads the stored value only when ``storage.unchanged``
says another tab wrote it, and then replaces only its own course's entry.

Failure policy (DESIGN.md §5) lives here: validation and backup (``_read``,
``_backup``), migration (``MIGRATIONS``), quota pruning (``_flush``), and the
three modes: ``"persistent"``; ``"memory"`` (storage unavailable: everything
goes to a ``MemoryStorage``); ``"read-only"`` (a newer stored version, or the
backup of a damaged value failed: storage is read, never written). The store
never reads the clock: callers pass ``now_ms`` / ``updated_at``.

Notices (``Notice.code``, ``params``):

- ``storage-unavailable`` ``{}``: running in memory (said once).
- ``storage-corrupt`` ``{"backup_key": str}``: something stored was dropped or
  unparseable; the raw value was copied to ``backup_key`` first.
- ``storage-read-only`` ``{"reason": "backup-failed"}``: a damaged value could
  not be backed up, so it is never overwritten; saves stay in memory.
- ``storage-newer-version`` ``{"version": int}``: written by a newer app; never
  overwritten; saves stay in memory.
- ``storage-full`` ``{"stage_id": str}``: even this thread alone does not fit;
  it is kept in memory and a later save retries (said again only after a save
  succeeded in between).
- ``storage-pruned`` ``{"count": int, "stage_ids": [str]}``: least recently
  updated other threads were removed so the save fits.

Example::

    >>> from app.storage import MemoryStorage
    >>> store = ThreadStore(MemoryStorage())
    >>> store.hydrate(now_ms=0)
    >>> store.save("42", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], 1).written
    True
    >>> store.load("42")
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.projection import serialize_thread
from app.storage import MemoryStorage, QuotaExceeded, StorageUnavailable, StringStorage, UnparseableValue, utf16_len

__all__ = [
    "MIGRATIONS",
    "STORAGE_KEY",
    "STORE_VERSION",
    "Mode",
    "Notice",
    "SaveResult",
    "ThreadStore",
]

STORAGE_KEY = "maic-agent-threads"
STORE_VERSION = 1

Mode = Literal["persistent", "memory", "read-only"]
Json = Any


@dataclass(frozen=True)
class Notice:
    """Something the user is told about storage (codes in the module docstring)."""

    code: str
    params: dict[str, Json] = field(default_factory=dict)


@dataclass(frozen=True)
class SaveResult:
    """What ``save`` did.

    ``written``: the value is in the browser's storage. ``pruned``: stage ids
    removed to make room (least recently updated first). ``kept_in_memory``: the
    thread lives only in this tab for now (storage full, unavailable, or
    read-only). ``read_only``: the store never writes storage in this session.
    ``merged``: another tab had changed this course since ``base``; this tab's
    new messages were appended to what it stored (``load`` shows the result).
    """

    written: bool
    pruned: tuple[str, ...] = ()
    kept_in_memory: bool = False
    read_only: bool = False
    merged: bool = False


# --- migrations (DESIGN.md §5) -------------------------------------------------


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
"""``MIGRATIONS[n]`` turns a version-``n`` ``state`` into version ``n + 1``; applied in order."""


# --- JSON exactly as JavaScript writes it (DESIGN.md §3) --------------------------

_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]{0,9})\Z")
_MAX_ARRAY_INDEX = 2**32 - 2


def _js_json(value: Json) -> str:
    """``JSON.stringify(value)`` for slim data (strings, ints, bools, null, lists, dicts
    whose keys are not array indices).

    Compact, non-ASCII literal, control characters as JS escapes them (Python's
    ``json`` agrees), and lone surrogates escaped as lowercase ``\\udxxx`` like
    ES2019's well-formed ``JSON.stringify``; a surrogate pair held as two code
    points is one character to JavaScript, so it is written as that character.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATES.sub(_fix_surrogates, text)


def _fix_surrogates(match: re.Match[str]) -> str:
    s = match.group()
    if len(s) == 2:
        return chr(0x10000 + ((ord(s[0]) - 0xD800) << 10) + (ord(s[1]) - 0xDC00))
    return f"\\u{ord(s):04x}"


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.match(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def _js_key_order(keys: Iterable[str]) -> list[str]:
    """Keys as JavaScript enumerates an object's: array indices ("0".."4294967294",
    canonical decimal) ascending, then the others in insertion order."""
    keys = list(keys)
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    return indices + [k for k in keys if not _is_array_index(k)] if indices else keys


# --- the cached thread and the envelope ------------------------------------------


class _Thread:
    """One stored thread with its encoded JSON fragment, computed once."""

    __slots__ = ("messages", "updated_at", "_fragment", "_units")

    def __init__(self, messages: list[dict[str, Json]], updated_at: int) -> None:
        self.messages = messages
        self.updated_at = updated_at
        self._fragment: str | None = None
        self._units: int | None = None

    def stored(self) -> dict[str, Json]:
        return {"messages": self.messages, "updatedAt": self.updated_at}

    def fragment(self) -> str:
        if self._fragment is None:
            self._fragment = _js_json(self.stored())
        return self._fragment

    def units(self) -> int:
        """UTF-16 length of ``fragment()`` (what offsets into the stored value count)."""
        if self._units is None:
            self._units = utf16_len(self.fragment())
        return self._units


_PREFIX = '{"state":{"threads":{'


def _entry(stage_id: str, thread: _Thread) -> str:
    return f"{_js_json(stage_id)}:{thread.fragment()}"


@functools.lru_cache(maxsize=4096)
def _key_units(stage_id: str) -> int:
    """UTF-16 length of ``stage_id`` as a JSON key with its colon."""
    return utf16_len(_js_json(stage_id)) + 1


def _entry_units(stage_id: str, thread: _Thread) -> int:
    return _key_units(stage_id) + thread.units()


def _envelope(threads: dict[str, _Thread]) -> str:
    body = ",".join(_entry(k, threads[k]) for k in _js_key_order(threads))
    return f'{_PREFIX}{body}}}}},"version":{STORE_VERSION}}}'


def _splice_for(written: dict[str, _Thread], threads: dict[str, _Thread], stage_id: str) -> tuple[int, int, str] | None:
    """The edit turning ``_envelope(written)`` into ``_envelope(threads)`` when they differ
    only in ``stage_id``'s entry: ``(start, end, text)`` in UTF-16 units, else ``None``.

    Costs O(number of threads) plus the size of the new entry, never the size of
    everything stored.
    """
    others = threads.keys() - {stage_id}
    if others != written.keys() - {stage_id} or any(written[k] is not threads[k] for k in others):
        return None
    order = _js_key_order(threads)
    offset = len(_PREFIX)
    for key in order:
        if key == stage_id:
            break
        offset += _entry_units(key, threads[key]) + 1  # the entry and its comma
    entry = _entry(stage_id, threads[stage_id])
    old = written.get(stage_id)
    if old is not None:
        return offset, offset + _entry_units(stage_id, old), entry
    if len(order) == 1:
        return offset, offset, entry
    if order[-1] == stage_id:  # appended: after the last entry, which has no comma
        return offset - 1, offset - 1, "," + entry
    return offset, offset, entry + ","


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: JSON.parse rejects them too


def _decode(raw: str) -> tuple[int, dict[str, Json], bool]:
    """``(version, threads, damaged)`` from a stored value; never raises.

    No ``version`` counts as the current one (zustand compat, DESIGN.md §3).
    Older versions are migrated here. ``damaged``: something did not fit the
    envelope shape (unparseable, not an object, no ``state``, ``threads`` not an
    object, unknown keys, a version without a migration path).
    """
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return STORE_VERSION, {}, True
    if not isinstance(data, dict):
        return STORE_VERSION, {}, True
    version = data.get("version", STORE_VERSION)
    damaged = not data.keys() <= {"state", "version"}
    if type(version) is not int:
        version, damaged = STORE_VERSION, True
    state = data.get("state")
    if not isinstance(state, dict):
        return version, {}, True
    for step in range(version, STORE_VERSION):
        if step not in MIGRATIONS:
            damaged = True
            break
        state = MIGRATIONS[step](state)
    threads = state.get("threads")
    if not isinstance(threads, dict):
        return version, {}, True
    return version, threads, damaged or not state.keys() <= {"threads"}


def _validate_thread(raw: Json) -> tuple[_Thread | None, bool]:
    """``(thread, damaged)`` for one stored thread (DESIGN.md §5, per thread and per message).

    A thread whose ``messages`` is not a list is dropped; invalid messages and
    parts are dropped as ``serialize_thread`` drops them; a non-int ``updatedAt``
    becomes 0.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        return None, True
    messages = serialize_thread(raw["messages"])
    updated_at = raw.get("updatedAt")
    valid_time = type(updated_at) is int
    thread = _Thread(messages, updated_at if valid_time else 0)
    return thread, not valid_time or len(raw) != 2 or messages != raw["messages"]


# --- the store -------------------------------------------------------------------


class ThreadStore:
    """Per-course slim threads persisted under ``key`` in ``storage``.

    ``storage=None`` (or one whose access raises ``StorageUnavailable``) runs in
    memory with the notice ``storage-unavailable``. Call ``hydrate`` once at
    start-up, then ``load`` / ``save`` / ``clear``, and ``reload`` on a
    ``storage`` event from another tab. Storage problems never raise: they
    change ``mode`` and queue ``notices``.
    """

    def __init__(self, storage: StringStorage | None, *, key: str = STORAGE_KEY) -> None:
        self._key = key
        self._threads: dict[str, _Thread] = {}
        self._pending: dict[str, _Thread | None] = {}  # not yet written; None = removal
        self._written: dict[str, _Thread] | None = None  # what the stored value holds, when this store wrote it
        self._notices: list[Notice] = []
        self._taken = 0
        self._clock = 0  # latest time a caller passed; names backup keys
        self._full = False
        self._mode: Mode = "persistent"
        self._storage: StringStorage
        if storage is None:
            self._to_memory()
        else:
            self._storage = storage

    @property
    def mode(self) -> Mode:
        """``"persistent"`` | ``"memory"`` | ``"read-only"`` (module docstring)."""
        return self._mode

    @property
    def notices(self) -> list[Notice]:
        """Every notice so far, oldest first."""
        return list(self._notices)

    def take_notices(self) -> list[Notice]:
        """The notices added since the last call."""
        new = self._notices[self._taken :]
        self._taken = len(self._notices)
        return new

    def hydrate(self, now_ms: int) -> None:
        """Read, validate and migrate the stored value (DESIGN.md §5).

        A damaged value is first copied whole to ``<key>.backup.<now_ms>``
        (notice ``storage-corrupt``); if that copy fails the store turns
        read-only. A migrated or repaired value is then written back once.
        """
        self._clock = max(self._clock, now_ms)
        if self._read() and self._mode == "persistent":
            self._flush(protect=None)

    def load(self, stage_id: str) -> list[dict[str, Json]] | None:
        """The stored slim messages of ``stage_id`` (do not mutate), or ``None``."""
        thread = self._threads.get(stage_id)
        return thread.messages if thread else None

    def stage_ids(self) -> list[str]:
        """Ids of the courses with a stored thread, in stored order (no thread is copied or decoded)."""
        return list(self._threads)

    def updated_at(self, stage_id: str) -> int | None:
        """The ``updatedAt`` (ms) of ``stage_id``'s thread, or ``None``."""
        thread = self._threads.get(stage_id)
        return thread.updated_at if thread else None

    def save(self, stage_id: str, messages: list[dict[str, Json]], updated_at: int, *,
             base: list[dict[str, Json]] | None = None) -> SaveResult:
        """Store ``stage_id``'s thread stamped ``updated_at`` ms, merging other tabs'
        courses (DESIGN.md §5). ``messages`` must be ``serialize_thread`` output
        (the slim projection, DESIGN.md §3); the store keeps the list as given.

        ``base``: the stored messages ``messages`` was built on (what ``load``
        returned). If another tab has saved or cleared this course since, the
        messages after ``base`` are appended to what is stored now instead of
        replacing it, so two tabs on one course never erase each other's turns
        (``SaveResult.merged``).

        When this store wrote the stored value and no other tab has written
        since, only this course's entry is handed to storage
        (``StringStorage.splice_item``); otherwise the whole envelope is written.
        On a full quota, other threads are pruned least recently updated first
        (ties: JavaScript key order) in the same single write.
        Raises ``TypeError`` when ``updated_at`` is not an int.
        """
        if type(updated_at) is not int:
            raise TypeError(f"updated_at must be int milliseconds, got {updated_at!r}")
        self._clock = max(self._clock, updated_at)
        self._sync()
        merged = False
        if base is not None:
            current = self._threads.get(stage_id)
            stored = current.messages if current is not None else []
            if stored is not base and stored != base and messages[: len(base)] == base:
                messages, merged = stored + messages[len(base):], True
        thread = _Thread(messages, updated_at)
        self._threads[stage_id] = self._pending[stage_id] = thread
        result = self._flush(protect=stage_id)
        return replace(result, merged=True) if merged else result

    def clear(self, stage_id: str) -> None:
        """Remove ``stage_id``'s thread from ``threads``; other courses stay as stored (DESIGN.md §4)."""
        self._sync()
        if self._threads.pop(stage_id, None) is not None:
            self._pending[stage_id] = None
            self._flush(protect=None)

    def reload(self) -> set[str]:
        """Re-read storage after another tab wrote it; return the stage ids whose thread changed.

        Threads this tab could not write yet (kept in memory) keep this tab's version.
        """
        if self._mode == "memory" or self._unchanged():
            return set()
        before = dict(self._threads)
        self._read()
        return {k for k in before.keys() | self._threads.keys() if before.get(k) is not self._threads.get(k)}

    # --- internals ------------------------------------------------------------

    def _notify(self, code: str, **params: Json) -> None:
        self._notices.append(Notice(code, params))

    def _to_memory(self) -> None:
        """Storage threw: continue on a ``MemoryStorage`` holding what this tab has (said once)."""
        if self._mode == "memory":
            return
        self._mode = "memory"
        self._storage = MemoryStorage()
        self._storage.set_item(self._key, _envelope(self._threads))
        self._written = dict(self._threads)
        self._pending.clear()
        self._notify("storage-unavailable")

    def _to_read_only(self, code: str, **params: Json) -> None:
        if self._mode == "persistent":
            self._mode = "read-only"
            self._notify(code, **params)

    def _unchanged(self) -> bool:
        try:
            return self._storage.unchanged(self._key)
        except StorageUnavailable:
            self._to_memory()
            return True

    def _sync(self) -> None:
        """Before a write: re-read only if another tab wrote since this one read or wrote."""
        if not self._unchanged():
            self._read()

    def _read(self) -> bool:
        """Replace the cache with the stored threads (reusing unchanged entries, then
        applying this tab's unwritten ones). Returns True when the stored value
        should be rewritten (migrated, or repaired after a successful backup)."""
        unparseable = False
        try:
            raw = self._storage.get_item(self._key)
        except StorageUnavailable:
            self._to_memory()
            return False
        except UnparseableValue as error:
            raw, unparseable = error.raw, True
        self._written = None
        fresh: dict[str, _Thread] = {}
        rewrite = False
        if raw is not None:
            version, stored, damaged = (STORE_VERSION, {}, True) if unparseable else _decode(raw)
            if version > STORE_VERSION:  # never written, no backup: read what validates as v1
                self._to_read_only("storage-newer-version", version=version)
            for stage_id, value in stored.items():
                cached = self._threads.get(stage_id)
                if cached is not None and value == cached.stored():
                    fresh[stage_id] = cached
                    continue
                thread, bad = _validate_thread(value)
                damaged |= bad
                if thread is not None:
                    fresh[stage_id] = thread
            if version <= STORE_VERSION:
                rewrite = self._backup(raw) if damaged else version < STORE_VERSION
        for stage_id, thread in self._pending.items():
            if thread is None:
                fresh.pop(stage_id, None)
            else:
                fresh[stage_id] = thread
        self._threads = fresh
        return rewrite

    def _backup(self, raw: str) -> bool:
        """Copy a damaged raw value to ``<key>.backup.<ms>`` before anything overwrites it.

        An existing backup with other content is never overwritten (``.1``, ``.2``…
        suffixes). When the copy fails the store turns read-only. Returns True
        when the raw value is safely backed up.
        """
        if self._mode != "persistent":
            return False
        base = key = f"{self._key}.backup.{self._clock}"
        try:
            n = 0
            while (existing := self._storage.get_item(key)) not in (None, raw):
                n += 1
                key = f"{base}.{n}"
            if existing is None:
                self._storage.set_item(key, raw)
        except QuotaExceeded:
            self._to_read_only("storage-read-only", reason="backup-failed")
            return False
        except StorageUnavailable:
            self._to_memory()
            return False
        self._notify("storage-corrupt", backup_key=key)
        return True

    def _flush(self, protect: str | None) -> SaveResult:
        """Write the envelope in one ``set_item`` (DESIGN.md §5 quota rule).

        With ``protect`` (the thread being saved): on ``QuotaExceeded`` drop the
        least recently updated other thread (ties: JavaScript key order) from the
        candidate value and retry, until it fits. Cache and storage change only
        when a write succeeds; otherwise the thread stays pending in memory.
        """
        if self._mode == "read-only":
            return SaveResult(written=False, kept_in_memory=True, read_only=True)
        if protect is not None and self._splice(protect):
            return self._written_ok(())
        rank = {k: i for i, k in enumerate(_js_key_order(self._threads))}
        victims = [] if protect is None else sorted(
            (k for k in rank if k != protect), key=lambda k: (self._threads[k].updated_at, rank[k])
        )
        kept = dict(self._threads)
        pruned: list[str] = []
        while True:
            try:
                self._set(_envelope(kept))
                break
            except QuotaExceeded:
                if not victims:
                    if protect is not None and not self._full:
                        self._notify("storage-full", stage_id=protect)
                    self._full = protect is not None or self._full
                    return SaveResult(written=False, kept_in_memory=True)
                pruned.append(victims.pop(0))
                del kept[pruned[-1]]
        self._threads = kept
        if pruned:
            self._notify("storage-pruned", count=len(pruned), stage_ids=pruned)
        return self._written_ok(tuple(pruned))

    def _written_ok(self, pruned: tuple[str, ...]) -> SaveResult:
        """Bookkeeping after a successful write of ``self._threads``."""
        self._written = dict(self._threads)
        self._pending.clear()
        self._full = False
        memory = self._mode == "memory"
        return SaveResult(written=not memory, pruned=pruned, kept_in_memory=memory)

    def _splice(self, stage_id: str) -> bool:
        """Write only ``stage_id``'s entry into the value this store last wrote; False
        when that is not possible (unknown layout, other changes, another tab
        wrote, no room), and the caller writes whole."""
        edit = None if self._written is None else _splice_for(self._written, self._threads, stage_id)
        if edit is None:
            return False
        try:
            if self._storage.splice_item(self._key, *edit):
                return True
        except QuotaExceeded:
            return False
        except StorageUnavailable:
            self._to_memory()
            return False
        self._read()  # another tab wrote in between: merge its courses, then write whole
        return False

    def _set(self, value: str) -> None:
        try:
            self._storage.set_item(self._key, value)
        except StorageUnavailable:
            self._to_memory()
            self._storage.set_item(self._key, value)
