"""The actions under a message and its branch picker, as the page handles them (DESIGN.md §17).

``MessageActionsView`` takes a click on a message's Edit, Save, Cancel, Regenerate, Copy or picker
button (``act``) and a key in a question's editor (``on_key``: Escape cancels, Ctrl/Cmd+Enter saves)
and calls the runtime (``app.runtime.AgentRuntime.edit``, ``regenerate``, ``show_sibling``); what the
buttons are and when they show is ``app.message_actions``'s (pure), their drawing
``app.browser.message_nodes``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pyscript import document
from pyscript.ffi import is_none

from app.browser.dom import field_text
from app.composer import composer_text

__all__ = ["COPIED_S", "MessageActionsView"]

COPIED_S = 2.0
"""How long a Copy button says "copied" (seconds)."""


class MessageActionsView:
    """A message's actions in the page. ``runtime``: the ``AgentRuntime``; ``view``: the panel's
    ``PageView`` (its editor and picker focus); ``translator``: the page's; ``composing()``: True
    while an IME composition is open in the page (a key then belongs to it)."""

    def __init__(self, runtime, view, translator, composing: Callable[[], bool]) -> None:
        self.runtime = runtime
        self.view = view
        self.translator = translator
        self._composing = composing

    def act(self, node) -> bool:
        """A message's action or branch picker button was clicked (DESIGN.md §17); True when ``node``
        was one."""
        testid = node.getAttribute("data-testid")
        box = node.closest("[data-testid=agent-message]")
        message_id = None if is_none(box) else box.getAttribute("data-message-id")
        if is_none(message_id) or not message_id:
            return False
        if testid == "message-edit":
            self.view.open_editor(message_id)
        elif testid == "message-edit-cancel":
            self.view.close_editor()
        elif testid == "message-edit-save":
            self._save_edit(box, message_id)
        elif testid == "message-regenerate":
            if self.runtime.regenerate(message_id) is not None:  # its button hides while the reply runs
                document.getElementById("agent-input").focus()
        elif testid == "message-copy":
            asyncio.ensure_future(self._copy(node, message_id))
        elif testid in ("branch-prev", "branch-next"):
            shown = self.runtime.show_sibling(message_id, -1 if testid == "branch-prev" else 1)
            if shown is not None:
                self.view.focus_picker(shown, testid)
        else:
            return False
        return True

    def on_key(self, event) -> None:
        """A key in the message log: in a question's editor, Escape cancels (and stops nothing else)
        and Ctrl/Cmd+Enter in its field saves."""
        target = event.target
        if is_none(target.closest("[data-testid=message-editor]")) or event.isComposing or self._composing():
            return
        if event.key == "Escape":
            event.preventDefault()
            event.stopPropagation()
            self.view.close_editor()
        elif (event.key == "Enter" and (event.ctrlKey or event.metaKey)
              and target.getAttribute("data-testid") == "message-edit-input"):
            event.preventDefault()
            box = target.closest("[data-testid=agent-message]")
            self._save_edit(box, box.getAttribute("data-message-id"))

    def _save_edit(self, box, message_id: str) -> None:
        field = box.querySelector("[data-testid=message-edit-input]")
        if is_none(field):
            return
        if self.runtime.edit(message_id, composer_text(field_text(field))) is not None:
            self.view.close_editor(focus_edit=False)
            document.getElementById("agent-input").focus()

    async def _copy(self, button, message_id: str) -> None:
        """Copy a message's text; the button says "copied" (or that it could not) for a moment."""
        from app.browser.clipboard import write_text
        from app.runtime.branches import message_text

        message = next((m for m in self.runtime.messages if m.id == message_id), None)
        if message is None:
            return
        copied = await write_text(message_text(message))
        t = self.translator
        said = t("message.copied" if copied else "message.copyFailed")
        button.setAttribute("data-state", "copied" if copied else "failed")
        button.setAttribute("data-label", said)
        button.setAttribute("aria-label", said)
        await asyncio.sleep(COPIED_S)
        button.removeAttribute("data-state")
        button.setAttribute("data-label", t("message.copy"))
        button.setAttribute("aria-label", t("message.copyLabel"))
