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

Store notices (DESIGN.md §5) are collected after every store call and shown
once each (``notices``).

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
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.agent import (
    REGENERATE_TOOL, RUN_STAGE, Agent, AgentEvent, TextDelta, ToolCallFinished, ToolCallStarted, UsageReport,
)
from app.agents.errors import error_payload
from app.agents.events import ReplyCut, UsageReported
from app.model import COMPLETE, Message, MessageStatus, TextPart, ToolCallPart
from app.presentation import tool_card_view
from app.projection import CUT, FAILED, STOPPED, deserialize_thread, serialize_thread
from app.stage import StageEdits
from app.store import Notice

__all__ = ["AgentRuntime", "CANCELLED", "FAILED", "RUNNING"]

_log = logging.getLogger(__name__)

RUNNING = MessageStatus(type="running")
RECORD_WAIT_S = 5.0
"""Longest a finished turn waits for its history write before the panel reads idle (DESIGN.md §9)."""
CANCELLED = STOPPED
"""Status of an assistant message whose turn was stopped (stored with a marker, ``app.projection``)."""
# FAILED (from app.projection): status of an assistant message whose agent raised; stored with what
# it had and a marker holding the error, so a reload shows the failure (DESIGN.md §5, §12).
VERSION_WAIT_S = 5.0
"""A turn waits at most this long (seconds) for the versions it made to be stored before it ends."""


@dataclass
class _Session:
    """One course's live thread; ``task`` is its turn in flight, if any.

    ``base``: the stored slim messages the live thread was built on (what the
    store held when it was loaded or last saved); a save hands it to the store
    so that turns another tab saved on this course meanwhile are kept.
    """

    stage_id: str
    messages: list[Message]
    base: list[dict[str, Any]] = field(default_factory=list, repr=False)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    started_at: int = 0  # clock() at send, for the turn's duration (DESIGN.md §9)
    usage: UsageReport | UsageReported | None = None  # the agent's last usage report of the turn in flight
    recording: asyncio.Future | None = field(default=None, repr=False)  # the ended turn's history write (§9)
    conversation: asyncio.Future | None = field(default=None, repr=False)  # id of the conversation the turn continues
    switched_to: str | None = None  # during the turn another tab resumed this id ("" for New conversation)
    cut: bool = False  # the agent said the server cut the reply at its length limit (§12 turn-cut)


def _new_id() -> str:
    return os.urandom(8).hex()  # not uuid: importing it costs ~25 ms at start-up in Pyodide


