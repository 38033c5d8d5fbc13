"""The record store: the IndexedDB database ``agentbar``, its schema, and the async
backend protocol that history (and scene checkpoints) use (DESIGN.md §9, §10).

This module is pure Python. ``SCHEMA`` is the ONE place that declares the
database: each version maps table names to Dexie key specs (primary key first,
then indexes; ``[a+b]`` is a compound index). The browser adapter
(``app.browser.indexeddb``) hands it to Dexie as ``db.version(n).stores(...)``;
``MemoryBackend`` reads the same specs, so CPython tests run the same queries.
Version 1 is the first release; a table added before release goes into
version 1, a change after release gets a new version: version 2 adds the
search index (the multiEntry index ``*terms`` of ``search``, DESIGN.md §14;
``app.history.terms``), version 3 the pinned conversations' index
``[stageId+pinnedAt]`` of ``conversations`` (DESIGN.md §18), version 4 = ``messages`` records may hold
``branches``/``shown`` (a conversation as a tree, DESIGN.md §17; nothing migrated: a record without
them is a chain, and the tables and indexes are version 3's). An index is added by Dexie's upgrade without touching
any record; records stored before it are indexed afterwards, in slices
(``app.history.search_index.SearchIndex.reindex``). An index spec starting
with ``*`` is multiEntry: a record with a list in that field is found under each
of its entries.

Records are JSON-shaped ``dict``s (strings, ints, floats, bools, ``None``,
lists, dicts). Keys are strings, numbers, or lists of those (compound keys).
A field of a written record may be a ``BulkValue``: a large JSON object (a
scene document with megabytes of base64 images), stored like any other value;
the page's backend hands it to IndexedDB as a JavaScript object made directly
from it rather than as JSON text.

Failures are ``RecordStoreError`` with a ``kind``:

- ``unavailable``: no IndexedDB, ``open`` threw, or requests fail (private modes);
- ``blocked``: another tab keeps an older version open, so this one cannot open;
- ``version``: the database was upgraded by a newer app (this one cannot open it);
- ``versionchange``: another tab upgrades the database; this tab closed it;
- ``deleted``: the database was deleted or evicted while open;
- ``closed``: the connection is closed (after one of the two above);
- ``quota``: the write did not fit (nothing of it was written);
- ``aborted``: the transaction aborted (nothing of it was written);
- ``stale``: an ``expect`` op found its record changed since it was read (nothing was written);
- ``failed``: anything else.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "DB_NAME",
    "SCHEMA",
    "MemoryBackend",
    "RecordBackend",
    "BulkValue",
    "RecordStoreError",
    "WriteOp",
    "key_of",
    "parse_spec",
]

DB_NAME = "agentbar"

SCHEMA: dict[int, dict[str, str]] = {
    1: {
        # history (DESIGN.md §9): one conversation meta per taskId; paging index newest first
        "conversations": "taskId, [stageId+updatedAt+taskId]",
        "messages": "taskId",  # {taskId, messages: [slim message…]} (DESIGN.md §3 projection)
        "turns": "taskId",  # {taskId, turns: [turn meta…]}
        "search": "taskId, [stageId+updatedAt]",  # {taskId, stageId, updatedAt, folded, anchors?}: what search scans
        "texts": "taskId",  # {taskId, text}: the unfolded text, read only for the hits' snippets
        "heads": "stageId",  # {stageId, taskId, syncedAt}: a course's active conversation
        # scene checkpoints (DESIGN.md §10, app/checkpoints/record_backend.py)
        "artifacts": "artifactId, stageId",  # a scene's current document and latest timeline item
        "versions": "versionId, [artifactId+versionNo], [conversationId+updatedAt], checkpointId",  # light
        "snapshots": "versionId",  # {versionId, document}: a version's whole document
    },
}
SCHEMA[2] = {
    **SCHEMA[1],
    # {…, terms: [posting key…]}: the search index (DESIGN.md §14, app/history/terms.py), written with the record
    "search": "taskId, [stageId+updatedAt], *terms",
}
SCHEMA[3] = {
    **SCHEMA[2],
    # a course's pinned conversations, most recently pinned first (DESIGN.md §18); an unpinned meta has
    # no pinnedAt, so it is not in this index
    "conversations": "taskId, [stageId+updatedAt+taskId], [stageId+pinnedAt]",
}
SCHEMA[4] = {
    # the same tables: a ``messages`` record may hold ``branches`` and ``shown`` beside its ``messages``
    # (a conversation as a tree, DESIGN.md §17, app/history/branches.py); one without them is a chain
    **SCHEMA[3],
}
"""Database versions → table → Dexie key spec. The one declaration of the database."""

LOWEST = -math.inf
HIGHEST = math.inf

Key = Any
WriteOp = tuple[str, str, Any]
"""``(kind, table, value)``: ``("put", t, record)``, ``("add", t, record)`` (fails if the key
exists), ``("delete", t, key)``, ``("patch", t, {"key": k, "if": {field: value…}, "set": {field:
value…}})`` (in the same transaction: when the record of key ``k`` exists and holds every ``if``
value, its ``set`` fields are assigned and it is put back; otherwise nothing, no error),
``("expect", t, {"key": k, "if": {field: value…}})`` (the record of ``k`` exists and holds every
``if`` value, else the whole transaction aborts with kind ``stale``: another tab wrote it since it
was read)."""


class RecordStoreError(Exception):
    """A record store failure; ``kind`` is one of the module docstring's kinds."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind
        self.message = message


