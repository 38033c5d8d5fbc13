"""Thread → Chat Completions messages (app/agents/chat_completions.py) and the model settings (app/agents/settings.py)."""

from __future__ import annotations

import json

import pytest

from app.agent import regenerate_result
from app.agents.settings import (KEY_STORAGE_KEY, SETTINGS_STORAGE_KEY, ModelSettings, load_settings, parse_max_turns,
                                 save_settings)
from app.agents.chat_completions import (chat_messages, slim_result_text, stored_call_id, tool_call_message,
                                         wire_call_id, wire_messages)
from app.model import Message, MessageStatus, TextPart, ToolCallPart
from app.projection import FAILED, STOPPED, serialize_thread
from app.storage import MemoryStorage


def user(text: str) -> Message:
    return Message(role="user", content=[TextPart(text=text)])


def assistant(*parts) -> Message:
    return Message(role="assistant", content=list(parts))


def test_tool_calls_become_assistant_tool_calls_with_slim_tool_results():
    ok = ToolCallPart(tool_call_id="c1", tool_name="regenerate_scene",
                      args={"sceneId": "scene-1", "instruction": "x", "extra": {"big": 1}},
                      result=regenerate_result("scene-1", "x"))
    failed = ToolCallPart(tool_call_id="c2", tool_name="regenerate_scene", args={"sceneId": "s9"},
                          result={"content": [{"type": "text", "text": "no such scene"}]}, is_error=True)
    interrupted = ToolCallPart(tool_call_id="c3", tool_name="regenerate_scene", args={"sceneId": "s1"}, is_error=True)
    history = [user("redo"), assistant(TextPart(text="On it."), ok, failed, TextPart(text="Half done."), interrupted)]
    messages = chat_messages(history, "next")
    assert messages[0] == {"role": "user", "content": "redo"}
    first = messages[1]
    assert first["role"] == "assistant" and first["content"] == "On it."
    c1, c2, c3 = (wire_call_id(c) for c in ("c1", "c2", "c3"))
    assert [c["id"] for c in first["tool_calls"]] == [c1, c2]
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"sceneId": "scene-1", "instruction": "x"}
    assert messages[2] == {"role": "tool", "tool_call_id": c1, "content": ok.result["content"][0]["text"]}
    assert messages[3] == {"role": "tool", "tool_call_id": c2, "content": "Error: no such scene"}
    assert messages[4]["content"] == "Half done." and messages[4]["tool_calls"][0]["id"] == c3
    assert messages[5]["content"].startswith("Error: the call was interrupted")
    assert messages[-1] == {"role": "user", "content": "next"}
    # Slim: no element data or base64 reaches the model.
    assert "base64" not in json.dumps(messages) and len(json.dumps(messages)) < 2000


def test_cut_to_recent_turns_and_system_first():
    history = []
    for i in range(6):
        history += [user(f"q{i}"), assistant(TextPart(text=f"a{i}"))]
    messages = chat_messages(history, "now", max_turns=2, system="You help.")
    assert [m["content"] for m in messages] == ["You help.", "q4", "a4", "q5", "a5", "now"]
    assert [m["content"] for m in chat_messages(history, "now", max_turns=0)] == ["now"]


@pytest.mark.parametrize("past", [1, 9, 14, 19, 20, 24])
def test_a_thread_shorter_than_the_cap_is_sent_whole_and_a_longer_one_cut_to_the_cap(past):
    history = [m for i in range(past) for m in (user(f"q{i}"), assistant(TextPart(text=f"a{i}")))]
    sent = [m["content"] for m in chat_messages(history, "now", max_turns=20) if m["role"] == "user"]
    assert sent == [f"q{i}" for i in range(max(0, past - 20), past)] + ["now"]


def test_empty_messages_are_left_out():
    history = [user("  "), assistant(), assistant(TextPart(text="")), user("real"), assistant(TextPart(text="ok"))]
    assert chat_messages(history, "x") == [{"role": "user", "content": "real"}, {"role": "assistant", "content": "ok"},
                                           {"role": "user", "content": "x"}]


def roles(messages):
    return [m["role"] for m in messages]


def test_a_turn_whose_reply_sends_nothing_is_left_out_never_two_user_messages_in_a_row():
    """DESIGN.md §12: the model never sees two user messages in a row. The user messages of turns that
    failed (or were stopped) before any reply text are not sent again, whatever their number."""
    failed = Message(role="assistant", content=[], status=FAILED.model_copy(
        update={"error": {"code": "http", "params": {"status": 400}}}))
    stopped = Message(role="assistant", content=[], status=STOPPED)
    history = [user("q1"), assistant(TextPart(text="a1")), user("too long 1"), failed, user("too long 2"),
               failed, user("stopped"), stopped, user("q2"), assistant(TextPart(text="a2")), user("no reply at all")]
    messages = chat_messages(history, "now")
    assert [m["content"] for m in messages] == ["q1", "a1", "q2", "a2", "now"]
    assert all(not (a["role"] == b["role"] == "user") for a, b in zip(messages, messages[1:]))
    # A failed turn that had some text, or ran a tool, is a real exchange and is kept.
    partly = Message(role="assistant", content=[TextPart(text="half an answer")], status=FAILED)
    called = Message(role="assistant", content=[ToolCallPart(tool_call_id="c9", tool_name="regenerate_scene",
                                                             args={"sceneId": "scene-1"}, is_error=True)],
                     status=MessageStatus(type="incomplete", reason="error"))
    assert roles(chat_messages([user("a"), partly, user("b"), called], "c")) == [
        "user", "assistant", "user", "assistant", "tool", "user"]


