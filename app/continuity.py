"""Which conversation a thread belongs to: the one rule that says thread B continues thread A.

Pure and browser-free. The thread store (merging another tab's turns, DESIGN.md §5), history
(archive, resume and reconciliation, §9) and the runtime (a turn that ends after another tab moved
on, §15) all ask the same question: does this thread go on from that one? A thread continues
another when it starts with every message of it, in order (it is the other, or the other with
turns after it). Since conversations are trees (DESIGN.md §17), a thread may also be a *branch* of
another (``branches_off``): it starts with the same first message (by id) and then goes another way
(a question edited, a reply regenerated), so it belongs in that conversation as a new sibling
(``belongs``). Anything else, a thread of another first message, or a value that is not a list of
messages, is another conversation. A shorter thread that is the start of the other is neither.

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

__all__ = ["belongs", "branches_off", "conversation_goes_stale", "continues", "home_of_ending_turn", "switched_after"]


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



def branches_off(thread: Any, base: Any, *, sent_on: bool = False) -> bool:
    """True when ``thread`` (a list of message dicts) is a branch of the conversation whose shown path
    is ``base`` (DESIGN.md §17): neither goes on from the other, and both start with the same first
    message, told by its string ``id`` (the text of an edited question differs, its place does not).
    ``sent_on``: the caller knows the turn of ``thread`` was sent on that conversation (its
    conversation id): then a thread with another first message is a branch too, the first question
    edited (a sibling of the first message). A thread with a message without an id (the TS original
    wrote none) is no branch: it has no place in a tree.

    >>> stored = [{"id": "u1"}, {"id": "a1"}]
    >>> branches_off([{"id": "u1"}, {"id": "a2"}], stored), branches_off(stored + [{"id": "u2"}], stored)
    (True, False)
    >>> branches_off([{"id": "u9"}, {"id": "a9"}], stored), branches_off([{"id": "u9"}], stored, sent_on=True)
    (False, True)
    """
    if not (isinstance(thread, list) and isinstance(base, list) and thread and base):
        return False
    if continues(thread, base) or continues(base, thread):
        return False
    if not all(isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] for m in thread):
        return False  # a message without an id has no place in a tree
    if sent_on:
        return True
    first, held = thread[0], base[0]
    ident = first.get("id") if isinstance(first, dict) else None
    return isinstance(ident, str) and bool(ident) and isinstance(held, dict) and held.get("id") == ident


def belongs(thread: Any, base: Any, *, sent_on: bool = False) -> bool:
    """True when ``thread`` is recorded in the conversation whose shown path is ``base``: it goes on
    from it (``continues``) or is a branch of it (``branches_off``; ``sent_on`` as there), DESIGN.md
    §9, §17. Such a thread grows that conversation's tree (``app.history.tree.Tree.grow``); any
    other is another conversation.

    >>> belongs([{"id": "u1"}, {"id": "a2"}], [{"id": "u1"}, {"id": "a1"}]), belongs([{"id": "x"}], [{"id": "u1"}])
    (True, False)
    """
    return continues(thread, base) or branches_off(thread, base, sent_on=sent_on)

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
