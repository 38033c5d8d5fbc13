"""The built-in demo agent (DESIGN.md §6): deterministic, streamed, heavy regenerate results."""

import asyncio
import base64
import json

import pytest

from app.agent import (
    DemoAgent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    action_count,
    element_count,
    regenerate_result,
    tokenize,
)
from app.agent import UsageSoFar
from app.model import Message, TextPart


async def collect(agent, text, history=()):
    """The agent's message events (its usage reports are tested on their own below)."""
    return [event async for event in agent.run(list(history), text) if not isinstance(event, UsageSoFar)]


class RecordingSleep:
    def __init__(self):
        self.calls = []

    async def __call__(self, seconds):
        self.calls.append(seconds)
        await asyncio.sleep(0)


async def test_plain_text_streams_at_least_ten_tokens_mentioning_the_input():
    events = await collect(DemoAgent(), "What is overfitting?")
    assert all(isinstance(e, TextDelta) for e in events)
    assert len(events) >= 10
    text = "".join(e.text for e in events)
    assert "What is overfitting?" in text
    assert [e.text for e in events] == tokenize(text)


async def test_one_token_per_delay_and_yields_even_with_zero_delay():
    sleep = RecordingSleep()
    events = await collect(DemoAgent(delay_ms=0, sleep=sleep), "hi")
    assert sleep.calls == [0.0] * len(events)
    sleep = RecordingSleep()
    events = await collect(DemoAgent(delay_ms=40, sleep=sleep), "hi")
    assert sleep.calls == [0.04] * len(events)


def test_tokens_are_words_or_punctuation_marks():
    assert tokenize("Hello, world! 你好。") == ["Hello", ",", " world", "!", " 你好", "。"]


async def test_reply_is_deterministic():
    assert await collect(DemoAgent(), "same input") == await collect(DemoAgent(), "same input")
    assert await collect(DemoAgent(), "one input") != await collect(DemoAgent(), "another input")


async def test_regenerate_makes_a_heavy_tool_call_then_a_summary():
    events = await collect(DemoAgent(), "/regenerate scene-2 make it blue")
    started, finished, *summary = events
    assert isinstance(started, ToolCallStarted) and isinstance(finished, ToolCallFinished)
    assert started.tool_name == "regenerate_scene"
    assert started.args == {"sceneId": "scene-2", "instruction": "make it blue"}
    assert finished.tool_call_id == started.tool_call_id and finished.is_error is False
    assert summary and all(isinstance(e, TextDelta) for e in summary)

    result = finished.result
    assert result["content"][0]["type"] == "text" and "scene-2" in result["content"][0]["text"]
    assert result["content"][1]["type"] == "image" and len(result["content"][1]["data"]) > 1000
    details = result["details"]
    assert details["sceneId"] == "scene-2"
    elements = details["content"]["elements"]
    assert len(elements) == element_count("scene-2")
    assert all({"id", "kind", "box"} <= set(e) for e in elements)
    assert len({e["id"] for e in elements}) == len(elements)
    images = [e for e in elements if "src" in e]
    assert images and all(e["src"].startswith("data:image/png;base64,") and len(e["src"]) > 2000 for e in images)
    assert all(base64.b64decode(e["src"].partition(",")[2])[:8] == b"\x89PNG\r\n\x1a\n" for e in images)
    assert details["content"]["background"]["value"].startswith("data:image/png;base64,")
    assert len(details["actions"]) == action_count("scene-2") >= 3
    assert all({"type", "elementId", "payload"} <= set(a) for a in details["actions"])
    assert len(json.dumps(result)) > 20_000


async def test_regenerate_without_instruction_sends_only_the_scene_id():
    started, *_ = await collect(DemoAgent(), "/regenerate scene-1")
    assert started.args == {"sceneId": "scene-1"}


