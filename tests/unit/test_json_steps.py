"""``loads_in_steps``: one long JSON text (a 10 MB server-sent event) parsed in slices, giving what
``json.loads`` gives and refusing what it refuses."""

from __future__ import annotations

import json

import pytest

STEP = 64


def _run(steps):
    """Run a generator of steps to its end; ``(value, steps seen)``."""
    seen = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value, seen
        seen += 1


def _loads(text: str, step: int = STEP):
    from app.json_steps import loads_in_steps

    return _run(loads_in_steps(text, step_chars=step))


LONG = "x" * 99 + "\n"
TEXTS = [
    json.dumps({"choices": [{"index": 0, "delta": {"content": LONG * 30}}]}),
    json.dumps({"choices": [{"delta": {"content": "é🎨\"\\/\b\f\r\t\u0001" * 40}}]}),  # every escape, \uXXXX pairs
    json.dumps({"a": "🎨" * 50, "b": ["\\" * 70, "\"" * 70, "short", 1, None, True]}),
    json.dumps(["🎨" * 13 + "x" + "\\u" * 40]),  # a surrogate pair next to every cut
    json.dumps({"k" * 100: "v" * 100}),  # a long key stays in place
    json.dumps({"a": "x" * 200, "a2": {"a": "y" * 300}}, ensure_ascii=False),
    '{"a": "' + "\\ud83c" + "x" * 100 + '"}',  # a lone surrogate escape, as json.loads keeps it
    ' [ "' + "z" * 500 + '" , "' + "w" * 65 + '" ] ',
    "1",
    '"' + "q" * 1000 + '"',
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_long_text_parses_in_slices_to_what_json_loads_gives(text):
    for step in (STEP, 7, 1 << 20):
        value, _ = _loads(text, step)
        assert value == json.loads(text)


def test_a_long_string_is_decoded_in_slices_with_a_step_between_each():
    content = LONG * 300  # 30,000 characters
    value, seen = _loads(json.dumps({"content": content}), 1000)
    assert value == {"content": content}
    assert seen >= len(content) // 1000


@pytest.mark.parametrize("text", [
    '{"a": "' + "x" * 200 + '\\q"}',  # a bad escape inside the long string
    '{"a": "' + "x" * 200 + "\u0001" + '"}',  # a raw control character
    '{"a": "' + "x" * 200 + '"',  # cut short
    '{"a": "' + "x" * 200,  # the string never ends
    '{"a": "' + "x" * 200 + '"} {}',  # a second value
    '{"a": "' + "x" * 200 + '", }',
    '"' + "x" * 200 + '": 1',
])
def test_a_long_text_is_refused_where_json_loads_refuses_it(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _loads(text)
