"""The history panel: the drawer's list, resume, delete and undo (DESIGN.md §9 UI hooks).

``create_history(clock)`` builds the IndexedDB backend and the ``HistoryService``
(nothing is opened or read yet; the page loads history after ready, ``app.browser.history_boot``);
``HistoryView.start()`` runs after ``html[data-ready]``: it reconciles
``maic-agent-threads`` with history and reads the shown course's turn meta
(the only history read before the list is opened, DESIGN.md §9).

The list's state is ``app.history.list_model.HistoryList`` (pure); this view draws it and
forwards events. The stats and turn-meta lines are ``TurnMetaView``'s, export, print and
import ``HistoryFiles``'. Changes of history (this tab's, sync's, and other tabs' through
``app.browser.signals``) arrive on history's hub (``HistoryService.changes``). Text is set as
``textContent``; times use the browser's ``Intl``.

Opening the list costs about a raw read of one page (DESIGN.md §14): after ``start()``, in idle
time, the shown course's first page is drawn in the closed drawer (``HistoryList.live``), which
stays laid out while closed (``static/app.css``: hidden by ``visibility``, out of the flow, so
neither focusable nor exposed to assistive technology); every change of history that may concern
it (``HistoryList.hear``) or a course switch draws it afresh in idle time, and a click shows it
at once only when ``HistoryList.ready_to_show`` holds (else it reads and draws first, as before).
"""

from __future__ import annotations

import asyncio
from typing import Any

import js
from pyodide.ffi import create_proxy
from pyscript import document
from pyscript.ffi import is_none

from app.browser.history_files import HistoryFiles, install_graphemes as _install_graphemes
from app.browser.history_list_view import HistoryListView
from app.browser.indexeddb import IndexedDbBackend
from app.browser.status_line import dismiss, say
from app.browser.tasks import next_task
from app.browser.turn_meta_view import TurnMetaView
from app.history.active_thread import ActiveThread
from app.history.changes import ChangeHub, HistoryChange
from app.history.list_model import HistoryList
from app.history.reconcile import iter_stored_threads, refreshed
from app.history.recorder import HistoryRecorder
from app.history.service import UNDO_MS, HistoryService

__all__ = ["HistoryView", "create_history"]

_FOCUSABLE = "button, input, select, textarea, summary, a[href], [tabindex]"  # summary: the file actions toggle


def create_history(clock, changes: ChangeHub, on_notice, on_opened=None) -> HistoryService:
    """The service over IndexedDB, publishing on ``changes`` and saying its notices to ``on_notice``
    (the runtime's recorder is made before it, ``app.browser.history_boot``); nothing is opened yet.
    The backend's closed connection (another tab upgrades, the database deleted) reaches the service;
    ``on_opened()``: the open another tab blocked went through at last (``HistoryService.reopen``)."""
    service: HistoryService | None = None
    backend = IndexedDbBackend(on_event=lambda kind, detail: service.on_backend_event(kind, detail))
    service = HistoryService(backend, clock=clock, prepare=_install_graphemes, pause=next_task, changes=changes,
                             on_notice=on_notice, on_opened=on_opened)
    return service


def _report(task: asyncio.Future) -> None:
    """Log a failed UI task (with its traceback) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        import traceback

        js.console.error("".join(traceback.format_exception(task.exception())))


def _schedule(coro) -> None:
    asyncio.ensure_future(coro).add_done_callback(_report)


def _shown(node) -> bool:
    """True when ``node`` is drawn: not hidden, nor inside a closed ``<details>`` (whose content still
    has a box in Chromium, so a box alone does not tell)."""
    if hasattr(node, "checkVisibility"):
        return bool(node.checkVisibility())
    return node.getClientRects().length > 0


def _keep_focus_in(drawer, event) -> None:
    """Tab and Shift+Tab go round the drawer's controls and never leave it (a dialog keeps focus, §6)."""
    stops = [node for node in drawer.querySelectorAll(_FOCUSABLE)
             if node.tabIndex >= 0 and not node.matches(":disabled") and _shown(node)]
    if not stops:
        return
    first, last = stops[0], stops[-1]
    here = document.activeElement
    if event.shiftKey and first.isSameNode(here):
        event.preventDefault()
        last.focus()
    elif not event.shiftKey and last.isSameNode(here):
        event.preventDefault()
        first.focus()


