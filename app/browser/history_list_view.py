"""The history drawer's list, drawn from ``app.history.list_model.HistoryList`` (DESIGN.md §9 UI
hooks): the first page or the search results, the pages after it (cursor pages, as scrolling
reads them), what arrived above the top, and the active conversation's mark. Items are drawn by
``static/history-view.js`` in one crossing per page; every text goes in as ``textContent``.
"""

from __future__ import annotations

import asyncio
import json

import js
from pyodide.ffi import create_once_callable, to_js
from pyscript import document
from pyscript.ffi import is_none

from app.browser.history_names_view import HistoryNamesView
from app.browser.tasks import when_idle
from app.history.changes import HistoryChange
from app.history.list_model import SEARCH_PAUSE_MS, HistoryList, ahead_delay, empty_state, item_rows, list_line, unavailable_key
from app.history.service import HistoryService

__all__ = ["HistoryListView"]


def _report(task: asyncio.Future) -> None:
    """Log a failed draw (with its traceback) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        import traceback

        js.console.error("".join(traceback.format_exception(task.exception())))


class HistoryListView:
    """Draws ``history-list`` (its items, ``data-total``, ``data-has-more``, ``data-query``) and
    ``history-status``'s empty-list line from the ``HistoryList`` model and ``HistoryService`` reads.

    ``runtime``: ``stage_id`` (the course the list is drawn for); ``translator``: the page's
    ``Translator``; ``clock``: epoch ms (relative times, time ranges).
    """

    def __init__(self, runtime, service: HistoryService, history_list: HistoryList, translator, clock) -> None:
        self.runtime, self.service, self.list, self.t, self.clock = runtime, service, history_list, translator, clock
        self._by = document.getElementById
        self._typing: asyncio.Future | None = None  # the wait (then search) for the last key typed
        self._drawing_ahead = False  # a draw of the closed list waits for idle time
        self._ahead_began: float | None = None  # performance.now() of the last draw ahead (``ahead_delay``)
        self._relabel = None  # the timer that draws the closed list afresh when a relative time turns
        self._focus_next: str | None = None  # the item to focus once drawn (``focus_when_drawn``)
        self._focus_in: str | None = None  # the test id of the item's control to focus instead, if any
        self.names = HistoryNamesView(service, self)

    # -- drawn ahead (DESIGN.md §14) ---------------------------------------------------
    def draw_ahead(self) -> None:
        """Draw the closed drawer's list afresh once the page is idle, so that opening it only shows
        it (``app.browser.history_view``); one draw for any number of calls before it runs, and no
        sooner than ``AHEAD_GAP_MS`` after the last one began (``ahead_delay``: a first sync's stream of
        changes). Nothing is read while history is unusable (opening then reads and says so, as before)."""
        if self._drawing_ahead:
            return
        self._drawing_ahead = True

        def draw() -> None:
            self._drawing_ahead = False
            if self.list.open or self.service.available is False or self.ready():
                return
            self._ahead_began = js.performance.now()
            self.list.live = True
            asyncio.ensure_future(self.reload()).add_done_callback(_report)

        wait = ahead_delay(self._ahead_began, js.performance.now())
        if wait > 0:
            js.setTimeout(create_once_callable(lambda: when_idle(draw)), wait)
        else:
            when_idle(draw)

    def relabel_later(self) -> None:
        """Draw the closed list afresh (``draw_ahead``) when one of its relative times next reads
        otherwise ("just now" becomes "1 minute ago"), so that it stays ready to show."""
        if self._relabel is not None:
            js.clearTimeout(self._relabel)
            self._relabel = None
        now = self.clock()
        at = self.list.labels_change_at(now)
        if at is not None:
            self._relabel = js.setTimeout(create_once_callable(self._relabel_now), at - now + 50)

    def _relabel_now(self) -> None:
        self._relabel = None
        if not self.list.open:
            self.draw_ahead()

    def ready(self) -> bool:
        """True when the drawn list can be shown as it is for the course and controls as they are now
        (``HistoryList.ready_to_show``)."""
        return self.list.ready_to_show(self.runtime.stage_id, self._by("history-search").value,
                                       self._by("history-sort").value, self._by("history-range").value, self.clock())

    def typed(self) -> asyncio.Future:
        """A key was typed in ``history-search``: search once typing pauses for ``SEARCH_PAUSE_MS``; the
        wait or search of an older keyword still pending is cancelled (DESIGN.md §14)."""
        if self._typing is not None and not self._typing.done():
            self._typing.cancel()
        self._typing = asyncio.ensure_future(self._after_pause())
        return self._typing

    async def _after_pause(self) -> None:
        await asyncio.sleep(SEARCH_PAUSE_MS / 1000)
        await self.reload()

    async def reload(self) -> None:
        """Draw the list afresh: the first page, or the search results (shown, or drawn ahead in the
        closed drawer: ``HistoryList.live``)."""
        if not self.list.live:
            return
        stage_id = self.runtime.stage_id
        self.list.restart(stage_id)
        keyword = self._by("history-search").value
        if stage_id is None:
            return
        # sort and range hold for the plain list too; its pages keep the ones it was drawn with
        generation = self.list.begin(self._by("history-sort").value, self._by("history-range").value, self.clock(),
                                     keyword)
        if keyword.strip():
            await self._draw_search(stage_id, keyword, generation)
            return
        page = await self.service.page(stage_id, sort=self.list.sort, since_ms=self.list.since)  # with its total
        if not self.list.is_latest(generation):
            return  # sort, range or course changed meanwhile: a later reload draws
        listing = self._by("history-list")
        self._draw([(m, None) for m in page.items], "replace")
        self._paged(page)
        self.list.keep(page)
        listing.setAttribute("data-total", str(page.total))
        listing.setAttribute("data-query", "")
        self._empty(listing, "history.empty")
        owed = self.list.settled(generation)
        self.relabel_later()
        if owed and self.list.open:  # a change heard while the page was read: it may not show it
            await self.refresh_top()

    def follow(self, change: HistoryChange) -> bool:
        """Draw the closed list afresh for ``change`` (heard by ``HistoryList.hear``) from what the change
        wrote, with no read, when ``HistoryList.follow`` can tell its first page; False (nothing done)
        when it cannot: the caller draws it afresh by reading (``draw_ahead``)."""
        page = self.list.follow(change)
        if page is None:
            return False
        listing = self._by("history-list")
        self._draw([(m, None) for m in page.items], "replace")
        listing.setAttribute("data-has-more", "true" if page.has_more else "false")
        listing.setAttribute("data-total", str(page.total))
        self._empty(listing, "history.empty")
        self.relabel_later()
        return True

    async def _draw_search(self, stage_id: str, keyword: str, generation: int) -> None:
        found = await self.service.search(stage_id, keyword, sort=self.list.sort, since_ms=self.list.since)
        if keyword != self._by("history-search").value or not self.list.is_latest(generation):
            return  # typed on (or sort/range changed) meanwhile: a later search draws
        listing = self._by("history-list")
        self._draw([(hit.meta, hit.snippet) for hit in found.items], "replace")
        self._paged(found)
        self._search_total(found)
        listing.setAttribute("data-query", keyword)  # what the drawn results answer
        self._empty(listing, "history.noResults")
        self.list.settled(generation)
        self.relabel_later()

    def _search_total(self, found) -> None:
        """``data-total`` of search results: the hits' count when known, else those drawn so far."""
        total = found.total if found.total is not None else self.list.count
        self._by("history-list").setAttribute("data-total", str(total))

    def _draw(self, entries, mode: str) -> None:
        """Draw ``(meta, snippet)`` entries in one crossing (``static/history-view.js``), each task id
        once: those ``HistoryList.place`` keeps for ``mode``."""
        now = self.clock()
        snippets = {meta.taskId: piece for meta, piece in entries}
        entries = [(meta, snippets[meta.taskId]) for meta in self.list.place([m for m, _ in entries], mode, now)]
        rows = item_rows(self.t, entries, now, self.list.current)
        js.agentbarHistoryDom.draw(self._by("history-list"), self.t.locale, json.dumps(rows), mode)
        self.names.drawn()  # a rename field drawn over stays open (§18)

    def _empty(self, listing, key: str) -> None:
        """Once the list is drawn: ``history-empty`` says why it shows no item (``empty_state``), and
        ``history-status`` is cleared unless an action's outcome holds it (``list_line``)."""
        status = self._by("history-status")
        empty_key = unavailable_key(self.service.failure) if self.service.available is False else key
        listed = listing.childElementCount > 0
        line = list_line(status.getAttribute("data-kind"), listed, "")  # the empty list says so below it
        if line is not None:
            status.textContent = ""
        empty, state = self._by("history-empty"), empty_state(listed, empty_key)
        empty.hidden = state is None
        empty.textContent = "" if state is None else self.t(state[0])
        if state is None:
            empty.removeAttribute("data-reason")
        else:
            empty.setAttribute("data-reason", state[1])

    def _paged(self, page) -> None:
        self.list.paged(page.cursor, page.has_more)
        self._by("history-list").setAttribute("data-has-more", "true" if page.has_more else "false")

    async def more(self) -> None:
        """The next page (scrolled to the end), of the list or of the search results; an item already
        drawn (it moved up) is not drawn again."""
        if not self.list.can_page_on():
            return
        self.list.loading = True
        generation = self.list.generation
        keyword = self._by("history-search").value
        try:
            if keyword.strip():
                found = await self.service.search(self.list.stage, keyword, self.list.cursor, sort=self.list.sort,
                                                  since_ms=self.list.since)
                if not self.list.is_latest(generation) or keyword != self._by("history-search").value:
                    return
                self._draw([(h.meta, h.snippet) for h in found.items], "append")  # those not drawn
                self._paged(found)  # data-total: the first page's, every match counted
                return
            page = await self.service.page(self.list.stage, self.list.cursor, sort=self.list.sort,
                                           since_ms=self.list.since)
            if not self.list.is_latest(generation):
                return  # redrawn meanwhile (sort, range, course): this page belongs to the old list
            self._draw([(m, None) for m in page.items], "append")  # those not drawn (moved up)
            self._paged(page)
        finally:
            self.list.loading = False

    async def redraw(self) -> None:
        """Draw the open list afresh where it stands (a change moved an item in it): the first page,
        then the next ones until it holds as many items as it did (``HistoryList.short_of``), so the
        rows read by scrolling are not dropped."""
        drawn = self.list.count
        await self.reload()
        while self.list.short_of(drawn):
            before = self.list.count
            await self.more()
            if self.list.count == before:  # drawn afresh meanwhile, or nothing more came
                break

    async def refresh_top(self) -> None:
        """Items that arrived or moved above the list's top while it was open: drawn first, once. Not
        while the first page is read (it is refreshed once drawn), nor when drawn afresh meanwhile
        (``HistoryList.refresh_generation``)."""
        if not self.list.tops_by_prepending(self._by("history-search").value):
            return await self.redraw()  # only newest-first has its changes at the top
        generation = self.list.refresh_generation()
        if generation is None:
            return
        listing = self._by("history-list")
        newer = await self.service.newer(self.list.stage, self.list.top())
        if not self.list.is_latest(generation):
            return  # drawn afresh meanwhile: that read began after the change and shows it
        self._draw([(m, None) for m in newer], "prepend")
        listing.setAttribute("data-total", str(await self.service.total(self.list.stage, self.list.since)))
        self.mark_current()
        self._empty(listing, "history.empty")

    def mark_current(self) -> None:
        """Mark the active conversation's item (``data-current``, ``aria-current``; no delete button)."""
        active = self.list.current
        for item in self._by("history-list").querySelectorAll("[data-testid=history-item]"):
            current = item.dataset.taskId == active
            item.setAttribute("data-current", "true" if current else "false")
            if current:
                item.setAttribute("aria-current", "true")
            else:
                item.removeAttribute("aria-current")
            button = item.querySelector("[data-testid=history-delete]")
            if not is_none(button):
                button.hidden = current

    def rewind(self) -> None:
        """The closed list starts at its top again, as a list drawn afresh does (it stays laid out
        while closed, so it keeps its scroll position otherwise)."""
        listing = self._by("history-list")
        if listing.scrollTop:
            listing.scrollTop = 0

    async def reveal(self, task_id: str, added: int = 1) -> None:
        """Redraw the open list after an import that added ``added`` conversations to its course, the
        first ``task_id``: the first page, then the next ones (cursor pages, as scrolling reads them)
        while it holds fewer items than it did (``HistoryList.short_of``) or, when one conversation was
        added, until ``task_id`` is drawn (``HistoryList.seeks``: it shows at once, wherever its time
        puts it); then scroll it into view when drawn. An import of many keeps the list paged: the rest
        come with scrolling, not every imported row at once."""
        if not self.list.open:
            return
        drawn = self.list.count
        await self.reload()
        while self.list.seeks(task_id, added) or self.list.short_of(drawn):
            if self.list.loading:
                await asyncio.sleep(0.01)
                continue
            before = self.list.count
            await self.more()
            if self.list.count == before and not self.list.has_more:
                break
        item = self._by("history-list").querySelector(f'[data-task-id="{task_id}"]')
        if not is_none(item):
            item.scrollIntoView(to_js({"block": "nearest"}, dict_converter=js.Object.fromEntries))

    async def apply_change(self, change: HistoryChange) -> None:
        """Follow ``change`` in the open list (``HistoryList.effect``)."""
        effect = self.list.effect(change)
        if effect == "remove":
            self.list.removed(change.task_id)
            item = self._by("history-list").querySelector(f'[data-task-id="{change.task_id}"]')
            if not is_none(item):
                item.remove()
            total = await self.service.total(self.list.stage, self.list.since)  # a stray's names no course
            self._by("history-list").setAttribute("data-total", str(total))
            self._empty(self._by("history-list"),
                        "history.noResults" if self._by("history-search").value.strip() else "history.empty")
        elif effect == "reload":
            await self.redraw()
        elif effect == "top":
            await self.refresh_top()
        self._focus_pending()

    def focus_when_drawn(self, task_id: str) -> None:
        """Focus ``task_id``'s item now, or once a change draws it (``apply_change``): Undo delete hides
        its button, whose focus fell to the page's body (the next Tab started from the page's top)."""
        self._focus_next = task_id
        self._focus_pending()

    def _focus_pending(self) -> None:
        if self._focus_next is None or not self.list.open:
            return
        item = self._by("history-list").querySelector(f'[data-task-id="{self._focus_next}"]')
        if not is_none(item):
            control = item.querySelector(f"[data-testid={self._focus_in}]") if self._focus_in else None
            self._focus_next = self._focus_in = None
            (item if control is None or is_none(control) else control).focus()

    def focus_after_draw(self, task_id: str, control: str | None = None) -> None:
        """Once a change draws the list again (``apply_change``), focus ``task_id``'s item, or its
        control of test id ``control``: the drawn item replaces the one that had focus."""
        self._focus_next, self._focus_in = task_id, control

    def bind_names(self) -> None:
        """Listen for rename and pin in the list (``HistoryNamesView.bind``)."""
        self.names.bind()

