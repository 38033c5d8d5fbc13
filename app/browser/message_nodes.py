"""One message's DOM, as the panel shows it (DESIGN.md §6, §12): text bubbles (links only for
``http(s)`` URLs, long text collapsed or laid out in chunks, Markdown for finished replies), tool
cards with their restore button, and the message's status. Every piece of stored or typed text
goes in as ``textContent`` (never HTML, DESIGN.md §5).
"""

from __future__ import annotations

from typing import Any, Callable

from pyscript.web import a, button, div, p, span

from app.agents.errors import describe as describe_error
from app.browser import markdown_view
from app.browser.dom import decorate
from app.model import Message, TextPart, ToolCallPart
from app.presentation import ToolCardView, card_text, collapsed_prefix, link_segments, text_chunks, tool_card_view

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

    def message(self, message: Message, *, expanded: bool = False):
        """The DOM node of ``message``: its text bubbles (Markdown for a finished assistant reply),
        tool cards, and its status (thinking, stopped, failed, cut); ``expanded``: a long text is
        shown whole (DESIGN.md §6, §12)."""
        running = message.status is not None and message.status.type == "running"
        attrs = {"data-role": message.role}
        if message.id:
            attrs["data-message-id"] = message.id  # history's turn-meta finds its message by it (§9)
        if message.status is not None:
            attrs["data-status"] = message.status.type
        box = el(div, classes="message", testid="agent-message", attrs={**attrs, "tabindex": "-1"})
        box._dom_element.setAttribute("aria-label", self.t(f"edit.agent.{'you' if message.role == 'user' else 'assistant'}"))
        failed = message.status is not None and message.status.reason == "error"
        for part in message.content:
            if isinstance(part, TextPart):
                # Assistant text as Markdown once markdown-it is there (not while it streams: tokens append);
                # long text keeps its collapsed plain bubble.
                markdown = message.role == "assistant" and not running and collapsed_prefix(part.text) is None
                rendered = markdown_view.render(part.text) if markdown else None
                box.append(self._bubble(part.text, expanded=expanded) if rendered is None else rendered)
            elif isinstance(part, ToolCallPart):
                box.append(self._tool_card(tool_card_view(part, turn_running=running), part))
        cut = message.status is not None and message.status.reason == "length"
        if not message.content and message.role == "assistant" and not failed and not cut:
            placeholder = {"running": "edit.agent.thinking", "incomplete": "edit.agent.stopped"}.get(
                message.status.type if message.status else "")
            if placeholder:
                box.append(el(div, text=self.t(placeholder), classes="bubble muted",
                               testid="agent-stopped" if placeholder == "edit.agent.stopped" else None))
        elif message.status is not None and message.status.type == "incomplete" and message.status.reason == "cancelled":
            box.append(el(div, text=self.t("edit.agent.stopped"), classes="bubble muted", testid="agent-stopped"))
        if failed:  # DESIGN.md §12: the failure, localized, inside the failed message
            error = message.status.error or {}
            box.append(el(p, text=describe_error(self.t, error), classes="turn-error", testid="turn-error",
                           attrs={"role": "alert", "data-code": str(error.get("code") or "unknown")}))
        if cut:  # DESIGN.md §12: the server ended the reply at its length limit (kept after a reload)
            box.append(el(p, text=self.t("model.turnCut"), classes="turn-cut", testid="turn-cut",
                           attrs={"role": "note"}))
        return box._dom_element

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

    def _tool_card(self, card: ToolCardView, part: ToolCallPart):
        t = self.t
        text = card_text(card, t)
        attrs = {"data-status": card.status, "data-tool-call-id": part.tool_call_id, "data-tool-name": card.tool_name}
        if card.element_count is not None:
            attrs["data-element-count"] = str(card.element_count)
        node = el(div,
                   el(div, el(span, text=text.name, classes="tool-card-name", attrs={"dir": "auto"}),
                       el(span, text=text.badge, classes="badge"), classes="tool-card-head"),
                   classes="tool-card", testid="tool-card", attrs=attrs)
        if text.elements is not None:
            node.append(el(p, text=text.elements, classes="tool-card-line", testid="tool-card-elements"))
        if text.actions is not None:
            node.append(el(p, text=text.actions, classes="tool-card-line", testid="tool-card-actions"))
        if text.summary:
            node.append(el(p, text=text.summary, classes="tool-card-line", testid="tool-card-summary",
                           attrs={"dir": "auto"}))
        if self.runtime.stage_edits.has_snapshot(part.tool_call_id):
            node.append(el(button, text=t("edit.agent.tool.restore"), classes="restore-button",
                            testid="tool-card-restore", attrs={"type": "button", "data-tool-call-id": part.tool_call_id}))
        return node
