"""IndexedDB (through Dexie) as an ``app.records.RecordBackend`` (DESIGN.md §9).

A thin face over ``static/indexeddb.js`` (``js.agentbarIndexedDbAdapter``),
which opens the database ``app.records.DB_NAME`` with the versions of
``app.records.SCHEMA``. Records and keys cross as JSON text (Python sends UTF-8
bytes, decoded in JavaScript; JavaScript returns a string parsed here), so
callers get plain Python records, never JavaScript proxies; the conversions
are the private functions at the end.

Availability: the boot script may set ``window.agentbarIndexedDb =
{available, reason}``; ``available: false`` is taken as is (no open is tried),
a missing flag or ``true`` means "check yourself": ``open`` tries and reports
``RecordStoreError("unavailable" | "blocked" | "version" | …)``. Later events
(another tab upgrading, the database deleted or evicted) reach ``on_event(kind,
detail)`` after the connection was closed.

The page holds ONE connection: every ``IndexedDbBackend`` opened in it (history,
scene checkpoints) shares it, and each is told once when it closes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from app.browser.tasks import next_task
from app.json_steps import STEP_MS, dumps_in_steps, lift_long_texts
from app.records import DB_NAME, SCHEMA, BulkValue, RecordStoreError, WriteOp

__all__ = ["IndexedDbBackend"]

BLOCKED_AFTER_MS = 1500
"""How long an open waits for another tab holding an older version before saying "blocked" (an open
that got no "blocked" event, queued behind another page's blocked one, says so after 4 × this)."""


class IndexedDbBackend:
    """``RecordBackend`` over the page's IndexedDB (see the module docstring).

    ``on_event(kind, detail)``: called when the browser closed the connection
    (``versionchange``, ``deleted``, ``closed``), or when an open that said ``blocked`` went through
    once the other tab let go (``opened``: a new ``open`` now succeeds at once).
    """

    def __init__(self, on_event: Callable[[str, str], None] | None = None) -> None:
        self.on_event = on_event
        self._adapter = getattr(js, "agentbarIndexedDbAdapter", None)
        self._proxy = create_proxy(self._event)

    def _event(self, kind, detail) -> None:
        if self.on_event:
            self.on_event(str(kind), str(detail))

    async def open(self) -> None:
        flag = getattr(js.window, "agentbarIndexedDb", None)
        if flag is not None and getattr(flag, "available", True) is False:
            raise RecordStoreError("unavailable", str(getattr(flag, "reason", "") or "reported at boot"))
        if self._adapter is None:
            raise RecordStoreError("unavailable", "the IndexedDB adapter did not load")
        versions = json.dumps(sorted(SCHEMA.items()))
        await self._call("open", DB_NAME, versions, self._proxy, BLOCKED_AFTER_MS)

    async def get(self, table: str, key) -> dict | None:
        return _parse(await self._call("get", table, _payload(key)))

    async def bulk_get(self, table: str, keys: list, *, fields: list[str] | None = None) -> list[dict | None]:
        projection = () if fields is None else (_payload(list(fields)),)
        return _parse(await self._call("bulkGet", table, _payload(keys), *projection))

    async def get_all(self, reads: list) -> list[dict | None]:
        return _parse(await self._call("getAll", _payload([[table, key] for table, key in reads])))

    async def query(self, table: str, index: str, lower, upper, *, lower_open: bool = False,
                    upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list[dict]:
        span = _range(lower, upper, lowerOpen=lower_open, upperOpen=upper_open, reverse=reverse, limit=limit)
        return _parse(await self._call("query", table, index, span))

    async def query_count(self, table: str, index: str, lower, upper, count_lower, count_upper, *,
                          lower_open: bool = False, upper_open: bool = False, reverse: bool = False,
                          limit: int = 0) -> tuple[list[dict], int]:
        span = _range(lower, upper, lowerOpen=lower_open, upperOpen=upper_open, reverse=reverse, limit=limit)
        rows, total = _parse(await self._call("queryCount", table, index, span, _range(count_lower, count_upper)))
        return rows, int(total)

    async def count(self, table: str, index: str, lower, upper) -> int:
        return int(await self._call("count", table, index, _range(lower, upper)))

    async def keys(self, table: str, index: str, lower, upper, *, lower_open: bool = False,
                   upper_open: bool = False, reverse: bool = False, limit: int = 0) -> list:
        span = _range(lower, upper, lowerOpen=lower_open, upperOpen=upper_open, reverse=reverse, limit=limit)
        return _parse(await self._call("keys", table, index, span))

    async def primary_keys(self, table: str, index: str, lower, upper) -> list:
        return _parse(await self._call("primaryKeys", table, index, _range(lower, upper)))

    async def write(self, ops: list[WriteOp]) -> None:
        slots, bulk, plain = [], [], []
        for index, (kind, table, value) in enumerate(ops):
            if isinstance(value, dict) and any(isinstance(v, BulkValue) for v in value.values()):
                for key, field in value.items():
                    if isinstance(field, BulkValue):
                        slots.append([index, key])
                        bulk.append(field)
                value = {k: None if isinstance(v, BulkValue) else v for k, v in value.items()}
            plain.append([kind, table, value])
        # Long strings (an imported message of millions of characters, its plain text and folding)
        # cross on their own, in pieces; the rest is encoded op by op, ending the task after big ones
        # and every json_steps.STEP_MS of encoding (a sync slice's many small ones): no long task.
        plain, lifted = lift_long_texts(plain)
        texts = await _js_texts([text for _, text in lifted]) if lifted else None
        payload = _bytes(await dumps_in_steps(plain, pause=next_task, clock=js.performance.now))
        paths = json.dumps([path for path, _ in lifted])
        if not bulk:
            await self._call("write", payload, "[]", None, paths, texts)
            return
        objects = await _js_bulk(bulk)  # strings copied to JavaScript once, in slices
        await next_task()  # converting was this task's work; storing (a structured clone) is the next one's
        await self._call("write", payload, json.dumps(slots), objects, paths, texts)

    async def scan(self, table: str, index: str, lower, upper, field: str, needle: str,
                   before: int, after: int, show_table: str, show_field: str) -> list[tuple[Any, int, str]]:
        find = _payload({"field": field, "needle": needle, "before": before, "after": after,
                         "showTable": show_table, "showField": show_field})
        hits = _parse(await self._call("scan", table, index, _range(lower, upper), find))
        return [(key, int(at), excerpt) for key, at, excerpt in hits]

    async def persist(self) -> bool:
        return bool(await self._call("persist"))

    async def close(self) -> None:
        """Close the page's shared connection (later calls of every backend raise ``closed``)."""
        if self._adapter is not None:
            self._adapter.close()

    async def _call(self, method: str, *args):
        if self._adapter is None:
            raise RecordStoreError("unavailable", "the IndexedDB adapter did not load")
        try:
            result = await getattr(self._adapter, method)(*args)
        except JsException as error:  # the adapter resolves, never rejects; this is a bug or a dead page
            raise RecordStoreError("failed", str(error)) from error
        status, value = result[0], result[1]
        if status != "ok":
            raise RecordStoreError(str(status), str(value))
        return value


def _key_json(key: Any) -> str:
    """A key (or list of keys, or an object of them) as JSON; ``±math.inf`` (open range ends) as
    ``±1e999``, which JSON.parse reads as ±Infinity."""
    if isinstance(key, float) and key in (float("inf"), float("-inf")):
        return "1e999" if key > 0 else "-1e999"
    if isinstance(key, (list, tuple)):
        return "[" + ",".join(_key_json(k) for k in key) + "]"
    if isinstance(key, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + _key_json(v) for k, v in key.items()) + "}"
    return json.dumps(key, ensure_ascii=False)


def _payload(value: Any):
    """A key (or list of keys, or an object of them) as UTF-8 JSON bytes for the adapter."""
    return _bytes(_key_json(value))


def _range(lower: Any, upper: Any, **flags: bool | int):
    """A key range for the adapter, one JSON object: ``{lower, upper}`` and the flags given
    (``lowerOpen``, ``upperOpen``, ``reverse``, ``limit``; absent: closed, forward, no limit)."""
    return _payload({"lower": lower, "upper": upper, **flags})


TEXT_PIECE_CHARS = 262_144
"""Characters of a long string copied to JavaScript at a time (``_js_texts``)."""


async def _js_texts(texts: list[str]):
    """``texts`` as a JavaScript array of arrays of pieces (``TEXT_PIECE_CHARS`` characters each,
    as UTF-8 bytes, ``_bytes``), the task ended every ``json_steps.STEP_MS`` of copying: a string
    of millions of characters crosses without a long task (the adapter decodes and joins each
    one's pieces). Bytes, not strings: Pyodide builds a JavaScript string from a Python one
    character by character, and the garbage of a 2,000,000-character text cost V8 collections
    of 50–75 ms."""
    out = js.Array.new()
    began = js.performance.now()
    for text in texts:
        pieces = js.Array.new()
        for at in range(0, len(text), TEXT_PIECE_CHARS):
            pieces.push(_bytes(text[at:at + TEXT_PIECE_CHARS]))
            if js.performance.now() - began >= STEP_MS:
                await next_task()
                began = js.performance.now()
        out.push(pieces)
    return out


async def _js_bulk(bulk: list[BulkValue]):
    """``bulk`` as a JavaScript array of objects, what ``to_js(bulk, dict_converter=Object.fromEntries)``
    gives, each top-level list copied item by item and the task ended every ``STEP_MS`` of copying:
    a scene document of 500 elements (one of over 5 MB of images, DESIGN.md §10) took 80–130 ms
    as one conversion."""
    out = js.Array.new()
    began = js.performance.now()
    for value in bulk:
        entries = js.Array.new()
        for key, field in value.items():
            if isinstance(field, list):
                items = js.Array.new()
                for item in field:
                    items.push(to_js(item, dict_converter=js.Object.fromEntries))
                    if js.performance.now() - began >= STEP_MS:
                        await next_task()
                        began = js.performance.now()
                converted = items
            else:
                converted = to_js(field, dict_converter=js.Object.fromEntries)
            entries.push(to_js([key, converted]))
        out.push(js.Object.fromEntries(entries))
    return out

def _bytes(text: str):
    """``text`` as UTF-8 bytes for the adapter (a str when it holds lone surrogates)."""
    try:
        return to_js(memoryview(text.encode("utf-8")))
    except UnicodeEncodeError:  # lone surrogates: hand the str over as it is
        return text


def _parse(text) -> Any:
    """JSON text from the adapter → plain Python values."""
    return json.loads(str(text))
