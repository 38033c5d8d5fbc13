"""Rename and pin in the history list (DESIGN.md §18 UI hooks): each item's ``history-rename`` opens
``history-rename-input`` over its title (Enter or leaving the field saves, Escape cancels, focus
returns where the rename began; the list drawn again under the field by another tab's or device's
change is not leaving it: the draft stays open, unsaved), its ``history-pin`` toggles the pin; the focused item's F2 and P do
the same (the buttons are out of the Tab order, as the delete button is). The names' rules are
``app.history.names``'; the list is drawn again by the ``rename``/``pin`` change each one announces.
"""

from __future__ import annotations

import asyncio

import js
from pyodide.ffi import create_once_callable, create_proxy
from pyscript import document
from pyscript.ffi import is_none

__all__ = ["HistoryNamesView"]


def _report(task: asyncio.Future) -> None:
    """Log a failed rename or pin (with its traceback) instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        import traceback

        js.console.error("".join(traceback.format_exception(task.exception())))


class HistoryNamesView:
    """Rename and pin of ``history-list``'s items (module docstring). ``service``: the page's
    ``HistoryService`` (``rename``, ``pin``); ``listing``: the ``HistoryListView`` that draws the list
    (``focus_after_draw``, and its ``clock``: a rename or pin is timed when the person makes it)."""

    def __init__(self, service, listing) -> None:
        self._service, self._listing = service, listing
        self._renaming = None  # (task id, the rename field, where focus returns) while a rename is open
        self._proxies: list = []

    def bind(self) -> None:
        """Listen on ``history-list`` for its items' ``history-rename`` and ``history-pin`` buttons and
        the rename field, in the capture phase: what they handle goes no further (a click on them does
        not resume the conversation; Enter, Escape and Delete typed in the field do not reach the list
        or the drawer)."""
        listing = document.getElementById("history-list")
        for event, handler in (("click", self._on_click), ("keydown", self._on_key), ("focusout", self._on_focusout)):
            proxy = create_proxy(handler)
            self._proxies.append(proxy)
            listing.addEventListener(event, proxy, True)

    def _on_click(self, event) -> None:
        target = event.target
        if not is_none(target.closest("[data-testid=history-rename-input]")):
            event.stopPropagation()
            return
        item = target.closest("[data-testid=history-item]")
        if is_none(item):
            return
        if not is_none(target.closest("[data-testid=history-rename]")):
            event.stopPropagation()
            self.start_rename(item, back="history-rename")
        elif not is_none(target.closest("[data-testid=history-pin]")):
            event.stopPropagation()
            self._toggle_pin(item, back="history-pin")

    def _toggle_pin(self, item, *, back: str) -> None:
        """Pin ``item``'s conversation, or unpin it when pinned; once the list is drawn again focus goes
        to ``back`` (``item``, or the test id of its control)."""
        pin = item.querySelector("[data-testid=history-pin]")
        if is_none(pin):
            return
        self._listing.focus_after_draw(item.dataset.taskId, None if back == "item" else back)
        pinned = pin.getAttribute("aria-pressed") != "true"
        at = self._listing.clock()  # the time of the act, not of the write: the later of two tabs' wins (§18)
        asyncio.ensure_future(self._service.pin(item.dataset.taskId, pinned, at=at)).add_done_callback(_report)

    def _on_key(self, event) -> None:
        target = event.target
        if self._renaming is not None and target == self._renaming[1]:
            event.stopPropagation()  # the field's keys are its own (Delete, arrows, Enter: not the list's)
            if event.key == "Enter":
                event.preventDefault()
                self.finish_rename(save=True, refocus=True)
            elif event.key == "Escape":
                event.preventDefault()
                self.finish_rename(save=False, refocus=True)
        elif event.key in ("Enter", " ") and not is_none(target.closest("[data-testid=history-rename], "
                                                                        "[data-testid=history-pin]")):
            event.stopPropagation()  # the button's own click follows; Enter on it does not resume
        elif target.getAttribute("data-testid") == "history-item" and target.dataset.damaged != "true" \
                and event.key in ("F2", "p", "P") and not (event.ctrlKey or event.metaKey or event.altKey):
            event.preventDefault()
            event.stopPropagation()
            if event.key == "F2":  # the focused item's keys, as Delete deletes it (aria-keyshortcuts)
                self.start_rename(target, back="item")
            else:
                self._toggle_pin(target, back="item")

    def _on_focusout(self, event) -> None:
        if self._renaming is not None and event.target == self._renaming[1]:
            renaming = self._renaming  # decided once this task is over: was the field left, or drawn over?
            js.setTimeout(create_once_callable(lambda: self._left(renaming)), 0)

    def _left(self, renaming: tuple) -> None:
        """The rename field ``renaming`` lost focus. Still in the list: the person left it, and that
        saves. Gone with the list drawn again under it (another tab's or device's change arrived): the
        draft is not saved over that change, and opens again, as typed, on the redrawn item (§18)."""
        if self._renaming is not renaming:  # closed (Enter, Escape) or another rename began meanwhile
            return
        if renaming[1].isConnected:
            self.finish_rename(save=True, refocus=False)  # leaving the field saves
            return
        self._reopen(renaming)

    def drawn(self) -> None:
        """The list was drawn (``HistoryListView``): a rename field the drawing took away (another tab's
        or device's change) opens again, as typed, on the redrawn item (§18). Firefox and WebKit fire no
        ``focusout`` for a removed field, nor does a tab in the background: the drawing tells it."""
        renaming = self._renaming
        if renaming is not None and not renaming[1].isConnected:
            self._reopen(renaming)

    def _reopen(self, renaming: tuple) -> None:
        task_id, field, back = renaming
        self._renaming = None
        for item in document.querySelectorAll("#history-list [data-testid=history-item]"):
            if item.dataset.taskId == task_id:
                self.start_rename(item, back=back, draft=field.value)
                return

    def start_rename(self, item, *, back: str, draft: str | None = None) -> None:
        """Open the rename field over ``item``'s title, holding its name, all of it selected (or
        ``draft``, a rename being typed when the list was drawn again, the caret at its end); ``back``:
        where focus returns (``item``, or the test id of its control: ``history-rename``)."""
        if self._renaming is not None:
            self.finish_rename(save=True, refocus=False)
        button = item.querySelector("[data-testid=history-rename]")
        title = item.querySelector("[data-testid=history-title]")
        if is_none(button) or is_none(title):
            return
        field = document.createElement("input")
        for name, value in (("type", "text"), ("data-testid", "history-rename-input"), ("class", "history-rename-input"),
                            ("dir", "auto"), ("aria-label", button.dataset.fieldLabel), ("autocomplete", "off")):
            field.setAttribute(name, value)
        field.value = button.dataset.name if draft is None else draft
        title.hidden = True
        title.after(field)
        self._renaming = (item.dataset.taskId, field, back)
        field.focus()
        if draft is None:
            field.select()

    def finish_rename(self, *, save: bool, refocus: bool) -> None:
        """Close the rename field; ``save``: store its text (``HistoryService.rename``: blank gives back
        the first-question title); ``refocus``: focus goes back where the rename began (Enter,
        Escape: the item or its rename button), and there again once the renamed list is drawn."""
        if self._renaming is None:
            return
        task_id, field, back = self._renaming
        self._renaming = None
        item = field.closest("[data-testid=history-item]")
        text = field.value
        field.remove()
        if not is_none(item):
            title = item.querySelector("[data-testid=history-title]")
            if not is_none(title):
                title.hidden = False
            control = item if back == "item" else item.querySelector(f"[data-testid={back}]")
            if refocus and not is_none(control):
                control.focus()
        if save:
            if refocus:
                self._listing.focus_after_draw(task_id, None if back == "item" else back)
            at = self._listing.clock()  # the time of Enter, not of the write: the later of two tabs' wins (§18)
            asyncio.ensure_future(self._service.rename(task_id, text, at=at)).add_done_callback(_report)
