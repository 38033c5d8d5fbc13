"""A stored thread's JSON built message by message and long texts encoded ahead in slices
(app/store/encoded.py): the pieces join to exactly what ``js_json`` writes whole (DESIGN.md §3)."""

from __future__ import annotations

import pytest

import app.store.encoded as encoded
from app.json_steps import run_steps
from app.storage import utf16_len
from app.store.encoded import encode_ahead_steps, message_json, text_literal_steps, thread_json
from app.store.jsjson import js_json

PAIR = "\ud83d\ude00"  # 😀 held as two code points, one character to JavaScript


def text_of(size: int, unit: str = "lorem ipsum 中文 \\ \" \n\t\x01 😀 ") -> str:
    return (unit * (size // len(unit) + 1))[:size]


def message(*texts: str, role: str = "user") -> dict:
    return {"role": role, "content": [{"type": "text", "text": t} for t in texts]}


def steps_of(generator):
    """(number of yields, return value) of a generator of steps."""
    count = 0
    while True:
        try:
            next(generator)
        except StopIteration as done:
            return count, done.value
        count += 1


@pytest.mark.parametrize("text", [
    "", "a", "中", text_of(1000), text_of(50_000),
    "a" * 9 + PAIR + "b" * 20,  # a pair held as two code points right at the slice end (10)
    "a" * 10 + "\ud800" + "b",  # a lone high surrogate at the end of a slice
    "a" * 9 + "\udc00\ud800" + "x",  # a lone low then a lone high surrogate across the slice end
    "\\" * 25 + '"' * 7, "\x00\x1f\u2028\u2029" * 6])
def test_a_text_encoded_in_slices_is_what_js_json_writes_whole(text):
    count, (literal, units) = steps_of(text_literal_steps(text, slice_chars=10))
    assert literal == js_json(text)
    assert units == utf16_len(js_json(text))
    assert (count > 0) == (len(text) > 10)  # a step between two slices


def test_a_long_text_is_encoded_slice_by_slice_with_a_step_between_slices():
    count, (literal, _) = steps_of(text_literal_steps(text_of(1_000_000), slice_chars=262_144))
    assert count == 3 and literal == js_json(text_of(1_000_000))


@pytest.mark.parametrize("messages", [
    [],
    [message("hi"), message("ok", role="assistant")],
    [message(text_of(70_000)), message("ok", text_of(80_000, "x" + PAIR), role="assistant")],
    [{"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t",
                                        "args": {"doc": text_of(66_000), "n": 1, "ok": True, "none": None},
                                        "result": {"value": [text_of(65_536, "\ud800a"), 2.5]}}]}],
])
def test_a_thread_built_message_by_message_is_what_js_json_writes_whole(messages):
    whole = js_json({"messages": messages, "updatedAt": 1_780_000_000_000})
    text, units, parts = thread_json(messages, 1_780_000_000_000)
    assert text == whole and units == utf16_len(whole) and len(parts) == len(messages)
    for one, (part, part_units) in zip(messages, parts):
        assert part == js_json(one) and part_units == utf16_len(part) == message_json(one)[1]


def test_a_text_encoded_ahead_is_taken_as_encoded_and_the_thread_is_the_same(monkeypatch):
    long = text_of(300_000)
    messages = [message("q"), message(long, role="assistant")]
    count, done = steps_of(encode_ahead_steps(messages, slice_chars=100_000))
    assert (count, done) == (2, 1)
    assert run_steps(encode_ahead_steps(messages)) == 0  # kept: not encoded again
    seen: list = []
    real = encoded.js_json
    monkeypatch.setattr(encoded, "js_json", lambda v: seen.append(v) or real(v))
    text, units, _ = thread_json(messages, 7)
    assert text == real({"messages": messages, "updatedAt": 7}) and units == utf16_len(text)
    assert all(not isinstance(v, str) or len(v) < encoded.LONG_CHARS for v in seen)
    assert long not in encoded._ahead  # taken by the save: the thread keeps its messages' JSON from then on


def test_texts_kept_ahead_are_let_go_oldest_first_past_the_bound(monkeypatch):
    monkeypatch.setattr(encoded, "_ahead", {})
    monkeypatch.setattr(encoded, "AHEAD_CHARS", 200_000)
    texts = [text_of(90_000, unit) for unit in "abc"]
    for text in texts:
        run_steps(encode_ahead_steps([message(text)]))
    assert list(encoded._ahead) == texts[1:]


def test_a_thread_reuses_the_json_of_the_messages_the_thread_it_replaces_held(monkeypatch):
    old = [message("a"), message("b", role="assistant")]
    _, _, parts = thread_json(old, 1)
    seen: list = []
    real = encoded.js_json
    monkeypatch.setattr(encoded, "js_json", lambda v: seen.append(v) or real(v))
    new = [dict(old[0]), old[1], message("c"), message("d", role="assistant")]
    text, units, _ = thread_json(new, 2, (old, parts))
    assert text == real({"messages": new, "updatedAt": 2}) and units == utf16_len(text)
    assert seen == [new[2], new[3], 2]
    changed = [message("A"), *new[1:]]  # a message at the same place that differs is encoded again
    seen.clear()
    assert thread_json(changed, 3, (old, parts))[0] == real({"messages": changed, "updatedAt": 3})
    assert seen == [changed[0], changed[2], changed[3], 3]