class RecordBackend(Protocol):
    """The async record store (IndexedDB through Dexie in the page, ``MemoryBackend`` in tests).

    Every method raises ``RecordStoreError``. ``write`` is atomic: all of its
    operations are stored or none. Returned records are fresh Python values
    (changing them changes nothing stored).
    """

    async def open(self) -> None: ...

    async def get(self, table: str, key: Key) -> dict | None: ...

    async def bulk_get(self, table: str, keys: list[Key], *, fields: list[str] | None = None) -> list[dict | None]:
        """The records of ``keys`` (None where missing), in that order; ``fields``: only those fields
        of each record cross (the others are left in the store's own memory), e.g. a ``search``
        record without its posting keys."""
        ...

    async def get_all(self, reads: list[tuple[str, Key]]) -> list[dict | None]:
        """The record of each ``(table, key)`` of ``reads`` (None where missing), in that order, read
        in ONE read transaction (one crossing in the page): records of several tables as they were
        together, e.g. a course's head and its conversation's records before a turn is written."""
        ...

    async def query(self, table: str, index: str, lower: Key, upper: Key, *, lower_open: bool = False,
                    upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list[dict]: ...

    async def count(self, table: str, index: str, lower: Key, upper: Key) -> int: ...

    async def query_count(self, table: str, index: str, lower: Key, upper: Key, count_lower: Key, count_upper: Key, *,
                          lower_open: bool = False, upper_open: bool = False, reverse: bool = False,
                          limit: int = 0) -> tuple[list[dict], int]:
        """``query`` and ``count`` of ``[count_lower, count_upper]`` read together (one crossing in the page)."""
        ...

    async def write(self, ops: list[WriteOp]) -> None: ...

    async def keys(self, table: str, index: str, lower: Key, upper: Key, *, lower_open: bool = False,
                   upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list[Key]:
        """The keys of ``index`` in the range (as ``query`` orders them: by index key, then primary
        key), not the records: one per entry of a multiEntry index."""
        ...

    async def primary_keys(self, table: str, index: str, lower: Key, upper: Key) -> list[Key]:
        """The primary keys of the records of ``index`` in [lower, upper], in index order."""
        ...

    async def scan(self, table: str, index: str, lower: Key, upper: Key, field: str, needle: str,
                   before: int, after: int, show_table: str, show_field: str) -> list[tuple[Key, int, str]]:
        """Records of ``index`` in [lower, upper] whose string ``field`` contains ``needle``:
        ``(primary key, position, excerpt)``, the excerpt being ``[position - before : position +
        len(needle) + after]`` of ``show_field`` of the record with the same key in ``show_table``
        (of ``field`` itself when that is missing)."""
        ...

    async def persist(self) -> bool: ...


class BulkValue(dict):
    """A large JSON object given as a field of a written record (module docstring), e.g. a scene
    document of megabytes of base64 images. Stored and read back as the plain object it is. In the
    page it crosses to JavaScript as an object (``pyodide.ffi.to_js``), not as JSON text: encoding
    megabytes as text, and decoding and parsing them again, held the page for tens of milliseconds
    and grew the Python heap (scene documents, DESIGN.md §10: one over 5 MB is stored without freezing the page).
    It must hold no ``None``: a null field may come back missing."""

    __slots__ = ()


def parse_spec(spec: str) -> tuple[str, list[str]]:
    """Dexie key spec → (primary key path, index paths). ``"a, [b+c]"`` → ``("a", ["[b+c]"])``."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    return parts[0].lstrip("&++"), parts[1:]


def key_of(record: dict, path: str) -> Key:
    """The key of ``record`` at ``path`` (``"a"`` or compound ``"[a+b]"``); ``None`` if a part is missing."""
    if path.startswith("["):
        values = [record.get(name) for name in path[1:-1].split("+")]
        return None if any(v is None for v in values) else tuple(values)
    return record.get(path)


def _source_index(anchors: Any, position: int) -> int:
    """Where folded ``position`` lies in the unfolded text, by the record's ``anchors`` (``[[folded
    index, text index], …]``, sorted; ``app.history.text.fold_map``), as the page's adapter does."""
    source = position
    for pair in anchors if isinstance(anchors, list) else []:
        if pair[0] > position:
            break
        source = pair[1] + (position - pair[0])
    return source