class HistoryView:
    """Binds the history drawer and the stats/turn-meta hooks to one runtime (module docstring).

    ``history_list``: the list's pure state; the view hears history's changes on
    ``service.changes`` and the recorder's writes (``HistoryRecorder.subscribe``); ``store``: the
    ``ThreadStore`` (reconciled with history at start); ``clock``: epoch ms; ``threads``: the
    ``ActiveThread`` service through which a resume, and sync's change of the course's active
    conversation, reach the runtime.
    """

    def __init__(self, runtime, store, service: HistoryService, recorder: HistoryRecorder, translator, clock,
                 history_list: HistoryList, threads: ActiveThread) -> None:
        self.runtime, self.store, self.service, self.recorder, self.t, self.clock = (
            runtime, store, service, recorder, translator, clock)
        self.list, self.threads = history_list, threads
        self.listing = HistoryListView(runtime, service, history_list, translator, clock)
        self.meta = TurnMetaView(runtime, service, history_list, translator)
        self.files = HistoryFiles(runtime, store, service, recorder, history_list, translator, clock,
                                  self.listing.reveal)
        self._by = document.getElementById
        self._undo_timer, self._proxies = None, []
        self._deleted_place = 0  # the list index of the item deleted last (focus goes there if Undo had it)
        recorder.subscribe(lambda stage_id: _schedule(self.render_meta()))
        service.changes.subscribe(self._on_change)

    # -- wiring ----------------------------------------------------------------
    def bind(self) -> None:
        """Attach the drawer's event handlers."""
        def on(element_id: str, event: str, handler) -> None:
            proxy = create_proxy(handler)
            self._proxies.append(proxy)
            self._by(element_id).addEventListener(event, proxy)

        files = self.files
        on("history-open", "click", lambda e: self.toggle())
        on("history-close", "click", lambda e: self.close())
        on("history-search", "input", lambda e: self._acted() or self.listing.typed().add_done_callback(_report))
        for control in ("history-sort", "history-range"):
            on(control, "change", lambda e: self._acted() or _schedule(self.listing.reload()))
        self.listing.bind_names()  # rename and pin (§18): before the list's own click and keys
        on("history-list", "click", self._on_list_click)
        on("history-list", "keydown", self._on_list_key)
        on("history-list", "scroll", self._on_scroll)
        on("history-undo", "click", lambda e: _schedule(self.undo()))
        on("history-drawer", "keydown", self._on_drawer_key)
        on("export-markdown", "click", lambda e: _schedule(files.export("md")))
        on("export-json", "click", lambda e: _schedule(files.export("json")))
        on("history-print", "click", lambda e: _schedule(files.print_view()))
        on("import-json", "change", lambda e: _schedule(files.import_file(e.target)))
        on("import-chatgpt", "change", lambda e: _schedule(files.import_chatgpt_file(e.target)))
        on("discard-confirm-yes", "click", lambda e: self._discard(True))
        on("discard-confirm-export", "click", lambda e: _schedule(files.export_unkept()))
        on("discard-confirm-keep", "click", lambda e: self._discard(False))
        on("discard-confirm", "keydown", lambda e: self._discard(False) if e.key == "Escape" else None)
        self.runtime.subscribe(self._on_runtime)

    async def start(self) -> None:
        """After ready: reconcile the stored threads with history, then show the active turn meta.
        Each course is read in a task of its own and each adopted course written in one, so no
        task after ready runs over 50 ms (DESIGN.md §13); a course saved again meanwhile is
        reconciled as it is stored then (``refreshed``). Damaged or short stored threads are settled
        with history first (``ActiveThread.settle``)."""
        await self.threads.settle(next_task)
        threads = {}
        for stage_id, thread in iter_stored_threads(self.store):
            threads[stage_id] = thread
            await next_task()
        await self.recorder.run(self.runtime.stage_id or "",
                                lambda: self.service.reconcile(refreshed(threads, self.store), next_task))
        await next_task()
        await self.render_meta()
        self.listing.draw_ahead()

    def _on_runtime(self) -> None:
        if self.runtime.stage_id != self.meta.stage or not self.runtime.has_messages:
            self._by("discard-confirm").hidden = True  # asked about another thread
        if self.runtime.stage_id != self.meta.stage:
            _schedule(self.render_meta())
            if self.list.open:
                _schedule(self.listing.reload())
            elif self.list.live:
                self.listing.draw_ahead()
        else:
            self.meta.decorate()

    # -- active conversation: stats and turn meta ---------------------------------
    def refresh_turn_meta(self) -> None:
        """Put each assistant message's ``turn-meta`` back after the panel rebuilt its messages
        (e.g. re-drawn as Markdown once markdown-it is there)."""
        self.meta.decorate()

    async def render_meta(self) -> None:
        """Fill ``conversation-stats`` and each assistant message's ``turn-meta`` for the shown course."""
        if not await self.meta.render():
            return
        if self.list.live:  # the list marks the active one as it is now (another tab may have resumed one)
            self.listing.mark_current()
        self.meta.decorate()

    # -- the list ------------------------------------------------------------------
    def toggle(self) -> None:
        """Open the drawer (shown in this task when its list is drawn ahead and current), or close it."""
        if self.list.open:
            self.close()
        elif not self._show():
            _schedule(self.open())

    def _acted(self) -> None:
        """The user took a next step in the list (opened it, searched, sorted, chose a range): the
        outcome ``history-status`` still shows ends (``status_line.dismiss``; one still pending stays)."""
        status = self._by("history-status")
        if status.getAttribute("data-kind") and status.getAttribute("data-result") != "pending":
            dismiss(status)

    def _show(self) -> bool:
        """Show the drawer with the list drawn ahead, when it can be shown as it is (``_ready``), and
        focus its first item; False (nothing done) otherwise."""
        if not self.listing.ready():
            return False
        self._acted()
        self.list.open = True
        self._by("history-open").setAttribute("aria-expanded", "true")
        self._by("history-drawer").hidden = False
        self._focus_first()
        return True

    async def open(self) -> None:
        """Open the shown course's list with its first page: the one drawn ahead when it is current,
        else read and drawn now (an earlier outcome ends: ``_acted``)."""
        if self._show():
            return
        self._acted()
        self.list.open = self.list.live = True
        self._by("history-open").setAttribute("aria-expanded", "true")
        try:  # drawn while hidden: the drawer shows with its first page, no empty frame before it
            await self.listing.reload()
        finally:
            if self.list.open:
                self._by("history-drawer").hidden = False
        if self.list.open:
            self._focus_first()

    def _focus_first(self) -> None:
        first = self._by("history-list").querySelector("[data-testid=history-item]")
        (first if not is_none(first) else self._by("history-search")).focus()

    def close(self) -> None:
        """Close the drawer; focus goes back to its opener. Its list stays drawn, back at its top; it is
        drawn afresh in idle time when it no longer is the first page as it stands now (a change
        followed item by item while open, or later pages read)."""
        self.list.open = False
        self.listing.rewind()  # before hiding: the layout is still current, reading it costs nothing
        self._by("history-drawer").hidden = True
        opener = self._by("history-open")
        opener.setAttribute("aria-expanded", "false")
        opener.focus()
        if self.list.behind or self.list.pages > 1:
            self.listing.draw_ahead()
        else:
            self.listing.relabel_later()

    # -- events --------------------------------------------------------------------
    def _item_of(self, target):
        item = target.closest("[data-testid=history-item]")
        return None if is_none(item) else item

    def _on_list_click(self, event) -> None:
        item = self._item_of(event.target)
        if item is None:
            return
        if not is_none(event.target.closest("[data-testid=history-delete]")):
            self._delete_item(item)
        else:
            _schedule(self.resume(item.dataset.taskId))

    def _on_list_key(self, event) -> None:
        item = self._item_of(event.target)
        if item is None:
            return
        if event.key == "Enter":
            event.preventDefault()
            _schedule(self.resume(item.dataset.taskId))
        elif event.key == "Delete" and item.dataset.current == "true":
            event.preventDefault()
            self._say("delete", "history.deleteCurrent")
        elif event.key == "Delete":
            event.preventDefault()
            self._delete_item(item)
        elif event.key in ("ArrowDown", "ArrowUp"):
            event.preventDefault()
            target = item.nextElementSibling if event.key == "ArrowDown" else item.previousElementSibling
            if not is_none(target):
                target.focus()
            elif event.key == "ArrowDown":
                _schedule(self.listing.more())

    def _delete_item(self, item) -> None:
        """Delete ``item``'s conversation (its × button or the Delete key). Focus goes to the next item
        (the previous one at the list's end; the search field when it was the only one): with the item
        and its button removed, it fell to the page's body, where Escape no longer closes the drawer."""
        nxt = item.nextElementSibling if not is_none(item.nextElementSibling) else item.previousElementSibling
        self._deleted_place = js.Array.prototype.indexOf.call(self._by("history-list").children, item)
        _schedule(self.delete(item.dataset.taskId))
        (nxt if not is_none(nxt) else self._by("history-search")).focus()

    def _undo_expired(self) -> None:
        """Hide Undo when ``UNDO_MS`` has run out. If it held focus, focus goes to the item now at the
        deleted place (the previous one past the list's end; the search field when the list is empty),
        as after a delete: hidden with focus, it left focus on the page's body, where Escape no longer
        closes the drawer (§6)."""
        self._undo_timer = None
        undo = self._by("history-undo")
        held = undo.contains(document.activeElement)
        undo.hidden = True
        if held:
            items = self._by("history-list").querySelectorAll("[data-testid=history-item]")
            place = min(max(self._deleted_place, 0), items.length - 1)
            (items.item(place) if place >= 0 else self._by("history-search")).focus()

    def _on_drawer_key(self, event) -> None:
        """Escape closes the drawer wherever focus is in it; Tab keeps focus in it (§6)."""
        if event.key == "Escape":
            event.stopPropagation()
            self.close()
        elif event.key == "Tab":
            _keep_focus_in(self._by("history-drawer"), event)

    def _on_scroll(self, event) -> None:
        listing = event.target
        if listing.scrollHeight - listing.scrollTop - listing.clientHeight < 50:
            _schedule(self.listing.more())

    def _on_change(self, change: HistoryChange) -> None:
        """A change of history: the open list follows it, the closed one is drawn afresh from what this
        tab's turn wrote (``HistoryListView.follow``), else by a read in idle time (``draw_ahead``); another tab's change of the shown course redraws its stats and turn meta.
        This tab's import of a file draws itself (``reveal``); what sync adds (another device's
        conversation, an undo that comes back under a new id) is drawn into the open list. A change by which sync moved the course's active
        thread (``head``) rebuilds it through ``ActiveThread.follow`` (DESIGN.md §16); its stats and
        turn meta are drawn again when it was."""
        concerns = self.list.hear(change)
        if self.list.open and not (change.kind == "import" and change.source == "import"):  # a file: reveal draws it
            _schedule(self.listing.apply_change(change))
        elif concerns and not self.list.open and not self.listing.follow(change):
            self.listing.draw_ahead()
        if change.elsewhere and change.stage_id == self.runtime.stage_id:
            _schedule(self.render_meta())
        if self.threads.follow(change):
            _schedule(self.render_meta())

    # -- commands ------------------------------------------------------------------
    def new_conversation(self) -> None:
        """New conversation (the pen button). History keeps the thread (``archive``); when it cannot
        (IndexedDB unusable or failed: ``HistoryService.keeps_conversations`` is False) the thread would
        be gone for good, so the panel asks first and says so (DESIGN.md §5: nothing is lost silently)."""
        if self.runtime.has_messages and not self.service.keeps_conversations:
            self._by("discard-confirm").hidden = False
            self._by("discard-confirm-keep").focus()
            return
        self._discard(True)

    def _discard(self, confirmed: bool) -> None:
        self._by("discard-confirm").hidden = True
        if confirmed:
            self.runtime.clear_thread()
            self._by("agent-input").focus()
        else:
            self._by("agent-new-conversation").focus()

    async def resume(self, task_id: str) -> None:
        """Make ``task_id`` the shown course's active thread (one write of ``maic-agent-threads``).
        Opened from a search result whose keyword lies only on a branch not shown, that branch is
        shown (DESIGN.md §17, ``ActiveThread.resume``), the active conversation's too."""
        stage_id = self.runtime.stage_id
        if stage_id is None:
            return
        if self.runtime.is_running:  # the turn in flight belongs to the active thread: say why nothing happens
            status = self._by("history-status")
            status.setAttribute("data-kind", "resume")
            say(status, self.t("history.resumeBusy"))
            return
        keyword = self._by("history-list").getAttribute("data-query") or ""  # what the drawn results answer
        if task_id == self.list.current:
            if keyword.strip() and await self.threads.show_hit(stage_id, task_id, keyword):
                await self.threads.resume(stage_id, task_id)  # the branch shown now becomes the thread
                await self.render_meta()
            self.close()
            return
        item = self._by("history-list").querySelector(f'[data-task-id="{task_id}"]')
        if not is_none(item) and item.getAttribute("data-damaged") == "true":
            self._say("resume", "history.damagedOpen")  # it cannot be read: it can be deleted
            return
        if await self.threads.resume(stage_id, task_id, keyword) is None:
            if await self.service.damaged(task_id):  # its messages cannot be read: refused, one notice (§5)
                self._mark_damaged(item)
                self._say("resume", "history.damagedOpen")
            return
        await self.render_meta()
        self.close()

    async def delete(self, task_id: str) -> None:
        """Delete ``task_id`` (undo for ``UNDO_MS``); the active conversation cannot be, and
        ``history-status`` says so (it is ended with New conversation first)."""
        if task_id == self.list.current:
            self._say("delete", "history.deleteCurrent")
            return
        if await self.recorder.run(self.list.stage or "", lambda: self.service.delete(task_id)):
            undo = self._by("history-undo")
            undo.hidden = False
            if self._undo_timer is not None:
                js.clearTimeout(self._undo_timer)
            self._undo_timer = js.setTimeout(create_proxy(self._undo_expired), UNDO_MS)
            self._say("delete", "history.deleted", result="ok")  # said, so a screen reader hears it too

    def _mark_damaged(self, item: Any) -> None:
        """Draw list item ``item`` (None-like: none) as a damaged conversation, as the list draws one
        whose meta cannot be read: its title "Damaged conversation", no rename or pin (DESIGN.md §5)."""
        if is_none(item):
            return
        item.setAttribute("data-damaged", "true")
        title = item.querySelector("[data-testid=history-title]")
        if not is_none(title):
            title.textContent = self.t("history.damaged")
        tools = item.querySelector(".history-item-tools")
        if not is_none(tools):
            tools.remove()

    def _say(self, kind: str, key: str, *, result: str = "error") -> None:
        """What an action did, or why it did not happen (``result`` ``error``), in ``history-status``
        (``data-kind`` = ``kind``, ``data-result`` = ``result``)."""
        status = self._by("history-status")
        status.setAttribute("data-kind", kind)
        status.setAttribute("data-result", result)
        status.removeAttribute("data-reason")
        say(status, self.t(key))

    async def undo(self) -> None:
        """Bring back the conversation deleted last (the undo button, hidden: focus goes to the item)."""
        self._by("history-undo").hidden = True
        if restored := await self.recorder.run(self.list.stage or "", self.service.undo):
            self._say("undo", "history.undone", result="ok")
            self.listing.focus_when_drawn(restored)
