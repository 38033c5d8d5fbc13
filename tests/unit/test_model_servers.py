"""The model back end against what real servers do (DESIGN.md §12 "What real servers do"): recorded
llama-server responses (tests/fixtures/llama-server) and tools/fake_openai.py's llama-server modes."""

from __future__ import annotations

import json

import pytest

from app.agent import TextDelta, ToolCallFinished, ToolCallStarted
from app.agents.context import context_overflow, turns_that_fit
from app.agents.errors import KeyMask, ModelError
from app.agents.events import ReplyCut, UsageReported
from app.agents.openai import AgentConfig, OpenAIAgent, probe_tools, refuses_tools
from app.agents.chat_completions import wire_call_id
from app.agents.switch import SelectedAgent
from app.history.labels import model_short_name, turn_meta_text
from app.history.recorder import HistoryRecorder
from app.history.service import HistoryService
from app.i18n import Translator
from app.model import Message, TextPart
from app.projection import CUT, CUT_MARKER, deserialize_thread, is_status_marker, serialize_thread
from app.records import MemoryBackend
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.unit.model_fakes import (FIXTURES, ScriptedResponse, ScriptedTransport, UrllibTransport, recorded_runtime, sse,
                                   transcript)
from tools import fake_openai

KEY = "sk-secret-123"
CONFIG = AgentConfig(base_url="http://127.0.0.1:9/v1", model="tiny", api_key=KEY)
OK = {"choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}]}


async def collect(agent, history=(), text="hi"):
    return [event async for event in agent.run(list(history), text)]


def texts(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def long_history(turns: int, size: int = 400) -> list[Message]:
    history = []
    for i in range(turns):
        history += [Message(role="user", content=[TextPart(text=f"q{i} " + "x" * size)]),
                    Message(role="assistant", content=[TextPart(text=f"a{i} " + "y" * size)])]
    return history


def sent_user_texts(post) -> list[str]:
    return [m["content"].split()[0] for m in post["body"]["messages"] if m["role"] == "user"]


# -- a conversation that outgrows the server's context ------------------------------------------

async def test_a_prompt_over_the_context_is_sent_again_with_fewer_of_the_oldest_turns():
    """llama.cpp's recorded 400 (17541 tokens over 2048): the same turn goes out once more with the
    newest turns that fit, and its usage report says how many were left out (the turn meta)."""
    transport = ScriptedTransport(transcript("error-context-nonstream.http"),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    events = await collect(OpenAIAgent(transport, CONFIG), long_history(10), "now")
    assert texts(events) == "fine"
    first, second = transport.posts
    assert sent_user_texts(first) == [f"q{i}" for i in range(10)] + ["now"]
    assert sent_user_texts(second) == ["now"]  # 17541 tokens for 2048: none of these turns fits
    assert events[-1] == UsageReported("tiny", None, 10)
    assert events[-1].to_turn_meta()["droppedTurns"] == 10


async def test_the_retry_sends_the_newest_turns_that_fit_in_order():
    over = ScriptedResponse(400, body=json.dumps({"error": {
        "code": 400, "message": "request (3000 tokens) exceeds the available context size (2048 tokens)",
        "type": "exceed_context_size_error", "n_prompt_tokens": 3000, "n_ctx": 2048}}))
    transport = ScriptedTransport(over, ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    events = await collect(OpenAIAgent(transport, CONFIG), long_history(10), "now")
    kept = sent_user_texts(transport.posts[1])
    assert kept[-1] == "now" and 0 < len(kept) - 1 < 10
    assert kept[:-1] == [f"q{i}" for i in range(10 - (len(kept) - 1), 10)]  # the newest turns, in order
    assert events[-1].dropped_turns == 10 - (len(kept) - 1)


async def test_still_over_the_context_after_the_retry_fails_with_a_context_error_not_forever_retrying():
    over = lambda: transcript("error-context-nonstream.http")  # noqa: E731
    transport = ScriptedTransport(over(), over())
    with pytest.raises(ModelError) as info:
        await collect(OpenAIAgent(transport, CONFIG), long_history(4), "now")
    assert info.value.code == "context" and "exceeds the available context size" in info.value.params["detail"]
    assert len(transport.posts) == 2
    # With no earlier turns to leave out, there is nothing to retry.
    alone = ScriptedTransport(over())
    with pytest.raises(ModelError) as info:
        await collect(OpenAIAgent(alone, CONFIG), [], "now")
    assert info.value.code == "context" and len(alone.posts) == 1


@pytest.mark.parametrize(("body", "prompt", "context"), [
    ((FIXTURES / "error-context-nonstream.http").read_bytes().decode().partition("\r\n\r\n")[2], 17541, 2048),
    (json.dumps({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                      "resulted in 9000 tokens. Please reduce the length of the messages.",
                           "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
     9000, 8192),
    (json.dumps({"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you "
                 "requested 2100 tokens (1800 in the messages, 300 in the completion). Please reduce the length of the "
                 "messages or completion.", "type": "BadRequestError", "code": 400}), 1800, 2048),
])
def test_context_errors_of_llama_cpp_openai_and_vllm_are_recognized_with_their_sizes(body, prompt, context):
    overflow = context_overflow(400, body)
    assert overflow is not None and (overflow.prompt_tokens, overflow.context_tokens) == (prompt, context)


def test_other_errors_are_not_context_errors():
    assert context_overflow(400, '{"error":{"message":"tools param requires --jinja flag"}}') is None
    assert context_overflow(500, "request exceeds the available context size") is None  # a server error


def test_the_retry_keeps_the_newest_turns_that_fit_and_always_drops_at_least_one():
    turns = [[{"role": "user", "content": "x" * 1000}]] * 8
    barely = context_overflow(400, '{"error":{"message":"request (101 tokens) exceeds the available context '
                                   'size (100 tokens)"}}')
    assert turns_that_fit(turns, barely, []) == 6  # 80 % of the context: room for the reply
    assert turns_that_fit(turns[:1], barely, []) == 0
    assert turns_that_fit([], barely, []) == 0
    unsized = context_overflow(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}')
    assert unsized.prompt_tokens is None and turns_that_fit(turns, unsized, []) == 3  # half the size, without sizes


async def test_a_long_conversation_stays_answerable_against_the_fake_llama_server_context(fake_server):
    """A small context once failed every later turn with 400 while the prompt grew
    (the failed turns' user messages were still sent). Now each turn is answered, and no request holds two
    user messages in a row."""
    fake_server.context_chars = 6000
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), OpenAIAgent(UrllibTransport(), AgentConfig(
        base_url=f"{fake_server.origin}/v1", model="fake-model-1")), clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    for i in range(12):
        await runtime.send(f"question {i} " + "z" * 700)
    assert [m.status.type for m in runtime.messages if m.role == "assistant"] == ["complete"] * 12
    for post in fake_server.posts():
        roles = [m["role"] for m in post["body"]["messages"]]
        assert ["user", "user"] not in [roles[i:i + 2] for i in range(len(roles) - 1)]
    assert any(p["body"]["messages"][0]["content"].startswith("question 0") for p in fake_server.posts())
    assert not fake_server.posts()[-1]["body"]["messages"][0]["content"].startswith("question 0")


async def test_the_turn_meta_says_how_many_earlier_turns_were_left_out_in_history_and_in_every_locale():
    transport = ScriptedTransport(transcript("error-context-nonstream.http"),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    store = ThreadStore(MemoryStorage())
    store.hydrate(1)
    store.save("intro-ml", serialize_thread(long_history(6)), 1)
    runtime, service, recorder = recorded_runtime(OpenAIAgent(transport, CONFIG), store)
    await runtime.send("now")
    await recorder.drain()
    _, turns = await service.active("intro-ml")
    dropped = turns[-1].droppedTurns
    assert dropped and dropped == 6 - (len(sent_user_texts(transport.posts[1])) - 1)
    assert turns[-1].record()["droppedTurns"] == dropped  # kept in IndexedDB, so after a reload too
    for locale in ("en-US", "zh-CN", "zh-TW", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"):
        t = Translator(locale)
        line = turn_meta_text(t, turns[-1])
        assert str(dropped) in line and t("history.contextCut", count=dropped) in line
    plain = turns[-1].model_copy(update={"droppedTurns": None})
    assert "droppedTurns" not in plain.record() and "context full" not in turn_meta_text(Translator("en-US"), plain)


async def test_a_model_named_by_its_file_path_is_shown_by_the_files_name_and_stored_whole():
    """llama-server started without --alias names its model by the path it loaded: the turn meta line
    shows the file's name, history keeps the whole id (and the tooltip, ``full_model``, shows it)."""
    path = "/root/.cache/agentbar/models/66d68b13c8dfdf7e/tiny-tool.gguf"
    usage = {"choices": [], "usage": {"prompt_tokens": 2000, "completion_tokens": 253, "total_tokens": 2253}}
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse({**OK, "model": path}, {**usage, "model": path},
                                                               "[DONE]")]))
    runtime, service, recorder = recorded_runtime(OpenAIAgent(transport, CONFIG))
    await runtime.send("hi")
    await recorder.drain()
    _, turns = await service.active("intro-ml")
    assert turns[-1].model == path
    for locale in ("en-US", "ja-JP", "ar-SA"):
        t = Translator(locale)
        line, tooltip = turn_meta_text(t, turns[-1]), turn_meta_text(t, turns[-1], full_model=True)
        assert "tiny-tool.gguf" in line and "/root" not in line and path in tooltip
    assert turn_meta_text(Translator("en-US"), turns[-1]).startswith("tiny-tool.gguf · 2,253 tokens")


@pytest.mark.parametrize(("model", "shown"), [
    ("/root/.cache/agentbar/models/66d68b13c8dfdf7e/tiny-tool.gguf", "tiny-tool.gguf"),
    ("models/qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2.5-0.5b-instruct-q4_k_m.gguf"),
    (r"C:\Users\me\models\phi-3-mini.Q4_K_M.gguf", "phi-3-mini.Q4_K_M.gguf"),
    ("./tiny.gguf", "tiny.gguf"), ("~/models/Qwen2.5-7B-Instruct/", "Qwen2.5-7B-Instruct"),
    ("/srv/vllm/Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"),
    # ids that are not file paths stay whole: a repository id, Ollama's tag, a hosted model
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"), ("qwen2.5:7b", "qwen2.5:7b"),
    ("gpt-4o-mini", "gpt-4o-mini"), ("tiny-tool", "tiny-tool"), ("", ""),
])
def test_model_short_name(model, shown):
    assert model_short_name(model) == shown


# -- a server without templates (--no-jinja) ------------------------------------------------------

async def test_llama_servers_no_jinja_500_is_answered_without_tools_and_remembered():
    transport = ScriptedTransport(transcript("stream-app-request-no-jinja.http"),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    agent = OpenAIAgent(transport, CONFIG)
    assert texts(await collect(agent)) == "fine"
    assert texts(await collect(agent)) == "fine"  # the next turn does not offer tools again
    assert ["tools" in p["body"] for p in transport.posts] == [True, False, False]


def test_which_answers_refuse_tools():
    no_jinja = (FIXTURES / "stream-app-request-no-jinja.http").read_bytes().decode().partition("\r\n\r\n")[2]
    assert refuses_tools(500, no_jinja)
    assert refuses_tools(400, '{"error":{"message":"registry.ollama.ai/library/gemma does not support tools"}}')
    assert not refuses_tools(500, '{"error":{"message":"Internal error."}}')
    assert not refuses_tools(503, '{"error":{"message":"tools param requires --jinja flag"}}')


async def test_test_connection_probe_finds_a_server_that_refuses_tools(fake_server):
    config = AgentConfig(base_url=f"{fake_server.origin}/v1", model="fake-model-1")
    assert await probe_tools(UrllibTransport(), config) is True
    fake_server.no_jinja = True
    assert await probe_tools(UrllibTransport(), config) is False
    probe = fake_server.posts()[-1]["body"]
    assert probe["tools"][0]["function"]["name"] == "regenerate_scene" and probe["max_tokens"] == 1
    assert probe["stream"] is False
    # A turn on that server is answered (without tools).
    events = await collect(OpenAIAgent(UrllibTransport(), config))
    assert texts(events) == "".join(fake_openai.PLAIN_PIECES)


# -- a reply the server cut at its length limit -------------------------------------------------

async def test_finish_reason_length_is_reported_as_a_cut_reply():
    events = await collect(OpenAIAgent(ScriptedTransport(transcript("stream-max-tokens.http", 97)), CONFIG))
    assert texts(events) == " cameX their2 with" and isinstance(events[-1], ReplyCut)
    stopped = await collect(OpenAIAgent(ScriptedTransport(transcript("stream.http")), CONFIG))
    assert not any(isinstance(e, ReplyCut) for e in stopped)


async def test_a_cut_reply_is_stored_with_its_marker_and_restored_cut():
    storage = MemoryStorage()
    runtime = AgentRuntime(ThreadStore(storage), OpenAIAgent(ScriptedTransport(transcript("stream-max-tokens.http")),
                                                             CONFIG), clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    await runtime.send("go")
    assert runtime.messages[-1].status == CUT
    stored = json.loads(storage.get_item("maic-agent-threads"))["state"]["threads"]["intro-ml"]["messages"]
    assert stored[-1]["content"] == [{"type": "text", "text": " cameX their2 with"}, CUT_MARKER]
    restored = deserialize_thread(stored)[-1]
    assert restored.status == CUT and [p.text for p in restored.content] == [" cameX their2 with"]
    assert serialize_thread(deserialize_thread(stored)) == stored  # exact round trip
    assert is_status_marker(CUT_MARKER) and not is_status_marker({"type": "text", "text": "turn-cut"})


async def test_the_cut_marker_is_not_text_for_search_or_the_model():
    from app.history.text import plain_text
    from app.agents.chat_completions import chat_messages

    stored = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
              {"role": "assistant", "content": [{"type": "text", "text": "partial"}, CUT_MARKER]}]
    assert "turn-cut" not in plain_text(stored)
    assert "turn-cut" not in json.dumps(chat_messages(deserialize_thread(stored), "more"))


# -- tool-call ids -------------------------------------------------------------------------------

LLAMA_CALL_ID = "0bHbjd8P9H4fim6Y5Yd6F4c4yRcAoEr5"
"""The tool-call id the recorded llama-server issued (32 characters: its own random form)."""


async def test_a_recorded_llama_server_call_is_stored_with_its_id_and_sent_back_unchanged():
    transport = ScriptedTransport(transcript("stream-tool-call-auto.http", 211),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    events = await collect(OpenAIAgent(transport, CONFIG))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    # Stored as the server gave it (after the app's unique part, DESIGN.md §5) ...
    assert started.tool_call_id.endswith("~" + LLAMA_CALL_ID)
    # ... and the model gets its own id back, unchanged, in the call and in its result (DESIGN.md §12).
    follow_up = transport.posts[1]["body"]["messages"]
    sent = follow_up[-2]["tool_calls"][0]["id"]
    assert sent == LLAMA_CALL_ID == wire_call_id(started.tool_call_id) == follow_up[-1]["tool_call_id"]


def switchable(storage: MemoryStorage, agents: dict[str, OpenAIAgent], chosen: list[str]) -> AgentRuntime:
    """A runtime on ``storage`` whose turns run on ``agents[chosen[0]]`` (the settings' base URL)."""
    runtime = AgentRuntime(ThreadStore(storage), SelectedAgent(lambda: agents[chosen[0]]),
                           clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    return runtime


async def test_a_conversation_with_a_llama_server_tool_call_goes_on_after_switching_to_a_server_that_checks_ids(
        fake_server):
    """The fresh tester's case: a tool call on llama.cpp (32-character id), then the base URL set to a
    server that takes only nine letters and digits (Mistral's form; the fake refuses any other with
    HTTP 400): every later turn failed. Now the turns go on, also after a reload, and the stored ids stay
    as each server gave them."""
    llama = OpenAIAgent(ScriptedTransport(transcript("stream-tool-call-auto.http", 211),
                                          ScriptedResponse(chunks=[sse(OK, "[DONE]")])), CONFIG)
    other = OpenAIAgent(UrllibTransport(), AgentConfig(base_url=f"{fake_server.origin}/v1", model="fake-model-1"))
    storage, chosen = MemoryStorage(), ["llama"]
    runtime = switchable(storage, {"llama": llama, "other": other}, chosen)
    await runtime.send("Please regenerate scene 1")
    chosen[0] = "other"
    await runtime.send("and now?")
    await runtime.send("#tool")  # a call of the new server's own, beside the old one
    assert [m.status.type for m in runtime.messages if m.role == "assistant"] == ["complete"] * 3
    stored = [p.tool_call_id for m in runtime.messages for p in m.content if hasattr(p, "tool_call_id")]
    assert stored[0].endswith("~" + LLAMA_CALL_ID) and stored[1].endswith("~" + fake_openai.TOOL_CALL_ID)
    reloaded = switchable(storage, {"llama": llama, "other": other}, chosen)  # read back from storage
    await reloaded.send("still there?")
    assert reloaded.messages[-1].status.type == "complete"
    last = fake_server.posts()[-1]["body"]["messages"]
    calls = [c["id"] for m in last for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert calls == results and len(set(calls)) == 2
    # the server refused llama.cpp's id once: from then on every id goes in the one form, a well-formed id unchanged
    assert calls == [wire_call_id(stored[0], strict=True), fake_openai.TOOL_CALL_ID]
    # ... and that was asked once: the agent remembers the form for this server
    assert sum(LLAMA_CALL_ID in json.dumps(post["body"]) for post in fake_server.posts()) == 1


async def test_tool_call_ids_against_a_server_that_checks_their_form(fake_server):
    """The fake checks tool-call ids as Mistral does (9 alphanumerics): the app's own ids were refused.
    It gives every call the same id: the first call keeps it, the later one is sent a derived id (no two
    calls of a request share one)."""
    config = AgentConfig(base_url=f"{fake_server.origin}/v1", model="fake-model-1")
    runtime = AgentRuntime(ThreadStore(MemoryStorage()), OpenAIAgent(UrllibTransport(), config),
                           clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    await runtime.send("#tool")
    await runtime.send("#tool again")  # the first call goes back in the history too
    assert [m.status.type for m in runtime.messages if m.role == "assistant"] == ["complete", "complete"]
    ids = [p.tool_call_id for m in runtime.messages for p in m.content if hasattr(p, "tool_call_id")]
    assert len(set(ids)) == 2  # the stored ids stay unique though the server reused its id
    last = fake_server.posts()[-1]["body"]["messages"]
    sent = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert sent == [c["id"] for m in last for c in m.get("tool_calls") or []]
    assert sent[0] == fake_openai.TOOL_CALL_ID and sent[1] != sent[0] and len(sent[1]) == 9


# -- the API key echoed by the server ------------------------------------------------------------

def test_the_key_is_masked_even_split_across_pieces():
    for cut in range(len("key: " + KEY + "!") + 1):
        text = "key: " + KEY + "!"
        mask = KeyMask(KEY)
        assert mask.feed(text[:cut]) + mask.feed(text[cut:]) + mask.flush() == "key: •••!"
    mask = KeyMask(KEY)
    assert mask.feed("sk-sec") == "" and mask.feed("ond") == "sk-second"  # held only while it could be the key
    assert KeyMask("").feed("sk-secret-123") == "sk-secret-123"


async def test_a_key_echoed_in_a_normal_reply_is_never_stored(fake_server):
    fake_server.required_key = KEY
    storage = MemoryStorage()
    backend = MemoryBackend()
    service = HistoryService(backend, clock=lambda: 1_780_000_000_000)
    recorder = HistoryRecorder(service)
    config = AgentConfig(base_url=f"{fake_server.origin}/v1", model="fake-model-1", api_key=KEY)
    runtime = AgentRuntime(ThreadStore(storage), OpenAIAgent(UrllibTransport(), config),
                           clock=lambda: 1_780_000_000_000, history=recorder)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    await runtime.send("#echo")
    await recorder.drain()
    assert runtime.messages[-1].content[0].text == "Your key is •••, right?"
    assert KEY not in storage.get_item("maic-agent-threads")
    held = json.dumps(backend._tables)  # history (IndexedDB) ...
    assert "your key is" in held.lower() and KEY not in held
    meta, turns = await service.active("intro-ml")
    from app.history.export import export_json

    exported = export_json(meta, serialize_thread(runtime.messages), turns)  # ... and the export
    assert "Your key is •••" in exported and KEY not in exported


async def test_a_key_in_tool_arguments_and_the_model_name_is_masked():
    chunks = [{"model": f"proxy-{KEY}", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "t1",
               "function": {"name": "regenerate_scene", "arguments": json.dumps(
                   {"sceneId": "scene-1", "instruction": f"use {KEY}"})}}]}, "finish_reason": "tool_calls"}]}]
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse(*chunks, "[DONE]")]),
                                  ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    events = await collect(OpenAIAgent(transport, CONFIG))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.args["instruction"] == "use •••"
    assert KEY not in json.dumps(next(e for e in events if isinstance(e, ToolCallFinished)).result)
    assert KEY not in events[-1].model


async def test_a_stream_error_message_has_the_key_masked():
    response = ScriptedResponse(chunks=[b"event: error\r", b'\ndata: {"error":{"message":"key ' + KEY.encode()
                                        + b' has no quota"}}\r\n\r\n'])
    with pytest.raises(ModelError) as info:
        await collect(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (info.value.code, info.value.params) == ("stream-error", {"message": "key ••• has no quota"})


@pytest.fixture
def fake_server():
    server = fake_openai.start()
    yield server
    server.shutdown()
    server.server_close()


# -- the smaller gaps ---------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    ({"sceneId": ""}, "sceneId is empty"), ({"sceneId": "   "}, "sceneId is empty"),
    ({}, "gave none"), ({"sceneId": 3}, "must be a string"),
])
def test_a_tool_call_with_an_empty_or_missing_scene_id_is_told_what_was_wrong(args, says):
    from app.agents.tools import run_tool

    result, is_error = run_tool("regenerate_scene", args)
    assert is_error and result["details"]["content"] is None
    assert says in result["content"][0]["text"] and "scene-1" in result["content"][0]["text"]


@pytest.mark.parametrize("locale", ["en-US", "zh-CN", "zh-TW", "ja-JP", "ru-RU", "ar-SA", "pt-BR", "ko-KR"])
def test_the_cors_hint_names_each_servers_switch_in_every_locale(locale):
    hint = Translator(locale)("model.settings.refusedHint")
    assert "--cors-origins" in hint and "OLLAMA_ORIGINS" in hint and "LM Studio" in hint and "Enable CORS" in hint


async def test_test_connection_warns_when_the_configured_model_is_not_listed(fake_server):
    from app.agents.openai import check_connection

    base = f"{fake_server.origin}/v1"
    listed = await check_connection(UrllibTransport(), AgentConfig(base_url=base, model="fake-model-2"))
    assert listed.warnings() == [] and listed.tools is True
    missing = await check_connection(UrllibTransport(), AgentConfig(base_url=base, model="llama3"))
    assert missing.warnings() == [("model-not-listed", "model.settings.testModelMissing",
                                   {"model": "llama3", "models": "fake-model-1, fake-model-2"})]
    text = Translator("en-US")("model.settings.testModelMissing", **missing.warnings()[0][2])
    assert "llama3" in text and "fake-model-1, fake-model-2" in text
    fake_server.no_jinja = True
    refused = await check_connection(UrllibTransport(), AgentConfig(base_url=base, model=""))
    assert [code for code, _, _ in refused.warnings()] == ["tools-refused"]
    assert fake_server.posts()[-1]["body"]["model"] == "fake-model-1"  # the first listed, when none is set


async def test_an_agent_told_the_server_refuses_tools_does_not_offer_them():
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    await collect(OpenAIAgent(transport, CONFIG, offer_tools=False))
    assert "tools" not in transport.posts[0]["body"]


async def test_a_key_pasted_into_the_users_message_is_stored_masked():
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse(OK, "[DONE]")]))
    storage = MemoryStorage()
    from app.agents.switch import SelectedAgent

    agent = OpenAIAgent(transport, CONFIG)
    runtime = AgentRuntime(ThreadStore(storage), SelectedAgent(lambda: agent), clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    await runtime.send(f"my key is {KEY}")
    assert runtime.messages[0].content[0].text == "my key is •••"
    assert KEY not in storage.get_item("maic-agent-threads")


async def test_test_connection_against_llama_servers_recorded_model_list_names_what_it_serves():
    from app.agents.openai import check_connection

    listing = transcript("models.http")
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse(OK, "[DONE]")]),
                                  models=(listing.status, listing.headers, json.loads(listing._body)))
    check = await check_connection(transport, AgentConfig(base_url="http://127.0.0.1:8080/v1", model="llama3"))
    assert check.models == ["tiny"] and check.tools is True
    assert check.warnings()[0][2] == {"model": "llama3", "models": "tiny"}
