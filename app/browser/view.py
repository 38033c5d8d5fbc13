"""The page: renders the runtime's state into the DOM (DESIGN.md §6).

Elements come from ``pyscript.web``; every piece of stored or typed text is set
as ``textContent`` (never as HTML, DESIGN.md §5), and links are made only for
``http(s)`` URLs (``app.presentation.link_segments``). Messages are rendered
incrementally: a message's DOM is rebuilt only when its display signature
changes, so streaming a token touches one bubble, not the whole list.
Each message's node is built by ``app.browser.message_nodes.MessageNodes``.
"""

from __future__ import annotations

from typing import Any, Callable

from pyscript import document
from pyscript.ffi import is_none
from pyscript.web import button, div, h2, h3, li, option, p, span, ul

from app.browser.dom import element
from app.browser.message_nodes import MessageNodes, el as _el
from app.browser.notices_view import NoticesView
from app.courses import Course, picker_courses, scene_text
from app.i18n import Translator
from app.model import Message, TextPart
from app.presentation import RENDER_WINDOW, command_segments, streamed_text_update, window_start

__all__ = ["PageView"]


def _signature(message: Message, has_snapshot: Callable[[str], bool], expanded: bool = False,
               extra: tuple = ()) -> tuple:
    """What the rendered DOM of ``message`` depends on (cheap to compute per render: lengths, not text);
    ``extra``: its branch picker's numbers and whether its editor is open (DESIGN.md §17)."""
    parts = tuple(
        ("t", len(part.text), expanded) if isinstance(part, TextPart)
        else ("c", part.tool_call_id, part.result is None, bool(part.is_error), has_snapshot(part.tool_call_id))
        for part in message.content
    )
    return (message.role, message.status.type if message.status else None, parts, extra)


