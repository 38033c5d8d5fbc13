"""What a 2 MB message costs on its way through a turn (no main-thread task over 200 ms): the
shortcuts taken for it give exactly what the plain computation gives."""

from __future__ import annotations

import asyncio
import json

import pytest

import app.store.jsjson as jsjson
from app.history.text import _SIMPLE, TITLE_GRAPHEMES, first_user_text, needs_segmenter, title_of
from app.json_steps import dumps_in_steps


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


TEXTS = [
    "", "   ", "short title", "a \t\n b", " \u3000 lead\x1ctrail \x1f", "bad \ud800 half " * 40,
    "word " * 200, " " * 5000 + "after a long run of spaces " * 30, "字" * 10_000,
    ("lorem ipsum dolor sit amet 中文 " * 20_000)[:300_000], "e\u0301" * 300, "👨‍👩‍👧 " * 120,
    "x" * (TITLE_GRAPHEMES * 8) + " y", "x" * (TITLE_GRAPHEMES * 8 + 1),
]


@pytest.mark.parametrize("text", TEXTS)
def test_bounded_first_user_text_is_the_start_of_the_whole_one(text):
    whole = first_user_text([user("  "), user(text)])
    bounded = first_user_text([user("  "), user(text)], TITLE_GRAPHEMES * 8)
    if whole is None:
        assert bounded is None
    else:
        assert bounded == whole[: TITLE_GRAPHEMES * 8 + 1]


@pytest.mark.parametrize("text", TEXTS)
def test_title_and_segmenter_need_are_those_of_the_whole_text(text):
    messages = [user(text)]
    whole = first_user_text(messages)  # the whole text collapsed: what both were made of before
    if whole is None:
        assert title_of(messages) is None and not needs_segmenter(messages)
        return
    head = whole[: TITLE_GRAPHEMES * 8]
    expected = whole if len(whole) <= TITLE_GRAPHEMES else head[:TITLE_GRAPHEMES] + "…"
    assert title_of(messages, graphemes=list) == expected
    assert needs_segmenter(messages) == (len(whole) > TITLE_GRAPHEMES and not _SIMPLE.match(head))


ITEMS = [
    ["put", "messages", {"taskId": "t", "messages": [user("ü" * 300_000)]}],
    ["put", "texts", {"taskId": "t", "text": "中" * 10}],
    ["delete", "heads", "course-1"],
    ["put", "search", {"folded": "a" * 262_145, "n": 1, "x": None, "ok": True, "f": 1.5}],
]


def test_dumps_in_steps_writes_what_json_dumps_writes_and_pauses_only_after_big_items():
    paused: list[int] = []

    async def pause():
        paused.append(1)

    text = asyncio.run(dumps_in_steps(ITEMS, pause=pause))
    assert text == json.dumps(ITEMS, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert json.loads(text) == ITEMS
    assert len(paused) == 2  # after the 300,000- and the 262,145-character items, not after the small ones
    assert asyncio.run(dumps_in_steps([], pause=pause)) == "[]" and len(paused) == 2


def test_dumps_in_steps_refuses_what_json_dumps_refuses():
    with pytest.raises(ValueError):
        asyncio.run(dumps_in_steps([float("nan")]))
    with pytest.raises(TypeError):
        asyncio.run(dumps_in_steps([object()]))


@pytest.mark.parametrize("text", ["中文 " * 1000, "plain", "lone \ud800 and \udfff", "pair \ud83d\ude00 held as two",
                                  "\ud83d" + "x" * 5000, "x" * 5000 + "\udc00"])
def test_js_json_fast_path_writes_what_the_surrogate_rules_write(text):
    value = {"text": text, "n": [1, None]}
    reference = jsjson.SURROGATES.sub(
        jsjson.fix_surrogates, json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    assert jsjson.js_json(value) == reference


def test_dumps_in_steps_with_a_clock_pauses_after_each_step_ms_of_encoding():
    from app.json_steps import STEP_MS

    items = [["put", "search", {"taskId": f"t{i}", "terms": ["中文", "x"]}] for i in range(10)]
    now, paused = [0.0], []

    def clock():  # each reading is a third of STEP_MS later
        now[0] += STEP_MS / 3
        return now[0]

    async def pause():
        paused.append(now[0])

    text = asyncio.run(dumps_in_steps(items, pause=pause, clock=clock))
    assert text == json.dumps(items, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert len(paused) == 3  # small items all, yet a pause each STEP_MS
    paused.clear()
    assert asyncio.run(dumps_in_steps(items, pause=pause, clock=lambda: 0.0)) == text and paused == []


def test_long_texts_are_lifted_out_of_a_write_and_put_back_where_they_were():
    """``lift_long_texts``: a write's long strings (an imported message of millions of characters,
    its plain text and folding, DESIGN.md §14) leave the JSON text and cross to the page's store
    on their own, in pieces; each comes with the path to put it back, and what stays is small."""
    import copy
    import json

    from app.json_steps import lift_long_texts

    long, other = "x“" * 40, "y" * 100
    ops = [["put", "messages", {"taskId": "t", "messages": [{"role": "user", "content": [{"type": "text", "text": long}]},
                                                            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]}],
           ["put", "texts", {"taskId": "t", "text": other}], ["delete", "heads", "s"], ["put", "search", {"k": long[:5]}]]
    before = copy.deepcopy(ops)
    kept, lifted = lift_long_texts(ops, min_chars=50)
    assert ops == before  # the caller's records are left as they were
    assert [path for path, _ in lifted] == [[0, 2, "messages", 0, "content", 0, "text"], [1, 2, "text"]]
    assert len(json.dumps(kept)) < 400
    for path, text in lifted:  # what the page's adapter does
        at = kept
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = text
    assert kept == ops
    assert lift_long_texts(ops, min_chars=1_000) == (ops, [])


def test_long_texts_are_found_at_any_depth_whatever_else_the_records_hold():
    """``lift_long_texts`` finds every long string, in order, whichever containers lead to it (lists,
    tuples, dicts and their subclasses) and however many short values sit beside it: each of many
    random records against a plain walk that keeps a path for every value."""
    import random
    from collections import OrderedDict

    from app.json_steps import lift_long_texts

    def every_long(value, path, found):
        if isinstance(value, str):
            if len(value) >= 8:
                found.append((list(path), value))
        elif isinstance(value, dict):
            for key, inner in value.items():
                every_long(inner, path + [key], found)
        elif isinstance(value, (list, tuple)):
            for at, inner in enumerate(value):
                every_long(inner, path + [at], found)
        return found

    rng = random.Random(7)

    def record(depth):
        pick = rng.random()
        if depth > 3 or pick < 0.3:
            return rng.choice(["s", "x" * rng.randrange(1, 12), 5, None, True, 2.5])
        items = [record(depth + 1) for _ in range(rng.randrange(0, 4))]
        if pick < 0.5:
            return items
        if pick < 0.6:
            return tuple(items)
        keys = [f"k{n}" for n in range(len(items))]
        return (OrderedDict if pick < 0.7 else dict)(zip(keys, items))

    lifted_some = 0
    for _ in range(300):
        values = [record(0) for _ in range(3)]
        kept, lifted = lift_long_texts(values, min_chars=8)
        assert lifted == every_long(values, [], [])
        lifted_some += bool(lifted)
        assert not every_long(kept, [], [])  # nothing long stays behind
    assert lifted_some > 50
