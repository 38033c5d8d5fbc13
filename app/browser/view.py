"""The page: renders the runtime's state into the DOM (DESIGN.md §6).

Elements come from ``pyscript.web``; every piece of stored or typed text is set
as ``textContent`` (never as HTML, DESIGN.md §5), and links are made only for
``http(s)`` URLs (``app.presentation.link_segments``). Messages are rendered
incrementally: a message's DOM is rebuilt only when its display signature
changes, so streaming a token touches one bubble, not the whole list.
"""

from __future__ import annotations

from typing import Any, Callable

from pyscript import document
from pyscript.ffi import is_none
from pyscript.web import a, button, div, h2, h3, li, option, p, span, ul

from app.courses import COURSES, Course
from app.i18n import Translator
from app.model import Message, TextPart, ToolCallPart
from app.presentation import RENDER_WINDOW, ToolCardView, link_segments, tool_card_view

__all__ = ["PageView"]


def _el(factory: Callable[..., Any], *children: Any, text: str | None = None, testid: str | None = None,
        classes: str | None = None, attrs: dict[str, str] | None = None):
    """Build a ``pyscript.web`` element; ``text`` goes in as textContent (never HTML)."""
    element = factory(*[c for c in children if c is not None])
    node = element._dom_element
    if classes:
        node.className = classes
    if text is not None:
        node.textContent = text
    if testid:
        node.setAttribute("data-testid", testid)
    for name, value in (attrs or {}).items():
        node.setAttribute(name, value)
    return element


def _signature(message: Message, has_snapshot: Callable[[str], bool]) -> tuple:
    """What the rendered DOM of ``message`` depends on (cheap to compute per render)."""
    parts = tuple(
        ("t", len(part.text)) if isinstance(part, TextPart)
        else ("c", part.tool_call_id, part.result is None, bool(part.is_error), has_snapshot(part.tool_call_id))
        for part in message.content
    )
    return (message.role, message.status.type if message.status else None, parts)


def _streamed_text_from(old: tuple, new: tuple) -> int | None:
    """If ``new`` differs from ``old`` only by a longer last text part, the old length."""
    (role, status, old_parts), (new_role, new_status, new_parts) = old, new
    if (role, status) != (new_role, new_status) or status != "running" or len(old_parts) != len(new_parts):
        return None
    if not old_parts or old_parts[:-1] != new_parts[:-1]:
        return None
    (kind, old_len), (new_kind, new_len) = old_parts[-1][:2], new_parts[-1][:2]
    return old_len if kind == new_kind == "t" and new_len > old_len else None


