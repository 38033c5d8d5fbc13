"""History in the page once its modules are loaded (after ready, DESIGN.md §13): ``HistoryPart``
holds the service over IndexedDB, the drawer's view and the backup hooks, each made with its
collaborators (§15: no view is filled in later). Until it is loaded the page holds
``app.browser.history_boot.HistoryLoading`` in its place, with the same verbs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import js

from app.browser.backup_files import bind_backup
from app.browser.history_view import HistoryView, create_history
from app.browser.tasks import next_task
from app.history.active_thread import ActiveThread
from app.history.changes import ChangeHub
from app.history.list_model import HistoryList
from app.history.recorder import HistoryRecorder
from app.history.service import HistoryService
from app.store import Notice

__all__ = ["HistoryPart"]


def _report(task: asyncio.Future) -> None:
    """Log a failed reopen (with its traceback) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        import traceback

        js.console.error("".join(traceback.format_exception(task.exception())))


class HistoryPart:
    """The page's history once loaded (module docstring): ``service`` (the ``HistoryService``) and
    ``view`` (the drawer's ``HistoryView``); ``changes``: history's hub; ``threads_restored(stages)``:
    the page's part of a restored backup (the runtime, the course and its versions drawn again)."""

    def __init__(self, service: HistoryService, view: HistoryView, changes: ChangeHub,
                 threads_restored: Callable[[set[str]], Awaitable[None]],
                 dismiss: Callable[[str], None] = lambda code: None) -> None:
        self.service, self.view = service, view
        self._changes, self._threads_restored, self._dismiss = changes, threads_restored, dismiss

    @classmethod
    async def load(cls, runtime, store, recorder: HistoryRecorder, changes: ChangeHub, translator, clock, *,
                   records, say: Callable[[Notice, bool | None], None],
                   threads_restored: Callable[[set[str]], Awaitable[None]],
                   busy: Callable[[str], bool], dismiss: Callable[[str], None] = lambda code: None) -> "HistoryPart":
        """Build the service (``say(notice, available)`` hears its notices with whether history is
        open), the list model, the active thread's service and the drawer, bind the drawer, then the
        backup hooks over ``records``, and hand the service to ``recorder`` (which runs what it
        queued), in tasks of their own (building and binding were one task of 63 ms on a cold load).
        ``dismiss(code)``: hides the page's notice ``code`` (history's blocked notice, once the block
        lifts: ``reopened``)."""
        service: HistoryService | None = None
        part: HistoryPart | None = None
        service = create_history(clock, changes, lambda notice: say(notice, service.available),
                                 on_opened=lambda: part is not None and part.opened())
        threads = ActiveThread(runtime, store, service, recorder, clock, pause=next_task)
        view = HistoryView(runtime, store, service, recorder, translator, clock, HistoryList(), threads)
        part = cls(service, view, changes, threads_restored, dismiss)
        await next_task()
        view.bind()
        await next_task()
        bind_backup(records, store, translator, clock, part.restored, busy=busy)  # DESIGN.md §14
        recorder.attach(service)
        return part

    @property
    def state(self) -> str:
        """``html[data-history]``: ``ready``, or ``unavailable:<failure>``."""
        return "ready" if self.service.available else f"unavailable:{self.service.failure}"

    async def start(self) -> None:
        """``HistoryView.start``: reconcile the stored threads, draw the turn meta and the list ahead."""
        await self.view.start()

    def opened(self) -> None:
        """The open another tab blocked went through at last: history is taken back up (``reopened``)."""
        asyncio.ensure_future(self.reopened()).add_done_callback(_report)

    async def reopened(self) -> None:
        """History blocked by another tab (an older version held open) opens once that tab lets go,
        without a reload (DESIGN.md §5, §9): its notice goes, the stored threads are reconciled and
        the turn meta and the list drawn as at start-up (``start``; an open list afresh), and
        ``html[data-history]`` says ``ready``. Nothing happens unless history had stopped as blocked."""
        if not await self.service.reopen():
            return
        self._dismiss("history-blocked")
        await self.start()
        if self.view.list.open:
            await self.view.listing.reload()
        js.document.documentElement.dataset.history = self.state

    def new_conversation(self) -> None:
        """New conversation (the pen button): ``HistoryView.new_conversation``."""
        self.view.new_conversation()

    def refresh_turn_meta(self) -> None:
        """The panel rebuilt its messages: their turn meta is put back."""
        self.view.refresh_turn_meta()

    async def restored(self, plan) -> None:
        """A backup was restored (``app.backup.format.MergePlan``, DESIGN.md §14): the restored courses'
        active conversations are read again, the page shows what was restored (``threads_restored``),
        the stats and list are drawn at once (no reload), and every restored course is announced as
        an import carrying the conversations written in it (``MergePlan.changes``: other tabs hear
        one message per course, sync sends each conversation, DESIGN.md §16)."""
        stages = set(plan.threads)
        for stage_id in stages | plan.stages:  # a course whose active conversation the restore joined too:
            self.service.forget_active(stage_id)  # its next turn reads it whole, never writes over what came
        await self._threads_restored(stages)
        await self.view.render_meta()
        await self.view.listing.reload()
        for change in plan.changes():
            self._changes.publish(change)
