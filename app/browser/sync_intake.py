"""Replicated changes into this page's history, a slice per step (DESIGN.md §16): the intake of
``app.browser.sync_setup.SyncSetup``'s replicating tab.

The replication (``static/sync.js``) holds the changes that wait, so its own work never runs Python
per document. ``SyncIntake.changed()`` (the replication says changes wait) takes them ``SLICE`` at a
time, ``SLICE_CHARS`` of their JSON at most, into history (``SyncEngine.remote_changed_many``) in
arrival order, queued behind this tab's own steps (``enqueue``); while one slice is written the next
is taken and held to the import's rules (``SyncEngine.read_ahead``). The local change sequence
already applied is kept under ``SEQ_KEY`` so that a reload goes on from there (``since``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from app.browser.model_setup import WebStorage
from app.sync.engine import SyncEngine

__all__ = ["SEQ_KEY", "SLICE", "SLICE_CHARS", "SyncIntake"]

SEQ_KEY = "agentbar-sync-seq"
"""``localStorage``: the local database's change sequence this page has applied to history."""
SLICE = 10
"""Replicated changes applied to history per step at most (the conversations new here in one transaction)."""
SLICE_CHARS = 64_000
"""... and no more once their JSON reached this many characters (always one): a slice of long
conversations is fewer of them (taking ten in, JSON and validation, is one step of the page; ten of
the benchmark's 5,800-character conversations are a slice)."""


class SyncIntake:
    """The slices of one page (module docstring). ``local``: ``localStorage`` (``SEQ_KEY``);
    ``current()``: the replication that runs and its ``SyncEngine`` (``(None, None)`` when none);
    ``enqueue(make)``: run ``make()`` after every step queued before; ``worked()``: history took a
    slice in (the watchdog's count, not progress of the replication); ``settled()``: nothing waits any
    more for the replication that runs (a ``synced`` held back may be shown)."""

    def __init__(self, local: WebStorage, *, current: Callable[[], tuple[Any, SyncEngine | None]],
                 enqueue: Callable[[Callable[[], Awaitable[None]]], None], worked: Callable[[], None],
                 settled: Callable[[], None]) -> None:
        self._local, self._current, self._enqueue = local, current, enqueue
        self._worked, self._settled = worked, settled
        self._draining = None  # the replication whose waiting changes are being taken

    @property
    def applying(self) -> bool:
        """True while waiting changes are being taken in (a ``synced`` is held back meanwhile)."""
        return self._draining is not None

    def since(self) -> str:
        """The change sequence to replicate from: the one applied last (``"0"``: from the start)."""
        try:
            return self._local.get_item(SEQ_KEY) or "0"
        except Exception:  # noqa: BLE001
            return "0"

    def changed(self) -> None:
        """Changes wait in the adapter: take them a slice per step (``_apply_slice``), unless that runs."""
        replication, _ = self._current()
        if replication is not None and self._draining is not replication:
            self._draining = replication
            self._enqueue(lambda: self._apply_slice(replication))

    async def _take(self, replication, engine: SyncEngine) -> tuple[list, list, Any]:
        """Up to ``SLICE`` waiting changes of ``replication`` (``SLICE_CHARS``), their documents, and
        what ``engine`` read of them ahead (``SyncEngine.read_ahead``)."""
        changes = json.loads(str(await replication.take(SLICE, SLICE_CHARS)))
        docs = [doc for doc, _ in changes if isinstance(doc, dict)]
        return changes, docs, await engine.read_ahead(docs)

    async def _apply_slice(self, replication, taken: asyncio.Future | None = None) -> None:
        """Apply up to ``SLICE`` waiting changes of ``replication`` (``SyncEngine.remote_changed_many``;
        ``taken``: the slice ``_take`` took and checked while the one before was written), keep the
        sequence reached, and queue the next slice, taken and checked meanwhile, behind whatever was
        queued (this tab's own changes go out between slices); stops when none wait or the replication
        ended."""
        current, engine = self._current()
        if replication is not current or engine is None:
            if self._draining is replication:
                self._draining = None
            return
        changes, docs, ahead = await (taken or self._take(replication, engine))
        if not changes:
            self._draining = None  # the next change that arrives calls changed() again;
            if replication.changed:  # one that came while the answer was on its way did already
                self.changed()
            elif replication is self._current()[0]:
                self._settled()
            return
        following = asyncio.ensure_future(self._take(replication, engine))  # while this slice is written
        following.add_done_callback(lambda task: task.cancelled() or task.exception())  # unused once it ended
        try:
            if docs:
                await engine.remote_changed_many(docs, ahead)
            self._worked()  # history takes in what came: not yet the replication moving again
            try:
                self._local.set_item(SEQ_KEY, str(changes[-1][1]))
            except Exception:  # noqa: BLE001 - the next start applies these changes again (no harm)
                pass
        finally:
            self._enqueue(lambda: self._apply_slice(replication, following))
