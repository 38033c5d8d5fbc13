"""The AgentBar's reactive state: one conversation thread per course (DESIGN.md §4).

``AgentRuntime`` holds the live messages (``app.model.Message``) of the course
shown, runs agent turns, and writes each *completed* turn to the thread store
as a slim projection. The view subscribes and renders from its properties; it
never touches the store.

Lifecycle rules (DESIGN.md §4), each in one place below:

- stage id ``None`` (still loading): nothing loaded, nothing written
  (``set_stage``); the load runs as soon as an id is set;
- a run belongs to the course it started on: its events update that course's
  session even when another course is shown, and it is saved under that course
  (``_finish``);
- one save per completed turn, after the final message state; nothing mid-stream
  (``_finish`` is the only caller of ``store.save``);
- a stopped turn is completed: saved with what it had, a tool call without a
  result marked ``is_error`` (``stop`` → ``_finish``);
- New conversation cancels the run and discards its late output, empties the
  thread and clears only that course (``clear_thread``);
- a ``storage`` event from another tab reloads the shown course when idle
  (``on_storage_changed``).

The runtime holds sessions and turns; each concern it wires lives in a module of
its own (DESIGN.md §15): ``session`` (a course's live thread, folding agent
events), ``turn_end`` (the ``TurnEnded`` event the thread store and history
subscribe to), ``conversations`` (which conversation is a course's active one),
``scenes`` (scene versions and restores), ``notices`` (store notices, shown once
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
from collections.abc import Awaitable, Callable
from typing import Any

from app.agent import REGENERATE_TOOL, RUN_STAGE, Agent, UsageReport
from app.agents.events import ReplyCut, UsageReported
from app.continuity import conversation_goes_stale, home_of_ending_turn, switched_after
from app.model import Message, TextPart
from app.ports import CheckpointsPort, HistoryPort, ThreadStorePort
from app.projection import FAILED, deserialize_thread, serialize_thread
from app.runtime.conversations import Conversations
from app.runtime.notices import Notices
from app.runtime.scenes import SceneVersions
from app.runtime.session import CANCELLED, RUNNING, Session, apply_event, end_reply, new_id
from app.runtime.turn_end import HistoryTurns, TurnEnded, TurnSubscriber
from app.stage import StageEdits
from app.store import Notice

__all__ = ["AgentRuntime", "CANCELLED", "FAILED", "RUNNING", "TRACE_PHASES", "TurnEnded"]

RECORD_WAIT_S = 5.0
"""Longest a finished turn waits for its history write before the panel reads idle (DESIGN.md §9)."""
# FAILED (from app.projection): status of an assistant message whose agent raised; stored with what
# it had and a marker holding the error, so a reload shows the failure (DESIGN.md §5, §12).
VERSION_WAIT_S = 5.0
"""A turn waits at most this long (seconds) for the versions it made to be stored before it ends."""
TRACE_PHASES = ("turn-end", "thread-save", "thread-saved", "turn-ended", "storage-event", "storage-event-done")
"""What ``AgentRuntime.trace`` observers hear, in order: a turn's done callback starts, the thread
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
        self._agent = agent
        self._clock = clock
        self._stage_id: str | None = None
        self._sessions: dict[str, Session] = {}
        self._listeners: list[Callable[[], None]] = []
        self._observers: list[Callable[[str, str | None], None]] = []
        self._deliver: Callable[[Callable[[], None]], None] | None = None  # notify_through
        self._notices = Notices(store, self._notify)
        self._conversations = Conversations(history, clock)
        self._scenes = SceneVersions(checkpoints, self._conversations, clock)
        self._history = HistoryTurns(history, store) if history is not None else None
        self._turn_subscribers: list[TurnSubscriber] = [self._save_turn]  # the thread store's write first (§4)
        if self._history is not None:
            self._turn_subscribers.append(self._history.turn_ended)

    # -- reading -------------------------------------------------------------

    @property
    def stage_id(self) -> str | None:
        """The shown course's id; ``None`` while the stage is still loading."""
        return self._stage_id

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
    def notices(self) -> tuple[Any, ...]:
        """Notices (``Notice(code, params)``) to show, oldest first, each distinct one once (§5)."""
        return self._notices.items

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
        self._turn_subscribers.append(subscriber)

    def trace(self, observer: Callable[[str, str | None], None]) -> Callable[[], None]:
        """Call ``observer(phase, stage_id)`` at each of ``TRACE_PHASES``: the public way a measuring
        tool (the benchmark, DESIGN.md §13, §15) times a turn's end; returns the unsubscribe function."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

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
        otherwise from the store (``deserialize_thread(store.load(id) or [])``).
        Switching never cancels a run and never writes anything.
        """
        if stage_id == self._stage_id:
            return
        previous, self._stage_id = self._shown, stage_id
        self._forget_if_idle(previous)
        if stage_id is not None and stage_id not in self._sessions:
            self._sessions[stage_id] = self._load(stage_id)
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
        history = list(session.messages)
        reply = Message(id=new_id(), role="assistant", content=[], status=RUNNING)
        shown = self._agent.mask_secret(text)
        session.messages += [Message(id=new_id(), role="user", content=[TextPart(text=shown)]), reply]
        if self.checkpoints is not None or self._history is not None:
            # a conversation starts (or goes on): its id is at hand for its versions, and for its turn
            # should another tab make another conversation the course's active one meanwhile (_finish)
            session.conversation = asyncio.ensure_future(self.conversation(session.stage_id))
        task = asyncio.create_task(self._run(session, history, text, reply))
        session.task, session.started_at, session.usage, session.switched_to = task, self._clock(), None, None
        session.cut = False
        task.add_done_callback(lambda done: self._finish(session, reply, done))
        self._notify()
        return task

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
        self._sessions[session.stage_id] = Session(session.stage_id, [])
        self._conversations.forget(session.stage_id)  # the next conversation gets its own id
        self._store.clear(session.stage_id)
        self._notices.take_from_store()
        self._notify()

    def replace_thread(self, stage_id: str, messages: list[dict[str, Any]]) -> bool:
        """Resume: ``messages`` (slim) become ``stage_id``'s active thread with ONE write of the store
        (DESIGN.md §9); continuing it appends. Refused (False) while that course runs a turn."""
        session = self._sessions.get(stage_id)
        if session is not None and session.task is not None:
            return False
        self._store.save(stage_id, list(messages), self._clock())
        self._conversations.forget(stage_id)  # the resumed conversation (history's new head)
        base = self._store.load(stage_id) or []
        self._notices.take_from_store()
        if stage_id == self._stage_id or session is not None:
            self._sessions[stage_id] = Session(stage_id, deserialize_thread(base), base)
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
        self._trace("storage-event", self._stage_id)
        changed = self._store.reload()
        self._notices.take_from_store()
        running = {stage_id for stage_id, session in self._sessions.items() if session.task}
        for stage_id in conversation_goes_stale(changed, self._conversations.known(), running):
            self._conversations.forget(stage_id)  # another tab may have started or resumed one there
        session = self._shown
        if session and session.task is None and session.stage_id in changed:
            self._sessions[session.stage_id] = self._load(session.stage_id)
            self._notify()
        self._trace("storage-event-done", self._stage_id)

    def conversation_changed_elsewhere(self, stage_id: str, kind: str, task_id: str) -> None:
        """Another tab's history change (``kind`` ``resume`` of ``task_id``, or ``archive``: New
        conversation) on ``stage_id``: a turn running there no longer continues the course's active
        conversation, even when nothing was stored to build on (a first turn), so it ends in its own
        (``app.continuity.home_of_ending_turn``, DESIGN.md §9)."""
        session = self._sessions.get(stage_id)
        switched = switched_after(kind, task_id)
        if session is not None and session.task is not None and switched is not None:
            session.switched_to = switched  # compared with the turn's own id at its end

    # -- the turn ------------------------------------------------------------

    async def _run(self, session: Session, history: list[Message], text: str, reply: Message) -> None:
        RUN_STAGE.set(session.stage_id)  # the tool reads this course's scenes (this task's context only)
        writes: list[Awaitable[Any]] = []
        async for event in self._agent.run(history, text):
            if isinstance(event, (UsageReport, UsageReported)):  # the demo's and the model back end's
                session.usage = event
                continue
            if isinstance(event, ReplyCut):
                session.cut = True
                continue
            part = apply_event(reply, event)
            if part is not None and part.tool_name == REGENERATE_TOOL and not part.is_error:
                conversation = await self.conversation(session.stage_id) if self.checkpoints is not None else None
                write = self._scenes.record(session.stage_id, part, reply.id, conversation)
                if write is not None:
                    writes.append(write)
            if session is self._shown:
                self._notify()
        if writes:  # the turn ends once its versions are stored: at idle the stage shows them (DESIGN.md §10)
            await asyncio.wait(writes, timeout=VERSION_WAIT_S)  # not gather: a Stop leaves the writes running

    def _finish(self, session: Session, reply: Message, task: asyncio.Task[None]) -> None:
        """Done callback of every turn (runs even if the task was cancelled before it started): the
        reply gets its final status, the thread is serialized once into a ``TurnEnded``, which goes to
        the conversation ``app.continuity`` names, or to the subscribers (§4, §9, §15)."""
        self._trace("turn-end", session.stage_id)
        if self._sessions.get(session.stage_id) is session:  # else New conversation superseded it: discarded
            session.task = None
            end_reply(reply, task, cut=session.cut, stage_id=session.stage_id)
            event = self._turn_ended(session, reply)
            home = home_of_ending_turn(
                event.conversation_id, keeps_conversations=self._history is not None and self._history.keeps_conversations,
                switched_to=session.switched_to,
                thread_replaced=lambda: bool(event.base) and self._store.replaced_elsewhere(event.stage_id, event.base))
            follow = self._keep_apart(event, home) if home is not None else self._publish(session, event)
            self._forget_if_idle(follow)
            self._notify()
        self._trace("turn-ended", session.stage_id)

    def _turn_ended(self, session: Session, reply: Message) -> TurnEnded:
        meta, at = session.turn_meta(), self._clock()
        return TurnEnded(stage_id=session.stage_id, messages=serialize_thread(session.messages), base=session.base,
                         usage=meta["usage"], model=meta["model"], duration_ms=at - session.started_at,
                         conversation_id=session.conversation_id(), message_id=reply.id, at=at,
                         dropped_turns=meta.get("droppedTurns", 0))

    def _publish(self, session: Session, event: TurnEnded) -> Session:
        """Hand ``event`` to every subscriber in order; the turn reads as running until their writes land."""
        for subscriber in self._turn_subscribers:
            self._hold_until_recorded(session, subscriber(event))
        return session

    def _save_turn(self, event: TurnEnded) -> None:
        """The thread store's subscriber: save the thread on its base; show another tab's merged turns."""
        self._trace("thread-save", event.stage_id)
        result = self._store.save(event.stage_id, event.messages, event.at, base=event.base)
        self._trace("thread-saved", event.stage_id)
        session = self._sessions[event.stage_id]
        session.base = self._store.load(event.stage_id) or []
        if result.merged:  # another tab saved turns on this course meanwhile: show them too
            session.messages = deserialize_thread(session.base)
        self._notices.take_from_store()

    def _keep_apart(self, event: TurnEnded, task_id: str) -> Session:
        """The turn ended on a conversation another tab replaced as the course's active one: history
        records it in conversation ``task_id`` (DESIGN.md §9), the course's stored thread stays the
        other tab's choice, and this tab follows it with the ``history-turn-kept`` notice. Should
        history fail or hang (``RECORD_WAIT_S``), the turn is saved and merged into the thread (§5)."""
        stage_id = event.stage_id

        def save_to_thread() -> None:
            self._store.save(stage_id, event.messages, self._clock(), base=event.base)  # after the other tab's turns
            self._notices.take_from_store()
            shown = self._sessions.get(stage_id)
            if shown is not None and shown.task is None:
                self._sessions[stage_id] = self._load(stage_id)
            self._notify()
        pending = self._history.kept_apart(event, task_id, wait_s=RECORD_WAIT_S, fallback=save_to_thread,
                                           kept=lambda: self.add_notice(Notice("history-turn-kept",
                                                                               {"stage_id": stage_id})))
        follow = self._sessions[stage_id] = self._load(stage_id)  # what the other tab made the course's thread
        self._conversations.forget(stage_id)
        self._hold_until_recorded(follow, pending)
        return follow

    # -- helpers -------------------------------------------------------------

    def _hold_until_recorded(self, session: Session, pending: Awaitable[Any] | None) -> None:
        """The turn reads as running until its history record (turn meta) is written, so a reload
        once the panel says idle never loses it (DESIGN.md §9); at most ``RECORD_WAIT_S`` seconds
        (a history that hangs, e.g. blocked by another tab, must not hold the panel)."""
        if not isinstance(pending, asyncio.Future) or pending.done():
            return
        session.recording = pending

        def release(*_: Any) -> None:
            if session.recording is pending:
                session.recording = None
                self._forget_if_idle(session)
                self._notify()
        pending.add_done_callback(release)
        asyncio.get_running_loop().call_later(RECORD_WAIT_S, release)

    @property
    def _shown(self) -> Session | None:
        return self._sessions.get(self._stage_id) if self._stage_id is not None else None

    def _forget_if_idle(self, session: Session | None) -> None:
        if (session and session.task is None and session.recording is None and session.stage_id != self._stage_id
                and self._sessions.get(session.stage_id) is session):
            del self._sessions[session.stage_id]

    def _load(self, stage_id: str) -> Session:
        """A session holding ``stage_id``'s stored thread."""
        base = self._store.load(stage_id) or []
        self._notices.take_from_store()
        return Session(stage_id, deserialize_thread(base), base)

    def _trace(self, phase: str, stage_id: str | None) -> None:
        for observer in list(self._observers):
            observer(phase, stage_id)

    def _notify(self) -> None:
        if self._deliver is not None:
            self._deliver(self._call_listeners)
        else:
            self._call_listeners()

    def _call_listeners(self) -> None:
        for listener in list(self._listeners):
            listener()