class PageView:
    """Renders the course view and the AgentBar panel for one ``AgentRuntime``.

    ``runtime``: the ``app.runtime.AgentRuntime``; ``translator``: the page
    locale's ``app.i18n.Translator``. Call ``render()`` after any state change
    (the runtime's ``subscribe`` does it).
    """

    def __init__(self, runtime, translator: Translator) -> None:
        self.runtime = runtime
        self.t = translator
        self._by = document.getElementById
        self._rendered: list[tuple[int, tuple, Any]] = []  # (id(message), signature, node)
        self._offset = 0  # index of the first rendered message
        self._shown_stage: str | None = None
        self._notice_codes: tuple = ()

    # ---- static chrome -------------------------------------------------
    def translate_static(self) -> None:
        """Fill ``data-i18n*`` attributes of the page shell with the locale's text."""
        t = self.t
        for node in document.querySelectorAll("[data-i18n]"):
            node.textContent = t(node.dataset.i18n)
        for attr, target in (("i18nLabel", "aria-label"), ("i18nTitle", "title"), ("i18nPlaceholder", "placeholder")):
            for node in document.querySelectorAll(f"[data-{_kebab(attr)}]"):
                node.setAttribute(target, t(getattr(node.dataset, attr)))
        document.title = t("app.title")

    # ---- course view ---------------------------------------------------
    def render_course(self, course: Course) -> None:
        """Show ``course`` (title and scenes) and select it in the course picker."""
        title = self.t("course.placeholderTitle", id=course.id) if course.is_placeholder else course.title
        stage = self._by("stage")
        stage.replaceChildren()
        heading = _el(h2, text=title, attrs={"dir": "auto"})
        scenes = _el(ul, classes="scenes", attrs={"aria-label": self.t("course.scenes")})
        for scene in course.scenes:
            scenes.append(_el(li,
                              _el(span, text=scene.id, classes="scene-id"),
                              _el(h3, text=scene.title, attrs={"dir": "auto"}),
                              _el(p, text=scene.body, attrs={"dir": "auto"}),
                              classes="scene", testid="scene", attrs={"data-scene-id": scene.id}))
        stage.append(heading._dom_element, scenes._dom_element)
        select = self._by("course-select")
        select.replaceChildren()
        known = list(COURSES) + ([course] if course.is_placeholder else [])
        for item in known:
            label = self.t("course.placeholderTitle", id=item.id) if item.is_placeholder else item.title
            opt = _el(option, text=label, attrs={"value": item.id})
            select.append(opt._dom_element)
        select.value = course.id

    # ---- panel ---------------------------------------------------------
    def render(self) -> None:
        """Bring the panel in line with the runtime (messages, running flag, buttons, notices)."""
        runtime = self.runtime
        panel = self._by("agent-panel")
        running = bool(runtime.is_running)
        panel.dataset.running = "true" if running else "false"
        self._by("agent-new-conversation").hidden = not runtime.has_messages
        self._by("agent-stop").hidden = not running
        self._by("agent-send").disabled = running or runtime.stage_id is None
        self._render_notices(runtime.notices)
        self._render_scene_versions()
        if runtime.stage_id != self._shown_stage:
            self._shown_stage = runtime.stage_id
            self._rendered = []  # _render_messages starts the list afresh
        self._render_messages(runtime.messages)

    def _render_scene_versions(self) -> None:
        """Mark scenes that a regenerate call of this tab changed (memory only)."""
        stage_id = self.runtime.stage_id
        for node in document.querySelectorAll("[data-testid=scene]"):
            version = self.runtime.stage_edits.version(stage_id, node.dataset.sceneId) if stage_id else None
            line = node.querySelector(".scene-version")
            text = (f"{self.t('course.regenerated')} · {self.t('edit.agent.tool.elements', count=version.element_count)}"
                    if version else None)
            if text is None:
                if not is_none(line):
                    line.remove()
                node.removeAttribute("data-version")
                continue
            if is_none(line):
                line = _el(p, classes="scene-version", testid="scene-version")._dom_element
                node.append(line)
            line.textContent = text
            node.setAttribute("data-version", version.tool_call_id)

    def _render_notices(self, notices) -> None:
        codes = tuple((n.code, tuple(sorted((n.params or {}).items()))) for n in notices)
        if codes == self._notice_codes:
            return
        self._notice_codes = codes
        box = self._by("agent-notices")
        box.replaceChildren()
        for notice in notices:
            params = dict(notice.params or {})
            dismiss = _el(button, text="×", classes="notice-dismiss", testid="agent-notice-dismiss",
                          attrs={"type": "button", "aria-label": self.t("edit.agent.dismiss"),
                                 "title": self.t("edit.agent.dismiss"), "data-code": notice.code})
            box.append(_el(div, _el(span, text=self.t(f"notice.{notice.code}", **params)), dismiss,
                           classes="notice", testid="agent-notice",
                           attrs={"data-code": notice.code, "role": "status"})._dom_element)

    def _render_messages(self, messages: list[Message]) -> None:
        container = self._by("agent-messages")
        if not messages:
            if not self._rendered and not is_none(container.querySelector(".empty-hint")):
                return
            self._rendered = []
            container.replaceChildren(_el(p, text=self.t("edit.agent.emptyHint"), classes="empty-hint")._dom_element)
            return
        if not self._rendered or self._offset > len(messages):
            self._rendered = []
            container.replaceChildren()
            self._offset = max(0, len(messages) - RENDER_WINDOW)
        messages = messages[self._offset:]
        # Follow the conversation when it grows or when the reader is already at its end.
        stick = (len(messages) > len(self._rendered)
                 or container.scrollHeight - container.scrollTop - container.clientHeight < 40)
        has_snapshot = self.runtime.stage_edits.has_snapshot
        for index, message in enumerate(messages):
            signature = _signature(message, has_snapshot)
            if index < len(self._rendered):
                ident, old_signature, node = self._rendered[index]
                if ident == id(message) and old_signature == signature:
                    continue
                grown_from = _streamed_text_from(old_signature, signature) if ident == id(message) else None
                if grown_from is not None:  # a streamed token: append it, don't rebuild the bubble
                    node.lastElementChild.append(message.content[-1].text[grown_from:])
                    self._rendered[index] = (ident, signature, node)
                    continue
                new = self._message_node(message)
                node.replaceWith(new)
                self._rendered[index] = (id(message), signature, new)
            else:
                new = self._message_node(message)
                container.append(new)
                self._rendered.append((id(message), signature, new))
        for _, _, node in self._rendered[len(messages):]:
            node.remove()
        del self._rendered[len(messages):]
        self._sync_earlier_button(container)
        if stick:
            container.scrollTop = container.scrollHeight

    def show_earlier(self) -> None:
        """Render up to ``RENDER_WINDOW`` more of the older messages above the shown ones,
        keeping what the reader sees in place."""
        if self._offset == 0:
            return
        messages = self.runtime.messages
        start = max(0, self._offset - RENDER_WINDOW)
        container = self._by("agent-messages")
        height = container.scrollHeight
        anchor = self._rendered[0][2] if self._rendered else None
        has_snapshot = self.runtime.stage_edits.has_snapshot
        entries = []
        for message in messages[start:self._offset]:
            node = self._message_node(message)
            container.insertBefore(node, anchor)
            entries.append((id(message), _signature(message, has_snapshot), node))
        self._rendered[0:0] = entries
        self._offset = start
        self._sync_earlier_button(container)
        container.scrollTop += container.scrollHeight - height

    def _sync_earlier_button(self, container) -> None:
        """A "show earlier messages" button heads the list while older messages are not rendered."""
        existing = container.querySelector("[data-testid=agent-load-earlier]")
        if self._offset == 0:
            if not is_none(existing):
                existing.remove()
        elif is_none(existing):
            earlier = _el(button, text=self.t("edit.agent.showEarlier"), classes="earlier-button",
                          testid="agent-load-earlier", attrs={"type": "button"})
            container.prepend(earlier._dom_element)

    def _message_node(self, message: Message):
        running = message.status is not None and message.status.type == "running"
        attrs = {"data-role": message.role}
        if message.id:
            attrs["data-message-id"] = message.id  # history's turn-meta finds its message by it (§9)
        if message.status is not None:
            attrs["data-status"] = message.status.type
        box = _el(div, classes="message", testid="agent-message", attrs=attrs)
        box._dom_element.setAttribute("aria-label", self.t(f"edit.agent.{'you' if message.role == 'user' else 'assistant'}"))
        for part in message.content:
            if isinstance(part, TextPart):
                box.append(self._bubble(part.text))
            elif isinstance(part, ToolCallPart):
                box.append(self._tool_card(tool_card_view(part, turn_running=running), part))
        if not message.content and message.role == "assistant":
            placeholder = {"running": "edit.agent.thinking", "incomplete": "edit.agent.stopped"}.get(
                message.status.type if message.status else "")
            if placeholder:
                box.append(_el(div, text=self.t(placeholder), classes="bubble muted"))
        return box._dom_element

    def _bubble(self, text: str):
        bubble = _el(div, classes="bubble", attrs={"dir": "auto"})
        for segment in link_segments(text):
            if segment.kind == "link":
                bubble.append(_el(a, text=segment.text, attrs={
                    "href": segment.text, "target": "_blank", "rel": "noopener noreferrer nofollow"}))
            else:
                bubble._dom_element.append(segment.text)
        return bubble

    def _tool_card(self, card: ToolCardView, part: ToolCallPart):
        t = self.t
        if card.tool_name == "regenerate_scene":
            name = t("edit.agent.tool.regenerateScene", sceneId=card.scene_id or "?")
        else:
            name = t("edit.agent.tool.generic", name=card.tool_name)
        badge = {"ok": "edit.agent.tool.done", "error": "edit.agent.tool.failed",
                 "interrupted": "edit.agent.tool.interrupted", "running": "edit.agent.tool.running"}[card.status]
        attrs = {"data-status": card.status, "data-tool-call-id": part.tool_call_id, "data-tool-name": card.tool_name}
        if card.element_count is not None:
            attrs["data-element-count"] = str(card.element_count)
        node = _el(div,
                   _el(div, _el(span, text=name, classes="tool-card-name", attrs={"dir": "auto"}),
                       _el(span, text=t(badge), classes="badge"), classes="tool-card-head"),
                   classes="tool-card", testid="tool-card", attrs=attrs)
        if card.element_count is not None:
            node.append(_el(p, text=t("edit.agent.tool.elements", count=card.element_count), classes="tool-card-line",
                            testid="tool-card-elements"))
        if card.action_types:
            types = ", ".join(x or "?" for x in card.action_types)
            node.append(_el(p, text=t("edit.agent.tool.actions", count=len(card.action_types), types=types),
                            classes="tool-card-line"))
        if card.summary:
            node.append(_el(p, text=card.summary, classes="tool-card-line", attrs={"dir": "auto"}))
        if self.runtime.stage_edits.has_snapshot(part.tool_call_id):
            node.append(_el(button, text=t("edit.agent.tool.restore"), classes="restore-button",
                            testid="tool-card-restore", attrs={"type": "button", "data-tool-call-id": part.tool_call_id}))
        return node

    def toggle_collapsed(self) -> None:
        """Collapse the panel, or expand it when collapsed; the button's label and state follow."""
        panel = self._by("agent-panel")
        collapsed = panel.dataset.collapsed != "true"
        panel.dataset.collapsed = "true" if collapsed else "false"
        self._by("agent-body").hidden = collapsed
        toggle = self._by("agent-collapse")
        toggle.setAttribute("aria-expanded", "false" if collapsed else "true")
        label = self.t("edit.agent.expand" if collapsed else "edit.agent.collapse")
        toggle.setAttribute("aria-label", label)
        toggle.setAttribute("title", label)

    def show_app(self) -> None:
        """Swap the loading screen for the page, the thread scrolled to its newest message."""
        self._by("boot").hidden = True
        self._by("app").hidden = False
        messages = self._by("agent-messages")
        messages.scrollTop = messages.scrollHeight


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)

