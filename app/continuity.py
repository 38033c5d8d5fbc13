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
A thread opened by an assistant's message (a greeting: ``first_question_at``) is told by its first
question, not by that message: conversations imported without ids that open with the same greeting
share its derived id and no question.

It is also the single place where another writer's change decides where a turn belongs
(``home_of_ending_turn``): another tab today, another device through sync later. The inputs are
what the runtime knows at the turn's end; the answer is the conversation the turn is recorded in
apart from the course's thread, or ``None`` (saved to the thread, merged after the other writer's
turns). ``switched_after`` reads another tab's history signal and ``conversation_goes_stale`` says
when a course's remembered conversation id must be looked up again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from typing import Any

__all__ = ["belongs", "branches_off", "conversation_goes_stale", "continues", "derived_ids", "first_question_at",
           "home_of_ending_turn", "is_derived", "starts_with_one_of", "switched_after"]


def _lacks_id(message: Any, seen: set[str]) -> bool:
    ident = message.get("id") if isinstance(message, dict) else None
    return not isinstance(ident, str) or not ident or ident in seen


def _as_projected(message: dict) -> dict:
    """``message`` without an ``id`` that is no string (``7``): the slim projection drops such an id
    (``app.projection.serialize_thread``), so a digest that counted it would give the message one id
    where history reads it raw and another where the thread store reads it slim (two siblings)."""
    if "id" in message and not isinstance(message["id"], str):
        return {k: v for k, v in message.items() if k != "id"}
    return message


def derived_ids(messages: Iterable[Any]) -> list[Any]:
    """``messages`` (a thread: slim message dicts, in order) with an id on each (DESIGN.md §17: a thread
    without ids, written by the TS original, gets ids when it is adopted, without a notice). A message
    without a string id, or with an id an earlier message has, gets ``"h"`` + 16 hex digits of the
    SHA-256 of the canonical JSON of ``[the id of the message before it ("" for the first), the
    message]`` (an ``id`` that is no string, ``7``, left out: the slim projection drops it, so history
    reading the raw record and the thread store reading it slim derive the same id): derived from what is stored alone, so the thread store, another tab, history and
    another device give the same message the same id without writing it (the next save writes it).
    The others, and anything that is no dict, are returned as they are; a changed message is a copy.

    >>> ids = [m["id"] for m in derived_ids([{"id": "a"}, {"role": "user"}, {"id": "a"}])]
    >>> ids[0], ids[1].startswith("h") and len(ids[1]) == 17, ids[2] not in ids[:2]
    ('a', True, True)
    """
    seen: set[str] = set()
    out = []
    previous = ""
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        if _lacks_id(message, seen):
            hashed = _as_projected(message)
            salt = 0
            ident = _digest(previous, hashed, salt)
            while ident in seen:  # a digest an earlier message already has (never seen in practice): salted
                salt += 1
                ident = _digest(previous, hashed, salt)
            message = {**message, "id": ident}
        seen.add(message["id"])
        previous = message["id"]
        out.append(message)
    return out


