"""One message's DOM, as the panel shows it (DESIGN.md §6, §12): text bubbles (links only for
``http(s)`` URLs, long text collapsed or laid out in chunks, Markdown for finished replies), tool
cards with their restore button, and the message's status. Every piece of stored or typed text
goes in as ``textContent`` (never HTML, DESIGN.md §5).
"""

from __future__ import annotations

from typing import Any, Callable

from pyscript.web import a, button, div, p, span, textarea

from app.browser import markdown_view
from app.browser.dom import decorate
from app.message_actions import ActionButton, message_actions
from app.message_row import CardPiece, TextPiece, message_row
from app.model import Message
from app.runtime.branches import message_text
from app.presentation import collapsed_prefix, link_segments, text_chunks

__all__ = ["MessageNodes", "el"]


def el(factory: Callable[..., Any], *children: Any, text: str | None = None, testid: str | None = None,
       classes: str | None = None, attrs: dict[str, str] | None = None):
    """Build a ``pyscript.web`` element; ``text`` goes in as textContent (never HTML)."""
    element = factory(*[c for c in children if c is not None])
    decorate(element._dom_element, text=text, testid=testid, classes=classes, attrs=attrs)
    return element


class MessageNodes:
    """Builds message nodes for one panel. ``runtime``: its ``stage_edits.has_snapshot(tool_call_id)``
    says whether a tool card offers a restore; ``translator``: the page's ``Translator``."""

    def __init__(self, runtime, translator) -> None:
        self.runtime = runtime
        self.t = translator

    def message(self, message: Message, *, expanded: bool = False, siblings: tuple[int, int] = (1, 1),
                editing: bool = False):
        """The DOM node of ``message``'s row (``app.message_row``, the one the paint record draws
        too): its text bubbles (Markdown for a finished assistant reply), tool cards, and its status
        note (thinking, stopped, failed, cut); ``expanded``: a long text is shown whole (DESIGN.md
        §6, §12, §13). Under it, its actions and branch picker (``app.message_actions``, §17):
        ``siblings`` is ``(index, count)`` at its fork; ``editing``: the question's text is in its
        editor instead of its bubble."""
        row = message_row(message, self.t)
        box = el(div, attrs=row.attrs)
        if editing:
            box.append(self._editor(message_text(message)))
        for piece in row.pieces:
            if editing and isinstance(piece, TextPiece):
                continue
            if isinstance(piece, TextPiece):
                # Markdown once markdown-it is there (not while it streams: tokens append); long text
                # keeps its collapsed plain bubble.
                rendered = markdown_view.render(piece.text) if piece.markdown else None
                box.append(self._bubble(piece.text, expanded=expanded) if rendered is None else rendered)
            elif isinstance(piece, CardPiece):
                box.append(self._tool_card(piece))
            else:
                box.append(el(div if piece.tag == "div" else p, text=piece.text, classes=piece.classes,
                               testid=piece.testid, attrs=piece.attrs))
        if not editing and row.state != "running":
            box.append(self._actions(message, siblings))
        return box._dom_element

    def _editor(self, text: str):
        """A question's text in place, editable: Save (or Ctrl/Cmd+Enter) answers it as a new branch,
        Cancel (or Escape) changes nothing (DESIGN.md §17)."""
        field = el(textarea, classes="message-edit-input", testid="message-edit-input",
                   attrs={"dir": "auto", "rows": "3", "aria-label": self.t("message.editLabel")})
        field._dom_element.value = text
        return el(div, field,
                  el(div, self._button(ActionButton("message-edit-save", self.t("message.save"), self.t("message.save")),
                                       "primary"),
                     self._button(ActionButton("message-edit-cancel", self.t("message.cancel"), self.t("message.cancel"))),
                     classes="message-edit-buttons"),
                  classes="message-editor", testid="message-editor")

    def _actions(self, message: Message, siblings: tuple[int, int]):
        """The row of actions under a message (hidden by the stylesheet while a reply runs)."""
        actions = message_actions(message.role, siblings, self.t, has_id=bool(message.id), rtl=self.t.rtl)
        bar = el(div, classes="message-actions", testid="message-actions")
        picker = actions.picker
        if picker is not None:
            bar.append(el(div, self._button(picker.previous, "branch-arrow"),
                          el(span, classes="branch-position",
                             attrs={"data-label": picker.position, "role": "img", "aria-label": picker.version,
                                    "dir": "ltr"}),
                          self._button(picker.following, "branch-arrow"),
                          classes="branch-picker", testid="branch-picker",
                          attrs={"role": "group", "aria-label": picker.label, "data-index": str(picker.index),
                                 "data-count": str(picker.count)}))
        for action in actions.buttons:
            bar.append(self._button(action))
        return bar

    @staticmethod
    def _button(action: ActionButton, classes: str = ""):
        # The visible word is drawn by the stylesheet from data-label: it is no part of the message's
        # text (selecting and copying a conversation, reading a message's innerText).
        node = el(button, classes=f"message-action {classes}".strip(), testid=action.testid,
                  attrs={"type": "button", "aria-label": action.label, "title": action.label,
                         "data-label": action.text})
        if action.disabled:
            node._dom_element.disabled = True
        return node

    def _bubble(self, text: str, *, expanded: bool = False):
        """A text part's bubble. Long text (``collapsed_prefix``) shows its start and a "show
        all" toggle; shown whole it is laid out in blocks of ``CHUNK_CHARS`` (one run of
        hundreds of KB takes the browser seconds to line-break)."""
        prefix = collapsed_prefix(text)
        bubble = el(div, classes="bubble", testid="agent-message-text", attrs={"dir": "auto"})
        if prefix is None:
            self._fill_text(bubble, text)
            return bubble
        bubble._dom_element.setAttribute("data-long", "expanded" if expanded else "collapsed")
        if expanded:
            for chunk in text_chunks(text):
                bubble.append(self._fill_text(el(div, classes="text-chunk", testid="agent-text-chunk"), chunk))
        else:
            bubble.append(self._fill_text(el(div, classes="text-chunk", testid="agent-text-chunk"), prefix + "…"))
        bubble.append(el(button, text=self.t("longText.showLess" if expanded else "longText.showAll"),
                          classes="expand-button", testid="agent-message-expand",
                          attrs={"type": "button", "aria-expanded": "true" if expanded else "false",
                                 "data-chars": str(len(text))}))
        return bubble

    @staticmethod
    def _fill_text(element, text: str):
        for segment in link_segments(text):
            if segment.kind == "link":
                element.append(el(a, text=segment.text, attrs={
                    "href": segment.text, "target": "_blank", "rel": "noopener noreferrer nofollow"}))
            else:
                element._dom_element.append(segment.text)
        return element

    def _tool_card(self, card: CardPiece):
        node = el(div, el(div, el(span, text=card.name, classes="tool-card-name", attrs={"dir": "auto"}),
                          el(span, text=card.badge, classes="badge"), classes="tool-card-head"), attrs=card.attrs)
        for line in card.lines:
            node.append(el(p, text=line.text, classes="tool-card-line", testid=line.testid,
                           attrs={"dir": "auto"} if line.auto_dir else None))
        if self.runtime.stage_edits.has_snapshot(card.tool_call_id):
            node.append(el(button, text=self.t("edit.agent.tool.restore"), classes="restore-button",
                            testid="tool-card-restore", attrs={"type": "button", "data-tool-call-id": card.tool_call_id}))
        return node
