"""The shown conversation's numbers: ``conversation-stats`` and each assistant message's
``turn-meta`` line (DESIGN.md §9 UI hooks, §12 usage). Read from history's turn meta of the
course's active conversation; drawn as attributes and ``textContent`` only.
"""

from __future__ import annotations

from pyscript import document
from pyscript.ffi import is_none

from app.browser.dom import element as _node
from app.history.labels import stats_text, turn_meta_text
from app.history.list_model import HistoryList
from app.history.service import ConversationStats, HistoryService

__all__ = ["TurnMetaView"]

_EXPORTS = ("export-markdown", "export-json", "history-print")
"""The buttons that act on the shown conversation: disabled while history holds none."""


class TurnMetaView:
    """Draws the stats box and turn-meta lines of the shown course's active conversation.

    ``runtime``: the ``AgentRuntime`` (``stage_id``, ``has_messages``); ``service``: the
    ``HistoryService`` (``active``); ``history_list``: its ``current`` becomes the active
    conversation's task id; ``translator``: the page's ``Translator``.
    """

    def __init__(self, runtime, service: HistoryService, history_list: HistoryList, translator) -> None:
        self.runtime, self.service, self.list, self.t = runtime, service, history_list, translator
        self.stage: str | None = None  # the course the lines were last asked for
        self._turns: dict = {}  # message id -> its TurnMeta
        self._written: dict[str, tuple] = {}  # message id -> what its turn-meta line was last given

    async def render(self) -> bool:
        """Read the shown course's active conversation and draw its stats and lines; False when the
        course changed meanwhile (nothing drawn, a later call draws)."""
        stage_id = self.runtime.stage_id
        self.stage = stage_id
        meta, turns = await self.service.active(stage_id) if stage_id is not None else (None, [])
        if stage_id != self.runtime.stage_id:
            return False
        if not self.runtime.has_messages:
            meta, turns = None, []
        stats = ConversationStats.of(meta)
        box = document.getElementById("conversation-stats")
        for name, value in (("turns", stats.turns), ("input-tokens", stats.input_tokens),
                            ("output-tokens", stats.output_tokens), ("total-tokens", stats.total_tokens),
                            ("mean-duration-ms", stats.mean_duration_ms)):
            box.setAttribute(f"data-{name}", str(value))
        box.textContent = stats_text(self.t, stats)
        box.hidden = meta is None
        self._turns = {t.messageId: t for t in turns if t.messageId}
        self.list.current = meta.taskId if meta else None
        for button in _EXPORTS:
            document.getElementById(button).disabled = meta is None
        return True

    def decorate(self) -> None:
        """Put each assistant message's ``turn-meta`` line in line with its turn; a reader at the
        newest message stays there (the lines arrive after the thread was drawn)."""
        log = document.getElementById("agent-messages")
        at_end = not is_none(log) and log.scrollHeight - log.scrollTop - log.clientHeight < 40
        try:
            for node in document.querySelectorAll("[data-testid=agent-message][data-role=assistant]"):
                self._line(node)
        finally:
            if at_end:
                log.scrollTop = log.scrollHeight

    def _line(self, node) -> None:
        turn = self._turns.get(node.getAttribute("data-message-id"))
        line = node.querySelector("[data-testid=turn-meta]")
        if turn is None:
            if not is_none(line):
                line.remove()
            return
        label = turn_meta_text(self.t, turn)
        written = (turn.model, turn.duration, None if turn.usage is None else turn.usage.totalTokens, label)
        if is_none(line):
            line = _node("p", testid="turn-meta", classes="turn-meta")
            node.append(line)
        elif self._written.get(turn.messageId) == written:
            return  # unchanged: the older messages are not touched while a reply streams (§12)
        self._written[turn.messageId] = written
        line.setAttribute("data-model", turn.model)
        line.setAttribute("data-duration-ms", str(turn.duration))
        if turn.droppedTurns:  # the server's context was full: earlier turns were left out (§12)
            line.setAttribute("data-dropped-turns", str(turn.droppedTurns))
        else:
            line.removeAttribute("data-dropped-turns")
        if turn.usage is None:  # the agent reported no usage: say so, never a made-up 0 (DESIGN.md §12)
            line.removeAttribute("data-total-tokens")
            line.setAttribute("data-usage", "not-reported")
        else:
            line.setAttribute("data-total-tokens", str(turn.usage.totalTokens))
            line.removeAttribute("data-usage")
        # shown through CSS (::after) so the message's own text stays what it was; the model by its short
        # name (a file path by its base name), the tooltip and data-model name it whole (DESIGN.md §12)
        line.setAttribute("data-label", label)
        line.setAttribute("title", turn_meta_text(self.t, turn, full_model=True))
