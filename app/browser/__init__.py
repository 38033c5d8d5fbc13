"""The browser layer: the only code that touches ``pyscript``, ``js`` or ``pyodide``.

``main()`` wires the pure parts to the page (DESIGN.md §8):
``window.localStorage`` → ``ThreadStore`` → ``AgentRuntime`` → ``PageView``.
It sets ``html[data-ready="true"]`` once the current course's thread is
restored, or ``html[data-error]`` with the message when start-up fails
(DESIGN.md §6).

URL parameters (DESIGN.md §6): ``course=<stageId>``, ``lang=<locale>``,
``delay=<ms per streamed token>``.
"""

from __future__ import annotations

import asyncio
import traceback

__all__ = ["main"]

DEFAULT_DELAY_MS = 35


def main() -> None:
    """Boot the app in the page; never raises (failures become ``html[data-error]``).

    Start-up phases are marked for the benchmark (``performance.mark``, DESIGN.md §13):
    ``agentbar:main``, ``agentbar:imported``, ``agentbar:hydrated``, ``agentbar:rendered``,
    ``agentbar:ready``, ``agentbar:after-ready``.
    """
    import js

    js.performance.mark("agentbar:main")
    try:
        finish = _boot()
    except Exception as error:  # noqa: BLE001 - any start-up failure must become visible
        _show_error(error)
        return

    async def finishing() -> None:
        try:
            await finish
        except Exception as error:  # noqa: BLE001
            _show_error(error)

    asyncio.ensure_future(finishing())


def _show_error(error: BaseException) -> None:
    from pyscript import document

    traceback.print_exception(error)
    message = f"{type(error).__name__}: {error}"
    root = document.documentElement
    root.setAttribute("data-error", message)
    box = document.getElementById("boot-error")
    if box is not None:
        box.hidden = False
        box.textContent = message


