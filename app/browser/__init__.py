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


def main() -> None:
    """Boot the app in the page; never raises (failures become ``html[data-error]``).

    Start-up phases are marked for the benchmark (``performance.mark``, DESIGN.md §13):
    ``agentbar:main``, ``agentbar:imported``, ``agentbar:hydrated``, ``agentbar:rendered``,
    ``agentbar:ready``, ``agentbar:after-ready``.
    """
    import js

    js.performance.mark("agentbar:main")
    try:
        _settle_restored()
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


def _settle_restored() -> None:
    """After a start from the interpreter snapshot (``static/pyodide-boot.mjs`` sets
    ``agentbarBoot.snapshot = "restored"``), give Python this browser's zone, ``LANG`` and a fresh
    ``random`` seed, as a fresh boot has them (``app.process_state``)."""
    import os
    import random
    import time

    import js

    from app.process_state import EXECUTABLE_NAME, lang_variable, time_zone

    boot = getattr(js, "agentbarBoot", None)
    if boot is None or getattr(boot, "snapshot", None) != "restored":
        return
    year = js.Date.new().getFullYear()
    january, july = js.Date.new(year, 0, 1), js.Date.new(year, 6, 1)
    zone = time_zone(int(january.getTimezoneOffset()), int(july.getTimezoneOffset()))
    time.timezone, time.altzone, time.daylight, time.tzname = zone
    os.environ["LANG"] = lang_variable(list(js.navigator.languages or []))
    os.environ["_"] = EXECUTABLE_NAME
    random.seed()


def _boot():
    """Wire the page in its set-up steps (``app.browser.page``); returns the coroutine that finishes
    start-up (scene documents) and sets ready."""
    import js

    from app.browser.page import Page, read_query  # the app's modules: their import is the "imported" phase

    js.performance.mark("agentbar:imported")
    page = Page(read_query())  # locale, hydrate, services, views
    page.draw_first()
    page.bind_controls()
    page.join_tabs()  # other tabs' storage and channel signals (app.browser.signals)
    page.drop_painted_bar()
    page.bind_history()
    return page.finish()

