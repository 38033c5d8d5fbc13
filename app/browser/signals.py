"""Cross-tab signals: the one browser adapter through which other tabs' changes arrive
(DESIGN.md §15), each becoming a call on a service, never on a view (views redraw from the
services' and models' own change callbacks):

- the ``storage`` event of ``maic-agent-threads`` (or of a cleared ``localStorage``) →
  ``AgentRuntime.on_storage_changed`` (DESIGN.md §4, §5);
- ``BroadcastChannel`` ``agentbar-history`` (archive, resume, delete, undo, import, a recorded
  turn) → ``AgentRuntime.conversation_changed_elsewhere``, then published on history's hub
  (``app.history.changes``, source ``other-tab``), where the service, the list and the rest hear
  it (DESIGN.md §9, §15);
- ``BroadcastChannel`` ``agentbar-checkpoints`` (a version written, or one kept from another
  device by sync) → ``SceneCheckpoints.load_stage``
  of the shown course, which notifies its subscribers (DESIGN.md §10).

The way out is here too: this tab's history changes (every change on the hub that did not come
from another tab) and versions (``SceneCheckpoints.on_recorded``, and ``on_adopted`` for another
device's) are posted on the same channels. A browser without ``BroadcastChannel`` still gets the
``storage`` event.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from pyodide.ffi import create_proxy
from pyscript.ffi import is_none

from app.history.changes import ChangeHub, HistoryChange
from app.store import STORAGE_KEY

__all__ = ["CHECKPOINT_CHANNEL", "HISTORY_CHANNEL", "CrossTabSignals"]

HISTORY_CHANNEL = "agentbar-history"
"""The ``BroadcastChannel`` on which a tab announces each change of history it made."""
CHECKPOINT_CHANNEL = "agentbar-checkpoints"
"""The ``BroadcastChannel`` on which a tab announces each version it wrote."""


class Runtime(Protocol):
    """What the adapter calls on ``app.runtime.AgentRuntime``."""

    @property
    def stage_id(self) -> str | None: ...

    def on_storage_changed(self) -> None: ...

    def conversation_changed_elsewhere(self, stage_id: str, kind: str, task_id: str) -> None: ...


class Checkpoints(Protocol):
    """What the adapter uses of ``app.checkpoints.SceneCheckpoints``."""

    def on_recorded(self, callback: Any) -> None: ...

    def on_adopted(self, callback: Any) -> None: ...

    async def load_stage(self, stage_id: str) -> None: ...


class CrossTabSignals:
    """Joins the page's tabs for ``runtime``, history's hub ``changes`` (made by the page before
    ready; history's modules load after, DESIGN.md §13, and subscribe then) and ``checkpoints``
    (module docstring). ``window``: the page's ``window``. Nothing listens until ``install()``."""

    def __init__(self, window, runtime: Runtime, changes: ChangeHub, checkpoints: Checkpoints) -> None:
        self._window = window
        self._runtime, self._changes, self._checkpoints = runtime, changes, checkpoints
        self._history_channel = None
        self._checkpoint_channel = None
        self._proxies: list = []  # kept alive as long as the page
        self.tasks: set[asyncio.Task] = set()

    def install(self) -> None:
        """Listen for the ``storage`` event and both channels; post this tab's changes on them."""
        self._listen(self._window, "storage", self._on_storage)
        if not hasattr(self._window, "BroadcastChannel"):
            return
        self._checkpoint_channel = self._window.BroadcastChannel.new(CHECKPOINT_CHANNEL)
        self._listen(self._checkpoint_channel, "message", self._on_version_elsewhere)
        self._checkpoints.on_recorded(self._version_written_here)
        self._checkpoints.on_adopted(self._announce_version)
        self._history_channel = self._window.BroadcastChannel.new(HISTORY_CHANNEL)
        self._listen(self._history_channel, "message", self._on_history_elsewhere)
        self._changes.subscribe(self._history_changed_here)

    def _listen(self, target, event: str, handler) -> None:
        proxy = create_proxy(handler)
        self._proxies.append(proxy)
        target.addEventListener(event, proxy)

    # -- the thread store ------------------------------------------------------------
    def _on_storage(self, event) -> None:
        if is_none(event.key) or event.key == STORAGE_KEY:  # key is JS null when another tab cleared all of it
            self._runtime.on_storage_changed()

    # -- history -----------------------------------------------------------------------
    def _history_changed_here(self, change: HistoryChange) -> None:
        """A change of this tab's history (its own, sync's, an import's): posted to the other tabs."""
        if not change.elsewhere:
            self._history_channel.postMessage(change.to_json())

    def _on_history_elsewhere(self, event) -> None:
        change = HistoryChange.from_json(str(event.data))
        if change is None:
            return
        self._runtime.conversation_changed_elsewhere(change.stage_id, change.kind, change.task_id)
        self._changes.publish(change)

    # -- checkpoints -------------------------------------------------------------------
    def _version_written_here(self, item) -> None:
        self._announce_version(item.metadata.get("stageId"))

    def _announce_version(self, stage_id: str | None) -> None:
        """Tell the other tabs that course ``stage_id`` has a new version (made here or adopted)."""
        if self._checkpoint_channel is not None:
            self._checkpoint_channel.postMessage(json.dumps({"stageId": stage_id}))

    def _on_version_elsewhere(self, event) -> None:
        try:
            stage_id = json.loads(str(event.data)).get("stageId")
        except (ValueError, AttributeError):
            return
        if isinstance(stage_id, str) and stage_id == self._runtime.stage_id:
            task = asyncio.ensure_future(self._checkpoints.load_stage(stage_id))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