def _boot():
    """Wire the page; returns the coroutine that finishes start-up (scene documents) and sets ready."""
    import js
    from pyodide.ffi import create_proxy
    from pyscript import document, when, window
    from pyscript.ffi import is_none

    from app.agent import DemoAgent
    from app.browser.checkpoint_view import CheckpointView
    from app.browser.indexed_db import NOTICE_CODE as IDB_NOTICE, indexed_db_status
    from app.browser.indexeddb import IndexedDbBackend
    from app.browser.stage_view import StageView
    from app.checkpoints import SceneCheckpoints
    from app.checkpoints.record_backend import RecordVersionBackend
    from app.records import RecordStoreError
    from app.browser.local_storage import open_local_storage
    from app.browser.view import PageView
    from app.composer import composer_text
    from app.browser.dom import field_text
    from app.courses import DEFAULT_COURSE_ID, find_course
    from app.browser.intl import IntlNumbers
    from app.i18n import Translator, resolve_locale
    from app.runtime import AgentRuntime
    from app.store import STORAGE_KEY, Notice, ThreadStore

    js.performance.mark("agentbar:imported")
    params = js.URLSearchParams.new(window.location.search)
    query = {name: params.get(name) for name in ("course", "lang", "delay")}
    query = {k: v for k, v in query.items() if isinstance(v, str)}
    locale = resolve_locale(query.get("lang"), list(window.navigator.languages or []))
    translator = Translator(locale, IntlNumbers)
    root = document.documentElement
    root.lang = translator.locale
    root.dir = "rtl" if translator.rtl else "ltr"

    try:
        delay_ms = max(0, int(float(query.get("delay", DEFAULT_DELAY_MS))))
    except (ValueError, OverflowError):
        delay_ms = DEFAULT_DELAY_MS

    clock = lambda: int(js.Date.now())  # noqa: E731 - epoch ms, stamped at save time
    store = ThreadStore(open_local_storage())
    store.hydrate(clock())
    js.performance.mark("agentbar:hydrated")
    records = IndexedDbBackend()  # opened below, before ready; scene versions live there (DESIGN.md §10)
    from app.browser.tasks import next_task

    checkpoints = SceneCheckpoints(RecordVersionBackend(records), pause=next_task)
    from app.browser.history_view import HistoryView, create_history
    from app.browser.model_setup import ModelSetup

    history, recorder = create_history(clock)  # nothing of history is read before its list opens (DESIGN.md §9)
    demo = DemoAgent(delay_ms=delay_ms, scenes=checkpoints.document)
    model_setup = ModelSetup(demo, lambda: runtime.stage_id)  # DESIGN.md §12
    runtime = AgentRuntime(store, model_setup.agent, clock=clock, history=recorder, checkpoints=checkpoints)
    idb_available = indexed_db_status(window).available
    if not idb_available:  # PyScript runs on the in-memory substitute; this one notice covers history and versions
        runtime.add_notice(Notice(IDB_NOTICE))
    view = PageView(runtime, translator)
    view.translate_static()
    stage_view = StageView(runtime, checkpoints, translator)
    checkpoint_view = CheckpointView(runtime, translator, clock)

    def render_stage() -> None:
        if ready_flag:  # the version store is read only once the database is open
            stage_view.render()
            checkpoint_view.render()

    def show_course(stage_id: str) -> None:
        view.render_course(find_course(stage_id), store.stage_ids())
        runtime.set_stage(stage_id)
        render_stage()
        if ready_flag:
            asyncio.ensure_future(checkpoints.load_stage(stage_id))

    ready_flag: list[bool] = []

    # Until the stage id is known the runtime holds no thread and writes nothing
    # (DESIGN.md §4); the first render happens once the course's thread is loaded.
    show_course(query.get("course") or DEFAULT_COURSE_ID)
    runtime.subscribe(view.render)
    stage_key: list[tuple] = []

    def on_runtime_change() -> None:
        # The runtime notifies on every streamed token; the stage and its versions depend only on
        # the course, its conversation and the version store (which notifies on its own), so a
        # token redraws nothing there (DESIGN.md §10).
        key = (runtime.stage_id, runtime.conversation_key(runtime.stage_id) if runtime.stage_id else None,
               runtime.is_running, bool(ready_flag))
        if stage_key != [key]:
            stage_key[:] = [key]
            render_stage()

    runtime.subscribe(on_runtime_change)
    checkpoints.subscribe(render_stage)
    from app.browser.tasks import next_frame
    from app.frames import FrameCoalescer

    # A streaming reply is drawn once per animation frame, every other change at once (DESIGN.md §12);
    # the start of a turn too: data-running turns "true" in the same task as the Send.
    frames = FrameCoalescer(next_frame, defer=lambda: runtime.is_running and view.shows_running)
    runtime.notify_through(frames.schedule)
    view.render()
    js.performance.mark("agentbar:rendered")

    @when("change", "#course-select")
    def _on_course(event) -> None:
        stage_id = event.target.value
        url = js.URL.new(window.location.href)
        url.searchParams.set("course", stage_id)
        window.history.pushState(None, "", url.href)  # Back returns to the previous course
        show_course(stage_id)

    def _on_popstate(_event) -> None:  # Back/Forward between courses: switch in the page, no reload
        course = js.URLSearchParams.new(window.location.search).get("course")
        show_course(course if isinstance(course, str) and course else DEFAULT_COURSE_ID)

    window.addEventListener("popstate", create_proxy(_on_popstate))

    @when("submit", "#agent-composer")
    def _on_submit(event) -> None:
        event.preventDefault()
        _send()

    def _send() -> None:
        if not ready_flag:  # until ready static/paint.js holds the message (DESIGN.md §13)
            return
        field = document.getElementById("agent-input")
        if runtime.send(composer_text(field_text(field))) is not None:  # None: blank text or a turn running
            field.value = ""

    @when("keydown", "#agent-input")
    def _on_key(event) -> None:
        if event.key == "Enter" and not (event.shiftKey or event.isComposing):
            event.preventDefault()
            _send()

    composing = [False]  # an IME composition is open in the page (compositionstart … compositionend)

    def _on_composition(event) -> None:
        composing[0] = event.type != "compositionend"

    for name in ("compositionstart", "compositionupdate", "compositionend"):
        document.addEventListener(name, create_proxy(_on_composition), True)

    @when("keydown", "html")
    def _on_escape(event) -> None:
        # Escape stops the run only when no IME composition is open (Escape then cancels the
        # composition) and focus is in the panel or nowhere; not from the course picker.
        if event.key != "Escape" or not runtime.is_running:
            return
        if composing[0] or event.isComposing or event.keyCode == 229:
            return
        focused = document.activeElement
        if is_none(focused) or focused == document.body or document.getElementById("agent-panel").contains(focused):
            runtime.stop()

    @when("click", "#agent-stop")
    def _on_stop(_event) -> None:
        runtime.stop()
        document.getElementById("agent-input").focus()

    @when("click", "#agent-new-conversation")
    def _on_new(_event) -> None:
        history_view.new_conversation()  # asks first when history cannot keep the thread (DESIGN.md §5, §9)

    @when("click", "#agent-notices")
    def _on_notice_click(event) -> None:
        dismiss = event.target.closest("[data-testid=agent-notice-dismiss]")
        if not is_none(dismiss):
            runtime.dismiss_notice(dismiss.dataset.code)
        elif not is_none(event.target.closest("[data-action=download-damaged]")):
            runtime.download_damaged()  # the user chose it: the file is the backup (DESIGN.md §5)
            document.getElementById("agent-input").focus()  # the notice and its button are gone

    @when("click", "#agent-messages")
    def _on_message_click(event) -> None:
        restore = event.target.closest("[data-testid=tool-card-restore]")
        if not is_none(restore):
            runtime.restore_snapshot(restore.dataset.toolCallId)
        elif not is_none(event.target.closest("[data-testid=agent-load-earlier]")):
            view.show_earlier()
        elif not is_none(expand := event.target.closest("[data-testid=agent-message-expand]")):
            view.toggle_long_text(expand)

    @when("click", "#agent-collapse")
    def _on_collapse(_event) -> None:
        view.toggle_collapsed()

    def _on_storage(event) -> None:
        # key is JS null when another tab cleared all of localStorage.
        if is_none(event.key) or event.key == STORAGE_KEY:
            runtime.on_storage_changed()

    window.addEventListener("storage", create_proxy(_on_storage))

    def on_remote_version(stage_id: str) -> None:
        if stage_id == runtime.stage_id:
            async def reload() -> None:
                await checkpoints.load_stage(stage_id)
                checkpoint_view.refresh()
            asyncio.ensure_future(reload())

    checkpoint_view.install(on_remote_version)
    from app.browser.paint import drop_painted_bar

    drop_painted_bar()  # Python's bar is in: the painted one goes in the same task (DESIGN.md §13)
    window.agentbarCheckpoints = create_proxy(checkpoint_view.settle)  # tests and bench: await drawn lists
    history_view = HistoryView(runtime, store, history, recorder, translator, clock)
    history_view.bind()
    if not idb_available:  # IndexedDB unusable from the start: said once, by IDB_NOTICE (DESIGN.md §5, §9)
        say = history.on_notice
        history.on_notice = lambda notice: None if notice.code == "history-unavailable" else say(notice)
        checkpoint_view.covered = frozenset({"checkpoint-unavailable"})

    async def finish() -> None:
        try:
            await records.open()
        except RecordStoreError as error:  # the first call falls back to memory and says so
            js.console.warn(f"IndexedDB: {error}")
        if runtime.stage_id is not None:
            await checkpoints.load_stage(runtime.stage_id)  # current documents only
        ready_flag.append(True)
        render_stage()
        view.show_app()
        root.dataset.ready = "true"
        js.performance.mark("agentbar:ready")
        from app.browser.paint import PaintKeeper, take_over

        take_over(runtime)  # a message sent before ready goes now, once (DESIGN.md §13)
        PaintKeeper(runtime, store, translator).start()

        def redraw() -> None:  # Markdown is there: messages rebuilt, their turn meta put back
            view.redraw_messages()
            history_view.refresh_turn_meta()

        # After ready, each system in a task of its own, so the page can answer input between them (§13).
        await next_task()
        model_setup.install_dialog(translator, redraw)  # after ready: nothing added to start-up
        js.performance.mark("agentbar:settings")
        await next_task()
        await history_view.start()
        root.dataset.history = "ready" if history.available else f"unavailable:{history.failure}"
        js.performance.mark("agentbar:after-ready")

    return finish()