async def test_fail_makes_a_failing_call_with_null_content():
    events = await collect(DemoAgent(), "/fail scene-3")
    started, finished, *summary = events
    assert isinstance(started, ToolCallStarted) and started.args == {"sceneId": "scene-3"}
    assert finished.is_error is True
    assert finished.result["details"] == {"sceneId": "scene-3", "content": None, "actions": []}
    assert "failed" in finished.result["content"][0]["text"]
    assert summary


async def test_command_without_scene_is_answered_as_text():
    events = await collect(DemoAgent(), "/regenerate")
    assert events and all(isinstance(e, TextDelta) for e in events)


def test_element_count_is_a_pure_function_of_the_scene_id():
    counts = {sid: element_count(sid) for sid in ("scene-1", "scene-2", "scene-3", "s", "场景")}
    assert all(24 <= n <= 48 for n in counts.values())
    assert len(set(counts.values())) > 1
    assert counts == {sid: element_count(sid) for sid in counts}
    assert regenerate_result("scene-1", "x") == regenerate_result("scene-1", "x")


async def test_tool_call_ids_differ_between_turns_of_a_thread():
    first, *_ = await collect(DemoAgent(), "/regenerate scene-1")
    history = [Message(role="user", content=[TextPart(text="/regenerate scene-1")]), Message(role="assistant")]
    second, *_ = await collect(DemoAgent(), "/regenerate scene-1", history)
    assert first.tool_call_id != second.tool_call_id


async def test_cancelling_the_consumer_stops_the_stream():
    gate = asyncio.Event()

    async def blocking_sleep(_):
        await gate.wait()

    seen = []

    async def consume():
        async for event in DemoAgent(sleep=blocking_sleep).run([], "hello"):
            if not isinstance(event, UsageSoFar):
                seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    task.cancel()
    gate.set()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled() and seen == []


def test_reply_quotes_long_input_in_part():
    from app.agent import QUOTE_LIMIT, reply_text

    reply = reply_text("字" * 100_000)
    assert "字" * QUOTE_LIMIT + "…" in reply and len(reply) < QUOTE_LIMIT + 300


async def test_tool_call_ids_are_unique_per_call_even_for_the_same_input_and_position():
    """Ids are unique (DESIGN.md §5): the same command at the same position (another course, a new
    conversation, another tab) must not reuse an id; restore snapshots are keyed by it."""
    ids = set()
    for _ in range(20):
        started, finished, *_ = await collect(DemoAgent(), "/regenerate scene-1")
        assert finished.tool_call_id == started.tool_call_id
        ids.add(started.tool_call_id)
    assert len(ids) == 20


async def test_the_demo_content_stays_deterministic_apart_from_the_call_id():
    a = await collect(DemoAgent(new_id=lambda: "x"), "/regenerate scene-2 blue")
    b = await collect(DemoAgent(new_id=lambda: "x"), "/regenerate scene-2 blue")
    assert a == b and a[0].tool_call_id == "call-x"


@pytest.mark.parametrize("gap", ["\u3000", "\t", "\n", " \u3000\t"])
async def test_a_command_followed_by_any_whitespace_is_still_a_tool_call(gap):
    for command, failing in (("/regenerate", False), ("/fail", True)):
        started, finished, *_ = await collect(DemoAgent(), f"{command}{gap}scene-2{gap}make it blue")
        assert isinstance(started, ToolCallStarted) and started.args["sceneId"] == "scene-2"
        assert started.args["instruction"] == "make it blue" and finished.is_error is failing


async def test_usage_is_reported_cumulatively_with_model_demo_so_a_stopped_turn_has_what_it_had():
    history = [Message(id="u", role="user", content=[TextPart(text="one two")])]
    events = [e async for e in DemoAgent().run(history, "hello there")]
    reports = [e for e in events if isinstance(e, UsageSoFar)]
    deltas = [e for e in events if not isinstance(e, UsageSoFar)]
    assert {r.model for r in reports} == {"demo"}
    assert reports[0].input_tokens == 4 and reports[0].output_tokens == 0  # 2 history + 2 new tokens read
    assert [r.output_tokens for r in reports] == list(range(len(deltas) + 1))  # after every token
    assert reports[-1].output_tokens == len(deltas)