def call(stored_id: str) -> ToolCallPart:
    return ToolCallPart(tool_call_id=stored_id, tool_name="regenerate_scene", args={"sceneId": "scene-1"},
                        result={"content": []})


def sent_ids(messages) -> tuple[list[str], list[str]]:
    """The ids of the assistants' ``tool_calls`` and of the ``tool`` messages, in order."""
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    return calls, [m["tool_call_id"] for m in messages if m["role"] == "tool"]


def test_tool_call_ids_go_back_as_the_model_gave_them_and_stored_ids_stay_unique():
    """DESIGN.md §12: the model's id goes back unchanged (Mistral checks 9 alphanumerics); the stored id
    is the app's unique one (§5), and maps back to the model's, also for a thread read back from storage.
    ``strict`` (after a server refused the ids): every id in the form every server takes, nine letters
    and digits, a model id already of that form unchanged, any other derived from the stored id."""
    first, second = stored_call_id("call_aaaa", "AbC123xyZ"), stored_call_id("call_bbbb", "AbC123xyZ")
    assert first != second  # a server that reuses its ids still gives unique stored ids
    sent = chat_messages([user("redo"), assistant(call(first))], "next")
    assert sent[1]["tool_calls"][0]["id"] == "AbC123xyZ" and sent[2]["tool_call_id"] == "AbC123xyZ"
    assert chat_messages([user("redo"), assistant(call(first))], "next", strict=True) == sent
    for model_id in ("0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", "call_abc123DEF456ghi789JKL0", "chatcmpl-tool-9f2e",
                     "ABCDEFGH", "ABCDEFGHIJ", "abc_12345", "ÄbC123xyZ", None):
        stored = stored_call_id("call_cccc", model_id)
        messages = chat_messages([user("r"), assistant(call(stored))], "n")
        calls, results = sent_ids(messages)
        assert calls == results == [model_id if stored != "call_cccc" else wire_call_id(stored)], model_id
        calls, results = sent_ids(chat_messages([user("r"), assistant(call(stored))], "n", strict=True))
        assert calls == results == [wire_call_id(stored, strict=True)]
        assert len(calls[0]) == 9 and calls[0].isascii() and calls[0].isalnum(), model_id
    assert stored_call_id("call_cccc", "has space") == "call_cccc" and stored_call_id("call_cccc", "") == "call_cccc"


def test_a_llama_server_id_is_sent_the_same_every_time_and_the_stored_thread_is_not_changed():
    stored = stored_call_id("call_dddd", "0DjVYperMUSkGWxFx5hEoyKi0Yjzj9TG")
    history = [user("redo"), assistant(TextPart(text="On it."), call(stored), TextPart(text="Done."))]
    before = serialize_thread(history)
    once, again = chat_messages(history, "a", strict=True), chat_messages(history, "b", strict=True)
    assert sent_ids(once) == sent_ids(again) and sent_ids(once)[0][0] != "0DjVYperMUSkGWxFx5hEoyKi0Yjzj9TG"
    assert serialize_thread(history) == before and history[1].content[1].tool_call_id == stored


def test_no_two_calls_of_a_request_share_a_sent_id():
    """The same model id on several calls (a server that repeats its ids), and a model id equal to the
    id derived for another call: each stored id gets its own sent id; the first call keeps its candidate."""
    derived = wire_call_id("call-demo-1")  # what the demo agent's call is sent as
    repeated = [stored_call_id(f"call_{i}", "AbC123xyZ") for i in range(3)]
    clash = stored_call_id("call_9", derived)
    history = [user("a"), assistant(call("call-demo-1"), call(repeated[0])), user("b"),
               assistant(call(repeated[1]), call(clash)), user("c"), assistant(call(repeated[2]))]
    calls, results = sent_ids(chat_messages(history, "d"))
    assert calls == results and len(set(calls)) == 5
    assert calls[0] == derived and calls[1] == "AbC123xyZ"
    assert all(len(i) == 9 and i.isascii() and i.isalnum() for i in calls)
    many = [assistant(call(f"call_{i:05d}")) for i in range(2000)]
    calls, results = sent_ids(chat_messages([m for a in many for m in (user("q"), a)], "n", max_turns=2000))
    assert calls == results and len(set(calls)) == 2000


