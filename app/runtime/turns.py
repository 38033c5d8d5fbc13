"""A course's agent turn, from send to its one ``TurnEnded`` (DESIGN.md §4, §9, §10, §12, §15).

``Turns`` runs each turn as a task on the session it started on (a run belongs to its course even
when another course is shown), folds the agent's events into the reply, notes the scene versions
it makes, and at its end serializes the thread once into a ``TurnEnded``: the thread store's write
and history's record subscribe to it, or, when another writer moved the course on
(``app.continuity.home_of_ending_turn``), history keeps the turn in its own conversation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from app.agent import REGENERATE_TOOL, RUN_STAGE, Agent, UsageSoFar
from app.agents.events import ReplyCut, UsageReported
from app.continuity import home_of_ending_turn
from app.model import Message, TextPart
from app.ports import ThreadStorePort
from app.projection import live_thread, serialize_thread
from app.runtime.conversations import Conversations
from app.runtime.notices import Notices
from app.runtime.notify import Notifier
from app.runtime.scenes import SceneVersions
from app.runtime.session import RUNNING, Session, Sessions, apply_event, end_reply, new_id
from app.runtime.turn_end import HistoryTurns, TurnEnded, TurnSubscriber
from app.json_steps import run_paused
from app.store import Notice
from app.store.encoded import encode_ahead_steps

__all__ = ["Turns"]

VERSION_WAIT_S = 5.0
"""A turn waits at most this long (seconds) for the versions it made to be stored before it ends."""


def _next_task():
    """The event loop's next round (the browser runs its other tasks, input and paint, first)."""
    return asyncio.sleep(0)


def first_questions(tree: Any) -> frozenset[str]:
    """The ids of ``tree``'s first messages (the first question and the versions it was edited into,
    DESIGN.md §17); empty without a tree. The thread store tells a path through another of them
    from another conversation's thread by them (``app.store.tabs.rebase``). In a tree opened by an
    assistant's message the first questions are those after it (``app.continuity.first_question_at``)."""
    if tree is None:
        return frozenset()
    firsts = tree.children()
    # a tree opened by an assistant's message (a greeting): its first questions are the questions after it
    while firsts and all(tree.nodes[i].get("role") == "assistant" for i in firsts):
        firsts = [child for first in firsts for child in tree.children(first)]
    return frozenset(firsts)


