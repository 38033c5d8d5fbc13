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

import traceback

__all__ = ["main"]

DEFAULT_DELAY_MS = 35


def main() -> None:
    """Boot the app in the page; never raises (failures become ``html[data-error]``)."""
    from pyscript import document

    try:
        _boot()
    except Exception as error:  # noqa: BLE001 - any start-up failure must become visible
        traceback.print_exc()
        message = f"{type(error).__name__}: {error}"
        root = document.documentElement
        root.setAttribute("data-error", message)
        box = document.getElementById("boot-error")
        if box is not None:
            box.hidden = False
            box.textContent = message


def _boot() -> None:
    import js
    from pyodide.ffi import create_proxy
    from pyscript import document, when, window
    from pyscript.ffi import is_none

    from app.agent import DemoAgent
    from app.browser.bench_hooks import install as install_bench_hooks
    from app.browser.local_storage import open_local_storage
    from app.browser.view import PageView
    from app.courses import DEFAULT_COURSE_ID, find_course
    from app.i18n import Translator, resolve_locale
    from app.runtime import AgentRuntime
    from app.store import STORAGE_KEY, ThreadStore

    params = js.URLSearchParams.new(window.location.search)
    query = {name: params.get(name) for name in ("course", "lang", "delay")}
    query = {k: v for k, v in query.items() if isinstance(v, str)}
    locale = resolve_locale(query.get("lang"), list(window.navigator.languages or []))
    translator = Translator(locale)
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
    from app.browser.history_view import HistoryView, create_history

    history, recorder = create_history(clock)  # nothing of IndexedDB is opened before ready (DESIGN.md §9)
    runtime = AgentRuntime(store, DemoAgent(delay_ms=delay_ms), clock=clock, history=recorder)
    view = PageView(runtime, translator)
    view.translate_static()

    def show_course(stage_id: str) -> None:
        view.render_course(find_course(stage_id))
        runtime.set_stage(stage_id)

    # Until the stage id is known the runtime holds no thread and writes nothing
    # (DESIGN.md §4); the first render happens once the course's thread is loaded.
    show_course(query.get("course") or DEFAULT_COURSE_ID)
    runtime.subscribe(view.render)
    view.render()

    @when("change", "#course-select")
    def _on_course(event) -> None:
        stage_id = event.target.value
        url = js.URL.new(window.location.href)
        url.searchParams.set("course", stage_id)
        window.history.replaceState(None, "", url.href)
        show_course(stage_id)

    @when("submit", "#agent-composer")
    def _on_submit(event) -> None:
        event.preventDefault()
        _send()

    def _send() -> None:
        field = document.getElementById("agent-input")
        if runtime.send(field.value.strip()) is not None:  # None: blank text or a turn running
            field.value = ""

    @when("keydown", "#agent-input")
    def _on_key(event) -> None:
        if event.key == "Enter" and not (event.shiftKey or event.isComposing):
            event.preventDefault()
            _send()

    @when("keydown", "html")
    def _on_escape(event) -> None:
        if event.key == "Escape" and runtime.is_running:
            runtime.stop()

    @when("click", "#agent-stop")
    def _on_stop(_event) -> None:
        runtime.stop()
        document.getElementById("agent-input").focus()

    @when("click", "#agent-new-conversation")
    def _on_new(_event) -> None:
        runtime.clear_thread()
        document.getElementById("agent-input").focus()

    @when("click", "#agent-notices")
    def _on_notice_click(event) -> None:
        dismiss = event.target.closest("[data-testid=agent-notice-dismiss]")
        if not is_none(dismiss):
            runtime.dismiss_notice(dismiss.dataset.code)

    @when("click", "#agent-messages")
    def _on_message_click(event) -> None:
        restore = event.target.closest("[data-testid=tool-card-restore]")
        if not is_none(restore):
            runtime.restore_snapshot(restore.dataset.toolCallId)
        elif not is_none(event.target.closest("[data-testid=agent-load-earlier]")):
            view.show_earlier()

    @when("click", "#agent-collapse")
    def _on_collapse(_event) -> None:
        view.toggle_collapsed()

    def _on_storage(event) -> None:
        # key is JS null when another tab cleared all of localStorage.
        if is_none(event.key) or event.key == STORAGE_KEY:
            runtime.on_storage_changed()

    window.addEventListener("storage", create_proxy(_on_storage))

    install_bench_hooks(window, runtime, store)  # only with ?bench=1
    history_view = HistoryView(runtime, store, history, recorder, translator, clock)
    history_view.bind()
    view.show_app()
    root.dataset.ready = "true"

    async def _start_history() -> None:
        await history_view.start()
        root.dataset.history = "ready" if history.available else f"unavailable:{history.failure}"

    import asyncio

    asyncio.ensure_future(_start_history())
