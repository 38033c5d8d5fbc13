"""History's changes and the one hub that announces them (DESIGN.md §15, "the doors each system
enters by"). Pure Python, stdlib only: the page makes the hub before ready, before history's own
modules are loaded (§13), so the cross-tab adapter can join it at once.

- ``HistoryChange``: one change of history: what happened to which conversation of which course
  (``kind``: the verb, ``record``, ``archive``, ``resume``, ``delete``, ``undo``, ``import``,
  ``sync``, ``branch``: another branch shown, §17; ``what`` sorts it: written, deleted, the course's active conversation moved), where it
  came from (``source``: this tab, another tab, sync, an import) and what was written
  (``written``: the meta, messages and turns as committed, ``form``: the whole tree as committed;
  ``head``: the course's active thread when sync changed it; ``tasks``: the conversations a
  restored backup wrote in a course), so no subscriber reads back what it was just told.
- ``ChangeHub``: ``subscribe(listener)`` returns its own unsubscribe; ``publish(change)`` tells
  every subscriber in the order of subscription. No part assigns or wraps another part's callback.

The history service publishes this tab's changes (and sync's and imports' it applies); the
cross-tab adapter (``app.browser.signals``) posts them to the other tabs and publishes theirs
(``other-tab``); the list, the active thread and sync subscribe.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from app.history.branches import StoredForm
    from app.history.repository import Conversation

__all__ = ["ChangeHub", "HistoryChange", "Listener", "Source", "What"]

_log = logging.getLogger(__name__)

Source = Literal["this-tab", "other-tab", "sync", "import"]
"""Where a change came from: this tab's own action, another tab's (the cross-tab channel), another
device's (sync, DESIGN.md §16), or a file or backup imported here (§14)."""

What = Literal["written", "deleted", "head-moved"]
"""What a change did: a conversation written (a turn, an undo, an import, a synced version), deleted,
or a course's active conversation moved (resume, New conversation)."""

_HEAD_MOVED = ("archive", "resume")


@dataclass(frozen=True)
class HistoryChange:
    """One change of history (module docstring).

    ``kind``: the verb (``record``, ``archive``, ``resume``, ``delete``, ``undo``, ``import``,
    ``sync``, ``branch``); ``task_id`` / ``stage_id``: the conversation and its course (``""`` when a change
    concerns a whole course, a restored backup); ``source``: ``Source``; ``written``: the
    conversation (meta, slim messages, turns) exactly as this change committed it, None when it
    wrote none or came from another tab (the channel carries no records); ``head``: the course's
    active thread (slim messages) when sync moved it (another device's version of it, or ``[]``
    when it was deleted there), else None (DESIGN.md §16); ``form``: the conversation's ``messages``
    record as written, its whole tree (shown path, ``branches``, ``shown``: ``StoredForm``, §17),
    when the change carries it (a turn, New conversation, a branch shown), else None; ``tasks``: for a
    change of a whole course (a restored backup's, ``task_id`` ``""``), the task ids of the
    conversations it wrote there, each of which sync sends (§16), else ``()``; never on the cross-tab
    channel (``to_json``: one message per course, however many conversations)."""

    kind: str
    task_id: str
    stage_id: str
    source: Source = "this-tab"
    written: Conversation | None = None
    head: list[dict] | None = None
    form: StoredForm | None = None
    tasks: tuple[str, ...] = ()

    @property
    def elsewhere(self) -> bool:
        """True when another tab made it (it arrived on the cross-tab channel)."""
        return self.source == "other-tab"

    @property
    def what(self) -> What:
        """``What`` this change did (``kind`` sorted)."""
        if self.kind == "delete":
            return "deleted"
        return "head-moved" if self.kind in _HEAD_MOVED else "written"

    def to_json(self) -> str:
        """The channel payload: ``{"kind", "taskId", "stageId"}`` (what every tab version sends)."""
        return json.dumps({"kind": self.kind, "taskId": self.task_id, "stageId": self.stage_id})

    @classmethod
    def from_json(cls, text: str) -> "HistoryChange | None":
        """Another tab's change from its channel payload (source ``other-tab``); ``None`` when the
        payload is not a JSON object (a message no tab version sends)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        return cls(str(data.get("kind", "")), str(data.get("taskId", "")), str(data.get("stageId", "")),
                   "other-tab")


Listener = Callable[[HistoryChange], Any]
"""A subscriber: called with each change published after it subscribed."""


class ChangeHub:
    """Announces history's changes to its subscribers (module docstring). A listener that raises is
    logged and the others still hear the change; one unsubscribed while a change is being told does
    not hear it."""

    def __init__(self) -> None:
        self._listeners: dict[int, Listener] = {}
        self._next = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(change)`` for every change published from now on, after the listeners
        subscribed before it; returns the function that ends this subscription (idempotent)."""
        key, self._next = self._next, self._next + 1
        self._listeners[key] = listener
        return lambda: self._listeners.pop(key, None) and None

    def publish(self, change: HistoryChange) -> None:
        """Tell ``change`` to every subscriber, in the order of subscription."""
        for key in list(self._listeners):
            listener = self._listeners.get(key)
            if listener is None:
                continue
            try:
                listener(change)
            except Exception:  # noqa: BLE001 - one part's failure must not keep the change from the others
                _log.exception("a subscriber of history's changes failed on %s", change.kind)
