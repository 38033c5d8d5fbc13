"""``window.localStorage`` as an ``app.storage.StringStorage`` (DESIGN.md §2, §5).

A thin face over the JavaScript bridge in ``static/storage-bridge.js``:

- values go to JavaScript as UTF-8 bytes and are decoded there (a non-ASCII
  Python ``str`` is slow to copy into a JS string, DESIGN.md §2);
- ``unchanged(key)`` compares on the JavaScript side whether the stored value
  is still the one this tab last read or wrote, so a save does not copy the
  whole value into Python when no other tab has written;
- a full quota surfaces as ``app.storage.QuotaExceeded``; storage that throws on
  access as ``app.storage.StorageUnavailable``.
"""

from __future__ import annotations

import js
from pyodide.ffi import JsException, to_js

from app.storage import MAX_JSON_DEPTH, QuotaExceeded, StorageUnavailable, UnparseableValue

__all__ = ["LocalStorage", "open_local_storage"]

_ENTRY_DEPTH = MAX_JSON_DEPTH - 3
"""Nesting left for a thread entry: it sits inside the envelope, ``state`` and ``threads``."""


class LocalStorage:
    """``StringStorage`` over the page's ``localStorage`` through ``js.agentbarStorage``."""

    def __init__(self, bridge) -> None:
        self._bridge = bridge

    def get_item(self, key: str) -> str | None:
        """Return the stored string or ``None``.

        Raises ``StorageUnavailable``, or ``UnparseableValue`` for JSON nested
        deeper than ``MAX_JSON_DEPTH`` (checked in JavaScript, where it is cheap).
        """
        try:
            value, too_deep = self._bridge.get(key, MAX_JSON_DEPTH)
        except JsException as error:
            raise StorageUnavailable(str(error)) from error
        if not isinstance(value, str):
            return None
        if too_deep:
            raise UnparseableValue(value)
        return value

    def set_item(self, key: str, value: str) -> None:
        """Store ``value`` whole or not at all. Raises ``QuotaExceeded`` or ``StorageUnavailable``."""
        self._call("set", key, _payload(value))

    def splice_item(self, key: str, start: int, end: int, text: str) -> bool:
        """Replace UTF-16 units ``[start, end)`` of the value this tab last read or wrote.

        False when another tab wrote since (nothing written). Raises
        ``QuotaExceeded`` or ``StorageUnavailable``.
        """
        return self._call("splice", key, start, end, _payload(text)) != "stale"

    def _call(self, method: str, key: str, *args) -> str:
        try:
            status = getattr(self._bridge, method)(key, *args)
        except JsException as error:
            raise StorageUnavailable(str(error)) from error
        if status == "quota":
            raise QuotaExceeded(key)
        return status

    def read_changes(self, key: str, starts: list[int], ends: list[int]) -> tuple[int, int, str] | None:
        """What another tab changed in ``key``'s value since this tab last read or wrote it,
        compared in JavaScript (``app.storage.StringStorage.read_changes``): only the
        changed entries' text is copied into Python. ``None`` when that cannot be
        said. Raises ``StorageUnavailable``.
        """
        try:
            change = self._bridge.readChanges(key, to_js(starts), to_js(ends), _ENTRY_DEPTH)
        except JsException as error:
            raise StorageUnavailable(str(error)) from error
        if len(change) != 3:
            return None
        first, last, text = change[0], change[1], change[2]
        return int(first), int(last), str(text)

    def remove_item(self, key: str) -> None:
        """Remove ``key``. Raises ``StorageUnavailable``."""
        try:
            self._bridge.remove(key)
        except JsException as error:
            raise StorageUnavailable(str(error)) from error

    def keys(self, prefix: str) -> list[str]:
        """The stored keys starting with ``prefix`` (no value is copied). Raises ``StorageUnavailable``."""
        try:
            return [str(k) for k in self._bridge.keys(prefix)]
        except JsException as error:
            raise StorageUnavailable(str(error)) from error

    def same_value(self, key: str, other: str) -> bool:
        """Whether ``key`` and ``other`` hold equal values, compared in JavaScript (nothing is
        copied into Python). Raises ``StorageUnavailable``."""
        try:
            return bool(self._bridge.same(key, other))
        except JsException as error:
            raise StorageUnavailable(str(error)) from error

    def copy_item(self, key: str, dest: str) -> None:
        """Copy ``key``'s value to ``dest`` in JavaScript. Raises ``QuotaExceeded`` or ``StorageUnavailable``."""
        self._call("copy", key, dest)

    def export_item(self, key: str, file_name: str) -> bool:
        """Download ``key``'s value as the file ``file_name`` (built in JavaScript, never copied into
        Python); it then counts as read. False when there is no value. Raises ``StorageUnavailable``."""
        try:
            return bool(self._bridge.exportFile(key, file_name))
        except JsException as error:
            raise StorageUnavailable(str(error)) from error

    def unchanged(self, key: str) -> bool:
        """True only if ``key`` still holds what this tab last read or wrote."""
        try:
            return bool(self._bridge.unchanged(key))
        except JsException:
            return False


def _payload(text: str):
    """``text`` as UTF-8 bytes for the bridge to decode (a str with lone surrogates as it is)."""
    try:
        return to_js(memoryview(text.encode("utf-8")))
    except UnicodeEncodeError:
        return text


def open_local_storage() -> LocalStorage | None:
    """Return the page's storage, or ``None`` when access throws (blocked, private mode)."""
    bridge = getattr(js, "agentbarStorage", None)
    if bridge is None:
        return None
    try:
        bridge.probe()
    except JsException:
        return None
    return LocalStorage(bridge)
