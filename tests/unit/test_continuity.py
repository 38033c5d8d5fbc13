"""The one rule for "thread B continues thread A" (app/continuity.py, DESIGN.md §15)."""

from __future__ import annotations

import doctest

import app.continuity
from app.continuity import belongs, branches_off, continues

A = {"id": "a", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
B = {"id": "b", "role": "assistant", "parts": [{"type": "text", "text": "hello"}]}


def test_a_thread_continues_itself_and_any_start_of_itself():
    assert continues([A, B], [A, B])
    assert continues([A, B], [A])
    assert continues([A], [])


def test_a_shorter_or_different_thread_is_another_conversation():
    assert not continues([A], [A, B])
    assert not continues([B, A], [A])
    edited = {**A, "parts": [{"type": "text", "text": "hi!"}]}
    assert not continues([edited, B], [A])


def test_values_that_are_not_lists_of_messages_never_continue():
    assert not continues(None, [A])
    assert not continues([A], None)
    assert not continues({"messages": [A]}, [A])


def test_the_examples_in_its_docstring_hold():
    assert doctest.testmod(app.continuity).failed == 0


def test_a_thread_from_the_same_first_message_that_departs_is_a_branch_of_it():
    """DESIGN.md §17: an edited question or a regenerated reply makes a new sibling; the thread that
    holds it starts with the conversation's first message (same id) and goes another way."""
    from app.continuity import belongs, branches_off

    stored = [{"id": "u1"}, {"id": "a1"}, {"id": "u2"}, {"id": "a2"}]
    regenerated = [{"id": "u1"}, {"id": "a1"}, {"id": "u2"}, {"id": "a2b"}]
    edited = [{"id": "u1"}, {"id": "a1"}, {"id": "u2b"}, {"id": "a2c"}]
    assert branches_off(regenerated, stored) and branches_off(edited, stored)
    assert belongs(regenerated, stored) and belongs(stored + [{"id": "u3"}], stored)
    # going on from it, or being its start, is no branch; nor is a thread of another first message
    assert not branches_off(stored + [{"id": "u3"}], stored) and not branches_off(stored[:2], stored)
    assert not branches_off([{"id": "x"}, {"id": "a1"}], stored) and not belongs([{"id": "x"}], stored)
    # the first message the same by id: a message without an id (the TS original wrote none) is the
    # message with its derived id, the same for the same message at the same place (DESIGN.md §17)
    assert branches_off([{"role": "user"}, {"id": "b"}], [{"role": "user"}, {"id": "a"}])
    assert not branches_off([{"role": "user", "x": 1}, {"id": "b"}], [{"role": "user"}, {"id": "a"}])
    assert not branches_off([], stored) and not branches_off(stored, None) and not belongs(None, [])
    # the first question edited: no message in common, a branch only when the turn was sent on it
    first_edited = [{"id": "u1b"}, {"id": "a1b"}]
    assert not branches_off(first_edited, stored)
    assert branches_off(first_edited, stored, sent_on=True) and not branches_off(stored + [{"id": "u3"}], stored,
                                                                                  sent_on=True)


def test_threads_opened_by_the_same_assistant_message_are_told_apart_by_their_first_question():
    """A greeting that opens conversations imported without ids has the same derived id in each: it
    does not make them one conversation, nor one a version of the other's first question (DESIGN.md
    §17); their first questions tell them apart, in history and in the thread store between tabs."""
    from app.history.tree import Tree
    from app.runtime.turns import first_questions
    from app.store.tabs import replaced

    def m(role, ident):
        return {"role": role, "id": ident, "content": [{"type": "text", "text": ident}]}

    greeting = m("assistant", "g")
    one, other = [greeting, m("user", "u1"), m("assistant", "a1")], [greeting, m("user", "x1"), m("assistant", "x2")]
    assert not branches_off(other, one) and not belongs(other, one)
    assert branches_off([greeting, m("user", "u1"), m("assistant", "a1b")], one)  # a reply regenerated
    assert branches_off([greeting, m("user", "u1b")], one, sent_on=True)  # the first question edited, sent on it
    assert first_questions(Tree.chain(one)) == {"u1"}
    assert replaced(other, one, first_questions(Tree.chain(one)))  # another tab's thread: another conversation
    edited = [greeting, m("user", "u1b"), m("assistant", "a1c")]
    tree = Tree.chain(one).grow(edited)
    assert first_questions(tree) == {"u1", "u1b"} and not replaced(edited, one, first_questions(tree))
