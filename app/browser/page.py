"""The page's wiring (DESIGN.md §8): the services over the browser's storage, the views over
them, and the page's events, in named set-up steps that ``app.browser._boot`` runs in order:

``Page(query)`` (locale, hydrate, services, views) → ``draw_first`` → ``bind_controls`` →
``join_tabs`` → ``drop_painted_bar`` → ``bind_history`` → ``finish()`` (awaited: scene
documents, ready, then each later system in a task of its own, DESIGN.md §13: history's modules
a module per task, ``app.browser.history_boot``; sync last, §16).
"""

from __future__ import annotations

import asyncio

import js
from pyodide.ffi import create_proxy
from pyscript import document, when, window
from pyscript.ffi import is_none

from app.agent import DemoAgent
from app.browser.checkpoint_view import CheckpointView
from app.browser.dom import field_text
from app.browser.indexeddb_status import NOTICE_CODE as IDB_NOTICE, indexed_db_status
from app.browser.indexeddb import IndexedDbBackend
from app.browser.intl import IntlNumbers
from app.browser.local_storage import open_local_storage
from app.browser.message_actions_view import MessageActionsView
from app.browser.stage_view import StageView
from app.browser.tasks import next_task
from app.browser.view import PageView
from app.checkpoints import SceneCheckpoints
from app.checkpoints.documents import shown_base
from app.checkpoints.record_backend import RecordVersionBackend
from app.composer import composer_text
from app.courses import course_from_url, find_course
from app.history.access import database_failed
from app.i18n import Translator, resolve_locale
from app.records import RecordStoreError
from app.runtime import AgentRuntime
from app.store import Notice, ThreadStore

__all__ = ["DEFAULT_DELAY_MS", "Page", "read_query"]

DEFAULT_DELAY_MS = 35
"""Streamed-token delay of the demo agent when the URL names none (``delay=<ms>``, DESIGN.md §6)."""


def read_query() -> dict[str, str]:
    """The URL parameters the page reads (DESIGN.md §6): ``course``, ``lang``, ``delay``; absent ones left out."""
    params = js.URLSearchParams.new(window.location.search)
    query = {name: params.get(name) for name in ("course", "lang", "delay")}
    return {k: v for k, v in query.items() if isinstance(v, str)}


def _delay_ms(query: dict[str, str]) -> int:
    try:
        return max(0, int(float(query.get("delay", DEFAULT_DELAY_MS))))
    except (ValueError, OverflowError):
        return DEFAULT_DELAY_MS


