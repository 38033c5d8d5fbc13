"""The history panel: list, search, stats, export/import (DESIGN.md §9 UI hooks).

``create_history(clock)`` builds the IndexedDB backend, the ``HistoryService``
and the runtime's ``HistoryRecorder`` (nothing is opened or read yet);
``HistoryView.start()`` runs after ``html[data-ready]``: it reconciles
``maic-agent-threads`` with history and reads the shown course's turn meta
(the only history read before the list is opened, DESIGN.md §9).

Text is set as ``textContent``; times use the browser's ``Intl``; tabs tell
each other about archive/resume/delete through a ``BroadcastChannel``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import js
from pyodide.ffi import create_proxy, to_js
from pyscript import document
from pyscript.ffi import is_none

from app.agents.errors import describe as describe_error
from app.browser.dom import element as _node
from app.browser.indexeddb import IndexedDbBackend
from app.history.reconcile import stored_threads
from app.history.recorder import HistoryRecorder
from app.history.service import UNDO_MS, ConversationStats, HistoryService
from app.history.labels import item_stats_text, markdown_meta, stats_text, turn_meta_text
from app.history.records import iso
from app.history.text import relative_label
from app.projection import CUT_MARKER, failure_of

__all__ = ["HistoryView", "create_history"]

CHANNEL = "agentbar-history"
_FOCUSABLE = "button, input, select, textarea, [tabindex]"
RANGES_MS = {"all": None, "1d": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000}


async def _install_graphemes() -> None:
    """Install the grapheme wheel (vendored, in the generated lock) with micropip on first use."""
    import pyodide_js

    await pyodide_js.loadPackage("micropip")
    import micropip

    await micropip.install("pyuegc")


async def _read_text(file, slice_bytes: int = 1 << 20) -> str:
    """A ``File``'s UTF-8 text, read ``slice_bytes`` at a time, each slice crossing into Python and
    decoded in its own task (DESIGN.md §14: no long task while a big file is read). Decoded as
    ``Blob.text()`` does: a leading BOM dropped, invalid bytes as U+FFFD."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    parts, size = [], int(file.size)
    for start in range(0, size, slice_bytes):
        buffer = await file.slice(start, min(size, start + slice_bytes)).arrayBuffer()
        parts.append(decoder.decode(buffer.to_bytes()))
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def create_history(clock) -> tuple[HistoryService, HistoryRecorder]:
    """The service over IndexedDB and the runtime's recorder; nothing is opened yet."""
    backend = IndexedDbBackend()
    service = HistoryService(backend, clock=clock, prepare=_install_graphemes)
    backend.on_event = service.on_backend_event
    return service, HistoryRecorder(service)


