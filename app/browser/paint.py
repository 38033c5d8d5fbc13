"""The browser half of paint before Python and typing before ready (DESIGN.md §13).

``PaintKeeper`` writes the shown course's paint record (``app.paint.build_record``)
through ``static/paint.js``'s ``agentbarPaint.save`` (Cache Storage) whenever
its stored ``updatedAt`` or its branch pickers (``app.paint.picker_positions``:
history's tree arrives after ready) change and no turn is running, in a later
task, so a streamed token never pays for it. ``take_over`` hands the page from
``static/paint.js`` to Python at ready and sends, once, the message the user
sent before then (``app.paint.pending_to_send``).
"""

from __future__ import annotations

from typing import Any

from pyodide.ffi import create_proxy
from pyscript import document, window
from pyscript.ffi import is_none

from app.browser.tasks import later
from app.composer import composer_text
from app.courses import find_course
from app.paint import (build_record, encode_record, in_flight_text, parse_pending, pending_to_send, picker_positions,
                       record_due)

__all__ = ["PaintKeeper", "take_over", "drop_painted_bar", "painted_positions"]

_LABEL_SELECTORS = (("data-i18n", "i18n"), ("data-i18n-label", "i18nLabel"), ("data-i18n-title", "i18nTitle"),
                    ("data-i18n-placeholder", "i18nPlaceholder"))


def _adapter() -> Any:
    adapter = getattr(window, "agentbarPaint", None)
    return None if adapter is None or is_none(adapter) else adapter


def shell_label_keys() -> list[str]:
    """The i18n keys the page shell names (``data-i18n*`` attributes), each once, in page order."""
    keys: dict[str, None] = {}
    for selector, name in _LABEL_SELECTORS:
        for node in document.querySelectorAll(f"[{selector}]"):
            keys[str(getattr(node.dataset, name))] = None
    return list(keys)


class PaintKeeper:
    """Keeps each shown course's paint record in step with its stored thread.

    ``runtime``: ``app.runtime.AgentRuntime``; ``store``: its ``app.store.ThreadStore``;
    ``translator``: the page's ``app.i18n.Translator``. ``start()`` after ready. A course
    without a stored thread (or one kept in memory only) has its record removed.
    """

    def __init__(self, runtime, store, translator) -> None:
        self.runtime = runtime
        self.store = store
        self.t = translator
        self._written: dict[str, tuple[int | None, tuple]] = {}  # course -> (updatedAt, pickers) written
        self._keys: list[str] | None = None
        self._scheduled = False
        self._in_flight = False
        self._in_flight_proxy: Any = None  # hands the in-flight text over only when asked (pagehide)
        adapter = _adapter()
        painted = getattr(adapter, "painted", None) if adapter is not None else None
        if painted is not None and not is_none(painted):  # the record drawn at boot is current: until
            # history's tree arrives, the runtime's pickers are the ones it drew (page.draw_first)
            self._written[str(painted.stageId)] = (int(painted.updatedAt), self._pickers())

    def start(self) -> None:
        """Follow the runtime from now on (and write the shown course's record if it is due)."""
        if _adapter() is None:
            return
        self.runtime.subscribe(self._changed)
        self._changed()

    def _due(self) -> tuple[str, int | None] | None:
        runtime = self.runtime
        stage_id = runtime.stage_id
        if stage_id is None or runtime.is_running:
            return None
        updated = None if stage_id in self.store.memory_only() else self.store.updated_at(stage_id)
        written = self._written.get(stage_id)
        if not record_due(written, updated, self._pickers() if written is not None else ()):
            return None
        return stage_id, updated

    def _pickers(self) -> tuple:
        return picker_positions(self.runtime.messages, self.runtime.siblings)

    def _changed(self) -> None:
        self._follow_turn()
        if not self._scheduled and self._due() is not None:
            self._scheduled = True
            later(self._write)

    def _follow_turn(self) -> None:
        """While a turn of the shown course runs, its user message is handed to ``static/paint.js``
        (as a function that returns it), which writes it as a draft in ``sessionStorage`` only as the page goes away (``pagehide``: a
        turn never pays for a long message's write, DESIGN.md §13); dropped when the turn ends and
        its thread is saved (not when its history write lands after that: a reload then shows the
        message saved, and a draft of it would be sent twice): a reload mid-reply loses the turn
        (DESIGN.md §4) but gives the message back in the composer."""
        running = self.runtime.turn_in_flight
        if running == self._in_flight:
            return
        self._in_flight = running
        adapter = _adapter()
        if adapter is None:
            return
        shown = self.runtime.sessions.shown if running else None
        text = in_flight_text(self.runtime.messages, shown.base if shown else None) if running else None
        self._drop_in_flight_proxy()
        if text is not None and self.runtime.stage_id is not None:
            # a function, not the text: a long message crosses to JavaScript only as the page goes
            # away (2,000,000 characters took hundreds of ms to convert in the send's task)
            self._in_flight_proxy = create_proxy(lambda: text)
            adapter.keepInFlight(self.runtime.stage_id, self._in_flight_proxy)
        else:
            adapter.endInFlight()

    def _drop_in_flight_proxy(self) -> None:
        proxy, self._in_flight_proxy = self._in_flight_proxy, None
        if proxy is not None:
            proxy.destroy()

    def _write(self) -> None:
        self._scheduled = False
        due = self._due()
        adapter = _adapter()
        if due is None or adapter is None:
            return
        stage_id, updated = due
        self._written[stage_id] = (updated, self._pickers())
        messages = self.runtime.messages
        if updated is None or not messages:
            adapter.remove(stage_id)
            return
        if self._keys is None:
            self._keys = shell_label_keys()
        course = find_course(stage_id)
        title = self.t("course.placeholderTitle", id=course.id) if course.is_placeholder else course.title
        summary = document.querySelector("[data-testid=checkpoint-summary] .checkpoint-summary-text")
        record = build_record(stage_id, updated, messages, self.t, locale=self.t.locale, rtl=self.t.rtl,
                              title=title, label_keys=self._keys,
                              bar_summary=None if is_none(summary) else str(summary.textContent),
                              siblings=self.runtime.siblings)
        adapter.save(stage_id, encode_record(record))  # a promise; a failure is only logged there


