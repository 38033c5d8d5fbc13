"""String storage: the ``localStorage``-shaped interface the thread store writes through.

``StringStorage`` is the contract (like zustand's ``StateStorage``); the browser
layer (``app.browser.local_storage``) implements it over ``window.localStorage``.
``MemoryStorage`` is a real in-memory implementation: tests use it, and so does
the app when the browser's storage is unavailable (DESIGN.md §5).

Example::

    >>> tab1 = MemoryStorage(quota=100)
    >>> tab2 = MemoryStorage.shared_with(tab1)   # a second tab, same origin
    >>> tab1.set_item("k", "v"); tab1.unchanged("k")
    True
    >>> tab2.set_item("k", "w"); tab1.unchanged("k")
    False
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = [
    "MAX_JSON_DEPTH",
    "MemoryStorage",
    "QuotaExceeded",
    "StorageUnavailable",
    "StringStorage",
    "UnparseableValue",
    "utf16_len",
]


class QuotaExceeded(Exception):
    """A write did not fit in the storage quota; the stored value is unchanged."""


class StorageUnavailable(Exception):
    """Any access to the storage throws (blocked storage, some private modes)."""


class UnparseableValue(Exception):
    """``get_item`` found a value this runtime cannot safely parse; ``raw`` holds it.

    Raised by the browser storage for JSON nested deeper than ``MAX_JSON_DEPTH``:
    in Pyodide, ``json.loads`` of such a value exhausts the JavaScript stack and
    kills the interpreter instead of raising. The store treats the value as
    damaged (backup, notice, DESIGN.md §5).
    """

    def __init__(self, raw: str) -> None:
        super().__init__(f"stored value nested deeper than {MAX_JSON_DEPTH} levels")
        self.raw = raw


MAX_JSON_DEPTH = 64
"""Deepest array/object nesting a stored value may have; the slim envelope needs 13."""


@runtime_checkable
class StringStorage(Protocol):
    """A string key-value storage shaped like ``localStorage``.

    Every method may raise ``StorageUnavailable``.
    """

    def get_item(self, key: str) -> str | None:
        """Return the value at ``key``, or ``None`` when there is none.

        May raise ``UnparseableValue`` for a value the runtime cannot parse safely.
        """

    def set_item(self, key: str, value: str) -> None:
        """Store ``value`` whole or not at all; raise ``QuotaExceeded`` when it does not fit."""

    def remove_item(self, key: str) -> None:
        """Remove ``key`` (no error when absent)."""

    def unchanged(self, key: str) -> bool:
        """True only if the value at ``key`` is exactly what this object last read or
        wrote through itself (False when it never touched ``key``)."""

    def splice_item(self, key: str, start: int, end: int, text: str) -> bool:
        """Replace UTF-16 code units ``[start, end)`` of the value at ``key`` with ``text``, in
        one write, only if that value is still what this object last read or wrote.

        Returns False, writing nothing, when another writer changed the value
        (the caller then reads and writes whole). Raises ``QuotaExceeded`` (the
        value is unchanged) like ``set_item``. Lets a save hand over only the
        changed thread instead of the whole envelope (DESIGN.md §2).
        """

    def read_changes(self, key: str, starts: list[int], ends: list[int]) -> tuple[int, int, str] | None:
        """What another writer changed in the value at ``key``, in terms of the entries of the
        value this object last read or wrote (optional: the store reads whole without it).

        ``starts[k]`` / ``ends[k]``: UTF-16 offsets of entry ``k`` in that last value
        (entries joined by one comma each). Returns ``(first, last, text)``: entries
        ``first`` to ``last - 1`` are now ``text`` (zero or more entries joined by
        commas, as stored now), everything before and after is unchanged
        (``(0, 0, "")`` when nothing changed). ``None``
        when there is no last value or no value now, no entries, or the change
        reaches outside the entries; also, in the browser, when ``text`` nests
        deeper than ``MAX_JSON_DEPTH`` allows. Afterwards the value counts as read
        by this object (``unchanged`` is True). Lets a tab take in another tab's
        save without copying the whole value into Python (no long main-thread task on that save).
        """

    def keys(self, prefix: str) -> list[str]:
        """The stored keys that start with ``prefix`` (any order; no value is read)."""

    def same_value(self, key: str, other: str) -> bool:
        """True when ``key`` and ``other`` both hold a value and the two values are equal,
        compared where the values live (in JavaScript in the browser: nothing is copied
        into Python). Used to never back up a value twice (DESIGN.md §5)."""

    def copy_item(self, key: str, dest: str) -> None:
        """Store the value now at ``key`` under ``dest`` too, copied where it lives; nothing
        happens when ``key`` holds nothing. Raises ``QuotaExceeded`` (``dest`` unchanged)."""

    def export_item(self, key: str, file_name: str) -> bool:
        """Hand the value now at ``key`` to the user as a file named ``file_name`` (the browser
        downloads it). Afterwards that value counts as read by this object (``unchanged``
        is True while nobody writes it). False, doing nothing, when ``key`` holds nothing.
        The file is the backup the user chose when no backup key fits (DESIGN.md §5)."""


def utf16_len(s: str) -> int:
    """Length of ``s`` in UTF-16 code units, the unit browsers count quota in.

    >>> utf16_len("a中😀")
    4
    """
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class _Backing:
    """What one origin's storage holds, shared by every tab's view of it."""

    def __init__(self, quota: int | None, available: bool) -> None:
        self.items: dict[str, str] = {}
        self.versions: dict[str, int] = {}  # per-key write counter
        self.used = 0  # UTF-16 units over all keys + values
        self.quota = quota
        self.available = available


class MemoryStorage:
    """In-memory ``StringStorage``.

    ``quota``: maximum UTF-16 code units over all keys and values (``None``: no
    limit), counted like browsers do. ``available=False`` makes every access raise
    ``StorageUnavailable``. ``MemoryStorage.shared_with(other)`` is another view
    (another tab) over the same items, quota and availability; ``unchanged`` of
    one view turns False when another view writes the key. ``reads`` and
    ``writes`` count this view's successful ``get_item`` / ``set_item`` calls,
    ``copies`` its ``copy_item`` calls; ``exported`` lists the files
    ``export_item`` handed to the user, as ``(file_name, value)``.
    """

    def __init__(self, *, quota: int | None = None, available: bool = True) -> None:
        self._backing = _Backing(quota, available)
        self._seen: dict[str, int] = {}
        self._last: dict[str, str | None] = {}  # the value this view last read or wrote
        self.reads = 0
        self.writes = 0
        self.copies = 0
        self.exported: list[tuple[str, str]] = []  # (file name, value) handed to the user by export_item

    @classmethod
    def shared_with(cls, other: MemoryStorage) -> MemoryStorage:
        """A new view over ``other``'s items: a second tab of the same origin."""
        view = cls()
        view._backing = other._backing
        return view

    @property
    def quota(self) -> int | None:
        return self._backing.quota

    @quota.setter
    def quota(self, value: int | None) -> None:
        self._backing.quota = value

    @property
    def available(self) -> bool:
        return self._backing.available

    @available.setter
    def available(self, value: bool) -> None:
        self._backing.available = value

    @property
    def used(self) -> int:
        """UTF-16 code units in use over all keys and values."""
        return self._backing.used

    def dump(self) -> dict[str, str]:
        """A copy of every item, for tests (does not count as a read)."""
        return dict(self._backing.items)

    def get_item(self, key: str) -> str | None:
        b = self._open()
        self._seen[key] = b.versions.get(key, 0)
        self._last[key] = b.items.get(key)
        self.reads += 1
        return b.items.get(key)

    def set_item(self, key: str, value: str) -> None:
        b = self._open()
        used = b.used - _size(key, b.items.get(key)) + _size(key, value)
        if b.quota is not None and used > b.quota:
            raise QuotaExceeded(f"{key}: {used} > {b.quota} UTF-16 units")
        b.items[key] = value
        b.used = used
        self._bump(b, key)
        self._last[key] = value
        self.writes += 1

    def remove_item(self, key: str) -> None:
        b = self._open()
        if key in b.items:
            b.used -= _size(key, b.items.pop(key))
            self._bump(b, key)
        else:
            self._seen[key] = b.versions.get(key, 0)
        self._last[key] = None

    def unchanged(self, key: str) -> bool:
        b = self._open()
        return key in self._seen and self._seen[key] == b.versions.get(key, 0)

    def splice_item(self, key: str, start: int, end: int, text: str) -> bool:
        if not self.unchanged(key) or self._backing.items.get(key) is None:
            return False
        value = self._backing.items[key]
        if value.isascii() and text.isascii():
            spliced = value[:start] + text + value[end:]
        else:
            units = value.encode("utf-16-le", "surrogatepass")
            spliced = (units[: 2 * start] + text.encode("utf-16-le", "surrogatepass") + units[2 * end :]).decode(
                "utf-16-le", "surrogatepass")
        self.set_item(key, spliced)
        return True

    def read_changes(self, key: str, starts: list[int], ends: list[int]) -> tuple[int, int, str] | None:
        b = self._open()
        old, now = self._last.get(key), b.items.get(key)
        self._seen[key], self._last[key] = b.versions.get(key, 0), now
        self.reads += 1
        if not isinstance(old, str) or not isinstance(now, str) or not starts:
            return None
        if old == now:
            return 0, 0, ""
        o, n = old.encode("utf-16-le", "surrogatepass"), now.encode("utf-16-le", "surrogatepass")
        units = min(len(o), len(n)) // 2
        p = 0
        while p < units and o[2 * p: 2 * p + 2] == n[2 * p: 2 * p + 2]:
            p += 1
        s = 0
        while s < units - p and o[len(o) - 2 * s - 2: len(o) - 2 * s] == n[len(n) - 2 * s - 2: len(n) - 2 * s]:
            s += 1
        old_end = len(o) // 2 - s
        if p < starts[0] or old_end > ends[-1]:
            return None
        first = max(k for k in range(len(starts)) if starts[k] <= p)
        last = next((k for k in range(first, len(ends)) if ends[k] >= old_end), len(ends) - 1)
        delta = (len(n) - len(o)) // 2
        text = n[2 * starts[first]: 2 * (ends[last] + delta)].decode("utf-16-le", "surrogatepass")
        return first, last + 1, text

    def keys(self, prefix: str) -> list[str]:
        return [k for k in self._open().items if k.startswith(prefix)]

    def same_value(self, key: str, other: str) -> bool:
        items = self._open().items
        return key in items and other in items and items[key] == items[other]

    def copy_item(self, key: str, dest: str) -> None:
        value = self._open().items.get(key)
        if value is not None:
            self.set_item(dest, value)
            self.writes -= 1  # counted apart: ``copies``
            self.copies += 1

    def export_item(self, key: str, file_name: str) -> bool:
        b = self._open()
        value = b.items.get(key)
        if value is None:
            return False
        self.exported.append((file_name, value))
        self._seen[key], self._last[key] = b.versions.get(key, 0), value
        return True

    def _open(self) -> _Backing:
        if not self._backing.available:
            raise StorageUnavailable("storage is not available")
        return self._backing

    def _bump(self, b: _Backing, key: str) -> None:
        b.versions[key] = b.versions.get(key, 0) + 1
        self._seen[key] = b.versions[key]


def _size(key: str, value: str | None) -> int:
    return 0 if value is None else utf16_len(key) + utf16_len(value)
