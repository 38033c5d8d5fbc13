"""The persisted thread store: one slim thread per course over a ``StringStorage``.

The stored value is zustand ``persist``'s envelope (DESIGN.md §3)::

    {"state":{"threads":{"<stageId>":{"messages":[...],"updatedAt":<ms>}}},"version":1}

encoded exactly as JavaScript's ``JSON.stringify`` writes the same data
(``_js_json``, ``_js_key_order``). Each thread's encoded fragment is cached, and
the envelope is the join of the fragments, so a save re-encodes only the thread
that changed. A save re-reads the stored value only when ``storage.unchanged``
says another tab wrote it, and then replaces only its own course's entry.

Reading a value laid out as ``JSON.stringify`` writes it (``_scan``) keeps each
thread's stored text as its fragment, so the first save after start-up or after
another tab wrote hands storage only its own entry, like every later save
(issue 9 part 4), and a re-read parses only the threads whose text changed.

Two sets of threads (DESIGN.md §5): ``_threads`` is what the stored value holds
(or will hold after the next write); ``_memory`` holds this tab's versions that
are not stored (did not fit, or storage is read-only). A thread kept in memory
never costs anything stored: another course's save writes that course's stored
version, and pruning ranks only stored threads. A re-read that finds another
tab's damaged value keeps the threads this tab held where the value lost them;
a removed key or a cleanly removed course is followed.

Failure policy (DESIGN.md §5) lives here: validation and backup (``_read``,
``_backup``), migration (``MIGRATIONS``), quota pruning (``_write``), and the
three modes: ``"persistent"``; ``"memory"`` (storage unavailable: everything
goes to a ``MemoryStorage``); ``"read-only"`` (a newer stored version, or the
backup of a damaged value failed: storage is read, never written). The store
never reads the clock: callers pass ``now_ms`` / ``updated_at``. A value equal
to an existing backup is never copied again (compared in storage, no backup is
read into Python); exact duplicate backups are removed only when a new backup
does not fit, and distinct backups never.

Notices (``Notice.code``, ``params``):

- ``storage-unavailable`` ``{}``: running in memory (said once).
- ``storage-corrupt`` ``{"backup_key": str}``: something stored was dropped or
  unparseable; the raw value was copied to ``backup_key`` first.
- ``storage-read-only`` ``{"reason": "backup-failed"}``: a damaged value could
  not be backed up, so it is never overwritten; saves stay in memory. Holds while
  the store is read-only; its way out is ``download_damaged`` (the user's choice).
- ``storage-exported`` ``{"file_name": str}``: the user downloaded the damaged
  value as that file, its backup; the value was repaired and saving resumed.
- ``storage-pruned-elsewhere`` ``{"stage_id": str}``: another tab's save pruned
  this course for quota; this tab keeps its thread in memory (``memory_only``)
  and its next save writes it back under the usual rules. Holds while so kept.
- ``storage-newer-version`` ``{"version": int}``: written by a newer app; never
  overwritten; saves stay in memory.
- ``storage-full`` ``{"stage_id": str}``: even this thread alone does not fit;
  it is kept in memory (``memory_only``) and its next save retries. It holds
  while ``stage_id`` is in ``memory_only()``: a later successful save of that
  course or ``clear`` of it ends it (said again when it happens again).
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
from json.decoder import scanstring
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.continuity import continues
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
_ANY_SURROGATE = re.compile("[\ud800-\udfff]")
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
    if _ANY_SURROGATE.search(text) is None:  # the usual case, found 6-10x faster than by the sub itself
        return text
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

    def _adopt(self, text: str | None) -> _Thread:
        """Take ``text`` (this thread as the stored value writes it) as the fragment; returns self."""
        if text is not None and text != self._fragment:
            self._fragment, self._units = text, None
        return self

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


def _decode(raw: str) -> tuple[int, dict[str, Json] | None, bool]:
    """``(version, threads, damaged)`` from a stored value; never raises.

    ``threads`` is ``None`` when the value holds no readable ``threads`` object.

    No ``version`` counts as the current one (zustand compat, DESIGN.md §3).
    Older versions are migrated here. ``damaged``: something did not fit the
    envelope shape (unparseable, not an object, no ``state``, ``threads`` not an
    object, unknown keys, a version without a migration path).
    """
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return STORE_VERSION, None, True
    if not isinstance(data, dict):
        return STORE_VERSION, None, True
    version = data.get("version", STORE_VERSION)
    damaged = not data.keys() <= {"state", "version"}
    if type(version) is not int:
        version, damaged = STORE_VERSION, True
    state = data.get("state")
    if not isinstance(state, dict):
        return version, None, True
    for step in range(version, STORE_VERSION):
        if step not in MIGRATIONS:
            damaged = True
            break
        state = MIGRATIONS[step](state)
    threads = state.get("threads")
    if not isinstance(threads, dict):
        return version, None, True
    return version, threads, damaged or not state.keys() <= {"threads"}


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _scan(raw: str, held: dict[str, _Thread]) -> tuple[dict[str, tuple[Json, str | None]], bool] | None:
    """Read a value laid out exactly as ``_envelope`` (``JSON.stringify``) writes it, keeping
    each thread's stored text: ``({stage_id: (value, text)}, canonical)``, or ``None``
    when the value has another layout (the caller then uses ``_decode``).

    ``value`` is the parsed thread, or the ``held`` ``_Thread`` itself when its
    fragment is exactly the stored text (not parsed again; ``text`` is then
    ``None``). ``canonical``: keys are encoded and ordered as JavaScript writes
    them, so the value equals ``_envelope`` of the threads and a later save can
    splice into it. Never raises.
    """
    suffix = f'}}}},"version":{STORE_VERSION}}}'
    if not (raw.startswith(_PREFIX) and raw.endswith(suffix)) or len(raw) < len(_PREFIX) + len(suffix):
        return None
    scanned = _scan_entries(raw, len(_PREFIX), len(raw) - len(suffix), held)
    if scanned is None:
        return None
    entries, canonical = scanned
    return entries, canonical and list(entries) == _js_key_order(entries)


def _scan_entries(raw: str, pos: int, body_end: int, held: dict[str, _Thread]
                  ) -> tuple[dict[str, tuple[Json, str | None]], bool] | None:
    """The entries ``"<stageId>":{…}`` joined by commas in ``raw[pos:body_end]`` (see ``_scan``);
    ``canonical`` here covers the keys' encoding only. ``None`` for anything else."""
    entries: dict[str, tuple[Json, str | None]] = {}
    canonical = True
    try:
        while pos < body_end:
            if raw[pos] != '"':
                return None
            key, key_end = scanstring(raw, pos + 1)
            if raw[key_end] != ":" or key in entries:
                return None
            canonical = canonical and raw[pos:key_end] == _js_json(key)
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