class AgentRuntime:
    """Reactive per-course thread state over a ``ThreadStore`` (DESIGN.md §4).

    ``store``: an ``app.store.ThreadStore`` (``hydrate``, ``load``, ``save``,
    ``clear``, ``reload``, ``take_notices``, ``memory_only``). ``agent``: an ``app.agent.Agent``.
    ``clock``: epoch milliseconds, read to stamp ``updatedAt`` at save time and
    for ``hydrate``.

    Only the shown course and courses with a turn in flight are held in memory;
    an idle course is read back from the store when it is shown again.
    """

    def __init__(self, store: Any, agent: Agent, *, clock: Callable[[], int], history: Any = None,
                 checkpoints: Any = None) -> None:
        self._history = history
        """Optional history collaborator (DESIGN.md §9): ``turn_completed(stage_id, messages, updated_at,
        usage, duration_ms, message_id, …, dropped_turns=)`` after each saved turn, ``archived(stage_id, messages, updated_at)``
        on New conversation. Its failures never reach the core."""
        self._store = store
        self.checkpoints = checkpoints
        """Optional ``app.checkpoints.SceneCheckpoints``: receives an ``ArtifactSnapshot`` for each
        successful regenerate and each restore (DESIGN.md §10)."""
        self._agent = agent
        self._clock = clock
        self._stage_id: str | None = None
        self._sessions: dict[str, _Session] = {}
        self._listeners: list[Callable[[], None]] = []
        self._deliver: Callable[[Callable[[], None]], None] | None = None  # notify_through
        self._notices: list[Any] = []
        self.stage_edits = StageEdits()
        """Scene versions from regenerate calls of this tab, with their restore snapshots (memory only)."""
        self._conversations: dict[str, asyncio.Future] = {}  # stage id → its active conversation's id (or None)
        self._conversation_changes: dict[str, int] = {}  # stage id → times its conversation was let go

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
        """True while the *shown* course has a turn in flight (``data-running``)."""
        session = self._shown
        return bool(session and (session.task or session.recording))

    @property
    def notices(self) -> tuple[Any, ...]:
        """Store notices (``Notice(code, params)``) to show, oldest first, each distinct one once."""
        return tuple(self._notices)

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every change of what the view shows; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def notify_through(self, deliver: Callable[[Callable[[], None]], None] | None) -> None:
        """Call the listeners through ``deliver(call_listeners)`` from now on (``None``: at once, the
        default). The browser passes ``app.frames.FrameCoalescer.schedule``, so a reply streamed a
        token every few ms is drawn once per animation frame (DESIGN.md §6, §12)."""
        self._deliver = deliver

    # -- commands ------------------------------------------------------------

    def hydrate(self) -> None:
        """Read (and, if needed, migrate or back up) the stored value once at start-up (DESIGN.md §5)."""
        self._store.hydrate(self._clock())
        self._after_store_call()

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
        already runs. Appends the user message (the agent's secret masked, when it has a
        ``mask_secret``) and a running assistant message.
        """
        session = self._shown
        if session is None or session.task is not None or session.recording is not None or not text.strip():
            return None
        history = list(session.messages)
        reply = Message(id=_new_id(), role="assistant", content=[], status=RUNNING)
        mask = getattr(self._agent, "mask_secret", None)  # an API key typed into a message is not stored (§12)
        shown = mask(text) if mask is not None else text
        session.messages += [Message(id=_new_id(), role="user", content=[TextPart(text=shown)]), reply]
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
            self._history.archived(session.stage_id, session.base, self._store.updated_at(session.stage_id))
        self._sessions[session.stage_id] = _Session(session.stage_id, [])
        self._forget_conversation(session.stage_id)  # the next conversation gets its own id
        self._store.clear(session.stage_id)
        self._after_store_call()
        self._notify()

    def replace_thread(self, stage_id: str, messages: list[dict[str, Any]]) -> bool:
        """Resume: ``messages`` (slim) become ``stage_id``'s active thread with ONE write of the store
        (DESIGN.md §9); continuing it appends. Refused (False) while that course runs a turn."""
        session = self._sessions.get(stage_id)
        if session is not None and session.task is not None:
            return False
        self._store.save(stage_id, list(messages), self._clock())
        self._forget_conversation(stage_id)  # the resumed conversation (history's new head)
        base = self._store.load(stage_id) or []
        self._after_store_call()
        if stage_id == self._stage_id or session is not None:
            self._sessions[stage_id] = _Session(stage_id, deserialize_thread(base), base)
        self._notify()
        return True

    def add_notice(self, notice: Any) -> None:
        """Show ``notice`` (an ``app.store.Notice``) raised outside the store once, like the store's:
        a collaborator's (history unavailable) or the browser layer's at start-up
        (``indexeddb-unavailable``, DESIGN.md §5)."""
        if notice not in self._notices:
            self._notices.append(notice)
            self._notify()

    def download_damaged(self) -> str | None:
        """The ``storage-read-only`` notice's action: download the damaged stored value as a file, which
        becomes its backup, and let the store write again (``ThreadStore.download_damaged``,
        DESIGN.md §5). Returns the file name, or ``None``."""
        name = self._store.download_damaged(self._clock())
        self._after_store_call()
        self._notify()
        return name

    def dismiss_notice(self, code: str) -> None:
        """Hide the notices with ``code`` (the user closed them); a new occurrence shows again."""
        if self._drop_notices(code):
            self._notify()

    def restore_snapshot(self, tool_call_id: str) -> bool:
        """Restore the scene version before regenerate call ``tool_call_id`` (its card's button).

        Returns False when no in-memory snapshot exists (e.g. a card restored
        from storage, DESIGN.md §4). ``maic-agent-threads`` is not written; with
        ``checkpoints``, the document before the call becomes a new version
        (source ``restore``, DESIGN.md §10).
        """
        snapshot = self.stage_edits.snapshot(tool_call_id)
        restored = self.stage_edits.restore(tool_call_id)
        if restored:
            stage_id, scene_id, version = snapshot
            if self.checkpoints is not None and version.before is not None:
                self._emit_snapshot(stage_id, scene_id, version.before, "restore", None, None)
            self._notify()
        return restored

    async def restore_checkpoint(self, checkpoint_id: str) -> Any:
        """Make checkpoint ``checkpoint_id``'s document its scene's current one, as a new version
        with source ``restore`` (DESIGN.md §10); returns its timeline item. Raises
        ``app.checkpoints.CheckpointNotFound``."""
        item, document = await self.checkpoints.read_model.document(checkpoint_id)
        meta = item.metadata
        return await self._restore_as_version(str(meta["stageId"]), str(meta["sceneId"]), document,
                                              meta.get("artifactVersionId"))

    async def restore_original(self, stage_id: str, scene_id: str) -> Any:
        """Make the course's own document of ``scene_id`` (version 0) current again, as a new
        version with source ``restore`` (DESIGN.md §10; after a reload the card's in-memory
        button is gone, §4, and this is how the original comes back). Returns its timeline item;
        ``None`` when the course has no such scene."""
        document = self.checkpoints.original(stage_id, scene_id)
        if document is None:
            return None
        from app.checkpoints.paths import artifact_id

        return await self._restore_as_version(stage_id, scene_id, document, f"{artifact_id(stage_id, scene_id)}:v0")

    async def _restore_as_version(self, stage_id: str, scene_id: str, document: Any, restored_from: str | None) -> Any:
        """Emit ``document`` as ``scene_id``'s new version with source ``restore`` in the course's active
        conversation, naming the version it came from; returns its timeline item (DESIGN.md §10)."""
        return await self._emit_snapshot(stage_id, scene_id, document, "restore", None, None,
                                         restored_from=restored_from, conversation_id=await self.conversation(stage_id))

    def conversation_key(self, stage_id: str) -> tuple[str | None, int]:
        """What a view keyed on the active conversation compares: ``(conversation_id, n)`` where ``n``
        counts the times the course's conversation was let go (New conversation, resume, another
        tab), so a change shows even while the id is not known yet."""
        return self.conversation_id(stage_id), self._conversation_changes.get(stage_id, 0)

    def _forget_conversation(self, stage_id: str) -> None:
        self._conversations.pop(stage_id, None)
        self._conversation_changes[stage_id] = self._conversation_changes.get(stage_id, 0) + 1

    def conversation_id(self, stage_id: str) -> str | None:
        """The id of course ``stage_id``'s active conversation once known (history's ``taskId`` of it,
        DESIGN.md §9, §10), without waiting; ``None`` until ``conversation`` has found or allocated it."""
        known = self._conversations.get(stage_id)
        return known.result() if known is not None and known.done() else None

    async def conversation(self, stage_id: str, *, allocate: bool = True) -> str | None:
        """The id of course ``stage_id``'s active conversation, the conversation a checkpoint belongs to
        (DESIGN.md §10): history's head ``taskId`` for that course, allocated (and written as the head,
        ``HistoryService.head_task_id``) when the conversation starts, so its turns get the same id.
        New conversation and resume make it follow the head. Without history (or with history
        unavailable) an in-memory id per conversation. ``allocate=False`` only looks: ``None`` when the
        course has no conversation yet. Never raises."""
        known = self._conversations.get(stage_id)
        if known is not None:
            found = await asyncio.shield(known)
            if found is not None or not allocate:
                return found
            if self._conversations.get(stage_id) is not known:
                return await self.conversation(stage_id, allocate=allocate)
        future = asyncio.ensure_future(self._head_task_id(stage_id, allocate))
        self._conversations[stage_id] = future
        return await asyncio.shield(future)

    async def _head_task_id(self, stage_id: str, allocate: bool) -> str | None:
        task_id = None
        if self._history is not None and hasattr(self._history, "head_task_id"):
            try:
                task_id = await self._history.head_task_id(stage_id, allocate=allocate)
            except Exception:  # noqa: BLE001 - history never reaches the core (DESIGN.md §9)
                _log.exception("history could not name the conversation of %r", stage_id)
        if task_id is None and allocate:
            from app.history.records import new_task_id

            task_id = new_task_id(self._clock())  # history unavailable: this conversation's id in memory
        return task_id

    def on_storage_changed(self) -> None:
        """Another tab wrote the key: re-read it; reload the shown course if it changed and is idle."""
        changed = self._store.reload()
        self._after_store_call()
        for stage_id in changed:  # another tab may have started or resumed a conversation there
            if stage_id in self._conversations and not (stage_id in self._sessions and self._sessions[stage_id].task):
                self._forget_conversation(stage_id)
        session = self._shown
        if session and session.task is None and session.stage_id in changed:
            self._sessions[session.stage_id] = self._load(session.stage_id)
            self._notify()

    # -- the turn ------------------------------------------------------------

    async def _run(self, session: _Session, history: list[Message], text: str, reply: Message) -> None:
        RUN_STAGE.set(session.stage_id)  # the tool reads this course's scenes (this task's context only)
        writes: list[asyncio.Future] = []
        async for event in self._agent.run(history, text):
            if isinstance(event, (UsageReport, UsageReported)):  # the demo's and the model back end's
                session.usage = event
                continue
            if isinstance(event, ReplyCut):
                session.cut = True
                continue
            part = _apply(reply, event)
            if part is not None and part.tool_name == REGENERATE_TOOL and not part.is_error:
                conversation = await self.conversation(session.stage_id) if self.checkpoints is not None else None
                write = self._record_scene_version(session.stage_id, part, reply.id, conversation)
                if write is not None:
                    writes.append(write)
            if session is self._shown:
                self._notify()
        if writes:  # the turn ends once its versions are stored: at idle the stage shows them (DESIGN.md §10)
            await asyncio.wait(writes, timeout=VERSION_WAIT_S)  # not gather: a Stop leaves the writes running

    def _finish(self, session: _Session, reply: Message, task: asyncio.Task[None]) -> None:
        """Done callback of every turn (runs even if the task was cancelled before it started)."""
        error = None if task.cancelled() else task.exception()
        if self._sessions.get(session.stage_id) is not session:
            return  # New conversation superseded this run: discard its output
        session.task = None
        if error is not None:
            _log.error("agent turn on %r failed", session.stage_id, exc_info=error)
        if task.cancelled() or error is not None:
            reply.status = CANCELLED if error is None else _failed(error)
            for part in reply.content:
                if isinstance(part, ToolCallPart) and part.result is None:
                    part.is_error = True  # interrupted: saved with isError and no result
        else:
            reply.status = CUT if session.cut else COMPLETE
        task_id = self._replaced_elsewhere(session)
        if task_id is not None:
            self._keep_in_its_conversation(session, reply, task_id)
            return
        own = serialize_thread(session.messages)
        result = self._store.save(session.stage_id, own, self._clock(), base=session.base)
        session.base = self._store.load(session.stage_id) or []
        if result.merged:  # another tab saved turns on this course meanwhile: show them too
            session.messages = deserialize_thread(session.base)
        self._after_store_call()
        if self._history is not None:
            meta = self._turn_meta(session)
            self._hold_until_recorded(session, self._history.turn_completed(
                session.stage_id, session.base if result.written else (
                    serialize_thread(session.messages) if result.merged else own),
                self._store.updated_at(session.stage_id), meta["usage"], meta["model"],
                self._clock() - session.started_at, reply.id, self._conversation_of(session), own,
                dropped_turns=meta.get("droppedTurns", 0)))
        self._forget_if_idle(session)
        self._notify()

    def _turn_meta(self, session: _Session) -> dict[str, Any]:
        # usage None = not reported (DESIGN.md §12: a server without usage, or a turn that failed first)
        return session.usage.to_turn_meta() if session.usage is not None else {"model": "", "usage": None}

    def _replaced_elsewhere(self, session: _Session) -> str | None:
        """The id of the conversation an ending turn continues, when another tab made another
        conversation ``session``'s course's active one while it ran (resumed one, or started a new
        one: the stored thread no longer goes on from ``session.base``, ``ThreadStore.replaced_elsewhere``)
        and history can keep the turn with its own conversation; else ``None`` (the turn is saved and
        merged as usual, DESIGN.md §5)."""
        task_id = self._conversation_of(session)
        if self._history is None or task_id is None or not getattr(self._history, "keeps_conversations", False):
            return None
        if session.switched_to is not None and session.switched_to != task_id:  # another tab's history said so
            return task_id
        replaced = getattr(self._store, "replaced_elsewhere", None)
        return task_id if session.base and replaced is not None and replaced(session.stage_id, session.base) else None

    @staticmethod
    def _conversation_of(session: _Session) -> str | None:
        """The id of the conversation ``session``'s turn continues, once known (taken at send)."""
        pending = session.conversation
        if pending is None or not pending.done() or pending.cancelled() or pending.exception() is not None:
            return None
        return pending.result() if isinstance(pending.result(), str) else None

    def conversation_changed_elsewhere(self, stage_id: str, kind: str, task_id: str) -> None:
        """Another tab's history change (``kind`` ``resume`` of ``task_id``, or ``archive``: New
        conversation) on ``stage_id``: a turn running there no longer continues the course's active
        conversation, even when nothing was stored to build on (a first turn), so it ends in its own
        (``_keep_in_its_conversation``, DESIGN.md §9)."""
        session = self._sessions.get(stage_id)
        if session is None or session.task is None or kind not in ("resume", "archive"):
            return
        session.switched_to = "" if kind == "archive" else task_id  # compared with the turn's own id at its end

    def _keep_in_its_conversation(self, session: _Session, reply: Message, task_id: str) -> None:
        """The turn ended on a conversation another tab replaced as the course's active one: history
        records it in conversation ``task_id`` (DESIGN.md §9), the course's stored thread stays the
        other tab's choice, and this tab follows it with the ``history-turn-kept`` notice. Should
        history fail to write it, or not finish within ``RECORD_WAIT_S``, the turn is saved and merged
        into the stored thread instead, as without history (DESIGN.md §5): never lost."""
        stage_id, messages = session.stage_id, serialize_thread(session.messages)
        meta = self._turn_meta(session)
        pending = self._history.turn_completed_in(task_id, stage_id, messages, meta["usage"], meta["model"],
                                                  self._clock() - session.started_at, reply.id,
                                                  dropped_turns=meta.get("droppedTurns", 0))
        follow = self._load(stage_id)  # what the other tab made the course's thread
        self._sessions[stage_id] = follow
        self._forget_conversation(stage_id)
        base, saved = session.base, []

        def save_to_thread() -> None:
            if saved:
                return
            saved.append(True)
            _log.error("history did not keep a turn of %r in its conversation: saved to the thread", stage_id)
            self._store.save(stage_id, messages, self._clock(), base=base)  # merged after the other tab's turns
            self._after_store_call()
            shown = self._sessions.get(stage_id)
            if shown is not None and shown.task is None:
                self._sessions[stage_id] = self._load(stage_id)
            self._notify()

        def recorded(done: asyncio.Future) -> None:
            if done.cancelled() or done.exception() is not None or done.result() is None:
                save_to_thread()
            elif not saved:
                self.add_notice(Notice("history-turn-kept", {"stage_id": stage_id}))
        # A history write that hangs past RECORD_WAIT_S (the panel is released then) must not leave the
        # turn only in memory: it is saved to the thread too (kept twice rather than lost).
        asyncio.get_running_loop().call_later(RECORD_WAIT_S, lambda: None if pending.done() else save_to_thread())
        pending.add_done_callback(recorded)
        self._hold_until_recorded(follow, pending)
        self._forget_if_idle(follow)
        self._notify()

    # -- helpers -------------------------------------------------------------

    def _hold_until_recorded(self, session: _Session, pending: Any) -> None:
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

    def _record_scene_version(self, stage_id: str, part: ToolCallPart, turn_id: str | None = None,
                              conversation_id: str | None = None) -> asyncio.Future | None:
        """Note the regenerate in ``stage_edits`` and emit its snapshot; returns the version's write."""
        card = tool_card_view(part)
        if card.scene_id is None or card.element_count is None:
            return None
        before = document = None
        if self.checkpoints is not None:
            from app.checkpoints.documents import SceneDocument

            before = self.checkpoints.document(stage_id, card.scene_id)
            try:
                document = SceneDocument.model_validate(part.result["details"]["content"])
            except Exception:  # noqa: BLE001 - a result that is no scene document makes no version
                _log.warning("regenerate result of %s is not a scene document", part.tool_call_id)
        self.stage_edits.record(stage_id, card.scene_id, part.tool_call_id, element_count=card.element_count,
                                before=before if document is not None else None)
        if document is None:
            return None
        return self._emit_snapshot(stage_id, card.scene_id, document, REGENERATE_TOOL, turn_id, part.tool_call_id,
                                   conversation_id=conversation_id)

    def _emit_snapshot(self, stage_id: str, scene_id: str, document: Any, source: str, turn_id: str | None,
                       tool_call_id: str | None, restored_from: str | None = None, *,
                       conversation_id: str | None = None) -> asyncio.Future:
        """Hand one ``ArtifactSnapshot`` to the checkpoints: the only way a version is written.
        ``conversation_id``: the active conversation's (looked up first when not given)."""
        from app.checkpoints.events import ArtifactSnapshot

        conversation_id = conversation_id or self.conversation_id(stage_id)
        if conversation_id is None:  # not known yet: the version follows once it is
            async def later() -> Any:
                found = await self.conversation(stage_id)
                return await self._emit_snapshot(stage_id, scene_id, document, source, turn_id, tool_call_id,
                                                 restored_from, conversation_id=found)
            return asyncio.ensure_future(later())
        event = ArtifactSnapshot(stage_id=stage_id, scene_id=scene_id, document=document, source=source,
                                 conversation_id=conversation_id, turn_id=turn_id,
                                 tool_call_id=tool_call_id, at=self._clock(), restored_from=restored_from)
        return self.checkpoints.submit(event)

    @property
    def _shown(self) -> _Session | None:
        return self._sessions.get(self._stage_id) if self._stage_id is not None else None

    def _forget_if_idle(self, session: _Session | None) -> None:
        if (session and session.task is None and session.recording is None and session.stage_id != self._stage_id
                and self._sessions.get(session.stage_id) is session):
            del self._sessions[session.stage_id]

    def _load(self, stage_id: str) -> _Session:
        """A session holding ``stage_id``'s stored thread."""
        base = self._store.load(stage_id) or []
        self._after_store_call()
        return _Session(stage_id, deserialize_thread(base), base)

    def _after_store_call(self) -> None:
        """Take the store's new notices; a ``storage-full`` notice stays only while its course
        is still kept in memory (``store.memory_only()``, DESIGN.md §5)."""
        fresh = False
        for notice in self._store.take_notices():
            if notice not in self._notices:
                self._notices.append(notice)
                fresh = True
        memory_only = self._store.memory_only()
        holds = getattr(self._store, "notice_holds", lambda _notice: True)  # read-only, pruned elsewhere (§5)
        kept = [n for n in self._notices
                if (n.code != "storage-full" or n.params.get("stage_id") in memory_only) and holds(n)]
        if fresh or len(kept) != len(self._notices):
            self._notices = kept
            self._notify()

    def _drop_notices(self, code: str) -> bool:
        """Remove the notices with ``code``; True when there were any."""
        kept = [n for n in self._notices if n.code != code]
        dropped = len(kept) != len(self._notices)
        self._notices = kept
        return dropped

    def _notify(self) -> None:
        if self._deliver is not None:
            self._deliver(self._call_listeners)
        else:
            self._call_listeners()

    def _call_listeners(self) -> None:
        for listener in list(self._listeners):
            listener()


def _failed(error: BaseException) -> MessageStatus:
    """``FAILED``, carrying ``{"code", "params"}`` when the agent said why (``app.agents.errors.ModelError``)."""
    payload = error_payload(error)
    return FAILED if payload["code"] == "unknown" else FAILED.model_copy(update={"error": payload})


def _apply(reply: Message, event: AgentEvent) -> ToolCallPart | None:
    """Fold one agent event into the assistant message; returns the tool call a result finished."""
    if isinstance(event, TextDelta):
        last = reply.content[-1] if reply.content else None
        if isinstance(last, TextPart):
            last.text += event.text
        else:
            reply.content.append(TextPart(text=event.text))
    elif isinstance(event, ToolCallStarted):
        reply.content.append(ToolCallPart(tool_call_id=event.tool_call_id, tool_name=event.tool_name, args=event.args))
    elif isinstance(event, ToolCallFinished):
        for part in reply.content:
            if isinstance(part, ToolCallPart) and part.tool_call_id == event.tool_call_id:
                part.result, part.is_error = event.result, (True if event.is_error else None)
                return part
    return None