# -- counting tokens without the list (a 2 MB message, DESIGN.md §6) ---------------------

@pytest.mark.parametrize("text", ["", "   ", "Hi, \"you\".", "a\u3000b\tc\n", "中文，标点。 and ascii!!", "x" * 3 + " " * 5,
                                  ("lorem ipsum dolor sit amet 中文 " * 50)[:1234], "🎨 émoji  e\u0301 ?!"])
def test_count_tokens_is_the_length_of_tokenize(text):
    from app.agent import count_tokens

    assert count_tokens(text) == len(tokenize(text))


@pytest.mark.parametrize("text", ["", "short text", ("lorem ipsum dolor sit amet 中文 " * 2000)[:50_001],
                                  "字" * 3000, " " * 3000, "a, b. " * 900 + "z" * 700, "x " * 1500 + "\u3000\u3000y!"])
async def test_counting_in_steps_adds_up_to_the_whole_count(text):
    from app.agent import count_tokens_in_steps

    pauses = []

    async def pause():
        pauses.append(1)

    assert await count_tokens_in_steps(text, step=100, pause=pause) == len(tokenize(text))
    assert bool(pauses) == (len(text) > 100 and any(c.isspace() for c in text[100:]) and not text.isspace())


@pytest.mark.parametrize("name", ["tokenize", "count_tokens"])
def test_a_whitespace_run_no_token_follows_never_reaches_the_token_pattern(monkeypatch, name):
    """The token pattern tries every position of a whitespace run that no token follows, each to
    the run's end (quadratic: 6,000 trailing spaces took a second); such a run is cut first. Proved
    on what the pattern is handed, not on a clock, and on the counts staying the same."""
    import app.agent as agent

    seen = []

    class Recording:
        def findall(self, text):
            seen.append(text)
            return real.findall(text)

        def subn(self, repl, text):
            seen.append(text)
            return real.subn(repl, text)

    real = agent._TOKEN
    monkeypatch.setattr(agent, "_TOKEN", Recording())
    text = "Hi, you.\u3000 \n" + " " * 50_000 + "\t\n"
    result = getattr(agent, name)(text)
    assert seen == ["Hi, you."]
    assert (len(result) if name == "tokenize" else result) == 4


@pytest.mark.parametrize("locale", ["en-US", "zh-CN", "zh-TW", "ja-JP", "ko-KR", "ar-SA", "ru-RU", "pt-BR"])
async def test_the_demo_agent_answers_in_the_pages_language(locale):
    """The demo is the in-browser demo's voice: its replies and summaries are the locale's own text
    (``demo.*`` in app/locales), each at least ten tokens, quoting the user's words."""
    from app.i18n import Translator

    t = Translator(locale)
    agent = DemoAgent(translate=t)
    reply = "".join(e.text for e in await collect(agent, "What is overfitting?"))
    assert "What is overfitting?" in reply and "/regenerate scene-1" in reply
    assert reply.startswith(t("demo.reply", quoted="What is overfitting?")[:4])
    assert len(tokenize(reply)) >= 10
    done = "".join(e.text for e in await collect(agent, "/regenerate scene-2") if isinstance(e, TextDelta))
    assert done == t("demo.done", scene="scene-2", elements=t("demo.elements", count=element_count("scene-2")),
                     actions=t("demo.actions", count=action_count("scene-2")))
    failed = "".join(e.text for e in await collect(agent, "/fail scene-3") if isinstance(e, TextDelta))
    assert failed == t("demo.failed", scene="scene-3")
    for text in (reply, done, failed):
        assert "{" not in text and "demo." not in text, text  # every key and placeholder filled
    if locale != "en-US":  # not the English text
        english = Translator("en-US")
        assert done != english("demo.done", scene="scene-2",
                               elements=english("demo.elements", count=element_count("scene-2")),
                               actions=english("demo.actions", count=action_count("scene-2")))
        assert not reply.startswith("You said")
