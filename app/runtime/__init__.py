"""The AgentBar's reactive state: one conversation thread per course (DESIGN.md §4).

``AgentRuntime`` holds the live messages (``app.model.Message``) of the course
shown, runs agent turns, and writes each *completed* turn to the thread store
as a slim projection. The view subscribes and renders from its properties; it
never touches the store.

Lifecycle rules (DESIGN.md §4), each in one place:

- stage id ``None`` (still loading): nothing loaded, nothing written
  (``set_stage``); the load runs as soon as an id is set;
- a run belongs to the course it started on: its events update that course's
  session even when another course is shown, and it is saved under that course
  (``turns.Turns``);
- one save per completed turn, after the final message state; nothing mid-stream
  (the thread store's subscriber to ``TurnEnded`` is the only turn's caller of ``store.save``);
- a stopped turn is completed: saved with what it had, a tool call without a
  result marked ``is_error`` (``stop`` → ``session.end_reply``);
- New conversation cancels the run and discards its late output, empties the
  thread and clears only that course (``clear_thread``);
- a ``storage`` event from another tab reloads the shown course when idle
  (``on_storage_changed``).

The runtime holds sessions and turns; each concern it wires lives in a module of
its own (DESIGN.md §15): ``session`` (a course's live thread, the sessions held,
folding agent events), ``turns`` (a turn from send to its end), ``turn_end`` (the ``TurnEnded`` event the thread store and history
subscribe to), ``conversations`` (which conversation is a course's active one),
``scenes`` (scene versions and restores), ``branch_actions`` (edit, regenerate and the branch
picker on the course's conversation tree, §17), ``notices`` (store notices, shown once
each, §5); where a turn belongs when another tab moved on is
``app.continuity``'s rule. Collaborators are typed ports (``app.ports``).
Measuring tools follow a turn's end through ``trace`` (§13).

Example::

    >>> import asyncio
    >>> from app.agent import DemoAgent
    >>> from app.storage import MemoryStorage
    >>> from app.store import ThreadStore
    >>> async def demo():
    ...     runtime = AgentRuntime(ThreadStore(MemoryStorage()), DemoAgent(), clock=lambda: 1_780_000_000_000)
    ...     runtime.hydrate()
    ...     runtime.set_stage("intro-ml")
    ...     await runtime.send("hello")
    ...     return [m.role for m in runtime.messages], runtime.is_running
    >>> asyncio.run(demo())
    (['user', 'assistant'], False)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.agent import Agent
from app.continuity import conversation_goes_stale, switched_after
from app.model import Message
from app.ports import CheckpointsPort, HistoryPort, ThreadStorePort
from app.projection import FAILED, live_thread, serialize_thread
from app.runtime.branch_actions import BranchActions
from app.runtime.branches import TREE_WRITES
from app.runtime.conversations import Conversations
from app.runtime.notices import Notices
from app.runtime.notify import Notifier
from app.runtime.scenes import SceneVersions
from app.runtime.session import CANCELLED, RUNNING, Session, Sessions
from app.runtime.turn_end import HistoryTurns, TurnEnded, TurnSubscriber
from app.runtime.turns import Turns
from app.stage import StageEdits

__all__ = ["AgentRuntime", "CANCELLED", "FAILED", "RUNNING", "TRACE_PHASES", "TurnEnded"]

RECORD_WAIT_S = 5.0
"""Longest a finished turn waits for its history write before the panel reads idle (DESIGN.md §9)."""
# FAILED (from app.projection): status of an assistant message whose agent raised; stored with what
# it had and a marker holding the error, so a reload shows the failure (DESIGN.md §5, §12).
TRACE_PHASES = ("turn-end", "thread-save", "thread-saved", "turn-ended", "storage-event", "storage-event-done")
"""What the runtime's phase observers hear (``app.runtime.trace``, dev-only), in order: a turn's done callback starts, the thread
store's write starts and returns, the callback returns (listeners called); another tab's write is
handled (``on_storage_changed``) and that is done."""


class AgentRuntime:
    """Reactive per-course thread state over a thread store (DESIGN.md §4).

    ``store``: the thread store (``app.ports.ThreadStorePort``, an ``app.store.ThreadStore``);
    ``agent``: an ``app.agent.Agent``; ``clock``: epoch milliseconds, read to stamp ``updatedAt``
    at save time and for ``hydrate``; ``history``: optional ``app.ports.HistoryPort`` (§9): each
    ended turn is recorded, New conversation archives, its failures never reach the core;
    ``checkpoints``: optional ``app.ports.CheckpointsPort``: receives an ``ArtifactSnapshot`` for
    each successful regenerate and each restore (§10).

    Only the shown course and courses with a turn in flight are held in memory;
    an idle course is read back from the store when it is shown again.
    """

    def __init__(self, store: ThreadStorePort, agent: Agent, *, clock: Callable[[], int],
                 history: HistoryPort | None = None, checkpoints: CheckpointsPort | None = None) -> None:
        self._store = store
        self._clock = clock
        self._listeners: list[Callable[[], None]] = []
        self._observers: list[Callable[[str, str | None], None]] = []
        self._deliver: Callable[[Callable[[], None]], None] | None = None  # notify_through
        self._notifier = Notifier(self._call_listeners_now)  # a turn's end tells the view once
        self._notices = Notices(store, self._notifier)
        self._sessions = Sessions(store, self._notices, lambda session: self._branches.adopt_tree(session))
        self._history_port = history
        self._conversations = Conversations(history, clock)
        self._scenes = SceneVersions(checkpoints, self._conversations, clock)
        self._history = HistoryTurns(history, store) if history is not None else None
        self._turns = Turns(agent, store, self._sessions, notices=self._notices, conversations=self._conversations,
                            scenes=self._scenes, history=self._history, clock=clock, notify=self._notifier,
                            trace=self._trace, wait_s=lambda: RECORD_WAIT_S)
        self._branches = BranchActions(store, self._sessions, self._notices, self._turns, history, clock=clock,
                                       notify=self._notify)

    # -- reading -------------------------------------------------------------

    @property
    def stage_id(self) -> str | None:
        """The shown course's id; ``None`` while the stage is still loading."""
        return self._sessions.shown_id

    @property
    def messages(self) -> list[Message]:
        """The shown course's messages (a new list; the messages themselves are live, do not mutate)."""
        session = self._shown
        return list(session.messages) if session else []

    @property
    def has_messages(self) -> bool:
        """True when the shown thread is not empty (the New conversation button shows)."""
        session = self._shown
        return bool(session and session.messages)

    @property
    def is_running(self) -> bool:
        """True while the *shown* course has a turn in flight or its history write pending (``data-running``)."""
        session = self._shown
        return bool(session and session.busy)

    @property
    def turn_in_flight(self) -> bool:
        """True while the *shown* course's turn runs, until its thread is saved (``is_running`` also
        covers the history write after it): what a reload would lose (DESIGN.md §4)."""
        session = self._shown
        return bool(session and session.task)

    def siblings(self, message_id: str | None) -> tuple[int, int]:
        """``(index, count)`` of shown message ``message_id`` among its siblings (``BranchActions.siblings``,
        DESIGN.md §17)."""
        return self._branches.siblings(message_id)

    def painted_positions(self, stage_id: str, positions: dict[str, tuple[int, int]]) -> None:
        """The branch pickers the paint record drew for course ``stage_id`` (``{message id: (index,
        count)}``), standing for its shown path's positions until history's tree arrives
        (``BranchActions.painted_positions``, DESIGN.md §13, §17)."""
        self._branches.painted_positions(stage_id, positions)

    @property
    def notices(self) -> tuple[Any, ...]:
        """Notices (``Notice(code, params)``) to show, oldest first, each distinct one once (§5)."""
        return self._notices.items

    @property
    def sessions(self) -> Sessions:
        """The courses held in memory (``Sessions``: the shown one, ``sessions.shown``, and those with a
        turn or a write pending). For tools that inspect a live thread (the benchmark, §13); a view
        reads the properties above."""
        return self._sessions

    @property
    def checkpoints(self) -> CheckpointsPort | None:
        """The scene checkpoints the runtime writes versions to (DESIGN.md §10), or ``None``."""
        return self._scenes.checkpoints

    @property
    def stage_edits(self) -> StageEdits:
        """Scene versions from regenerate calls of this tab, with their restore snapshots (memory only)."""
        return self._scenes.stage_edits

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every change of what the view shows; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_turn_ended(self, subscriber: TurnSubscriber) -> None:
        """Hand every ``TurnEnded`` that goes to its course's thread to ``subscriber`` too, after the
        thread store and history (wiring time; DESIGN.md §15)."""
        self._turns.subscribe(subscriber)

    def notify_through(self, deliver: Callable[[Callable[[], None]], None] | None) -> None:
        """Call the listeners through ``deliver(call_listeners)`` from now on (``None``: at once, the
        default). The browser passes ``app.frames.FrameCoalescer.schedule``, so a reply streamed a
        token every few ms is drawn once per animation frame (DESIGN.md §6, §12)."""
        self._deliver = deliver

    # -- commands ------------------------------------------------------------

    def hydrate(self) -> None:
        """Read (and, if needed, migrate or back up) the stored value once at start-up (DESIGN.md §5)."""
        self._store.hydrate(self._clock())
        self._notices.take_from_store()

    def set_stage(self, stage_id: str | None) -> None:
        """Show course ``stage_id``; ``None`` means the stage is still loading (nothing is loaded).

        The thread comes from memory when that course has a turn in flight,
        otherwise from the store (``live_thread(store.load(id) or [])``).
        Switching never cancels a run and never writes anything.
        """
        if stage_id == self._sessions.shown_id:
            return
        previous, self._sessions.shown_id = self._shown, stage_id
        self._sessions.forget_if_idle(previous)
        if stage_id is not None and stage_id not in self._sessions:
            self._sessions.load(stage_id)
        self._notify()

    def send(self, text: str) -> asyncio.Task[None] | None:
        """Start a turn on the shown course; returns its task, or ``None`` when ignored.

        Ignored when no course is known yet, ``text`` is blank, or that course
        already runs. Appends the user message (the agent's secret masked, §12: an API key typed
        into a message is not stored) and a running assistant message.
        """
        session = self._shown
        if session is None or session.busy or not text.strip():
            return None
        task = self._turns.start(session, text)
        self._notify()
        return task

    def edit(self, message_id: str, text: str) -> asyncio.Task[None] | None:
        """Edit user message ``message_id`` of the shown path (``BranchActions.edit``, DESIGN.md §17)."""
        return self._branches.edit(message_id, text)

    def regenerate(self, message_id: str) -> asyncio.Task[None] | None:
        """Another answer to reply ``message_id`` of the shown path (``BranchActions.regenerate``, §17)."""
        return self._branches.regenerate(message_id)

    def show_sibling(self, message_id: str, step: int) -> str | None:
        """The branch picker: show sibling ``step`` of ``message_id`` (``BranchActions.show_sibling``, §17)."""
        return self._branches.show_sibling(message_id, step)

    def stop(self) -> None:
        """Cancel the shown course's turn; it completes as stopped and is saved with what it had."""
        session = self._shown
        if session and session.task:
            session.task.cancel()

    def clear_thread(self) -> None:
        """New conversation: cancel the shown course's turn (its output is discarded), empty the
        thread and remove that course from the store; other courses are untouched."""
        session = self._shown
        if session is None:
            return
        if session.task:
            session.task.cancel()  # _finish sees the session superseded and writes nothing
        if self._history is not None and session.base:  # the stored thread stays in history (§4, §9)
            self._history.archived(session.stage_id, session.base)
        self._sessions.put(Session(session.stage_id, []))
        self._conversations.forget(session.stage_id)  # the next conversation gets its own id
        self._store.clear(session.stage_id)
        self._notices.take_from_store()
        self._notify()

    def replace_thread(self, stage_id: str, messages: list[dict[str, Any]], *, updated_at: int | None = None) -> bool:
        """Resume: ``messages`` (slim) become ``stage_id``'s active thread with ONE write of the store
        (DESIGN.md §9), stamped ``updated_at`` (epoch ms: the time history's head was matched to it;
        the clock when None); continuing it appends. Refused (False) while that course runs a turn.
        ``messages`` are what history holds (a resumed conversation, another device's version): should
        they not fit in the store, its notice says history keeps them (``Notices.held_by_history``, §5)."""
        session = self._sessions.get(stage_id)
        if session is not None and session.task is not None:
            return False
        self._store.save(stage_id, list(messages), self._clock() if updated_at is None else updated_at)
        self._conversations.forget(stage_id)  # the resumed conversation (history's new head)
        base = self._store.load(stage_id) or []
        self._notices.held_by_history(stage_id, True)
        if stage_id == self._sessions.shown_id or session is not None:
            self._sessions.put(Session(stage_id, live_thread(base), base))
        self._notify()
        return True

    def add_notice(self, notice: Any) -> None:
        """Show ``notice`` (an ``app.store.Notice``) raised outside the store once, like the store's:
        a collaborator's (history unavailable) or the browser layer's at start-up
        (``indexeddb-unavailable``, DESIGN.md §5)."""
        self._notices.add(notice)

    def download_damaged(self) -> str | None:
        """The ``storage-read-only`` notice's action: download the damaged stored value as a file, which
        becomes its backup, and let the store write again (``ThreadStore.download_damaged``,
        DESIGN.md §5). Returns the file name, or ``None``."""
        name = self._store.download_damaged(self._clock())
        self._notices.take_from_store()
        self._notify()
        return name

    def dismiss_notice(self, code: str) -> None:
        """Hide the notices with ``code`` (the user closed them); a new occurrence shows again."""
        if self._notices.dismiss(code):
            self._notify()

    def restore_snapshot(self, tool_call_id: str) -> bool:
        """Restore the scene version before regenerate call ``tool_call_id`` (its card's button;
        ``SceneVersions.restore_snapshot``). False when no in-memory snapshot exists (e.g. a card
        restored from storage, DESIGN.md §4); ``maic-agent-threads`` is not written."""
        restored = self._scenes.restore_snapshot(tool_call_id)
        if restored:
            self._notify()
        return restored

    async def restore_checkpoint(self, checkpoint_id: str) -> Any:
        """Make checkpoint ``checkpoint_id``'s document current as a new version (source ``restore``,
        DESIGN.md §10); returns its timeline item. Raises ``app.checkpoints.CheckpointNotFound``."""
        return await self._scenes.restore_checkpoint(checkpoint_id)

    async def restore_original(self, stage_id: str, scene_id: str) -> Any:
        """Make the course's own document of ``scene_id`` (version 0) current again as a new version
        (DESIGN.md §10); returns its timeline item, ``None`` when the course has no such scene."""
        return await self._scenes.restore_original(stage_id, scene_id)

    def conversation_key(self, stage_id: str) -> tuple[str | None, int]:
        """``(conversation_id, times let go)`` of the course, what a view keyed on it compares
        (``Conversations.key``)."""
        return self._conversations.key(stage_id)

    def conversation_id(self, stage_id: str) -> str | None:
        """The id of course ``stage_id``'s active conversation once known (history's ``taskId`` of it,
        DESIGN.md §9, §10), without waiting; ``None`` until ``conversation`` has found or allocated it."""
        return self._conversations.known_id(stage_id)

    async def conversation(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """The id of course ``stage_id``'s active conversation (``Conversations.id``); never raises."""
        return await self._conversations.id(stage_id, allocate=allocate)

    def on_storage_changed(self) -> None:
        """Another tab wrote the key: re-read it; reload the shown course if it changed and is idle."""
        self._trace("storage-event", self.stage_id)
        changed = self._store.reload()
        self._notices.take_from_store()
        running = self._sessions.running()
        for stage_id in conversation_goes_stale(changed, self._conversations.known(), running):
            self._conversations.forget(stage_id)  # another tab may have started or resumed one there
        session = self._shown
        if session and session.task is None and session.stage_id in changed:
            self._sessions.load(session.stage_id)
            self._notify()
        self._trace("storage-event-done", self.stage_id)

    def threads_restored(self, stage_ids: set[str]) -> None:
        """A backup restore wrote these courses' active threads (DESIGN.md §14): their conversation
        ids are found again (history's head), and the shown course, when idle and among them, shows
        its restored thread at once (no reload). Writes nothing."""
        for stage_id in stage_ids:
            self._conversations.forget(stage_id)
        session = self._shown
        if session is not None and session.task is None and session.stage_id in stage_ids:
            self._sessions.load(session.stage_id)
        self._notices.take_from_store()
        self._notify()

    def conversation_changed_elsewhere(self, stage_id: str, kind: str, task_id: str) -> None:
        """Another tab's history change (``kind`` ``resume`` of ``task_id``, or ``archive``: New
        conversation), or another device's (``sync``, ``app.history.active_thread``), on ``stage_id``: a turn running there no longer continues the course's active
        conversation, even when nothing was stored to build on (a first turn), so it ends in its own
        (``app.continuity.home_of_ending_turn``, DESIGN.md §9). A write there (``TREE_WRITES``) has
        history's tree of the course read again (``BranchActions.tree_written_elsewhere``, §17)."""
        session = self._sessions.get(stage_id)
        switched = switched_after(kind, task_id)
        if session is not None and session.task is not None and switched is not None:
            session.switched_to = switched  # compared with the turn's own id at its end
        if session is not None and kind in TREE_WRITES:
            self._branches.tree_written_elsewhere(session)  # its new siblings get their pickers here (§17)

    # -- helpers -------------------------------------------------------------

    @property
    def _shown(self) -> Session | None:
        return self._sessions.shown

    def _trace(self, phase: str, stage_id: str | None) -> None:
        for observer in list(self._observers):
            observer(phase, stage_id)

    def _notify(self) -> None:
        self._notifier()

    def _call_listeners_now(self) -> None:
        if self._deliver is not None:
            self._deliver(self._call_listeners)
        else:
            self._call_listeners()

    def _call_listeners(self) -> None:
        for listener in list(self._listeners):
            listener()
