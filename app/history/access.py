"""What every history operation waits for: the record store open, and it still available (DESIGN.md §9).

``HistoryAccess`` opens the store once; any ``RecordStoreError`` makes history unavailable with ONE
notice of its kind, and the core (§3–§5) never sees it (a full disk leaves reading possible: the
next write tries again). ``guarded`` is the one place an operation is run under that rule: a method
decorated with it returns its default instead of raising when history is (or becomes) unavailable.
``Segmenter`` loads the grapheme segmenter once, before the first title or snippet that needs it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from app.history.repository import HistoryRepository
from app.history.text import needs_segmenter
from app.records import RecordStoreError
from app.store import Notice

__all__ = ["HistoryAccess", "NOTICE_CODES", "Segmenter", "guarded"]

_log = logging.getLogger(__name__)

NOTICE_CODES = {
    "unavailable": "history-unavailable", "blocked": "history-blocked", "version": "history-unavailable",
    "versionchange": "history-version-change", "deleted": "history-evicted", "closed": "history-unavailable",
    "quota": "history-full", "aborted": "history-unavailable", "stale": "history-unavailable",
    "failed": "history-unavailable",
}
"""``RecordStoreError.kind`` → the ``history-*`` notice it raises (DESIGN.md §5, §9)."""

_ANOTHER_TAB = ("blocked", "versionchange")
"""Failures another tab causes (an older version held open, an upgrade): expected, said by a notice."""

T = TypeVar("T")


def database_failed(code: str, available: bool | None) -> bool:
    """True when history's notice ``code`` says that the database itself could not be opened:
    ``history-unavailable`` or ``history-full`` while history never opened (``available`` not True).
    The page then says one IndexedDB notice for history and scene versions (DESIGN.md §5: storage
    unavailable is said once); a blocked or version-changed database, or a failure after history
    opened, keeps history's own notice.

    >>> database_failed("history-full", None), database_failed("history-full", True)
    (True, False)
    >>> database_failed("history-blocked", False)
    False
    """
    return code in ("history-unavailable", "history-full") and available is not True


class HistoryAccess:
    """Availability of history's record store (module docstring). ``notify(Notice)``: where history
    notices go (each code once per session)."""

    def __init__(self, repository: HistoryRepository, notify: Callable[[Notice], None]) -> None:
        self._repository = repository
        self._notify = notify
        self.available: bool | None = None  # None until opened
        self.failure: str | None = None
        self.full = False  # the last write failed with "quota"
        self._notified: set[str] = set()
        self._opening: asyncio.Future | None = None

    async def open(self) -> bool:
        """Open the store once; False (and one notice) when history is unavailable."""
        if self.available is not None:
            return self.available
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)
        return bool(self.available)

    async def _open(self) -> None:
        try:
            await self._repository.open()
            self.available = True
        except RecordStoreError as error:
            self.fail(error)

    async def reopen(self) -> bool:
        """Open again once the open another tab blocked went through (``blocked``: it held an older
        version open, then let go): history then works as if it had opened at once, and a later
        block is said again. True when it is open now; False (nothing changed) when history had not
        stopped as blocked, or its open fails again (``fail``)."""
        if self.available is not False or self.failure != "blocked":
            return False
        self.available, self.failure, self._opening = None, None, None
        if not await self.open():
            return False  # blocked again: said once already
        self._notified.discard(NOTICE_CODES["blocked"])  # a later block is said again
        return True

    def fail(self, error: RecordStoreError) -> None:
        """History stops (unavailable) with one notice of its kind; the core goes on. The database in
        another tab's hands (``blocked``, ``versionchange``) is expected and its notice says so: logged
        at info, not as a warning (the page prints Python's warnings as console errors)."""
        _log.log(logging.INFO if error.kind in _ANOTHER_TAB else logging.WARNING, "history unavailable: %s", error)
        if error.kind != "quota":  # a full disk leaves reading possible; the next write tries again
            self.available = False
        self.failure = error.kind
        self.notice(NOTICE_CODES.get(error.kind, "history-unavailable"))

    def notice(self, code: str, **params: Any) -> None:
        """Tell ``code`` once per session."""
        if code in self._notified:
            return
        self._notified.add(code)
        self._notify(Notice(code, params))

    async def run(self, work: Callable[[], Awaitable[T]], default: T, *, writes: bool = False) -> T:
        """``await work()`` once the store is open; ``default`` when history is unavailable or the
        work fails with ``RecordStoreError`` (then history stops, ``fail``). ``writes``: a success
        ends a lack of space."""
        if not await self.open():
            return default
        try:
            result = await work()
        except RecordStoreError as error:
            self.full = error.kind == "quota"
            self.fail(error)
            return default
        if writes:
            self.full = False  # a write worked (again): the lack of space is over
        return result


class _Guarded(Protocol):
    _access: HistoryAccess


def guarded(default: Callable[[], Any] = lambda: None, *, writes: bool = False):
    """Decorate an async method of an object with an ``_access: HistoryAccess``: it runs through
    ``HistoryAccess.run`` and returns ``default()`` (a fresh value each time) instead of raising
    ``RecordStoreError``."""
    def decorate(method):
        @functools.wraps(method)
        async def run(self: _Guarded, *args, **kwargs):
            return await self._access.run(lambda: method(self, *args, **kwargs), default(), writes=writes)
        return run
    return decorate


class Segmenter:
    """The grapheme segmenter, loaded once (``prepare``, awaited; the browser installs its wheel):
    titles and snippets cut on grapheme clusters (DESIGN.md §9, §14)."""

    def __init__(self, prepare: Callable[[], Awaitable[None]] | None) -> None:
        self._prepare = prepare
        self._ready = False

    async def for_titles(self, messages: list[dict]) -> None:
        """Load the segmenter (once) if the title of ``messages`` needs it."""
        if not self._ready and needs_segmenter(messages):
            await self.load()

    async def load(self) -> None:
        """Load the segmenter (once)."""
        if not self._ready:
            if self._prepare is not None:
                await self._prepare()
            self._ready = True
