"""The one rule for "thread B continues thread A" (app/continuity.py, DESIGN.md §15)."""

from __future__ import annotations

import doctest

import app.continuity
from app.continuity import continues

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
