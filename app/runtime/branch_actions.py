"""Edit, regenerate and the branch picker on the shown course's conversation tree (DESIGN.md §17).

``BranchActions`` is the runtime's collaborator for what a person does to the conversation's tree;
its rules (what the agent reads, which tree is adopted) are ``app.runtime.branches``'s, pure. It
keeps each held session's ``tree``: the chain of its stored thread when the session is put in,
history's tree of the conversation once it arrives (``HistoryPort.branches``). A picker move writes
the new shown path as the course's thread (one write, replacing the old path) and history keeps the
choice (``HistoryPort.show_path``); history's failures are logged and never reach the core (§9).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from app.continuity import derived_ids
from app.model import Message
from app.ports import HistoryPort, ThreadStorePort
from app.projection import deserialize_thread, serialize_thread
from app.runtime.branches import (adopted_tree, edit_request, message_text, regenerate_request, shared_prefix,
                                  slim_path)
from app.runtime.notices import Notices
from app.runtime.session import RUNNING, Session, Sessions
from app.store import Notice
from app.runtime.turns import Turns

__all__ = ["BranchActions"]

_log = logging.getLogger("app.runtime")


class BranchActions:
    """The branch actions of ``app.runtime.AgentRuntime`` (DESIGN.md §17).

    ``store``: the thread store; ``sessions``: the courses held; ``notices``: the store's notices;
    ``turns``: starts the agent's turn; ``history``: optional ``HistoryPort``; ``clock``: epoch ms
    (a picker move's save); ``notify``: the runtime's listeners are called after a change.
    """

    def __init__(self, store: ThreadStorePort, sessions: Sessions, notices: Notices, turns: Turns,
                 history: HistoryPort | None, *, clock: Callable[[], int], notify: Callable[[], None]) -> None:
        self._store = store
        self._sessions = sessions
        self._notices = notices
        self._turns = turns
        self._history = history
        self._clock = clock
        self._notify = notify
        self._painted: dict[str, dict[str, tuple[int, int]]] = {}  # stage id -> message id -> position
        self._held_steps: dict[str, list[tuple[str, int]]] = {}  # picker moves made before history's tree

    def painted_positions(self, stage_id: str, positions: dict[str, tuple[int, int]]) -> None:
        """The pickers the paint record drew for course ``stage_id`` before Python started
        (``{message id: (index, count)}``): they stand for the shown path's positions until history's
        tree of the course arrives, so Python's first render draws the rows painted (DESIGN.md §13,
        §17). Ids off the shown path are never used. Without history no tree comes: they are not kept."""
        if self._history is not None:
            self._painted[stage_id] = dict(positions)

    def siblings(self, message_id: str | None) -> tuple[int, int]:
        """``(index, count)`` of shown message ``message_id`` among its siblings (1-based; DESIGN.md
        §17's picker shows when ``count > 1``); ``(1, 1)`` for a message the tree does not know. Until
        history's tree has arrived, a message of the shown path the paint record drew a picker for
        has that picker's position (``painted_positions``)."""
        session = self._sessions.shown
        painted = self._painted_position(session, message_id)
        if painted is not None:
            return painted
        tree = session.tree if session else None
        if tree is None or not message_id or message_id not in tree:  # O(1): drawn per message per frame
            return 1, 1
        return tree.siblings(message_id)

    def _painted_position(self, session: Session | None, message_id: str | None) -> tuple[int, int] | None:
        painted = self._painted.get(session.stage_id) if session else None
        if painted and message_id in painted and any(m.id == message_id for m in session.messages):
            return painted[message_id]
        return None

    def edit(self, message_id: str, text: str) -> asyncio.Task[None] | None:
        """Edit user message ``message_id`` of the shown path (DESIGN.md §17): a new sibling user
        message (a new id, the same parent) with ``text`` is answered by the agent, which reads the
        shown path before it only, and the new branch is shown. Returns the turn's task, or ``None``
        (ignored) while a reply runs, for blank ``text``, or when ``message_id`` is not a user message
        on the shown path."""
        session = self._sessions.shown
        if session is None or session.busy or not text.strip():
            return None
        before = edit_request(session.messages, message_id)
        if before is None:
            return None
        return self._branch_turn(session, text, before, None)

    def regenerate(self, message_id: str) -> asyncio.Task[None] | None:
        """Another answer to the question assistant message ``message_id`` of the shown path answers
        (DESIGN.md §17): a new sibling reply, answered anew from the shown path up to that question,
        shown. Returns the turn's task, or ``None`` (ignored) while a reply runs or when
        ``message_id`` is not such a reply."""
        session = self._sessions.shown
        if session is None or session.busy:
            return None
        request = regenerate_request(session.messages, message_id)
        if request is None:
            return None
        before, question = request
        return self._branch_turn(session, message_text(question), before, question)

    def show_sibling(self, message_id: str, step: int) -> str | None:
        """The branch picker (DESIGN.md §17): show the sibling ``step`` (-1 previous, +1 next) of shown
        message ``message_id`` and, below it, the path last shown under it (``Tree.step``). The new
        shown path becomes the course's thread (one write, replacing the old path: never merged
        with it as another tab's turns) and history keeps the choice (``HistoryPort.show_path``).
        Returns the id of the sibling now shown, or ``None`` (nothing changed) while a reply runs, at
        either end, or for a message the tree does not know. A move on a picker the paint record drew,
        made before history's tree arrived, returns ``None`` and is made once the tree is there; when
        history gives no tree, on the tree at hand, or it is dropped with a notice (``_play``)."""
        session = self._sessions.shown
        if session is not None and not session.busy and self._painted_position(session, message_id) is not None:
            # a painted picker clicked before history's tree arrived: played once it is there
            self._held_steps.setdefault(session.stage_id, []).append((message_id, step))
            return None
        tree = session.tree if session else None
        position = next((i for i, m in enumerate(session.messages) if m.id == message_id), None) if session else None
        if session is None or session.busy or tree is None or position is None or message_id not in tree:
            return None
        index, count = tree.siblings(message_id)
        if not 1 <= index + step <= count:
            return None
        moved = tree.step(message_id, step)
        path = slim_path(moved)
        stage_id = session.stage_id
        self._store.save(stage_id, path, self._clock())  # no base: the new path replaces the old one
        self._notices.take_from_store()
        session.base = self._store.load(stage_id) or []
        kept = shared_prefix(session.messages, session.base)  # above the fork: the live messages stay, not redrawn
        session.messages = session.messages[:kept] + deserialize_thread(derived_ids(session.base)[kept:])
        session.tree = moved
        if self._history is not None:
            self._keep_choice(stage_id, path)
        self._notify()
        return session.messages[position].id if position < len(session.messages) else None

    def adopt_tree(self, session: Session) -> None:
        """A session was put in (a load, a resume, New conversation, another tab's change): its tree
        is the chain of its stored thread until history's tree of the conversation arrives
        (``HistoryPort.branches``), which then becomes the tree, grown by the shown path (§17)."""
        from app.history.branching import grown  # history's modules load after ready (DESIGN.md §13)

        session.tree = grown(None, session.base)
        self._ask_tree(session)

    def tree_written_elsewhere(self, session: Session) -> None:
        """Another tab's history write on ``session``'s course ended (a turn, a branch shown, an
        import, sync): history is asked for the tree again and it is joined with this tab's, so a
        sibling made there gets its picker here, even when that tab's thread arrived (and this tab
        read the tree) before its history write landed (DESIGN.md §15, §17). The path shown stays."""
        if session.tree is not None:
            self._ask_tree(session)

    def _ask_tree(self, session: Session) -> None:
        """Ask history for ``session``'s tree; once it arrives it is adopted (``adopted_tree``)."""
        if self._history is None:
            self._no_tree(session)
            return
        try:
            pending = asyncio.ensure_future(self._history.branches(session.stage_id))
        except Exception:  # noqa: BLE001 - history never reaches the core (DESIGN.md §9); no loop: tests
            _log.exception("history could not give the tree of %r", session.stage_id)
            self._no_tree(session)
            return

        def arrived(done: asyncio.Future) -> None:
            if done.cancelled() or done.exception() is not None or done.result() is None:
                if not done.cancelled() and done.exception() is not None:
                    _log.error("history could not give the tree of %r", session.stage_id, exc_info=done.exception())
                self._no_tree(session)
                return
            self._painted.pop(session.stage_id, None)  # history answered: its tree is the truth
            held = self._held_steps.pop(session.stage_id, [])
            if not self._sessions.holds(session):
                return
            path = serialize_thread([m for m in session.messages if m.status != RUNNING])
            session.tree = adopted_tree(done.result(), session.tree, path)
            if session is self._sessions.shown:
                self._notify()
                self._play(held)
        pending.add_done_callback(arrived)

    def _no_tree(self, session: Session) -> None:
        """History gave no tree of ``session``'s course (it failed, has none, or there is no history):
        the painted pickers go (the tree at hand, the chain of the stored thread, is the truth now) and
        the picker moves held for the tree are made on it, or dropped with a notice (DESIGN.md §5:
        nothing is lost silently; §17)."""
        painted = self._painted.pop(session.stage_id, None)
        held = self._held_steps.pop(session.stage_id, [])
        if session is self._sessions.shown and self._sessions.holds(session):
            if painted:
                self._notify()
            self._play(held)
        elif held:
            self._notices.add(Notice("branch-move-dropped"))

    def _play(self, held: list[tuple[str, int]]) -> None:
        """Make the picker moves ``held`` (``(message id, step)``, in the order clicked) on the shown
        tree; clicks on one painted picker follow each other (the second steps from the sibling the
        first showed). A move that cannot be made is dropped with a notice (``branch-move-dropped``)."""
        moved: dict[str, str] = {}
        dropped = False
        for message_id, step in held:
            shown = self.show_sibling(moved.get(message_id, message_id), step)
            if shown is None:
                dropped = True
            else:
                moved[message_id] = shown  # the painted picker clicked now stands for that sibling
        if dropped:
            self._notices.add(Notice("branch-move-dropped"))

    def _branch_turn(self, session: Session, text: str, before: list[Message],
                     question: Message | None) -> asyncio.Task[None]:
        """An edit's or a regenerate's turn: the thread is cut after ``before``; for an edit the new
        question is grown into the tree at once (its picker counts it while the reply runs). History
        first adopts the thread as stored (``_keep_stored``): the turn replaces its path there."""
        self._keep_stored(session.stage_id)
        task = self._turns.start(session, text, before=before, question=question)
        if question is None:
            from app.history.branching import grown  # history's modules load after ready (DESIGN.md §13)

            session.tree = grown(session.tree, serialize_thread(session.messages[:-1]))
        self._notify()
        return task

    def _keep_stored(self, stage_id: str) -> None:
        """History adopts ``stage_id``'s thread as stored now (``HistoryPort.adopted``), in its queue
        before the branch's turn is recorded: a thread only ``maic-agent-threads`` held (the TS
        original's, start-up's adoption not run yet) keeps the messages the branch replaces
        (DESIGN.md §17). A failure is logged, never raised (§9)."""
        if self._history is None:
            return
        messages, updated = self._store.load(stage_id), self._store.updated_at(stage_id)
        if not messages or updated is None:
            return
        _logged(lambda: self._history.adopted(stage_id, messages, updated), "adopt the thread of %r", stage_id)

    def _keep_choice(self, stage_id: str, path: list[dict[str, Any]]) -> None:
        """History keeps the branch shown (``HistoryPort.show_path``), so a reload and other tabs show
        it too; a failure is logged, never raised (DESIGN.md §9)."""
        _logged(lambda: self._history.show_path(stage_id, path), "keep the branch shown on %r", stage_id)


def _logged(make: Callable[[], Any], what: str, stage_id: str) -> None:
    """Start history's operation ``make()`` (an awaitable) and leave it: a failure, raised at once or
    by the operation, is logged as "history could not " + ``what`` % ``stage_id``, never raised
    (history never reaches the core, DESIGN.md §9)."""
    try:
        pending = asyncio.ensure_future(make())
    except Exception:  # noqa: BLE001 - history never reaches the core
        _log.exception("history could not " + what, stage_id)
        return
    pending.add_done_callback(lambda done: None if done.cancelled() or done.exception() is None else
                              _log.error("history could not " + what, stage_id, exc_info=done.exception()))
