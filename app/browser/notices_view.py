"""The panel's notices (DESIGN.md §5: nothing lost silently; §6 hooks ``agent-notice``).

``NoticesView`` draws the runtime's notices into ``#agent-notices``, each with its text (a storage
key isolated in its own left-to-right run, ``app.presentation.notice_segments``), its dismiss button
and, for a store that cannot back up its damaged value, the download that is the way out. The list is
drawn again only when the notices change.
"""

from __future__ import annotations

from pyscript import document
from pyscript.web import button, div, span

from app.browser.message_nodes import el as _el
from app.i18n import Translator
from app.presentation import notice_segments

__all__ = ["NoticesView"]


class NoticesView:
    """Draws ``Notice(code, params)`` items (``AgentRuntime.notices``); ``translator``: the page's."""

    def __init__(self, translator: Translator) -> None:
        self.t = translator
        self._codes: tuple = ()

    def render(self, notices) -> None:
        """Bring ``#agent-notices`` in line with ``notices`` (oldest first); nothing when unchanged."""
        codes = tuple((n.code, tuple(sorted((n.params or {}).items()))) for n in notices)
        if codes == self._codes:
            return
        self._codes = codes
        box = document.getElementById("agent-notices")
        box.replaceChildren()
        for notice in notices:
            box.append(self._notice(notice)._dom_element)

    def _notice(self, notice):
        params = dict(notice.params or {})
        dismiss = _el(button, text="×", classes="notice-dismiss", testid="agent-notice-dismiss",
                      attrs={"type": "button", "aria-label": self.t("edit.agent.dismiss"),
                             "title": self.t("edit.agent.dismiss"), "data-code": notice.code})
        text = _el(span)
        for segment in notice_segments(self.t, notice.code, params):
            if segment.kind == "isolate":  # a storage key: its own LTR run inside RTL text
                text.append(_el(span, text=segment.text, classes="notice-key", testid="agent-notice-key",
                                attrs={"dir": "ltr"}))
            else:
                text._dom_element.append(segment.text)
        action = None
        if notice.code == "storage-read-only" and params.get("reason") == "backup-failed":
            # the way out (DESIGN.md §5): download the damaged value as a file, then saving resumes
            action = _el(button, text=self.t("storageRecovery.download"), classes="notice-action",
                         testid="agent-notice-action",
                         attrs={"type": "button", "data-code": notice.code, "data-action": "download-damaged",
                                "title": self.t("storageRecovery.downloadTitle")})
        return _el(div, text, action, dismiss, classes="notice", testid="agent-notice",
                   attrs={"data-code": notice.code, "role": "status"})