def _report(task: asyncio.Future) -> None:
    """Log a failed UI task (with its traceback) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        import traceback

        js.console.error("".join(traceback.format_exception(task.exception())))


class HistoryView:
    """Binds the history drawer and the stats/turn-meta hooks to one runtime (module docstring)."""

    def __init__(self, runtime, store, service: HistoryService, recorder: HistoryRecorder, translator, clock) -> None:
        self.runtime, self.store, self.service, self.recorder, self.t, self.clock = (
            runtime, store, service, recorder, translator, clock)
        self._by = document.getElementById
        self._meta_written: dict[str, tuple] = {}  # message id -> what its turn-meta line was last given
        self._open = False
        self._stage: str | None = None
        self._cursor = None
        self._has_more = False
        self._loading = False
        self._sort, self._since = "newest", None  # the drawn list's order and range (DESIGN.md §9)
        self._keys: dict[str, tuple[int, str]] = {}  # drawn taskId -> its list key (updatedAt, taskId)
        self._undo_timer = None
        self._meta_stage: str | None = None
        service.on_notice = runtime.add_notice
        service.on_change = self._on_local_change
        recorder.on_recorded = lambda stage_id: self._schedule(self.render_meta())
        self._channel = js.BroadcastChannel.new(CHANNEL) if hasattr(js, "BroadcastChannel") else None
        self._proxies = []

    # -- wiring ----------------------------------------------------------------
    def bind(self) -> None:
        """Attach the drawer's event handlers."""
        def on(element_id: str, event: str, handler) -> None:
            proxy = create_proxy(handler)
            self._proxies.append(proxy)
            self._by(element_id).addEventListener(event, proxy)

        on("history-open", "click", lambda e: self._schedule(self.toggle()))
        on("history-close", "click", lambda e: self.close())
        on("history-search", "input", lambda e: self._schedule(self.reload()))
        on("history-sort", "change", lambda e: self._schedule(self.reload()))
        on("history-range", "change", lambda e: self._schedule(self.reload()))
        on("history-list", "click", self._on_list_click)
        on("history-list", "keydown", self._on_list_key)
        on("history-list", "scroll", self._on_scroll)
        on("history-undo", "click", lambda e: self._schedule(self.undo()))
        on("history-drawer", "keydown", self._on_drawer_key)
        on("export-markdown", "click", lambda e: self._schedule(self.export("md")))
        on("export-json", "click", lambda e: self._schedule(self.export("json")))
        on("history-print", "click", lambda e: self._schedule(self.print_view()))
        on("import-json", "change", lambda e: self._schedule(self.import_file(e.target)))
        on("discard-confirm-yes", "click", lambda e: self._discard(True))
        on("discard-confirm-export", "click", lambda e: self._schedule(self.export_unkept()))
        on("discard-confirm-keep", "click", lambda e: self._discard(False))
        on("discard-confirm", "keydown", lambda e: self._discard(False) if e.key == "Escape" else None)
        if self._channel is not None:
            proxy = create_proxy(self._on_remote)
            self._proxies.append(proxy)
            self._channel.addEventListener("message", proxy)
        self.runtime.subscribe(self._on_runtime)

    async def start(self) -> None:
        """After ready: reconcile the stored threads with history, then show the active turn meta."""
        threads = stored_threads(self.store)
        await self.recorder.run(self.runtime.stage_id or "", lambda: self.service.reconcile(threads))
        await self.render_meta()

    def _schedule(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(_report)

    def _on_runtime(self) -> None:
        if self.runtime.stage_id != self._meta_stage or not self.runtime.has_messages:
            self._by("discard-confirm").hidden = True  # asked about another thread
        if self.runtime.stage_id != self._meta_stage:
            self._schedule(self.render_meta())
            if self._open:
                self._schedule(self.reload())
        else:
            self._decorate_turns()

    # -- active conversation: stats and turn meta ---------------------------------
    def refresh_turn_meta(self) -> None:
        """Put each assistant message's ``turn-meta`` back after the panel rebuilt its messages
        (e.g. re-drawn as Markdown once markdown-it is there)."""
        self._decorate_turns()

    async def render_meta(self) -> None:
        """Fill ``conversation-stats`` and each assistant message's ``turn-meta`` for the shown course."""
        stage_id = self.runtime.stage_id
        self._meta_stage = stage_id
        meta, turns = await self.service.active(stage_id) if stage_id is not None else (None, [])
        if stage_id != self.runtime.stage_id:
            return
        if not self.runtime.has_messages:
            meta, turns = None, []
        stats = ConversationStats.of(meta)
        box = self._by("conversation-stats")
        for name, value in (("turns", stats.turns), ("input-tokens", stats.input_tokens),
                            ("output-tokens", stats.output_tokens), ("total-tokens", stats.total_tokens),
                            ("mean-duration-ms", stats.mean_duration_ms)):
            box.setAttribute(f"data-{name}", str(value))
        box.textContent = stats_text(self.t, stats)
        box.hidden = meta is None
        self._turns = {t.messageId: t for t in turns if t.messageId}
        self._active_task = meta.taskId if meta else None
        for button in ("export-markdown", "export-json", "history-print"):
            self._by(button).disabled = meta is None
        if self._open:  # the list marks the active one as it is now (another tab may have resumed one)
            self._mark_current()
        self._decorate_turns()

    def _decorate_turns(self) -> None:
        turns = getattr(self, "_turns", {})
        log = document.getElementById("agent-messages")
        at_end = not is_none(log) and log.scrollHeight - log.scrollTop - log.clientHeight < 40
        try:
            self._decorate(turns)
        finally:
            if at_end:  # the lines arrive after the thread was drawn: a reader at the newest message stays there
                log.scrollTop = log.scrollHeight

    def _decorate(self, turns: dict) -> None:
        for node in document.querySelectorAll("[data-testid=agent-message][data-role=assistant]"):
            turn = turns.get(node.getAttribute("data-message-id"))
            line = node.querySelector("[data-testid=turn-meta]")
            if turn is None:
                if not is_none(line):
                    line.remove()
                continue
            label = turn_meta_text(self.t, turn)
            written = (turn.model, turn.duration, None if turn.usage is None else turn.usage.totalTokens, label)
            if is_none(line):
                line = _node("p", testid="turn-meta", classes="turn-meta")
                node.append(line)
            elif self._meta_written.get(turn.messageId) == written:
                continue  # unchanged: the older messages are not touched while a reply streams (§12)
            self._meta_written[turn.messageId] = written
            line.setAttribute("data-model", turn.model)
            line.setAttribute("data-duration-ms", str(turn.duration))
            if turn.droppedTurns:  # the server's context was full: earlier turns were left out (§12)
                line.setAttribute("data-dropped-turns", str(turn.droppedTurns))
            else:
                line.removeAttribute("data-dropped-turns")
            if turn.usage is None:  # the agent reported no usage: say so, never a made-up 0 (DESIGN.md §12)
                line.removeAttribute("data-total-tokens")
                line.setAttribute("data-usage", "not-reported")
            else:
                line.setAttribute("data-total-tokens", str(turn.usage.totalTokens))
                line.removeAttribute("data-usage")
            # shown through CSS (::after) so the message's own text stays what it was
            line.setAttribute("data-label", label)
            line.setAttribute("title", label)

    # -- the list ------------------------------------------------------------------
    async def toggle(self) -> None:
        if self._open:
            self.close()
        else:
            await self.open()

    async def open(self) -> None:
        """Open the shown course's list and draw its first page."""
        self._open = True
        self._by("history-open").setAttribute("aria-expanded", "true")
        try:  # drawn while hidden: the drawer shows with its first page, no empty frame before it
            await self.reload()
        finally:
            if self._open:
                self._by("history-drawer").hidden = False
        if not self._open:
            return
        first = self._by("history-list").querySelector("[data-testid=history-item]")
        (first if not is_none(first) else self._by("history-search")).focus()

    def close(self) -> None:
        self._open = False
        self._by("history-drawer").hidden = True
        opener = self._by("history-open")
        opener.setAttribute("aria-expanded", "false")
        opener.focus()

    async def reload(self) -> None:
        """Draw the list afresh: the first page, or the search results."""
        if not self._open:
            return
        stage_id = self.runtime.stage_id
        self._stage = stage_id
        listing = self._by("history-list")
        keyword = self._by("history-search").value
        self._keys, self._cursor, self._has_more = {}, None, False
        if stage_id is None:
            return
        since = RANGES_MS.get(self._by("history-range").value)
        # sort and range hold for the plain list too; its pages keep the ones it was drawn with
        self._sort, self._since = self._by("history-sort").value, None if since is None else self.clock() - since
        self._generation = generation = getattr(self, "_generation", 0) + 1
        if keyword.strip():
            hits = await self.service.search(stage_id, keyword, sort=self._sort, since_ms=self._since)
            if keyword != self._by("history-search").value or generation != self._generation:
                return  # typed on (or sort/range changed) meanwhile: a later search draws
            self._draw([(hit.meta, hit.snippet) for hit in hits], "replace")
            listing.setAttribute("data-total", str(len(hits)))
            listing.setAttribute("data-has-more", "false")
            listing.setAttribute("data-query", keyword)  # what the drawn results answer
            self._empty(listing, "history.noResults")
            return
        sort, since_ms = self._sort, self._since
        page = await self.service.page(stage_id, sort=sort, since_ms=since_ms)  # with its total: one read
        total = page.total
        if generation != self._generation:
            return  # sort, range or course changed meanwhile: a later reload draws
        self._draw([(m, None) for m in page.items], "replace")
        self._paged(page)
        listing.setAttribute("data-total", str(total))
        listing.setAttribute("data-query", "")
        self._empty(listing, "history.empty")

    def _draw(self, entries, mode: str) -> None:
        """Draw ``(meta, snippet)`` entries in one crossing (``static/history-view.js``)."""
        now, active = self.clock(), getattr(self, "_active_task", None)
        just_now, untitled = self.t("history.justNow"), self.t("history.untitled")  # once per draw, not per item
        damaged_title = self.t("history.damaged")
        items = []
        for meta, piece in entries:
            damaged = bool(getattr(meta, "damaged", False))  # listed so that it can be deleted (§14)
            title = damaged_title if damaged else meta.taskName or untitled
            unit, count = relative_label(meta.updatedAt, now)
            stats = ConversationStats.of(meta)
            items.append({"taskId": meta.taskId, "current": meta.taskId == active, "damaged": damaged,
                          "totalTokens": meta.stats.totalTokens,
                          "title": title, "iso": iso(meta.updatedAt), "unit": unit, "count": count,
                          "justNow": just_now, "snippet": list(piece) if piece else None,
                          "stats": item_stats_text(self.t, stats),
                          "deleteLabel": self.t("history.delete", title=title)})
            self._keys[meta.taskId] = (meta.updatedAt, meta.taskId)
        js.agentbarHistoryDom.draw(self._by("history-list"), self.t.locale, json.dumps(items), mode)

    def _empty(self, listing, key: str) -> None:
        status = self._by("history-status")
        if listing.childElementCount == 0:
            status.textContent = self.t("history.unavailable" if self.service.available is False else key)
        elif status.getAttribute("data-kind") != "import":
            status.textContent = ""

    def _paged(self, page) -> None:
        self._cursor, self._has_more = page.cursor, page.has_more
        self._by("history-list").setAttribute("data-has-more", "true" if page.has_more else "false")

    async def more(self) -> None:
        """The next page (scrolled to the end); an item already drawn (it moved up) is not drawn again."""
        if self._loading or not self._has_more or self._by("history-search").value.strip():
            return
        self._loading = True
        generation = getattr(self, "_generation", 0)
        try:
            page = await self.service.page(self._stage, self._cursor, sort=self._sort, since_ms=self._since)
            if generation != getattr(self, "_generation", 0):
                return  # redrawn meanwhile (sort, range, course): this page belongs to the old list
            self._draw([(m, None) for m in page.items if m.taskId not in self._keys], "append")
            self._paged(page)
        finally:
            self._loading = False

    async def refresh_top(self) -> None:
        """Items that arrived or moved above the list's top while it was open: drawn first, once."""
        if not self._open or self._by("history-search").value.strip() or self._sort != "newest":
            return await self.reload()  # only newest-first has its changes at the top
        listing = self._by("history-list")
        top = max(self._keys.values()) if self._keys else None
        newer = await self.service.newer(self._stage, top)
        self._draw([(m, None) for m in newer], "prepend")
        listing.setAttribute("data-total", str(await self.service.total(self._stage, self._since)))
        self._mark_current()
        self._empty(listing, "history.empty")

    def _mark_current(self) -> None:
        active = getattr(self, "_active_task", None)
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

    # -- events --------------------------------------------------------------------
    def _item_of(self, target):
        item = target.closest("[data-testid=history-item]")
        return None if is_none(item) else item

    def _on_list_click(self, event) -> None:
        item = self._item_of(event.target)
        if item is None:
            return
        if not is_none(event.target.closest("[data-testid=history-delete]")):
            self._schedule(self.delete(item.dataset.taskId))
        else:
            self._schedule(self.resume(item.dataset.taskId))

    def _on_list_key(self, event) -> None:
        item = self._item_of(event.target)
        if item is None:
            return
        if event.key == "Enter":
            event.preventDefault()
            self._schedule(self.resume(item.dataset.taskId))
        elif event.key == "Delete" and item.dataset.current == "true":
            event.preventDefault()
            self._say("delete", "history.deleteCurrent")
        elif event.key == "Delete":
            event.preventDefault()
            nxt = item.nextElementSibling if not is_none(item.nextElementSibling) else item.previousElementSibling
            self._schedule(self.delete(item.dataset.taskId))
            if not is_none(nxt):
                nxt.focus()
        elif event.key in ("ArrowDown", "ArrowUp"):
            event.preventDefault()
            target = item.nextElementSibling if event.key == "ArrowDown" else item.previousElementSibling
            if not is_none(target):
                target.focus()
            elif event.key == "ArrowDown":
                self._schedule(self.more())

    def _on_drawer_key(self, event) -> None:
        """Escape closes the drawer wherever focus is in it; Tab and Shift+Tab go round its controls
        and never leave it while it is open (a dialog keeps focus, DESIGN.md §6)."""
        if event.key == "Escape":
            event.stopPropagation()
            self.close()
        elif event.key == "Tab":
            stops = [node for node in self._by("history-drawer").querySelectorAll(_FOCUSABLE)
                     if node.tabIndex >= 0 and not node.matches(":disabled") and node.getClientRects().length > 0]
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

    def _on_scroll(self, event) -> None:
        listing = event.target
        if listing.scrollHeight - listing.scrollTop - listing.clientHeight < 50:
            self._schedule(self.more())

    def _on_local_change(self, kind: str, task_id: str, stage_id: str) -> None:
        if self._channel is not None:
            self._channel.postMessage(json.dumps({"kind": kind, "taskId": task_id, "stageId": stage_id}))
        if kind != "import":  # this tab's import draws itself (``reveal``)
            self._schedule(self._apply_change(kind, task_id, stage_id))

    def _on_remote(self, event) -> None:
        try:
            change = json.loads(str(event.data))
        except ValueError:
            return
        self.service.forget_active(change.get("stageId", ""))
        self.runtime.conversation_changed_elsewhere(str(change.get("stageId", "")), str(change.get("kind", "")),
                                                    str(change.get("taskId", "")))
        self._schedule(self._apply_change(change.get("kind"), change.get("taskId"), change.get("stageId")))
        if change.get("stageId") == self.runtime.stage_id:
            self._schedule(self.render_meta())

    async def _apply_change(self, kind, task_id, stage_id) -> None:
        if not self._open or stage_id != self._stage:
            return
        if kind == "delete":
            self._keys.pop(task_id, None)
            item = self._by("history-list").querySelector(f'[data-task-id="{task_id}"]')
            if not is_none(item):
                item.remove()
            self._by("history-list").setAttribute("data-total", str(await self.service.total(stage_id, self._since)))
        elif kind in ("undo", "import"):  # back or in at its own place in the order, maybe far down
            await self.reload()
        else:
            await self.refresh_top()

    # -- commands ------------------------------------------------------------------
    def new_conversation(self) -> None:
        """New conversation (the pen button). History keeps the thread (``archive``); when it cannot
        (IndexedDB unusable or failed: ``HistoryService.keeps_conversations`` is False) the thread would
        be gone for good, so the panel asks first and says so (DESIGN.md §5: nothing is lost silently)."""
        if self.runtime.has_messages and not self.service.keeps_conversations:
            box = self._by("discard-confirm")
            box.hidden = False
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
        """Make ``task_id`` the shown course's active thread (one write of ``maic-agent-threads``)."""
        stage_id = self.runtime.stage_id
        if stage_id is None:
            return
        if self.runtime.is_running:  # the turn in flight belongs to the active thread: say why nothing happens
            status = self._by("history-status")
            status.setAttribute("data-kind", "resume")
            status.textContent = self.t("history.resumeBusy")
            return
        if task_id == getattr(self, "_active_task", None):
            self.close()
            return
        item = self._by("history-list").querySelector(f'[data-task-id="{task_id}"]')
        if not is_none(item) and item.getAttribute("data-damaged") == "true":
            self._say("resume", "history.damagedOpen")  # it cannot be read: it can be deleted
            return
        current = self.store.load(stage_id) or []
        messages = await self.recorder.run(stage_id, lambda: self.service.resume(
            stage_id, task_id, current, self.store.updated_at(stage_id), self.clock()))
        if messages is None:
            return
        self.runtime.replace_thread(stage_id, messages)
        await self.render_meta()
        self.close()

    async def delete(self, task_id: str) -> None:
        """Delete ``task_id`` (undo for ``UNDO_MS``); the active conversation cannot be, and
        ``history-status`` says so (it is ended with New conversation first)."""
        if task_id == getattr(self, "_active_task", None):
            self._say("delete", "history.deleteCurrent")
            return
        if await self.recorder.run(self._stage or "", lambda: self.service.delete(task_id)):
            undo = self._by("history-undo")
            undo.hidden = False
            if self._undo_timer is not None:
                js.clearTimeout(self._undo_timer)
            self._undo_timer = js.setTimeout(create_proxy(lambda: setattr(undo, "hidden", True)), UNDO_MS)

    def _say(self, kind: str, key: str) -> None:
        """Why an action did not happen, in ``history-status`` (``data-kind`` = ``kind``)."""
        status = self._by("history-status")
        status.setAttribute("data-kind", kind)
        status.setAttribute("data-result", "error")
        status.removeAttribute("data-reason")
        status.textContent = self.t(key)

    async def undo(self) -> None:
        self._by("history-undo").hidden = True
        await self.recorder.run(self._stage or "", self.service.undo)

    async def _bundle(self):
        task_id = getattr(self, "_active_task", None)
        return await self.service.bundle(task_id) if task_id else None

    async def export(self, kind: str) -> None:
        """Download the active conversation as ``<taskId>.md`` or ``<taskId>.json``."""
        from app.history.export import export_json, export_markdown  # loaded on first export

        bundle = await self._bundle()
        if bundle is None:
            return
        if kind == "json":
            text, mime = export_json(*bundle), "application/json"
        else:
            text, mime = export_markdown(*bundle, self._labels(bundle[0]),
                                         lambda error: describe_error(self.t, error)), "text/markdown"
        self._download(text, mime, f"{bundle[0].taskId}.{kind}")

    async def export_unkept(self) -> None:
        """Download the shown thread as a JSON export when history cannot keep it (asked before New
        conversation, DESIGN.md §5); it imports back once history works. The thread stays."""
        from app.history.export import export_unkept
        from app.history.text import needs_segmenter

        stage_id = self.runtime.stage_id
        messages = self.store.load(stage_id) if stage_id is not None else None
        if not messages:
            return
        if needs_segmenter(messages):
            await _install_graphemes()
        task_id, text = export_unkept(stage_id, messages, self.clock())
        self._download(text, "application/json", f"{task_id}.json")

    def _download(self, text: str, mime: str, filename: str) -> None:
        blob = js.Blob.new(to_js([text]), to_js({"type": f"{mime};charset=utf-8"}, dict_converter=js.Object.fromEntries))
        url = js.URL.createObjectURL(blob)
        link = _node("a", attrs={"href": url, "download": filename})
        document.body.append(link)
        link.click()
        link.remove()
        js.setTimeout(create_proxy(lambda: js.URL.revokeObjectURL(url)), 10_000)

    def _labels(self, meta=None) -> dict[str, str]:
        return {"you": self.t("edit.agent.you"), "assistant": self.t("edit.agent.assistant"),
                "tool": self.t("history.tool"), "meta": markdown_meta(self.t, meta) if meta else "",
                "cut": self.t("model.turnCut")}

    async def print_view(self) -> None:
        """Fill the print view with the active conversation and open the browser's print (PDF)."""
        bundle = await self._bundle()
        if bundle is None:
            return
        meta, messages, _ = bundle
        view = self._by("print-view")
        view.replaceChildren(_node("h1", text=meta.taskName or self.t("history.untitled")))
        for message in messages:
            view.append(_node("h2", text=self._labels()["you" if message.get("role") == "user" else "assistant"]))
            for part in message.get("content") or []:
                if (failure := failure_of(part)) is not None:  # a failed reply: its status, as the panel says it
                    view.append(_node("p", text=describe_error(self.t, failure), attrs={"dir": "auto"}))
                    continue
                if part == CUT_MARKER:  # a reply the server cut: its status, as the panel says it
                    view.append(_node("p", text=self.t("model.turnCut"), attrs={"dir": "auto"}))
                    continue
                text = part.get("text") if part.get("type") == "text" else json.dumps(part, ensure_ascii=False, indent=2)
                view.append(_node("pre" if part.get("type") != "text" else "p", text=text, attrs={"dir": "auto"}))
        js.window.print()

    async def import_file(self, field) -> None:
        """Import a JSON export into the shown course's history (DESIGN.md §14): a file over 50 MB is
        refused before it is read, the text is parsed in slices that leave the page its turn, and every
        refusal (an unexpected failure too) is said in ``history-status``; a refused file changes nothing."""
        from app.history.export import ImportRefused, check_size, parse_export_sliced

        files = field.files
        if is_none(files) or files.length == 0:
            return
        file = files.item(0)
        field.value = ""
        status = self._by("history-status")
        status.setAttribute("data-kind", "import")
        status.setAttribute("data-result", "pending")
        status.removeAttribute("data-reason")
        status.textContent = ""
        try:
            check_size(int(file.size))
            text = await _read_text(file)
            bundle = await parse_export_sliced(text, self.clock())
        except ImportRefused as refused:
            return self._import_refused(refused.reason)
        except Exception as error:  # noqa: BLE001 - never a silent failure: the page says it (§14)
            js.console.error(f"import failed: {type(error).__name__}: {error}")
            return self._import_refused("failed")
        del text
        stage_id = self.runtime.stage_id or ""
        try:
            result = await self.recorder.run(stage_id, lambda: self.service.import_bundle(stage_id, *bundle))
        except Exception as error:  # noqa: BLE001 - as above
            js.console.error(f"import failed: {type(error).__name__}: {error}")
            return self._import_refused("failed")
        status.setAttribute("data-result", "ok" if result == "ok" else "error")
        status.textContent = self.t("history.imported" if result == "ok" else f"history.importError.{result}")
        if result == "ok" and stage_id == self._stage:
            await self.reveal(bundle[0].taskId)

    def _import_refused(self, reason: str) -> None:
        status = self._by("history-status")
        status.setAttribute("data-result", "error")
        status.setAttribute("data-reason", reason)
        status.textContent = self.t(f"history.importError.{reason}")

    async def reveal(self, task_id: str) -> None:
        """Redraw the open list and page on (cursor pages, as scrolling does) until ``task_id`` is drawn,
        then scroll it into view: an imported conversation shows at once, wherever its time puts it."""
        if not self._open:
            return
        await self.reload()
        while task_id not in self._keys and self._has_more:
            if self._loading:
                await asyncio.sleep(0.01)
                continue
            drawn = len(self._keys)
            await self.more()
            if len(self._keys) == drawn and not self._has_more:
                break
        item = self._by("history-list").querySelector(f'[data-task-id="{task_id}"]')
        if not is_none(item):
            item.scrollIntoView(to_js({"block": "nearest"}, dict_converter=js.Object.fromEntries))
