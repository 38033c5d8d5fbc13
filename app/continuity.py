"""Which conversation a thread belongs to: the one rule that says thread B continues thread A.

Pure and browser-free. The thread store (merging another tab's turns, DESIGN.md §5), history
(archive, resume and reconciliation, §9) and the runtime (a turn that ends after another tab moved
on, §15) all ask the same question: does this thread go on from that one? A thread continues
another when it starts with every message of it, in order (it is the other, or the other with
turns after it). Anything else, a shorter thread, one that differs in any message, or a value that
is not a list of messages, is another conversation.

It is also the single place where another writer's change decides where a turn belongs
(``home_of_ending_turn``): another tab today, another device through sync later. The inputs are
what the runtime knows at the turn's end; the answer is the conversation the turn is recorded in
apart from the course's thread, or ``None`` (saved to the thread, merged after the other writer's
turns). ``switched_after`` reads another tab's history signal and ``conversation_goes_stale`` says
when a course's remembered conversation id must be looked up again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["conversation_goes_stale", "continues", "home_of_ending_turn", "switched_after"]


def continues(thread: Any, base: Any) -> bool:
    """True when ``thread`` (a list of message dicts) goes on from ``base`` (another such list):
    its first ``len(base)`` messages equal ``base``'s (DESIGN.md §15: one rule, every caller).

    >>> continues([{"id": "a"}, {"id": "b"}], [{"id": "a"}])
    True
    >>> continues([{"id": "a"}], [{"id": "a"}])
    True
    >>> continues([{"id": "a"}], [{"id": "a"}, {"id": "b"}])
    False
    >>> continues([{"id": "x"}, {"id": "b"}], [{"id": "a"}])
    False
    >>> continues(None, []) or continues([], None)
    False
    """
    return isinstance(thread, list) and isinstance(base, list) and thread[: len(base)] == base


def home_of_ending_turn(conversation_id: str | None, *, keeps_conversations: bool, switched_to: str | None,
                        thread_replaced: Callable[[], bool]) -> str | None:
    """Where a turn that ends now belongs when another writer may have moved its course on (DESIGN.md
    §5, §9, §15): the id of the conversation it is recorded in apart from the course's thread, or
    ``None`` (it is saved to the course's thread, after any turns the other writer added there).

    ``conversation_id``: the conversation the turn continued (``None`` while not known);
    ``keeps_conversations``: history can record a turn in a conversation of its own; ``switched_to``:
    the conversation another tab's history made the course's active one while the turn ran
    (``switched_after``; ``""`` New conversation, ``None`` no signal); ``thread_replaced()``: the
    stored thread no longer goes on from what the turn built on (``ThreadStore.replaced_elsewhere``),
    asked only when the signal alone does not decide (it re-reads storage).

    >>> home_of_ending_turn("t1", keeps_conversations=True, switched_to="t2", thread_replaced=lambda: False)
    't1'
    >>> home_of_ending_turn("t1", keeps_conversations=True, switched_to="t1", thread_replaced=lambda: False) is None
    True
    >>> home_of_ending_turn("t1", keeps_conversations=True, switched_to=None, thread_replaced=lambda: True)
    't1'
    >>> home_of_ending_turn("t1", keeps_conversations=False, switched_to="", thread_replaced=lambda: True) is None
    True
    """
    if conversation_id is None or not keeps_conversations:
        return None
    if switched_to is not None and switched_to != conversation_id:
        return conversation_id
    return conversation_id if thread_replaced() else None


def switched_after(kind: str, task_id: str) -> str | None:
    """The conversation another tab's history change of ``kind`` made its course's active one
    (DESIGN.md §9): ``task_id`` for ``resume``, ``""`` (a new one) for ``archive`` (New conversation),
    ``None`` for any other change (it moves no turn).

    >>> switched_after("resume", "t2"), switched_after("archive", "t2"), switched_after("delete", "t2")
    ('t2', '', None)
    """
    return task_id if kind == "resume" else "" if kind == "archive" else None


def conversation_goes_stale(changed: Iterable[str], known: Iterable[str], running: Iterable[str]) -> set[str]:
    """The courses whose remembered active-conversation id is let go after another tab wrote the
    thread store: changed there, known here, and no turn of this tab running (a running turn keeps
    its conversation; where it ends is ``home_of_ending_turn``'s question), DESIGN.md §9, §10.

    >>> sorted(conversation_goes_stale({"a", "b", "c"}, {"a", "b"}, {"b"}))
    ['a']
    """
    return set(changed) & set(known) - set(running)