def _backup_order(key: str) -> tuple:
    """Sort key of ``<key>.backup.<ms>[.<n>]`` names: oldest first, numbers compared as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in key.rsplit(".backup.", 1)[-1].split("."))


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
    return thread, not valid_time or len(raw) != 2 or messages != _as_written_now(raw["messages"])


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
        self._threads: dict[str, _Thread] = {}  # what the stored value holds (after the next write)
        self._memory: dict[str, _Thread | None] = {}  # this tab's versions not stored; None = a removal
        self._written: dict[str, _Thread] | None = None  # what the stored value holds, when its layout is known
        self._notices: list[Notice] = []
        self._taken = 0
        self._clock = 0  # latest time a caller passed; names backup keys
        self._full: set[str] = set()  # stage ids said to be kept in memory for lack of room
        self._elsewhere: set[str] = set()  # stage ids kept in memory because another tab pruned them
        self._mode: Mode = "persistent"
        self._reason: str | None = None  # why read-only: the notice code that said so
        self._hydrated = False  # hydrate ran: later reads are another tab's writes
        self._exported: str | None = None  # file the user downloaded the stored value to (download_damaged)
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
            self._flush()
        self._hydrated = True

    def download_damaged(self, now_ms: int) -> str | None:
        """The way out of ``storage-read-only`` (a damaged value no backup key can hold, DESIGN.md §5):
        hand the stored value to the user as the file ``<key>.backup.<now_ms>.txt``
        (``StringStorage.export_item``, the value never crosses into Python), then treat
        that file as its backup: the value is repaired and written back with this tab's
        threads kept in memory meanwhile (each saved under the usual quota rules), and
        ``storage-exported {"file_name"}`` replaces the read-only notice.

        Only after the user chose it, and only in that read-only state: returns ``None``
        and does nothing otherwise (a newer version stays untouched). Returns the file
        name, or ``None`` when the key held nothing any more (saving then resumes: there
        is nothing left to protect).
        """
        if self._mode != "read-only" or self._reason != "storage-read-only":
            return None
        self._clock = max(self._clock, now_ms)
        name = f"{self._key}.backup.{self._clock}.txt"
        try:
            exported = self._storage.export_item(self._key, name)
        except StorageUnavailable:
            self._to_memory()
            return None
        self._mode, self._reason = "persistent", None
        # The file is the backup only of the value downloaded; a later write of another tab is read as usual.
        self._exported = name if exported and self._unchanged() else None
        self._written = None
        if self._read() and self._mode == "persistent":
            self._flush()
        self._exported = None
        self._write_memory()
        return name if exported else None

    def _write_memory(self) -> None:
        """After read-only ends: write each thread this tab kept in memory meanwhile, one by one
        under the usual rules (quota pruning, ``storage-full``)."""
        for stage_id, thread in list(self._memory.items()):
            if self._mode != "persistent":
                break
            if thread is None:
                self.clear(stage_id)
            elif stage_id not in self._elsewhere:
                # Onto what is stored now: another tab may have written since (it, too, may just have
                # left read-only); a whole value of this tab's own would drop its turns (§5).
                self._write_on_fresh(stage_id, lambda: thread if (
                    self._mode == "persistent" and self._memory.get(stage_id) is thread) else None)

    def notice_holds(self, notice: Notice) -> bool:
        """Whether ``notice`` still says something true: ``storage-read-only`` while the store is
        read-only, ``storage-pruned-elsewhere`` while its course is kept in memory; any
        other notice: True (the runtime drops those that no longer hold)."""
        if notice.code == "storage-read-only":
            return self._mode == "read-only"
        if notice.code == "storage-pruned-elsewhere":
            return notice.params.get("stage_id") in self._elsewhere
        return True

    def load(self, stage_id: str) -> list[dict[str, Json]] | None:
        """This tab's slim messages of ``stage_id`` (do not mutate), or ``None``: the version
        kept in memory when there is one (``memory_only``), else the stored one."""
        thread = self._view(stage_id)
        return thread.messages if thread else None

    def stage_ids(self) -> list[str]:
        """Ids of the courses with a stored thread, in stored order (no thread is copied or decoded)."""
        return list(self._threads)

    def updated_at(self, stage_id: str) -> int | None:
        """The ``updatedAt`` (ms) of ``stage_id``'s thread as ``load`` sees it, or ``None``."""
        thread = self._view(stage_id)
        return thread.updated_at if thread else None

    def memory_only(self) -> frozenset[str]:
        """Stage ids whose latest version lives only in this tab (did not fit, or read-only).

        A ``storage-full`` notice for a stage id holds exactly while it is in here
        (DESIGN.md §5).
        """
        return frozenset(self._memory)

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

        When this store knows the stored value's layout (it read or wrote it as
        ``JSON.stringify`` writes it) and no other tab has written since, only
        this course's entry is handed to storage (``StringStorage.splice_item``);
        otherwise the whole envelope is written. When another tab writes between
        that check and the splice, the save starts over (re-read, rebase on
        ``base``). On a full quota, other *stored* threads are pruned least
        recently updated first (ties: JavaScript key order) in the same single
        write; if even this thread alone does not fit, it is kept in memory
        (``memory_only``) and the stored value is left as it was, so a later save
        of another course writes this course's stored version (DESIGN.md §5).
        Raises ``TypeError`` when ``updated_at`` is not an int.
        """
        if type(updated_at) is not int:
            raise TypeError(f"updated_at must be int milliseconds, got {updated_at!r}")
        self._clock = max(self._clock, updated_at)
        merged = False

        def rebased() -> _Thread:
            nonlocal merged
            thread, merged = messages, False
            if base is not None:
                current = self._view(stage_id)
                stored = current.messages if current is not None else []
                if stored is not base and stored != base and continues(messages, base):
                    thread, merged = stored + messages[len(base):], True
            return _Thread(thread, updated_at)
        result = self._write_on_fresh(stage_id, rebased)
        return replace(result, merged=True) if merged else result

    def _write_on_fresh(self, stage_id: str, build: Callable[[], _Thread | None]) -> SaveResult | None:
        """Write ``build()``'s thread as ``stage_id``'s onto what is stored now: re-read first when
        another tab wrote, and again from the top when another tab wrote during the splice (the
        third try writes whole, which never starts over). ``build`` runs after each re-read and
        returns ``None`` to write nothing (then ``None`` is returned)."""
        for attempt in range(3):
            self._sync()
            thread = build()
            if thread is None:
                return None
            if attempt == 2:
                self._written = None  # last try: write whole
            result = self._write(stage_id, thread)
            if result is not None:
                return result
        raise AssertionError("unreachable: a whole write never asks to start over")  # pragma: no cover

    def replaced_elsewhere(self, stage_id: str, base: list[dict[str, Json]]) -> bool:
        """True when another tab replaced ``stage_id``'s thread since ``base`` (what this tab built on,
        as ``load`` returned it) with one that does not go on from it: it resumed another conversation
        or started a new one (the course cleared, or its thread begun anew). False when ``base`` is
        empty, when the stored thread is ``base`` or extends it (turns another tab saved on the same
        conversation, which ``save`` merges, DESIGN.md §5), and when this tab holds the course's
        latest version in memory (``memory_only``: storage is not this tab's record of it)."""
        if not base or stage_id in self._memory:
            return False
        self._sync()
        current = self._threads.get(stage_id)
        stored = current.messages if current is not None else []
        return stored is not base and not continues(stored, base)

    def clear(self, stage_id: str) -> None:
        """Remove ``stage_id``'s thread from ``threads``; other courses stay as stored (DESIGN.md §4).

        A version kept in memory goes too (its ``storage-full`` no longer holds).
        """
        self._sync()
        self._memory.pop(stage_id, None)
        self._full.discard(stage_id)
        self._elsewhere.discard(stage_id)
        if stage_id not in self._threads:
            return
        if self._mode == "read-only":
            self._memory[stage_id] = None
            return
        kept = {k: v for k, v in self._threads.items() if k != stage_id}
        mode = self._mode
        try:
            self._set(_envelope(kept))
        except QuotaExceeded:  # smaller than what is stored: only when another writer filled the rest
            self._memory[stage_id] = None
            return
        if self._mode != mode:  # storage was lost: clear again what the in-memory storage now holds
            self.clear(stage_id)
            return
        self._threads = kept
        self._written = dict(kept)

    def reload(self) -> set[str]:
        """Re-read storage after another tab wrote it; return the stage ids whose thread
        (as ``load`` sees it) changed.

        Threads this tab could not write yet (kept in memory) keep this tab's
        version; a damaged value keeps the threads this tab held (``_read``).
        """
        if self._mode == "memory" or self._unchanged():
            return set()
        before = {k: self._view(k) for k in self._threads.keys() | self._memory.keys()}
        self._read()
        after = self._threads.keys() | self._memory.keys()
        return {k for k in before.keys() | after if before.get(k) is not self._view(k)}

    # --- internals ------------------------------------------------------------

    def _view(self, stage_id: str) -> _Thread | None:
        """This tab's version of ``stage_id``: kept in memory, else stored."""
        if stage_id in self._memory:
            return self._memory[stage_id]
        return self._threads.get(stage_id)

    def _notify(self, code: str, **params: Json) -> None:
        self._notices.append(Notice(code, params))

    def _to_memory(self) -> None:
        """Storage threw: continue on a ``MemoryStorage`` holding what this tab has (said once)."""
        if self._mode == "memory":
            return
        self._mode = "memory"
        threads = {k: v for k, v in {**self._threads, **self._memory}.items() if v is not None}
        self._storage = MemoryStorage()
        self._storage.set_item(self._key, _envelope(threads))
        self._storage.get_item(self._key)  # seen: later saves splice
        self._threads, self._written = threads, dict(threads)
        self._memory.clear()
        self._full.clear()
        self._elsewhere.clear()
        self._notify("storage-unavailable")

    def _to_read_only(self, code: str, **params: Json) -> None:
        if self._mode == "persistent":
            self._mode, self._reason = "read-only", code
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
        """Replace ``_threads`` with the stored threads (reusing this tab's entries whose
        stored text is unchanged). Returns True when the stored value should be
        rewritten (migrated, or repaired after a successful backup).

        When the value is damaged (another tab wrote it so, DESIGN.md §5), a thread
        this tab held is kept wherever the value lost it: an unreadable value keeps
        them all, a damaged thread keeps this tab's version. A missing key, or a
        course cleanly absent from a readable value, is followed (a deliberate removal).

        When this store knows the layout of the value it last read or wrote, it first
        asks storage for only the entries another tab changed (``_changed_entries``);
        the whole value is read when that is not possible or finds damage.
        """
        if self._written is not None and self._mode != "memory":
            partial = self._changed_entries()
            if partial is not None:
                fresh, damaged, kept_held = self._fresh(partial[0], self._threads)
                if not damaged:
                    pruned = self._keep_pruned(self._threads, fresh)
                    self._threads, self._written = fresh, (dict(fresh) if partial[1] and not pruned else None)
                    return False
        unparseable = False
        try:
            raw = self._storage.get_item(self._key)
        except StorageUnavailable:
            self._to_memory()
            return False
        except UnparseableValue as error:
            raw, unparseable = error.raw, True
        held, self._written = self._threads, None
        if raw is None:
            self._threads = {}
            return False
        scanned = None if unparseable else _scan(raw, held)
        keep_all = False
        if scanned is not None:
            version, stored, canonical = STORE_VERSION, scanned[0], scanned[1]
            damaged = False
        else:
            version, decoded, damaged = (STORE_VERSION, None, True) if unparseable else _decode(raw)
            stored, canonical = {k: (v, None) for k, v in (decoded or {}).items()}, False
            keep_all = decoded is None  # nothing readable: keep every thread this tab held
        if version > STORE_VERSION:  # never written, no backup
            self._to_read_only("storage-newer-version", version=version)
            if self._hydrated:  # another tab's newer app wrote it: keep what this tab holds, never show
                self._threads = held  # data of a format this app does not know (DESIGN.md §5)
                return False
            # at start-up there is nothing held: read what validates as v1
        fresh, bad, kept_held = self._fresh(stored, held)
        damaged |= bad
        if keep_all:
            fresh = {**held, **fresh}
        elif not damaged:
            kept_held |= self._keep_pruned(held, fresh)
        rewrite = False
        if version <= STORE_VERSION:
            rewrite = self._backup(raw) if damaged else version < STORE_VERSION
        self._threads = fresh
        if canonical and not damaged and not kept_held and version == STORE_VERSION:
            self._written = dict(fresh)  # the stored value is exactly _envelope(fresh): the next save splices
        if not damaged and version == STORE_VERSION and self._reason == "storage-read-only" and self._hydrated:
            # another tab replaced the damaged value with a sound one: nothing is left to protect
            self._mode, self._reason = "persistent", None
            self._write_memory()
        return rewrite

    def _keep_pruned(self, held: dict[str, _Thread], fresh: dict[str, _Thread]) -> bool:
        """Keep in memory the threads another tab's save pruned for quota (DESIGN.md §5: a tab never
        drops completed turns it holds); returns True when it kept any.

        A course this tab held that is gone from a readable value was *pruned* when, in the
        same change, exactly one other course's entry was added or changed (the saving
        course: a save writes only its own entry, a New conversation elsewhere only removes
        one) and it was no more recently updated than any course left unchanged (pruning
        takes the least recently updated). Otherwise the removal is followed. (A New
        conversation and one save of another course, both made between two reads of this
        tab, look the same: that course is then kept too, with the notice, never lost.) A kept course is ``memory_only`` with ``storage-pruned-elsewhere
        {"stage_id"}``; its next save writes it back under the usual rules. When another tab
        writes that course again, its stored version is followed (the copy is dropped).
        """
        for stage_id in [k for k in self._elsewhere if k in fresh]:  # written again by another tab: followed
            self._elsewhere.discard(stage_id)
            self._memory.pop(stage_id, None)
        gone = [k for k in held if k not in fresh and k not in self._memory]
        if not gone or sum(held.get(k) is not v for k, v in fresh.items()) != 1:
            return False  # only removals, or several writes seen at once: followed
        unchanged = [v.updated_at for k, v in fresh.items() if held.get(k) is v]
        if unchanged and max(held[k].updated_at for k in gone) > min(unchanged):
            return False
        for stage_id in gone:
            self._memory[stage_id] = held[stage_id]
            self._elsewhere.add(stage_id)
            self._notify("storage-pruned-elsewhere", stage_id=stage_id)
        return True

    @staticmethod
    def _fresh(stored: dict[str, tuple[Json, str | None]], held: dict[str, _Thread]
               ) -> tuple[dict[str, _Thread], bool, bool]:
        """``(threads, damaged, kept_held)`` from read entries ``{stage_id: (value, text)}``:
        validated per thread (DESIGN.md §5), this tab's ``held`` thread reused when
        equal, and kept instead of a damaged version (``kept_held``)."""
        fresh: dict[str, _Thread] = {}
        damaged = kept_held = False
        for stage_id, (value, text) in stored.items():
            cached = held.get(stage_id)
            if isinstance(value, _Thread):  # its stored text is this tab's fragment
                fresh[stage_id] = value
                continue
            if cached is not None and value == cached.stored():
                fresh[stage_id] = cached._adopt(text)
                continue
            thread, bad = _validate_thread(value)
            damaged |= bad
            if bad and cached is not None:
                fresh[stage_id], kept_held = cached, True  # the damaged version would lose what this tab held
            elif thread is not None:
                fresh[stage_id] = thread._adopt(None if bad else text)
        return fresh, damaged, kept_held

    def _changed_entries(self) -> tuple[dict[str, tuple[Json, str | None]], bool] | None:
        """The stored entries after another tab wrote, reading only what changed
        (``StringStorage.read_changes``, issue 9 part 4): ``(entries, canonical)`` as
        ``_scan`` gives them, or ``None`` (the caller reads the whole value)."""
        read_changes = getattr(self._storage, "read_changes", None)
        written = self._written
        if read_changes is None or not written:
            return None
        starts, ends, pos = [], [], len(_PREFIX)
        for stage_id, thread in written.items():  # written is in JavaScript key order
            starts.append(pos)
            pos += _entry_units(stage_id, thread)
            ends.append(pos)
            pos += 1
        try:
            change = read_changes(self._key, starts, ends)
        except StorageUnavailable:
            self._to_memory()
            return None
        if change is None:
            return None
        first, last, text = change
        scanned = _scan_entries(text, 0, len(text), written)
        if scanned is None:
            return None
        order = list(written)
        keys = order[:first] + list(scanned[0]) + order[last:]
        if len(set(keys)) != len(keys):
            return None
        entries = {k: (written[k], None) for k in order[:first]}
        entries.update(scanned[0])
        entries.update((k, (written[k], None)) for k in order[last:])
        return entries, scanned[1] and keys == _js_key_order(keys)

    def _backup(self, raw: str) -> bool:
        """Copy the damaged stored value (``raw``, as read) to ``<key>.backup.<ms>`` before anything
        overwrites it (DESIGN.md §5).

        A value equal to an existing backup is not copied again: that backup is named
        (compared in storage, ``StringStorage.same_value``: no backup is read into
        Python). An existing backup is never overwritten (``.1``, ``.2``… suffixes).
        When the copy does not fit, exact duplicates among the backups are removed
        (nothing is lost: one copy of each stays) and the copy tried once more; when
        it still fails the store turns read-only (``storage-read-only``, its way out
        is ``download_damaged``). A value the user just downloaded
        (``download_damaged``) has that file as its backup (``storage-exported``).
        Returns True when the value is safely kept somewhere.
        """
        if self._mode != "persistent":
            return False
        if self._exported is not None:
            self._notify("storage-exported", file_name=self._exported)
            return True
        prefix = f"{self._key}.backup."
        try:
            backups = sorted(self._storage.keys(prefix), key=_backup_order)
            key = next((k for k in backups if self._storage.same_value(self._key, k)), None)
            if key is None:
                key = base = f"{prefix}{self._clock}"
                n = 0
                while key in backups:
                    n += 1
                    key = f"{base}.{n}"
                try:
                    self._storage.copy_item(self._key, key)
                except QuotaExceeded:
                    if not self._drop_duplicate_backups(backups):
                        raise
                    self._storage.copy_item(self._key, key)
        except QuotaExceeded:
            self._to_read_only("storage-read-only", reason="backup-failed")
            return False
        except StorageUnavailable:
            self._to_memory()
            return False
        self._notify("storage-corrupt", backup_key=key)
        return True

    def _drop_duplicate_backups(self, backups: list[str]) -> bool:
        """Remove each backup equal to an earlier one (``backups`` oldest first); True when any went.
        Lossless: one copy of every distinct value stays."""
        kept: list[str] = []
        dropped = False
        for key in backups:
            if any(self._storage.same_value(key, other) for other in kept):
                self._storage.remove_item(key)
                dropped = True
            else:
                kept.append(key)
        return dropped

    def _flush(self) -> SaveResult:
        """Write ``_threads`` whole (hydrate's write-back of a migrated or repaired value)."""
        if self._mode == "read-only":
            return SaveResult(written=False, kept_in_memory=True, read_only=True)
        try:
            self._set(_envelope(self._threads))
        except QuotaExceeded:
            return SaveResult(written=False)
        self._written = dict(self._threads)
        return SaveResult(written=self._mode != "memory", kept_in_memory=self._mode == "memory")

    def _write(self, stage_id: str, thread: _Thread) -> SaveResult | None:
        """Store ``thread`` as ``stage_id``'s in one write (DESIGN.md §5 quota rule).

        Splices only this entry when the stored layout is known; otherwise writes
        the envelope whole. On ``QuotaExceeded`` drops the least recently updated
        other *stored* thread (ties: JavaScript key order) from the candidate value
        and retries, until it fits. Nothing changes unless a write succeeds: when
        even this thread alone does not fit, it is kept in memory (``_memory``)
        and the stored value stays as it was. Returns ``None`` when another tab
        wrote during the splice (the caller starts over).
        """
        if self._mode == "read-only":
            self._memory[stage_id] = thread
            return SaveResult(written=False, kept_in_memory=True, read_only=True)
        candidate = {**self._threads, stage_id: thread}
        spliced = self._splice(candidate, stage_id)
        if spliced is None:
            return None
        if spliced:
            return self._written_ok(stage_id, candidate, ())
        rank = {k: i for i, k in enumerate(_js_key_order(candidate))}
        victims = sorted((k for k in rank if k != stage_id), key=lambda k: (candidate[k].updated_at, rank[k]))
        pruned: list[str] = []
        mode = self._mode
        while True:
            try:
                self._set(_envelope(candidate))
                if self._mode != mode:  # storage was lost: write again what this tab holds now
                    return self._write(stage_id, thread)
                break
            except QuotaExceeded:
                if not victims:
                    self._memory[stage_id] = thread
                    if stage_id not in self._full:
                        self._full.add(stage_id)
                        self._notify("storage-full", stage_id=stage_id)
                    return SaveResult(written=False, kept_in_memory=True)
                pruned.append(victims.pop(0))
                del candidate[pruned[-1]]
        if pruned:
            self._notify("storage-pruned", count=len(pruned), stage_ids=pruned)
        return self._written_ok(stage_id, candidate, tuple(pruned))

    def _written_ok(self, stage_id: str, threads: dict[str, _Thread], pruned: tuple[str, ...]) -> SaveResult:
        """Bookkeeping after ``threads`` (with ``stage_id``'s new thread) was written."""
        self._threads, self._written = threads, dict(threads)
        self._memory.pop(stage_id, None)
        self._full.discard(stage_id)
        self._elsewhere.discard(stage_id)
        memory = self._mode == "memory"
        return SaveResult(written=not memory, pruned=pruned, kept_in_memory=memory)

    def _splice(self, threads: dict[str, _Thread], stage_id: str) -> bool | None:
        """Write only ``stage_id``'s entry of ``threads`` into the stored value. False when
        that is not possible (layout unknown, other changes, no room) and the caller
        writes whole; ``None`` when another tab wrote in between (nothing written)."""
        edit = None if self._written is None else _splice_for(self._written, threads, stage_id)
        if edit is None:
            return False
        try:
            if self._storage.splice_item(self._key, *edit):
                return True
        except QuotaExceeded:
            return False
        except StorageUnavailable:
            self._to_memory()
            return None
        self._written = None
        return None

    def _set(self, value: str) -> None:
        try:
            self._storage.set_item(self._key, value)
        except StorageUnavailable:
            self._to_memory()
            self._storage.set_item(self._key, value)