def painted_positions() -> tuple[str, dict[str, tuple[int, int]]] | None:
    """The branch pickers ``static/paint.js`` drew before Python started: ``(stage id, {message id:
    (index, count)})`` read from the painted rows (``[data-message-id]`` holding a
    ``[data-testid=branch-picker]``'s ``data-index``/``data-count``), or ``None`` when nothing was
    painted. Read before Python's first render replaces those rows (DESIGN.md §13, §17)."""
    adapter = _adapter()
    painted = getattr(adapter, "painted", None) if adapter is not None else None
    if painted is None or is_none(painted):
        return None
    positions: dict[str, tuple[int, int]] = {}
    for node in document.querySelectorAll("[data-message-id] [data-testid=branch-picker]"):
        row = node.closest("[data-message-id]")
        try:
            position = int(node.getAttribute("data-index")), int(node.getAttribute("data-count"))
        except (TypeError, ValueError):
            continue
        message_id = row.getAttribute("data-message-id")
        if message_id and 1 <= position[0] <= position[1]:
            positions[str(message_id)] = position
    return str(painted.stageId), positions


def drop_painted_bar() -> None:
    """Remove the painted scene-version bar (call in the task that inserts Python's own)."""
    for node in document.querySelectorAll(".checkpoint-bar[data-painted]"):
        node.remove()


def take_over(runtime) -> str | None:
    """Take the page over from ``static/paint.js`` (at ready) and send, once, a message sent
    before ready for the shown course; returns the text sent, or ``None``."""
    adapter = _adapter()
    if adapter is None:
        return None
    raw = adapter.takeOver()
    pending = parse_pending(raw if isinstance(raw, str) else None)
    text = pending_to_send(pending, runtime.stage_id)
    if text is None:
        return None
    field = document.getElementById("agent-input")
    if runtime.send(composer_text(text)) is None:  # blank or a turn running: it stays as a draft
        return None
    field.value = ""
    return text