def _streamed_text_from(old: tuple, new: tuple) -> tuple[str, int] | None:
    """If ``new`` differs from ``old`` only by a longer last text part of a running message:
    ``(how, old length)``, ``how`` from ``app.presentation.streamed_text_update``."""
    (role, status, old_parts, extra), (new_role, new_status, new_parts, new_extra) = old, new
    if (role, status, extra) != (new_role, new_status, new_extra) or status != "running" or len(old_parts) != len(new_parts):
        return None
    if not old_parts or old_parts[:-1] != new_parts[:-1]:
        return None
    (kind, old_len, old_expanded), (new_kind, new_len, expanded) = old_parts[-1][:3], new_parts[-1][:3]
    if kind != "t" or new_kind != "t" or old_expanded != expanded:
        return None
    how = streamed_text_update(old_len, new_len, expanded=expanded)
    return None if how is None else (how, old_len)


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
        self._notices = NoticesView(translator)
        self._expanded: set[int] = set()  # id(message) of long messages the reader expanded
        self._chrome: tuple | None = None  # (running, has messages, no stage) as last written
        self._course_drawn = 0  # counts render_course calls: its scene nodes are new each time
        self._versions_drawn: tuple | None = None
        self._nodes = MessageNodes(runtime, translator)
        self._editing: str | None = None  # id of the question whose editor is open (DESIGN.md §17)

    @property
    def shows_running(self) -> bool:
        """True when the panel as last drawn says a turn runs (``data-running="true"``): until then a
        turn's changes are drawn at once, so a turn that starts is shown running at once (§6)."""
        return bool(self._chrome and self._chrome[0])

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
    def render_course(self, course: Course, stored_ids=()) -> None:
        """Show ``course`` (title and scenes) and select it in the course picker, which lists
        the demo courses and every course in ``stored_ids`` (ids with a stored thread)."""
        title = self.t("course.placeholderTitle", id=course.id) if course.is_placeholder else course.title
        stage = self._by("stage")
        stage.replaceChildren()
        self._course_drawn += 1
        heading = _el(h2, text=title, attrs={"dir": "auto"})
        scenes = _el(ul, classes="scenes", attrs={"aria-label": self.t("course.scenes")})
        for scene in course.scenes:
            scene_title, scene_body = scene_text(course, scene, self.t)
            scenes.append(_el(li,
                              _el(span, text=scene.id, classes="scene-id"),
                              _el(h3, text=scene_title, testid="scene-title", attrs={"dir": "auto"}),
                              _el(p, text=scene_body, attrs={"dir": "auto"}),
                              classes="scene", testid="scene", attrs={"data-scene-id": scene.id}))
        stage.append(heading._dom_element, scenes._dom_element)
        select = self._by("course-select")
        select.replaceChildren()
        for item in picker_courses(stored_ids, course.id):
            label = self.t("course.placeholderTitle", id=item.id) if item.is_placeholder else item.title
            opt = _el(option, text=label, attrs={"value": item.id})
            select.append(opt._dom_element)
        select.value = course.id

    # ---- panel ---------------------------------------------------------
    def render(self) -> None:
        """Bring the panel in line with the runtime (messages, running flag, buttons, notices)."""
        runtime = self.runtime
        running = bool(runtime.is_running)
        chrome = (running, runtime.has_messages, runtime.stage_id is None)
        if chrome != self._chrome:  # written when it changes: a streamed token touches none of it
            self._chrome = chrome
            self._by("agent-panel").dataset.running = "true" if running else "false"
            # The log is announced once when the reply is complete, not token by token.
            self._by("agent-messages").setAttribute("aria-busy", "true" if running else "false")
            self._by("agent-new-conversation").hidden = not runtime.has_messages
            stop, send = self._by("agent-stop"), self._by("agent-send")
            if (not running and document.activeElement == stop) or (running and document.activeElement == send):
                self._by("agent-input").focus()  # the focused button hides or turns disabled: focus stays in the panel
            stop.hidden = not running
            send.disabled = running or runtime.stage_id is None
        self._notices.render(runtime.notices)
        versions = (runtime.stage_id, self._course_drawn, runtime.stage_edits.revision)
        if versions != self._versions_drawn:  # the scenes' marks change only with a regenerate or a restore
            self._versions_drawn = versions
            self._render_scene_versions()
        if runtime.stage_id != self._shown_stage:
            self._shown_stage = runtime.stage_id
            self._rendered = []  # _render_messages starts the list afresh
        self._render_messages(runtime.messages)
        if self._editing is not None:
            self._sync_editor_save(running)

    def _sync_editor_save(self, running: bool) -> None:
        """An editor left open while a reply runs keeps its text, but its Save is disabled until the
        reply ends, as the other actions are hidden then (DESIGN.md §17)."""
        save = self._message_box(self._editing, "[data-testid=message-edit-save]")
        if save is not None and bool(save.disabled) != running:
            save.disabled = running

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
                node.removeAttribute("data-regenerated-by")
                continue
            if is_none(line):
                line = _el(p, classes="scene-version", testid="scene-version")._dom_element
                node.append(line)
            line.textContent = text
            node.setAttribute("data-regenerated-by", version.tool_call_id)

    def _render_messages(self, messages: list[Message]) -> None:
        container = self._by("agent-messages")
        if not messages:
            self._render_empty(container)
            return
        if not self._rendered or self._offset > len(messages):
            self._rendered = []
            self._expanded.clear()
            container.replaceChildren()
            self._offset = max(0, len(messages) - RENDER_WINDOW)
        grew = len(messages) - self._offset > len(self._rendered)
        start = window_start(len(messages), self._offset, grew=grew)
        if start > self._offset:  # a long session: drop the oldest rendered messages (as after a reload)
            dropped = start - self._offset
            for _, _, node in self._rendered[:dropped]:
                node.remove()
            del self._rendered[:dropped]
            self._offset = start
        messages = messages[self._offset:]
        # Follow the conversation when it grows or when the reader is already at its end.
        stick = grew or container.scrollHeight - container.scrollTop - container.clientHeight < 40
        expanded = self._expanded
        for index, message in enumerate(messages):
            signature = self._signature(message)
            if index < len(self._rendered):
                ident, old_signature, node = self._rendered[index]
                if ident == id(message) and old_signature == signature:
                    continue
                grown = _streamed_text_from(old_signature, signature) if ident == id(message) else None
                if grown is not None:  # streamed tokens: only the growing bubble changes, never rebuilt
                    how, grown_from = grown
                    text = message.content[-1].text
                    if how == "append":
                        node.lastElementChild.append(text[grown_from:])
                    else:  # collapsed: the shown start stays, the "show all" control counts the rest
                        node.lastElementChild.querySelector("[data-testid=agent-message-expand]").setAttribute(
                            "data-chars", str(len(text)))
                    self._rendered[index] = (ident, signature, node)
                    continue
                new = self._message_node(message)
                refocus = _keep_draft(node, new) if self._editing is not None else None
                node.replaceWith(new)
                if refocus is not None:
                    refocus.focus()
                self._rendered[index] = (id(message), signature, new)
            else:
                new = self._message_node(message)
                container.append(new)
                self._rendered.append((id(message), signature, new))
        for _, _, node in self._rendered[len(messages):]:
            node.remove()
        del self._rendered[len(messages):]
        if expanded:  # only messages still rendered keep their expanded state (ids of gone ones may be reused)
            expanded.intersection_update(ident for ident, _, _ in self._rendered)
        self._sync_earlier_button(container)
        if stick:
            container.scrollTop = container.scrollHeight

    def _render_empty(self, container) -> None:
        """An empty thread: the hint that says how to start (drawn once; kept while it is there)."""
        if not self._rendered and not is_none(container.querySelector(".empty-hint")):
            return
        self._rendered = []
        hint = element("p", classes="empty-hint", children=(  # the command: one LTR run, kept whole
            element("bdi", text=s.text, classes="command", attrs={"dir": "ltr"}) if s.kind == "isolate" else s.text
            for s in command_segments(self.t("edit.agent.emptyHint"))))
        container.replaceChildren(hint)

    def redraw_messages(self) -> None:
        """Rebuild the shown assistant messages in place (once Markdown rendering is available);
        which messages are shown (earlier ones included) stays as it is."""
        messages = self.runtime.messages
        container = self._by("agent-messages")
        at_end = container.scrollHeight - container.scrollTop - container.clientHeight < 40
        for index, (ident, signature, node) in enumerate(self._rendered):
            position = self._offset + index
            message = messages[position] if position < len(messages) else None
            if message is None or id(message) != ident or message.role != "assistant":
                continue
            new = self._message_node(message)
            node.replaceWith(new)
            self._rendered[index] = (ident, signature, new)
        if at_end:
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
        entries = []
        for message in messages[start:self._offset]:
            node = self._message_node(message)
            container.insertBefore(node, anchor)
            entries.append((id(message), self._signature(message), node))
        self._rendered[0:0] = entries
        self._offset = start
        button = container.querySelector("[data-testid=agent-load-earlier]")
        had_focus = not is_none(button) and document.activeElement == button
        self._sync_earlier_button(container)
        container.scrollTop += container.scrollHeight - height
        if had_focus and start == 0 and entries:  # the focused button is gone: focus the first message shown
            entries[0][2].focus()

    def toggle_long_text(self, node) -> None:
        """Expand or collapse the long message whose control ``node`` is (its "show all" button)."""
        box = node.closest("[data-testid=agent-message]")
        for index, (ident, _, message_node) in enumerate(self._rendered):
            if message_node == box:
                message = self.runtime.messages[self._offset + index]
                if id(message) != ident:
                    return
                self._expanded.symmetric_difference_update({ident})
                new = self._message_node(message)
                box.replaceWith(new)
                self._rendered[index] = (ident, self._signature(message), new)
                control = new.querySelector("[data-testid=agent-message-expand]")
                if not is_none(control):
                    control.focus()
                return

    def _signature(self, message: Message) -> tuple:
        editing = message.id is not None and message.id == self._editing
        return _signature(message, self.runtime.stage_edits.has_snapshot, id(message) in self._expanded,
                          (self.runtime.siblings(message.id), editing))

    def _message_node(self, message: Message):
        return self._nodes.message(message, expanded=id(message) in self._expanded,
                                   siblings=self.runtime.siblings(message.id),
                                   editing=message.id is not None and message.id == self._editing)

    # ---- edit, copy, picker (DESIGN.md §17) ------------------------------

    @property
    def editing(self) -> str | None:
        """The id of the question whose editor is open, or ``None``."""
        return self._editing

    def open_editor(self, message_id: str) -> None:
        """Open the editor of question ``message_id`` in place (one at a time), focused at its end."""
        self._editing = message_id
        self.render()
        field = self._message_box(message_id, "[data-testid=message-edit-input]")
        if field is not None:
            field.focus()
            end = len(field.value)  # a Python str under Pyodide
            field.setSelectionRange(end, end)

    def close_editor(self, *, focus_edit: bool = True) -> None:
        """Close the open editor, nothing changed; focus goes back to its Edit button."""
        message_id, self._editing = self._editing, None
        if message_id is None:
            return
        self.render()
        button = self._message_box(message_id, "[data-testid=message-edit]") if focus_edit else None
        if button is not None:
            button.focus()

    def focus_picker(self, message_id: str, testid: str) -> None:
        """After a picker move: focus the same button of the sibling now shown (the other one when
        that end is reached), so the picker stays usable by keyboard."""
        for wanted in (testid, "branch-next" if testid == "branch-prev" else "branch-prev"):
            button = self._message_box(message_id, f"[data-testid={wanted}]")
            if button is not None and not button.disabled:
                button.focus()
                return

    def _message_box(self, message_id: str, selector: str):
        for _, _, node in self._rendered:
            if node.getAttribute("data-message-id") == message_id:
                found = node.querySelector(selector)
                return None if is_none(found) else found
        return None

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


def _keep_draft(old, new):
    """A question's editor drawn again (its picker changed, another tab's write): the text typed so
    far stays (DESIGN.md §17). Returns the new field when the old one had the focus (to focus once
    the new node is in the page), else ``None``."""
    was, field = (n.querySelector("[data-testid=message-edit-input]") for n in (old, new))
    if is_none(was) or is_none(field):
        return None
    field.value = was.value
    return field if document.activeElement == was else None


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)

