"""History loaded after ready (DESIGN.md §13: every system the first turn does not need loads after
ready, in idle slices; nothing after ready blocks the main thread over 50 ms).

Before ready the page holds only the runtime's ``HistoryRecorder`` (without a service: what the
runtime records waits in its queue, in call order) and the cross-tab adapter without history.
Importing history's modules was about half of "our imports" before ready (cold loads, own time
per module, ``bench/trace_startup.py --imports``). After ready ``load_history(page)`` imports them a
module per task (``HISTORY_MODULES``, each after what it imports), then builds the service, the
drawer's view and the backup hooks, joins them to the cross-tab adapter and hands the service to
the recorder, which runs what it queued.

``HeldClicks``: until then a click on the history button or in the drawer (or a file chosen in one
of its inputs) is kept and played again once the drawer's handlers are bound, so nothing the
user does right at ready is lost.
"""

from __future__ import annotations

import importlib

import js
from pyodide.ffi import create_proxy
from pyscript import document
from pyscript.ffi import is_none

from app.browser.tasks import next_task

__all__ = ["HISTORY_MODULES", "HeldClicks", "HistoryLoading", "import_history"]

HISTORY_MODULES = (
    "app.history.records", "app.history.terms", "app.history.text", "app.history.tree", "app.history.branches",
    "app.history.repository", "app.history.search_index", "app.history.access", "app.history.merge",
    "app.history.reads", "app.history.active",
    "app.history.turn_writes", "app.history.writes", "app.history.branch_writes",
    "app.history.service", "app.history.labels", "app.history.list_model", "app.history.reconcile",
    "app.history.active_thread", "app.browser.turn_meta_view", "app.browser.history_list_view",
    "app.browser.history_files", "app.browser.history_view", "app.browser.backup_files", "app.browser.history_part",
)
"""History's modules in the order they are imported after ready, each one after those it imports
(so each task runs one module's body)."""

_HELD_IN = "#history-open, #history-drawer"


async def import_history() -> None:
    """Import ``HISTORY_MODULES``, one per task (and build the record models, one per task)."""
    for name in HISTORY_MODULES:
        module = importlib.import_module(name)
        await next_task()
        if name == "app.history.records":
            for _model in module.build_models():  # their validators, a model per task
                await next_task()


class HistoryLoading:
    """History while its modules load (after ready, DESIGN.md §13), in the page's ``history`` until
    ``app.browser.history_part.HistoryPart`` takes its place, with the same verbs. ``runtime``: the
    ``AgentRuntime``."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime

    def new_conversation(self) -> None:
        """New conversation: the thread is cleared; the recorder's queue keeps it for history (§9)."""
        self._runtime.clear_thread()

    def refresh_turn_meta(self) -> None:
        """Nothing to put back: history's start draws the turn meta."""


class HeldClicks:
    """Clicks (and ``change`` of file inputs) on the controls ``within`` (a CSS selector; history's by
    default) made before their handlers are bound, played again by ``release()`` in their order.
    ``install()`` listens on the document (capture). The settings button has one of its own: its
    dialog is built after history's modules are loaded (DESIGN.md §13)."""

    def __init__(self, within: str = _HELD_IN) -> None:
        self._within = within
        self._held: list = []
        self._open = True
        self._proxy = None

    def install(self) -> None:
        """Start keeping history's clicks and changes."""
        self._proxy = create_proxy(self._keep)
        for kind in ("click", "change"):
            document.addEventListener(kind, self._proxy, True)

    def _keep(self, event) -> None:
        target = event.target
        if not self._open or is_none(target) or not hasattr(target, "closest") or is_none(target.closest(self._within)):
            return
        self._held.append((event.type, target))

    def release(self) -> None:
        """The handlers are bound: stop keeping, and play what was kept."""
        self._open = False
        for kind in ("click", "change"):
            document.removeEventListener(kind, self._proxy, True)
        held, self._held = self._held, []
        for kind, target in held:
            try:
                _play(kind, target)
            except Exception as error:  # one click that cannot be played must not stop start-up
                js.console.warn(f"a click held before ready was not played again: {error!r}")


_CONTROL = "button, a[href], input, select, textarea, summary, label, [role=button]"
"""What a held click is played again on: the control around its target (a click on a button's icon
lands on its ``<svg>`` or ``<path>``, which has no ``click()``)."""


def _play(kind: str, target) -> None:
    """Play one held event again on ``target`` (a DOM node): a click on its control (``_CONTROL``,
    else a bubbling ``MouseEvent`` on the node itself), a ``change`` as a bubbling event."""
    if kind != "click":
        target.dispatchEvent(js.Event.new("change", js.Object.fromEntries([["bubbles", True]])))
        return
    control = target.closest(_CONTROL)
    if not is_none(control):
        control.click()
    else:
        options = js.Object.fromEntries([["bubbles", True], ["cancelable", True]])
        target.dispatchEvent(js.MouseEvent.new("click", options))