def _digest(previous: str, hashed: dict, salt: int) -> str:
    """``derived_ids``' id of message ``hashed`` after the message with id ``previous``."""
    import hashlib  # only for a thread without ids: not on start-up's path (DESIGN.md §13)

    body = json.dumps([previous, hashed] if not salt else [previous, hashed, salt], sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return "h" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_SALTS = 4
"""How many of ``derived_ids``' salted digests ``is_derived`` tries (salts are never seen in practice)."""


def is_derived(message: Any, previous: str) -> bool:
    """True when ``message``'s id is the one ``derived_ids`` gives it after the message with id
    ``previous`` (``""`` for a first message): it was stored without a string id (``7``, none) and
    read under one made of its content (DESIGN.md §17). Never raises.

    >>> first = derived_ids([{"role": "user", "id": 7}])[0]
    >>> is_derived(first, ""), is_derived(first, "x"), is_derived({"role": "user", "id": "u"}, "")
    (True, False, False)
    """
    ident = message.get("id") if isinstance(message, dict) else None
    if not isinstance(ident, str) or len(ident) != 17 or not ident.startswith("h"):
        return False
    hashed = {k: v for k, v in message.items() if k != "id"}
    try:
        return any(_digest(previous, hashed, salt) == ident for salt in range(_SALTS))
    except (TypeError, ValueError):  # content that is no JSON: not one derived_ids made
        return False


def _identified(thread: Any) -> Any:
    """``thread`` with ``derived_ids`` when a message of it lacks one (else ``thread`` itself)."""
    if not isinstance(thread, list):
        return thread
    seen: set[str] = set()
    for message in thread:
        if _lacks_id(message, seen):
            return derived_ids(thread)
        seen.add(message["id"])
    return thread


def first_question_at(thread: list) -> int:
    """The position of ``thread``'s first question: its first message that is not an assistant's (0
    when it opens with a question, or with messages that carry no role); ``len(thread)`` when every
    message is an assistant's. The assistant's messages before it (a greeting) are no question: two
    conversations that open with the same one are not one conversation (DESIGN.md §17).

    >>> first_question_at([{"role": "assistant"}, {"role": "user"}]), first_question_at([{"id": "u"}])
    (1, 0)
    """
    for at, message in enumerate(thread):
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            return at
    return len(thread)


def starts_with_one_of(thread: Any, firsts: Collection[str]) -> bool:
    """True when ``thread``'s first question (``first_question_at``: its first message, unless an
    assistant's opens it) is one of ``firsts`` (ids of one conversation tree's first questions and the
    versions they were edited into, DESIGN.md §17), by its id, derived when it has none (``derived_ids``).

    >>> starts_with_one_of([{"id": "u1b"}, {"id": "a"}], {"u1", "u1b"}), starts_with_one_of([{"id": "x"}], {"u1"})
    (True, False)
    """
    if not firsts or not isinstance(thread, list) or not thread or not isinstance(thread[0], dict):
        return False
    at = first_question_at(thread)
    if at >= len(thread):
        at = 0  # no question yet: its first message tells it
    first = derived_ids(thread[:at + 1])[at].get("id")
    return isinstance(first, str) and bool(first) and first in firsts


def continues(thread: Any, base: Any) -> bool:
    """True when ``thread`` (a list of message dicts) goes on from ``base`` (another such list):
    its first ``len(base)`` messages equal ``base``'s (DESIGN.md §15: one rule, every caller). A message
    without an id is compared as the message with its derived id (``derived_ids``, §17), so a thread
    read with ids continues the same thread stored without them.

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
    if not (isinstance(thread, list) and isinstance(base, list)):
        return False
    if thread[: len(base)] != base:  # a message without an id is the one with its derived id (§17)
        thread, base = _identified(thread), _identified(base)
    return thread[: len(base)] == base



def branches_off(thread: Any, base: Any, *, sent_on: bool = False) -> bool:
    """True when ``thread`` (a list of message dicts) is a branch of the conversation whose shown path
    is ``base`` (DESIGN.md §17): neither goes on from the other, and both start with the same first
    message, told by its string ``id`` (the text of an edited question differs, its place does not);
    a thread opened by an assistant's message, with that message and the same first question
    (``first_question_at``: the same greeting alone does not make one conversation).
    ``sent_on``: the caller knows the turn of ``thread`` was sent on that conversation (its
    conversation id): then a thread with another first message is a branch too, the first question
    edited (a sibling of the first message). A message without an id is the message with its derived
    id (``derived_ids``: the TS original wrote none).

    >>> stored = [{"id": "u1"}, {"id": "a1"}]
    >>> branches_off([{"id": "u1"}, {"id": "a2"}], stored), branches_off(stored + [{"id": "u2"}], stored)
    (True, False)
    >>> branches_off([{"id": "u9"}, {"id": "a9"}], stored), branches_off([{"id": "u9"}], stored, sent_on=True)
    (False, True)
    """
    if not (isinstance(thread, list) and isinstance(base, list) and thread and base):
        return False
    thread, base = _identified(thread), _identified(base)
    if continues(thread, base) or continues(base, thread):
        return False
    if not all(isinstance(m, dict) for m in thread):
        return False  # a value that is no message has no place in a tree
    if sent_on:
        return True
    # the same first question, and the same messages before it (a greeting shared by id is no question)
    asked = first_question_at(thread)
    asked = asked if asked < len(thread) else 0  # no question yet: its first message tells it
    if asked >= len(base):
        return False
    for first, held in zip(thread[:asked + 1], base[:asked + 1]):
        ident = first.get("id") if isinstance(first, dict) else None
        if not (isinstance(ident, str) and ident and isinstance(held, dict) and held.get("id") == ident):
            return False
    return True


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