def _norm(key: Key) -> Key:
    return tuple(_norm(k) for k in key) if isinstance(key, (list, tuple)) else key


def _ordered(key: Key) -> tuple | None:
    """``key`` as a value that sorts as IndexedDB sorts keys: every number before every string,
    every string before every array, arrays element by element (a shorter one first when it is the
    start of the other). None when IndexedDB takes it for no key (a boolean, null, an object, NaN):
    its record is in no index. Dates and binary keys do not come out of JSON: not modelled."""
    if isinstance(key, bool) or key is None:
        return None
    if isinstance(key, (int, float)):
        return None if key != key else (0, key)
    if isinstance(key, str):
        return (2, key)
    if isinstance(key, (list, tuple)):
        parts = [_ordered(k) for k in key]
        return None if any(p is None for p in parts) else (4, tuple(parts))
    return None


class MemoryBackend:
    """``RecordBackend`` in memory, over the same ``SCHEMA`` (CPython tests; structured-clone-like copies).

    Failure injection for tests: ``fail_open`` (a kind ``open`` raises),
    ``fail_next`` (a kind the next call raises), ``quota_chars`` (writes that
    would make the stored JSON longer than this raise ``quota``).
    ``on_event(kind, detail)`` is called by ``simulate_event`` (``versionchange``,
    ``deleted``) which also closes the connection, as the browser adapter does.
    """

    def __init__(self, schema: dict[int, dict[str, str]] | None = None, *,
                 on_event: Callable[[str, str], None] | None = None) -> None:
        schema = schema or SCHEMA
        self._specs = {name: parse_spec(spec) for name, spec in schema[max(schema)].items()}
        self._multi = {(name, index[1:]) for name, (_, indexes) in self._specs.items() for index in indexes
                       if index.startswith("*")}
        self._tables: dict[str, dict[Key, str]] = {name: {} for name in self._specs}
        self.on_event = on_event
        self.is_open = False
        self.fail_open: str | None = None
        self.fail_next: str | None = None
        self.quota_chars: int | None = None
        self.persisted = False
        self.calls = 0

    # -- test helpers -----------------------------------------------------
    def simulate_event(self, kind: str, detail: str = "") -> None:
        """Another tab upgrades (``versionchange``) or the browser deletes (``deleted``) the database;
        ``opened``: an open another tab blocked went through at last (the store stays as it is)."""
        if kind != "opened":
            self.is_open = False
        if kind == "deleted":
            self._tables = {name: {} for name in self._specs}
        if self.on_event:
            self.on_event(kind, detail)

    def raw(self, table: str) -> dict[Key, dict]:
        """Everything stored in ``table`` (copies), by primary key."""
        return {k: json.loads(v) for k, v in self._tables[table].items()}

    def put_raw(self, table: str, record: Any) -> None:
        """Store ``record`` as is, unchecked (to plant damaged records in tests)."""
        primary, _ = self._specs[table]
        self._tables[table][_norm(key_of(record, primary) if isinstance(record, dict) else record)] = json.dumps(record)

    # -- protocol ---------------------------------------------------------
    def _enter(self) -> None:
        self.calls += 1
        if self.fail_next:
            kind, self.fail_next = self.fail_next, None
            raise RecordStoreError(kind, "injected")
        if not self.is_open:
            raise RecordStoreError("closed", "the database is not open")

    async def open(self) -> None:
        if self.fail_open:
            raise RecordStoreError(self.fail_open, "injected")
        self.is_open = True

    async def get(self, table: str, key: Key) -> dict | None:
        self._enter()
        text = self._tables[table].get(_norm(key))
        return None if text is None else json.loads(text)

    async def bulk_get(self, table: str, keys: list[Key], *, fields: list[str] | None = None) -> list[dict | None]:
        self._enter()
        found = [None if (t := self._tables[table].get(_norm(k))) is None else json.loads(t) for k in keys]
        if fields is None:
            return found
        return [{f: r[f] for f in fields if f in r} if isinstance(r, dict) else r for r in found]

    async def get_all(self, reads: list[tuple[str, Key]]) -> list[dict | None]:
        self._enter()
        return [None if (t := self._tables[table].get(_norm(key))) is None else json.loads(t) for table, key in reads]

    def _range(self, table: str, index: str, lower: Key, upper: Key, lower_open: bool, upper_open: bool):
        """The ``(key, primary key, record)`` of ``index`` in the range, in IndexedDB's order of keys
        (``_ordered``: a key of another type sorts apart, a value that is no key is in no index)."""
        low, high = _ordered(_norm(lower)), _ordered(_norm(upper))
        multi = (table, index) in self._multi
        rows = []
        for primary, text in self._tables[table].items():
            record = json.loads(text)
            if not isinstance(record, dict):
                continue
            if multi:
                entries = record.get(index)
                keys = {_norm(k) for k in entries if isinstance(k, (str, int, float))} if isinstance(entries, list) else set()
            else:
                key = _norm(key_of(record, index))
                keys = set() if key is None or _ordered(key) is None else {key}  # an object in it: no key
            for key in keys:
                at = _ordered(key)
                if at is not None and (low < at if lower_open else low <= at) and (at < high if upper_open else at <= high):
                    rows.append((at, key, primary, record))
        rows.sort(key=lambda row: (row[0], row[2]))
        return [(key, primary, record) for _, key, primary, record in rows]

    def _page(self, table: str, index: str, lower: Key, upper: Key, lower_open: bool, upper_open: bool,
              reverse: bool, limit: int) -> list[tuple[Any, Any, dict]]:
        """The rows of ``_range`` in cursor order (``reverse``: highest first), at most ``limit`` (0: all)."""
        self._enter()
        rows = self._range(table, index, lower, upper, lower_open, upper_open)
        if reverse:
            rows.reverse()
        return rows[:limit] if limit > 0 else rows

    async def query(self, table: str, index: str, lower: Key, upper: Key, *, lower_open: bool = False,
                    upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list[dict]:
        return [record for _, _, record in self._page(table, index, lower, upper, lower_open, upper_open, reverse, limit)]

    async def count(self, table: str, index: str, lower: Key, upper: Key) -> int:
        self._enter()
        return len(self._range(table, index, lower, upper, False, False))

    async def query_count(self, table: str, index: str, lower: Key, upper: Key, count_lower: Key, count_upper: Key, *,
                          lower_open: bool = False, upper_open: bool = False, reverse: bool = False,
                          limit: int = 0) -> tuple[list[dict], int]:
        rows = await self.query(table, index, lower, upper, lower_open=lower_open, upper_open=upper_open,
                                reverse=reverse, limit=limit)
        return rows, await self.count(table, index, count_lower, count_upper)

    async def write(self, ops: list[WriteOp]) -> None:
        self._enter()
        staged = {name: dict(rows) for name, rows in self._tables.items()}
        for kind, table, value in ops:
            primary, _ = self._specs[table]
            if kind == "delete":
                staged[table].pop(_norm(value), None)
                continue
            if kind == "expect":
                held = staged[table].get(_norm(value["key"]))
                record = json.loads(held) if held is not None else None
                if not (isinstance(record, dict) and all(record.get(k) == v for k, v in value.get("if", {}).items())):
                    raise RecordStoreError("stale", f"StaleError: {table} {value['key']!r} changed since it was read")
                continue
            if kind == "patch":
                held = staged[table].get(_norm(value["key"]))
                record = json.loads(held) if held is not None else None
                if isinstance(record, dict) and all(record.get(k) == v for k, v in value.get("if", {}).items()):
                    staged[table][_norm(value["key"])] = json.dumps({**record, **value.get("set", {})})
                continue
            key = key_of(value, primary)
            if key is None:
                raise RecordStoreError("aborted", f"DataError: record without {primary}")
            key = _norm(key)
            if kind == "add" and key in staged[table]:
                raise RecordStoreError("aborted", f"ConstraintError: key {key!r} exists in {table}")
            staged[table][key] = json.dumps(value)
        if self.quota_chars is not None:
            size = sum(len(k if isinstance(k, str) else repr(k)) + len(v) for rows in staged.values()
                       for k, v in rows.items())
            if size > self.quota_chars:
                raise RecordStoreError("quota", "QuotaExceededError: injected quota")
        self._tables = staged

    async def keys(self, table: str, index: str, lower: Key, upper: Key, *, lower_open: bool = False,
                   upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list[Key]:
        rows = self._page(table, index, lower, upper, lower_open, upper_open, reverse, limit)
        return [list(key) if isinstance(key, tuple) else key for key, _, _ in rows]

    async def primary_keys(self, table: str, index: str, lower: Key, upper: Key) -> list[Key]:
        self._enter()
        return [list(p) if isinstance(p, tuple) else p for _, p, _ in self._range(table, index, lower, upper, False, False)]

    async def scan(self, table: str, index: str, lower: Key, upper: Key, field: str, needle: str,
                   before: int, after: int, show_table: str, show_field: str) -> list[tuple[Key, int, str]]:
        self._enter()
        primary, _ = self._specs[table]
        hits = []
        for _, _, record in self._range(table, index, lower, upper, False, False):
            text = record.get(field)
            if isinstance(text, str) and (at := text.find(needle)) >= 0:
                key = key_of(record, primary)
                shown = self._tables[show_table].get(_norm(key))
                source = json.loads(shown).get(show_field) if shown else None
                source = source if isinstance(source, str) else text
                start = _source_index(record.get("anchors"), at) if source is not text else at
                hits.append((key, at, source[max(0, start - before): start + len(needle) + after]))
        return hits

    async def persist(self) -> bool:
        self.persisted = True
        return True