class Turns:
    """Runs and ends the turns of ``sessions`` (module docstring).

    ``agent``: answers each turn; ``store``: the thread store; ``notices``, ``conversations``,
    ``scenes``, ``history`` (optional): the runtime's parts a turn uses; ``clock``: epoch ms;
    ``notify()``: the view redraws (``notify.held()`` gathers a turn's end into one redraw); ``trace(phase, stage_id)``: ``app.runtime.TRACE_PHASES``;
    ``wait_s()``: the longest a turn waits for its history write (seconds, read at each use).
    """

    def __init__(self, agent: Agent, store: ThreadStorePort, sessions: Sessions, *, notices: Notices,
                 conversations: Conversations, scenes: SceneVersions, history: HistoryTurns | None,
                 clock: Callable[[], int], notify: Notifier,
                 trace: Callable[[str, str | None], None], wait_s: Callable[[], float]) -> None:
        self._agent, self._store, self._sessions = agent, store, sessions
        self._notices, self._conversations, self._scenes, self._history = notices, conversations, scenes, history
        self._clock, self._notify, self._trace, self._wait_s = clock, notify, trace, wait_s
        self._subscribers: list[TurnSubscriber] = [self._save_turn]  # the thread store's write first (§4)
        if history is not None:
            self._subscribers.append(self._record_turn)

    def subscribe(self, subscriber: TurnSubscriber) -> None:
        """Hand every ``TurnEnded`` that goes to its course's thread to ``subscriber`` too, last."""
        self._subscribers.append(subscriber)

    def start(self, session: Session, text: str, *, before: list[Message] | None = None,
              question: Message | None = None) -> asyncio.Task[None]:
        """Start a turn on ``session``: the user message (the agent's secret masked, §12) and a running
        reply are appended; returns the turn's task.

        ``before``: the shown path the turn answers after (DESIGN.md §17), in place of the whole
        thread: an edit or a regenerate cuts the thread there; the agent reads ``before`` only.
        ``question``: the user message answered again (a regenerate), kept as it is, instead of a new
        one with ``text``."""
        history = list(session.messages if before is None else before)
        reply = Message(id=new_id(), role="assistant", content=[], status=RUNNING)
        if question is None:
            question = Message(id=new_id(), role="user", content=[TextPart(text=self._agent.mask_secret(text))])
        session.messages = history + [question, reply]
        if self._scenes.checkpoints is not None or self._history is not None:
            # a conversation starts (or goes on): its id is at hand for its versions, and for its turn
            # should another tab make another conversation the course's active one meanwhile (_finish)
            session.conversation = asyncio.ensure_future(self._conversations.id(session.stage_id))
        task = asyncio.create_task(self._run(session, history, text, reply))
        session.task, session.started_at, session.usage, session.switched_to = task, self._clock(), None, None
        session.cut = False
        task.add_done_callback(lambda done: self._finish(session, reply, done))
        return task

    async def _run(self, session: Session, history: list[Message], text: str, reply: Message) -> None:
        RUN_STAGE.set(session.stage_id)  # the tool reads this course's scenes (this task's context only)
        writes: list[Awaitable[Any]] = []
        async for event in self._agent.run(history, text):
            if isinstance(event, (UsageSoFar, UsageReported)):  # the demo's and the model back end's
                session.usage = event
                continue
            if isinstance(event, ReplyCut):
                session.cut = True
                continue
            part = apply_event(reply, event)
            if part is not None and part.tool_name == REGENERATE_TOOL and not part.is_error:
                checkpoints = self._scenes.checkpoints is not None
                conversation = await self._conversations.id(session.stage_id) if checkpoints else None
                write = self._scenes.record(session.stage_id, part, reply.id, conversation)
                if write is not None:
                    writes.append(write)
            if session is self._sessions.shown:
                self._notify()
        if writes:  # the turn ends once its versions are stored: at idle the stage shows them (DESIGN.md §10)
            await asyncio.wait(writes, timeout=VERSION_WAIT_S)  # not gather: a Stop leaves the writes running
        # The turn's long texts (a pasted document, a reply of megabytes) are encoded for the thread
        # store now, in slices with the page's turn between them: the save at the turn's end (_finish,
        # one task) takes them as encoded instead of encoding them there (DESIGN.md §16).
        await run_paused(encode_ahead_steps(serialize_thread(session.messages[-2:])), _next_task)

    def _finish(self, session: Session, reply: Message, task: asyncio.Task[None]) -> None:
        """Done callback of every turn (runs even if the task was cancelled before it started): the
        reply gets its final status, the thread is serialized once into a ``TurnEnded``, which goes to
        the conversation ``app.continuity`` names, or to the subscribers (§4, §9, §15)."""
        self._trace("turn-end", session.stage_id)
        with self._notify.held():  # the save's notice and the final status: one redraw (app.runtime.notify)
            if self._sessions.holds(session):  # else New conversation superseded the run: its output is discarded
                session.task = None
                end_reply(reply, task, cut=session.cut, stage_id=session.stage_id)
                event = self._turn_ended(session, reply)
                history = self._history
                home = home_of_ending_turn(
                    event.conversation_id, keeps_conversations=history is not None and history.keeps_conversations,
                    switched_to=session.switched_to,
                    thread_replaced=lambda: bool(event.base) and self._store.replaced_elsewhere(
                        event.stage_id, event.base, first_questions(session.tree)))
                follow = self._keep_apart(event, home) if home is not None else self._publish(session, event)
                self._sessions.forget_if_idle(follow)
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
        for subscriber in self._subscribers:
            session.hold(subscriber(event), self._wait_s(), self._released)
        return session

    def _save_turn(self, event: TurnEnded) -> None:
        """The thread store's subscriber: save the thread on its base; show another tab's merged turns.
        While history keeps the conversation's tree, another tab's turn sent on the same message is
        its sibling there, not merged into this path (``app.store.tabs.rebase``, DESIGN.md §17)."""
        self._trace("thread-save", event.stage_id)
        session = self._sessions[event.stage_id]
        history = self._history
        result = self._store.save(event.stage_id, event.messages, event.at, base=event.base,
                                  firsts=first_questions(session.tree),
                                  tree_kept=history is not None and history.keeps_conversations)
        self._trace("thread-saved", event.stage_id)
        session.base = self._store.load(event.stage_id) or []
        if result.merged:  # another tab saved turns on this course meanwhile: show them too
            session.messages = live_thread(session.base)
        from app.history.branching import grown  # history's modules load after ready (DESIGN.md §13)

        session.tree = grown(session.tree, session.base)  # the turn's path shown at every fork (§17)
        self._notices.take_from_store()

    def _record_turn(self, event: TurnEnded) -> Awaitable[Any]:
        """History's subscriber (``HistoryTurns.turn_ended``); once its write lands, the course's
        ``storage-full`` notice says whether history holds the turn (``Notices.held_by_history``, §5)."""
        pending = asyncio.ensure_future(self._history.turn_ended(event))

        def recorded(done: asyncio.Future) -> None:
            holds = not done.cancelled() and done.exception() is None and done.result() is not None
            self._notices.held_by_history(event.stage_id, holds)
        pending.add_done_callback(recorded)
        return pending

    def _keep_apart(self, event: TurnEnded, task_id: str) -> Session:
        """The turn ended on a conversation another tab replaced as the course's active one: history
        records it in conversation ``task_id`` (DESIGN.md §9), the course's stored thread stays the
        other tab's choice, and this tab follows it with the ``history-turn-kept`` notice. Should
        history fail or hang (``wait_s``), the turn is saved and merged into the thread (§5)."""
        stage_id = event.stage_id

        def save_to_thread() -> None:
            self._store.save(stage_id, event.messages, self._clock(), base=event.base)  # after the other tab's turns
            self._notices.take_from_store()
            shown = self._sessions.get(stage_id)
            if shown is not None and shown.task is None:
                self._sessions.load(stage_id)
            self._notify()
        pending = self._history.kept_apart(event, task_id, wait_s=self._wait_s(), fallback=save_to_thread,
                                           kept=lambda: self._notices.add(Notice("history-turn-kept",
                                                                                 {"stage_id": stage_id})))
        follow = self._sessions.load(stage_id)  # what the other tab made the course's thread
        self._conversations.forget(stage_id)
        follow.hold(pending, self._wait_s(), self._released)
        return follow

    def _released(self, session: Session) -> None:
        self._sessions.forget_if_idle(session)
        self._notify()
