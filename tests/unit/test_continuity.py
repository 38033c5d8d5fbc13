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