class Page:
    """One page's services and views (module docstring). ``query``: ``read_query()``."""

    def __init__(self, query: dict[str, str]) -> None:
        self.query = query
        self.translator = Translator(resolve_locale(query.get("lang"), list(window.navigator.languages or [])),
                                     IntlNumbers)
        self.root = document.documentElement
        self.root.lang = self.translator.locale
        self.root.dir = "rtl" if self.translator.rtl else "ltr"
        self.clock = lambda: int(js.Date.now())  # epoch ms, stamped at save time
        self.store = ThreadStore(open_local_storage())
        self.store.hydrate(self.clock())
        js.performance.mark("agentbar:hydrated")
        self.records = IndexedDbBackend()  # opened in finish(), before ready; scene versions live there (§10)
        # version 0 as the page shows it (a placeholder course's scenes in the page's locale): a
        # regenerate reads it, so the new version keeps the localised title (DESIGN.md §7, §10)
        self.checkpoints = SceneCheckpoints(RecordVersionBackend(self.records), pause=next_task,
                                            base=shown_base(self.translator))
        from app.browser.model_setup import ModelSetup
        from app.browser.signals import CrossTabSignals
        from app.history.changes import ChangeHub
        from app.history.recorder import HistoryRecorder

        # History's modules load after ready (app.browser.history_boot); what the runtime records
        # before waits in the recorder's queue (DESIGN.md §9, §13); HistoryLoading stands in for them.
        self.recorder = HistoryRecorder()
        self.changes = ChangeHub()  # history's one hub: other tabs' changes arrive on it before history loads (§15)
        demo = DemoAgent(delay_ms=_delay_ms(query), scenes=self.checkpoints.document, translate=self.translator)
        self.model_setup = ModelSetup(demo, lambda: self.runtime.stage_id)  # DESIGN.md §12
        self.runtime = AgentRuntime(self.store, self.model_setup.agent, clock=self.clock, history=self.recorder,
                                    checkpoints=self.checkpoints)
        from app.browser.history_boot import HistoryLoading

        self.history = HistoryLoading(self.runtime)  # HistoryPart once history's modules are loaded
        self.idb_available = indexed_db_status(window).available
        if not self.idb_available:  # PyScript runs on the in-memory substitute; this one notice covers history and versions
            self.runtime.add_notice(Notice(IDB_NOTICE))
        self.view = PageView(self.runtime, self.translator)
        self.view.translate_static()
        self.stage_view = StageView(self.runtime, self.checkpoints, self.translator)
        covered = frozenset() if self.idb_available else frozenset({"checkpoint-unavailable"})
        self.checkpoint_view = CheckpointView(self.runtime, self.translator, self.clock, covered)
        self.signals = CrossTabSignals(window, self.runtime, self.changes, self.checkpoints)
        self.ready = False
        self._stage_key: tuple | None = None  # what the stage and its versions were last drawn for
        self._composing = False  # an IME composition is open in the page (compositionstart … compositionend)
        self.message_actions = MessageActionsView(self.runtime, self.view, self.translator, lambda: self._composing)

    # -- the course and its stage --------------------------------------------------------
    def render_stage(self) -> None:
        """Draw the scenes' slides and version lists; the version store is read only once ready."""
        if self.ready:
            self.stage_view.render()
            self.checkpoint_view.render()

    def show_course(self, stage_id: str) -> None:
        """Show course ``stage_id``: its scenes, its thread, its versions (read once ready)."""
        self.view.render_course(find_course(stage_id), self.store.stage_ids())
        self.runtime.set_stage(stage_id)
        self.render_stage()
        if self.ready:
            asyncio.ensure_future(self.checkpoints.load_stage(stage_id))

    def _on_runtime_change(self) -> None:
        # The runtime notifies on every streamed token; the stage and its versions depend only on
        # the course, its conversation and the version store (which notifies on its own), so a
        # token redraws nothing there (DESIGN.md §10).
        runtime = self.runtime
        key = (runtime.stage_id, runtime.conversation_key(runtime.stage_id) if runtime.stage_id else None,
               runtime.is_running, self.ready)
        if self._stage_key != key:
            self._stage_key = key
            self.render_stage()

    def draw_first(self) -> None:
        """Show the URL's course and draw the panel once; from now on every change redraws."""
        from app.browser.tasks import next_frame
        from app.frames import FrameCoalescer

        # Until the stage id is known the runtime holds no thread and writes nothing
        # (DESIGN.md §4); the first render happens once the course's thread is loaded.
        from app.browser.paint import painted_positions

        painted = painted_positions()  # the pickers painted stand until history's tree arrives (§13, §17)
        if painted is not None:
            self.runtime.painted_positions(*painted)
        self.show_course(course_from_url(self.query.get("course")))
        self.runtime.subscribe(self.view.render)
        self.runtime.subscribe(self._on_runtime_change)
        self.checkpoints.subscribe(self.render_stage)
        # A streaming reply is drawn once per animation frame, every other change at once (DESIGN.md §12);
        # the start of a turn too: data-running turns "true" in the same task as the Send.
        frames = FrameCoalescer(next_frame, defer=lambda: self.runtime.is_running and self.view.shows_running)
        self.runtime.notify_through(frames.schedule)
        self.view.render()
        js.performance.mark("agentbar:rendered")

    # -- the page's controls -------------------------------------------------------------
    def bind_controls(self) -> None:
        """The course picker, Back/Forward, the composer, Escape, and the panel's buttons."""
        when("change", "#course-select")(self._on_course)
        window.addEventListener("popstate", create_proxy(self._on_popstate))
        when("submit", "#agent-composer")(self._on_submit)
        when("keydown", "#agent-input")(self._on_key)
        for name in ("compositionstart", "compositionupdate", "compositionend"):
            document.addEventListener(name, create_proxy(self._on_composition), True)
        when("keydown", "html")(self._on_escape)
        when("click", "#agent-stop")(self._on_stop)
        when("click", "#agent-new-conversation")(self._on_new)
        when("click", "#agent-notices")(self._on_notice_click)
        when("click", "#agent-messages")(self._on_message_click)
        when("keydown", "#agent-messages")(self.message_actions.on_key)
        when("click", "#agent-collapse")(self._on_collapse)

    def _on_course(self, event) -> None:
        stage_id = event.target.value
        url = js.URL.new(window.location.href)
        url.searchParams.set("course", stage_id)
        window.history.pushState(None, "", url.href)  # Back returns to the previous course
        self.show_course(stage_id)

    def _on_popstate(self, _event) -> None:  # Back/Forward between courses: switch in the page, no reload
        course = js.URLSearchParams.new(window.location.search).get("course")
        self.show_course(course_from_url(course))

    def _on_submit(self, event) -> None:
        event.preventDefault()
        self._send()

    def _send(self) -> None:
        if not self.ready:  # until ready static/paint.js holds the message (DESIGN.md §13)
            return
        field = document.getElementById("agent-input")
        if self.runtime.send(composer_text(field_text(field))) is not None:  # None: blank text or a turn running
            field.value = ""

    def _on_key(self, event) -> None:
        if event.key == "Enter" and not (event.shiftKey or event.isComposing):
            event.preventDefault()
            self._send()

    def _on_composition(self, event) -> None:
        self._composing = event.type != "compositionend"

    def _on_escape(self, event) -> None:
        # Escape stops the run only when no IME composition is open (Escape then cancels the
        # composition) and focus is in the panel or nowhere; not from the course picker.
        if event.key != "Escape" or not self.runtime.is_running:
            return
        if self._composing or event.isComposing or event.keyCode == 229:
            return
        focused = document.activeElement
        if is_none(focused) or focused == document.body or document.getElementById("agent-panel").contains(focused):
            self.runtime.stop()

    def _on_stop(self, _event) -> None:
        self.runtime.stop()
        document.getElementById("agent-input").focus()

    def _on_new(self, _event) -> None:
        self.history.new_conversation()  # asks first when history cannot keep the thread (DESIGN.md §5, §9)

    def _on_notice_click(self, event) -> None:
        dismiss = event.target.closest("[data-testid=agent-notice-dismiss]")
        if not is_none(dismiss):
            self.runtime.dismiss_notice(dismiss.dataset.code)
        elif not is_none(event.target.closest("[data-action=download-damaged]")):
            self.runtime.download_damaged()  # the user chose it: the file is the backup (DESIGN.md §5)
            document.getElementById("agent-input").focus()  # the notice and its button are gone

    def _on_message_click(self, event) -> None:
        action = event.target.closest("[data-testid^=message-], [data-testid^=branch-]")
        if not is_none(action) and self.message_actions.act(action):
            return
        restore = event.target.closest("[data-testid=tool-card-restore]")
        if not is_none(restore):
            self.runtime.restore_snapshot(restore.dataset.toolCallId)
        elif not is_none(event.target.closest("[data-testid=agent-load-earlier]")):
            self.view.show_earlier()
        elif not is_none(expand := event.target.closest("[data-testid=agent-message-expand]")):
            self.view.toggle_long_text(expand)


    def _on_collapse(self, _event) -> None:
        self.view.toggle_collapsed()

    # -- other tabs, the painted bar, history ----------------------------------------------
    def join_tabs(self) -> None:
        """Other tabs' changes arrive (``app.browser.signals``); the version bar and lists are set up."""
        self.signals.install()
        self.checkpoint_view.install()

    def drop_painted_bar(self) -> None:
        """Python's bar is in: the painted one goes in the same task (DESIGN.md §13)."""
        from app.browser.paint import drop_painted_bar

        drop_painted_bar()

    def bind_history(self) -> None:
        """Before ready: clicks on history's controls are kept until its handlers are bound after ready."""
        from app.browser.history_boot import HeldClicks

        try:  # tests and bench await drawn lists by it; dev-only, not in dist/ (tools/build.py DEV_ONLY)
            from app.browser.dev_hooks import install as install_dev_hooks
        except ImportError:
            pass
        else:
            install_dev_hooks(self.checkpoint_view)
        self.held_clicks = HeldClicks()
        self.held_clicks.install()
        self.held_settings = HeldClicks("#settings-open")  # its dialog is built after history's modules
        self.held_settings.install()

    async def load_history(self) -> None:
        """After ready: import history's modules a module per task, then build history's part whole
        (``app.browser.history_part.HistoryPart``: the service, the drawer, the backup hooks; the
        recorder then runs what it queued) in the page's ``history``, where ``HistoryLoading`` stood;
        with IndexedDB unusable from the start, history's own "unavailable" notice is left to the one
        IndexedDB notice (DESIGN.md §5, §9, §13)."""
        from app.browser.history_boot import import_history

        await import_history()
        from app.browser.history_part import HistoryPart

        self.history = await HistoryPart.load(
            self.runtime, self.store, self.recorder, self.changes, self.translator, self.clock, records=self.records,
            say=self._history_notice, threads_restored=self._threads_restored,
            busy=lambda stage_id: stage_id in self.runtime.sessions.running(), dismiss=self.runtime.dismiss_notice)
        self.held_clicks.release()

    def _history_notice(self, notice, available: bool | None) -> None:
        """History's ``notice`` (``available``: whether history is open), said in the panel; when it tells
        that IndexedDB itself could not be opened (unusable from the start, or its open failed:
        ``database_failed``), the one IndexedDB notice instead, which covers scene versions too (three
        notices stacked: history unavailable, storage full, versions in memory; DESIGN.md §5)."""
        if database_failed(notice.code, available if self.idb_available else None):
            self.runtime.add_notice(Notice(IDB_NOTICE))
            self.checkpoint_view.cover("checkpoint-unavailable")
        else:
            self.runtime.add_notice(notice)

    async def _threads_restored(self, stages: set[str]) -> None:
        """The page's part of a restored backup (``HistoryPart.restored``, DESIGN.md §14): the course on
        screen shows its restored thread and its scenes' current versions at once (no reload); the
        picker lists the restored courses."""
        self.runtime.threads_restored(stages)
        shown = self.runtime.stage_id
        if shown is not None:
            self.view.render_course(find_course(shown), self.store.stage_ids())
            await self.checkpoints.load_stage(shown)

    # -- after ready -----------------------------------------------------------------------
    async def finish(self) -> None:
        """Open IndexedDB, read the shown course's documents, set ready; then the model settings (with
        sync's section: the settings button works right after ready), history's modules
        (``load_history``) and history's start, each in tasks of their own so the page can answer input
        between them (§13). Sync starts once history is open (``SyncSetup.install``)."""
        try:
            await self.records.open()
        except RecordStoreError as error:  # the first call falls back to memory and says so
            js.console.warn(f"IndexedDB: {error}")
        if self.runtime.stage_id is not None:
            await self.checkpoints.load_stage(self.runtime.stage_id)  # current documents only
        taking = getattr(js, "agentbarUpdateTaking", None)  # static/boot.js: a new version taking over
        if taking is not None:
            js.performance.mark("agentbar:ready-held")
            await taking  # it reloads the page onto it, or says "busy" or nothing within 3 s
        self.ready = True
        self.render_stage()
        self.view.show_app()
        self.root.dataset.ready = "true"
        js.performance.mark("agentbar:ready")
        from app.browser.paint import PaintKeeper, take_over

        take_over(self.runtime)  # a message sent before ready goes now, once (DESIGN.md §13)
        PaintKeeper(self.runtime, self.store, self.translator).start()
        await next_task()
        from app.browser.sync_setup import SyncSection, SyncSetup  # sync (§16): its client loads only when on

        self.sync = SyncSetup(None, self.translator, self.checkpoints, self.records,  # history: given below
                              changes=self.changes, say=self.runtime.add_notice, dismiss=self.runtime.dismiss_notice)
        await next_task()  # sync's modules and the settings dialog: a task each (together 40-135 ms on a cold load)
        self.model_setup.install_dialog(self.translator, self._redraw_messages,  # after ready: nothing added to start-up
                                        sections=(SyncSection(self.translator, self.sync),))
        self.held_settings.release()
        js.performance.mark("agentbar:settings")
        await next_task()
        await self.load_history()
        self.sync.history = self.history.service
        await next_task()
        await self.history.start()
        self.root.dataset.history = self.history.state
        self.sync.install(self.checkpoint_view.menu)  # history is open: replicated conversations can come in
        js.performance.mark("agentbar:after-ready")

    def _redraw_messages(self) -> None:  # Markdown is there: messages rebuilt, their turn meta put back
        self.view.redraw_messages()
        self.history.refresh_turn_meta()  # still loading: its start draws the turn meta