def test_wire_messages_leaves_the_given_messages_as_they_were():
    messages = [{"role": "user", "content": "x"},
                tool_call_message([("call_1~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", "t", {})], None),
                {"role": "tool", "tool_call_id": "call_1~0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5", "content": "ok"}]
    before = json.dumps(messages)
    sent = wire_messages(messages)
    assert json.dumps(messages) == before and sent[0] is messages[0]
    assert sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == wire_call_id(messages[2]["tool_call_id"])


def test_slim_result_text_without_text_items():
    assert slim_result_text(ToolCallPart(tool_call_id="c", result={"details": {}})) == "Done."


# -- settings and where the key lives ------------------------------------------------------

def test_key_in_session_storage_unless_remembered():
    local, session = MemoryStorage(), MemoryStorage()
    settings = ModelSettings(agent="openai", base_url="https://api.example.test/v1", model="m")
    assert save_settings(local, session, settings, "sk-live-1")
    assert session.get_item(KEY_STORAGE_KEY) == "sk-live-1" and local.get_item(KEY_STORAGE_KEY) is None
    assert "sk-live-1" not in local.get_item(SETTINGS_STORAGE_KEY)
    assert load_settings(local, session) == (settings, "sk-live-1")

    remembered = settings.model_copy(update={"remember": True})
    assert save_settings(local, session, remembered, "sk-live-1")
    assert local.get_item(KEY_STORAGE_KEY) == "sk-live-1" and session.get_item(KEY_STORAGE_KEY) is None
    assert load_settings(local, MemoryStorage()) == (remembered, "sk-live-1")

    assert save_settings(local, session, remembered, "")
    assert local.get_item(KEY_STORAGE_KEY) is None and session.get_item(KEY_STORAGE_KEY) is None


def test_stored_settings_shape():
    local = MemoryStorage()
    save_settings(local, MemoryStorage(), ModelSettings(agent="openai", base_url="http://h:1/v1", model="m"), "k")
    assert json.loads(local.get_item(SETTINGS_STORAGE_KEY)) == {
        "agent": "openai", "baseUrl": "http://h:1/v1", "model": "m", "maxTurns": 20, "remember": False}


@pytest.mark.parametrize("raw", ["not json", "[]", '{"agent": "gpt"}', '{"baseUrl": "ftp://x"}', '{"maxTurns": -1}'])
def test_damaged_settings_fall_back_to_the_demo(raw):
    local = MemoryStorage()
    local.set_item(SETTINGS_STORAGE_KEY, raw)
    assert load_settings(local, MemoryStorage())[0] == ModelSettings()


def test_blocked_storage_reads_as_defaults_and_reports_failed_writes():
    blocked = MemoryStorage(available=False)
    assert load_settings(blocked, blocked) == (ModelSettings(), "")
    assert not save_settings(blocked, blocked, ModelSettings(), "k")


@pytest.mark.parametrize("url", ["javascript:alert(1)", "127.0.0.1:11434", "http:///v1", "file:///etc"])
def test_base_url_must_be_http(url):
    with pytest.raises(ValueError):
        ModelSettings(base_url=url)


# -- the failure text the view shows ------------------------------------------------------

from app.agents.errors import describe  # noqa: E402
from app.i18n import LOCALES, Translator  # noqa: E402

CODES = ["auth", "not-found", "rate-limited", "server", "http", "network", "cors", "blocked", "stream-cut", "timeout",
         "bad-event", "stream-error", "tool-rounds", "settings"]


@pytest.mark.parametrize("locale", LOCALES)
def test_every_error_code_has_a_real_message_in_every_locale(locale):
    t = Translator(locale)
    params = {"status": 401, "model": "m", "seconds": 7, "url": "http://h/v1", "origin": "http://h",
              "excerpt": "{x", "message": "boom", "count": 4, "field": "model"}
    texts = [describe(t, {"code": code, "params": params}) for code in CODES]
    assert all(not text.startswith("model.") and "{" not in text.replace("{x", "") for text in texts)
    assert len(set(texts)) == len(CODES)
    assert "7" in describe(t, {"code": "rate-limited", "params": {"seconds": 7}})
    assert describe(t, {"code": "rate-limited", "params": {}}) == t("model.error.rate-limitedNoWait")
    assert "README" in describe(t, {"code": "cors", "params": {"origin": "http://h"}})
    assert describe(t, {"code": "nonsense"}) == t("model.error.unknown")
    assert "boom!" in describe(t, {"code": "server", "params": {"status": 500, "detail": "boom!"}})


@pytest.mark.parametrize("text, turns", [("", 20), (" 7 ", 7), ("0", 0), ("200", 200), ("007", 7)])
def test_max_turns_field_takes_whole_numbers_in_range(text, turns):
    assert parse_max_turns(text) == turns


@pytest.mark.parametrize("text", ["1e2", "2.5", "-1", "201", "abc", "٣", "+5"])
def test_max_turns_field_refuses_what_is_not_a_whole_number_in_range(text):
    with pytest.raises(ValueError):
        parse_max_turns(text)
