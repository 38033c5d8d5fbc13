"""OpenAIAgent (app/agents/openai.py) over scripted transports and against tools/fake_openai.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.agent import TextDelta, ToolCallFinished, ToolCallStarted, regenerate_result
from app.agents.errors import ModelError, TransportError
from app.agents.events import TokenUsage, UsageReported
from app.agents.openai import AgentConfig, OpenAIAgent, list_models
from app.agents.switch import SelectedAgent
from app.model import Message, TextPart
from app.projection import STOPPED_MARKER
from app.runtime import AgentRuntime
from app.storage import MemoryStorage
from app.store import ThreadStore
from tests.unit.model_fakes import ScriptedResponse, ScriptedTransport, UrllibTransport, recorded_runtime, sse
from tools import fake_openai

CONFIG = AgentConfig(base_url="http://127.0.0.1:9/v1", model="m1", api_key="sk-secret-123")


def text_chunk(text: str, **extra) -> dict:
    return {"model": "served-model", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}], **extra}


FINISH = {"model": "served-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {"model": "served-model", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}


async def collect(agent, history=(), text="hi"):
    return [event async for event in agent.run(list(history), text)]


async def failure(agent, text="hi") -> ModelError:
    with pytest.raises(ModelError) as info:
        await collect(agent, text=text)
    return info.value


async def test_request_shape_and_streamed_text_with_usage():
    body = sse(text_chunk("Hel"), text_chunk("lo"), FINISH, USAGE, "[DONE]")
    transport = ScriptedTransport(ScriptedResponse(chunks=[body[:17], body[17:40], body[40:]]))
    events = await collect(OpenAIAgent(transport, CONFIG), text="question")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert events[-1] == UsageReported("served-model", TokenUsage(11, 3, 14))
    post = transport.posts[0]
    assert post["url"] == "http://127.0.0.1:9/v1/chat/completions"
    assert post["headers"]["Authorization"] == "Bearer sk-secret-123"
    assert post["body"]["stream"] is True and post["body"]["stream_options"] == {"include_usage": True}
    assert post["body"]["model"] == "m1"
    tool = post["body"]["tools"][0]["function"]
    assert tool["name"] == "regenerate_scene"
    assert set(tool["parameters"]["properties"]) == {"sceneId", "instruction"}
    assert post["body"]["messages"][-1] == {"role": "user", "content": "question"}
    assert transport.opened[0].closed


async def test_pieces_of_one_read_become_one_text_delta():
    body = sse(*(text_chunk(f" w{i}") for i in range(50)), FINISH, "[DONE]")
    events = await collect(OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 1 and deltas[0].text == "".join(f" w{i}" for i in range(50))


async def test_no_usage_is_reported_as_none_not_invented():
    body = sse(text_chunk("ok"), FINISH, "[DONE]")
    events = await collect(OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG))
    assert events[-1] == UsageReported("served-model", None)


async def test_no_key_sends_no_authorization_header():
    transport = ScriptedTransport(ScriptedResponse(chunks=[sse(text_chunk("x"), FINISH, "[DONE]")]))
    await collect(OpenAIAgent(transport, AgentConfig(base_url="http://h/v1", model="m")))
    assert "Authorization" not in transport.posts[0]["headers"]


def tool_round(pieces: list[str], usage: dict | None = None) -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "srv-1", "type": "function", "function": {"name": "regenerate_scene", "arguments": ""}}]}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}
               for p in pieces]
    chunks.append({"model": "served-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    if usage:
        chunks.append({"choices": [], "usage": usage})
    return sse(*chunks, "[DONE]")


async def test_tool_call_assembled_run_locally_and_result_sent_back():
    first = tool_round(['{"sce', 'neId": "scene-3", ', '"instruction": "more', ' 图"}'],
                       {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
    second = sse(text_chunk("Done."), FINISH, USAGE, "[DONE]")
    transport = ScriptedTransport(ScriptedResponse(chunks=[first[:30], first[30:]]), ScriptedResponse(chunks=[second]))
    agent = OpenAIAgent(transport, CONFIG, new_id=lambda: "call-local-1")
    events = await collect(agent, text="/please")
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    # Stored under the app's unique id with the model's appended (DESIGN.md §5, §12) ...
    assert started == ToolCallStarted("call-local-1~srv-1", "regenerate_scene",
                                      {"sceneId": "scene-3", "instruction": "more 图"})
    assert finished.result == regenerate_result("scene-3", "more 图") and not finished.is_error
    assert events[-1] == UsageReported("served-model", TokenUsage(16, 5, 21))
    # ... and the model gets its own id back, unchanged, in both places.
    follow_up = transport.posts[1]["body"]["messages"]
    assert follow_up[-2]["tool_calls"][0]["id"] == "srv-1"
    assert json.loads(follow_up[-2]["tool_calls"][0]["function"]["arguments"]) == started.args
    assert follow_up[-1] == {"role": "tool", "tool_call_id": "srv-1",
                             "content": finished.result["content"][0]["text"]}


async def test_usage_missing_in_one_round_makes_the_turn_not_reported():
    first = tool_round(['{"sceneId": "scene-1"}'])  # no usage chunk
    second = sse(text_chunk("Done."), FINISH, USAGE, "[DONE]")
    transport = ScriptedTransport(ScriptedResponse(chunks=[first]), ScriptedResponse(chunks=[second]))
    events = await collect(OpenAIAgent(transport, CONFIG))
    assert events[-1].usage is None


async def test_unparseable_arguments_become_an_error_card_and_the_model_finishes():
    first = tool_round(['{"sceneId": "scene-1", ', '"instruction": '])
    second = sse(text_chunk("Sorry."), FINISH, "[DONE]")
    transport = ScriptedTransport(ScriptedResponse(chunks=[first]), ScriptedResponse(chunks=[second]))
    events = await collect(OpenAIAgent(transport, CONFIG))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.is_error and finished.result["details"]["content"] is None
    assert transport.posts[1]["body"]["messages"][-1]["content"].startswith("Error: ")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sorry."


async def test_tool_that_raises_becomes_an_error_card(monkeypatch):
    from app import agent as demo

    def boom(scene_id, instruction=""):
        raise LookupError(f"no scene {scene_id}")

    monkeypatch.setattr(demo, "regenerate_result", boom)  # the seam: looked up at call time
    first = tool_round(['{"sceneId": "nope"}'])
    transport = ScriptedTransport(ScriptedResponse(chunks=[first]),
                                  ScriptedResponse(chunks=[sse(text_chunk("k"), FINISH, "[DONE]")]))
    events = await collect(OpenAIAgent(transport, CONFIG))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.is_error and "no scene nope" in finished.result["content"][0]["text"]


async def test_endless_tool_calls_stop_after_max_rounds():
    rounds = [ScriptedResponse(chunks=[tool_round(['{"sceneId": "scene-1"}'])]) for _ in range(3)]
    agent = OpenAIAgent(ScriptedTransport(*rounds), CONFIG, max_tool_rounds=2)
    error = await failure(agent)
    assert error.code == "tool-rounds" and error.params == {"count": 2}


@pytest.mark.parametrize(("status", "code", "params"), [
    (401, "auth", {"status": 401}), (403, "auth", {"status": 403}),
    (404, "not-found", {"status": 404, "model": "m1"}), (500, "server", {"status": 500}),
    (503, "server", {"status": 503}), (418, "http", {"status": 418}),
])
async def test_http_errors(status, code, params):
    body = json.dumps({"error": {"message": "bad key sk-secret-123 here"}})
    error = await failure(OpenAIAgent(ScriptedTransport(ScriptedResponse(status, body=body)), CONFIG))
    assert error.code == code
    assert {k: v for k, v in error.params.items() if k != "detail"} == params
    assert error.params["detail"] == "bad key ••• here"  # the key is scrubbed from server text
    assert "sk-secret-123" not in str(error)


async def test_rate_limit_reads_retry_after():
    response = ScriptedResponse(429, headers={"retry-after": "7"}, body="{}")
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (error.code, error.params) == ("rate-limited", {"seconds": 7})
    no_header = await failure(OpenAIAgent(ScriptedTransport(ScriptedResponse(429, body="")), CONFIG))
    assert no_header.params == {}


@pytest.mark.parametrize(("kind", "code", "params"), [
    ("network", "network", {"url": "http://127.0.0.1:9/v1/chat/completions"}),
    ("cors", "cors", {"origin": "http://127.0.0.1:9"}),
    ("blocked", "blocked", {"origin": "http://127.0.0.1:9"}),
])
async def test_transport_failures(kind, code, params):
    error = await failure(OpenAIAgent(ScriptedTransport(TransportError(kind, "http://127.0.0.1:9")), CONFIG))
    assert (error.code, error.params) == (code, params)


async def test_stream_cut_without_done_or_finish():
    response = ScriptedResponse(chunks=[sse(text_chunk("par")), b'data: {"choi'])
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert error.code == "stream-cut" and response.closed


async def test_a_reply_with_no_text_and_no_tool_call_is_a_failure_not_an_empty_reply():
    """A stream that ends well but says nothing (only ``[DONE]``, or a ``stop`` after no text, or only
    white space) was an empty "complete" reply that the thread could not keep: gone after a reload,
    its question no longer sent. It fails the turn (``empty-reply``), after the usage report."""
    for chunks in ([sse("[DONE]")], [sse(FINISH, USAGE, "[DONE]")], [sse(text_chunk("\n "), FINISH, "[DONE]")]):
        response = ScriptedResponse(chunks=chunks)
        agent = OpenAIAgent(ScriptedTransport(response), CONFIG)
        events = []
        with pytest.raises(ModelError) as info:
            async for event in agent.run([], "hi"):
                events.append(event)
        assert info.value.code == "empty-reply" and response.closed
        assert isinstance(events[-1], UsageReported)


async def test_a_json_answer_holding_an_error_object_says_the_servers_message():
    """A server answering 200 with ``{"error": {...}}`` as JSON was reported as "not JSON"; it says
    the server's own message, as the same object inside a stream does (``stream-error``)."""
    body = json.dumps({"error": {"message": "model overloaded", "code": 503}})
    response = ScriptedResponse(body=body, headers={"content-type": "application/json"})
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (error.code, error.params) == ("stream-error", {"message": "model overloaded"})


async def test_read_failure_mid_stream_is_a_cut_stream():
    response = ScriptedResponse(chunks=[sse(text_chunk("par")), TransportError("network")])
    assert (await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))).code == "stream-cut"


async def test_non_json_event_is_a_clear_error():
    response = ScriptedResponse(chunks=[sse(text_chunk("a"), "{not json", "[DONE]")])
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (error.code, error.params) == ("bad-event", {"excerpt": "{not json"})


async def test_error_object_in_stream():
    response = ScriptedResponse(chunks=[sse({"error": {"message": "context too long"}})])
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (error.code, error.params) == ("stream-error", {"message": "context too long"})


async def texts_then_failure(agent) -> tuple[list[str], ModelError]:
    texts = []
    with pytest.raises(ModelError) as info:
        async for event in agent.run([], "hi"):
            if isinstance(event, TextDelta):
                texts.append(event.text)
    return texts, info.value


@pytest.mark.parametrize("bad", [{"error": {"message": "overloaded"}}, "{not json", "[1]"])
async def test_text_before_a_failing_event_in_the_same_read_is_kept(bad):
    events = [text_chunk("some "), text_chunk("text"), bad if isinstance(bad, str) else bad]
    response = ScriptedResponse(chunks=[sse(*events)])  # one read: the text and the failure together
    texts, error = await texts_then_failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert "".join(texts) == "some text" and error.code in ("stream-error", "bad-event") and response.closed


async def test_a_web_page_answering_200_is_a_bad_event_showing_its_start():
    page = "<!doctype html>\n<html><title>Sign in</title></html>"
    response = ScriptedResponse(headers={"content-type": "text/html; charset=utf-8"}, chunks=[page.encode()], body=page)
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert error.code == "bad-event" and error.params["excerpt"].startswith("<!doctype html> <html>")


async def test_missing_settings_fail_before_any_request():
    transport = ScriptedTransport()
    error = await failure(OpenAIAgent(transport, AgentConfig(base_url="http://h/v1", model="")))
    assert (error.code, error.params) == ("settings", {"field": "model"}) and transport.posts == []


def test_config_repr_masks_the_key():
    assert "sk-secret-123" not in repr(CONFIG) and "sk-secret-123" not in repr(OpenAIAgent(ScriptedTransport(), CONFIG))


async def test_list_models():
    transport = ScriptedTransport(models=(200, {}, {"data": [{"id": "b"}, {"id": "a"}, {"x": 1}]}))
    assert await list_models(transport, CONFIG) == ["a", "b"]
    assert transport.posts[0]["url"] == "http://127.0.0.1:9/v1/models"
    denied = ScriptedTransport(models=(401, {}, {"error": {"message": "nope"}}))
    with pytest.raises(ModelError) as info:
        await list_models(denied, CONFIG)
    assert info.value.code == "auth"


# -- the runtime with the model agent: failed turns, stop, kept turns ----------------------

def runtime_with(agent) -> tuple[AgentRuntime, MemoryStorage]:
    storage = MemoryStorage()
    runtime = AgentRuntime(ThreadStore(storage), agent, clock=lambda: 1_780_000_000_000)
    runtime.hydrate()
    runtime.set_stage("intro-ml")
    return runtime, storage


async def test_failed_turn_keeps_earlier_turns_and_carries_the_error_code():
    ok = ScriptedResponse(chunks=[sse(text_chunk("first answer"), FINISH, "[DONE]")])
    denied = ScriptedResponse(401, body="{}")
    runtime, storage = runtime_with(OpenAIAgent(ScriptedTransport(ok, denied), CONFIG))
    await runtime.send("one")
    with pytest.raises(ModelError):
        await runtime.send("two")
    assert not runtime.is_running
    failed = runtime.messages[-1]
    assert (failed.status.type, failed.status.reason) == ("incomplete", "error")
    assert failed.status.error == {"code": "auth", "params": {"status": 401}}
    stored = json.loads(storage.get_item("maic-agent-threads"))["state"]["threads"]["intro-ml"]["messages"]
    assert stored[1]["content"][0]["text"] == "first answer"
    assert "sk-secret-123" not in storage.get_item("maic-agent-threads")


async def test_failed_turn_survives_a_reload_and_a_retry_sends_the_model_no_marker():
    down = ScriptedResponse(503, body='{"error":{"message":"overloaded"}}')
    runtime, storage = runtime_with(OpenAIAgent(ScriptedTransport(down), CONFIG))
    with pytest.raises(ModelError):
        await runtime.send("question")
    stored = json.loads(storage.get_item("maic-agent-threads"))["state"]["threads"]["intro-ml"]["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]  # the user's message has its (failed) answer
    # After a reload: the same failure, localizable from its code and params.
    retry = ScriptedResponse(chunks=[sse(text_chunk("the answer"), FINISH, "[DONE]")])
    transport = ScriptedTransport(retry)
    reloaded = AgentRuntime(ThreadStore(storage), OpenAIAgent(transport, CONFIG), clock=lambda: 1_780_000_000_001)
    reloaded.hydrate()
    reloaded.set_stage("intro-ml")
    failed = reloaded.messages[-1]
    assert (failed.status.type, failed.status.reason) == ("incomplete", "error")
    assert failed.status.error == {"code": "server", "params": {"status": 503, "detail": "overloaded"}}
    assert failed.content == []
    # The user retries: the failed turn (no reply text) is left out, never two user messages in a row
    # (DESIGN.md §12), and nothing of the marker is sent.
    await reloaded.send("question")
    sent = transport.posts[-1]["body"]["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == ["user"]
    assert "turn-error" not in json.dumps(sent)
    assert reloaded.messages[-1].content[0].text == "the answer"


async def test_stop_mid_stream_closes_the_response_and_saves_as_stopped():
    gate = asyncio.Event()

    class Hanging(ScriptedResponse):
        async def _iterate(self):
            yield sse(text_chunk("partial"))
            await gate.wait()  # never set: the stream hangs until Stop
            yield b""

    response = Hanging()
    runtime, storage = runtime_with(OpenAIAgent(ScriptedTransport(response), CONFIG))
    task = runtime.send("go")
    for _ in range(20):
        await asyncio.sleep(0)
    assert runtime.messages[-1].content[0].text == "partial"
    runtime.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert response.closed and not runtime.is_running
    assert runtime.messages[-1].status.reason == "cancelled"
    stored = json.loads(storage.get_item("maic-agent-threads"))["state"]["threads"]["intro-ml"]["messages"]
    assert stored[-1]["content"] == [{"type": "text", "text": "partial"}, STOPPED_MARKER]  # stopped, like the demo's


async def test_selected_agent_follows_the_choice_per_turn():
    class Fixed:
        def __init__(self, word):
            self.word = word

        def mask_secret(self, text):
            return text

        async def run(self, history, text):
            yield TextDelta(self.word)

    choice = {"agent": Fixed("a")}
    selected = SelectedAgent(lambda: choice["agent"])
    assert [e.text async for e in selected.run([], "x")] == ["a"]
    choice["agent"] = Fixed("b")
    assert [e.text async for e in selected.run([], "x")] == ["b"]


# -- against the fake OpenAI-compatible server over real HTTP ----------------------------

@pytest.fixture
def fake_server():
    server = fake_openai.start()
    yield server
    server.shutdown()
    server.server_close()


def live_config(server, **changes) -> AgentConfig:
    return AgentConfig(**{"base_url": f"{server.origin}/v1", "model": "fake-model-1", **changes})


async def test_fake_server_plain_reply_with_usage(fake_server):
    events = await collect(OpenAIAgent(UrllibTransport(), live_config(fake_server)))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(fake_openai.PLAIN_PIECES)
    u = fake_openai.USAGE
    assert events[-1] == UsageReported(fake_openai.MODEL_NAME,
                                       TokenUsage(u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]))


async def test_fake_server_tool_path(fake_server):
    events = await collect(OpenAIAgent(UrllibTransport(), live_config(fake_server)), text="#tool")
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.args == {"sceneId": "scene-2", "instruction": "add a diagram 🎨 图"}
    assert len(fake_server.posts()) == 2 and fake_server.posts()[1]["body"]["messages"][-1]["role"] == "tool"
    assert events[-1].usage.total_tokens == fake_openai.USAGE["total_tokens"] + fake_openai.TOOL_USAGE["total_tokens"]


@pytest.mark.parametrize(("command", "code"), [
    ("#401", "auth"), ("#403", "auth"), ("#404", "not-found"), ("#429", "rate-limited"), ("#500", "server"),
    ("#503", "server"), ("#cut", "stream-cut"), ("#badjson", "bad-event"),
])
async def test_fake_server_errors(fake_server, command, code):
    error = await failure(OpenAIAgent(UrllibTransport(), live_config(fake_server)), text=command)
    assert error.code == code
    if command == "#429":
        assert error.params["seconds"] == 7


async def test_fake_server_required_key_and_models(fake_server):
    fake_server.required_key = "good-key"
    assert await list_models(UrllibTransport(), live_config(fake_server, api_key="good-key")) == fake_openai.MODELS
    with pytest.raises(ModelError) as info:
        await list_models(UrllibTransport(), live_config(fake_server, api_key="bad"))
    assert info.value.code == "auth"


async def test_history_goes_to_the_server(fake_server):
    history = [Message(role="user", content=[TextPart(text="earlier")]),
               Message(role="assistant", content=[TextPart(text="answer")])]
    await collect(OpenAIAgent(UrllibTransport(), live_config(fake_server)), history, "now")
    assert [m["content"] for m in fake_server.posts()[0]["body"]["messages"]] == ["earlier", "answer", "now"]


async def test_model_name_falls_back_to_the_configured_one():
    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}
    events = await collect(OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[sse(chunk, "[DONE]")])), CONFIG))
    assert events[-1] == UsageReported("m1", None)


async def test_an_event_holding_two_json_values_is_a_bad_event():
    # One read's events are parsed in one json.loads: "1,2" must not slip through as two chunks.
    response = ScriptedResponse(chunks=[sse(text_chunk("a"), "1,2", text_chunk("b"), "[DONE]")])
    error = await failure(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert (error.code, error.params) == ("bad-event", {"excerpt": "1,2"})


async def test_events_after_done_are_ignored():
    response = ScriptedResponse(chunks=[sse(text_chunk("a"), "[DONE]", "{not json")])
    events = await collect(OpenAIAgent(ScriptedTransport(response), CONFIG))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a"]


async def test_a_server_that_goes_silent_fails_the_turn_and_closes_the_response():
    class Silent(ScriptedResponse):
        async def _iterate(self):
            yield sse(text_chunk("so far"))
            await asyncio.Event().wait()  # never set
            yield b""

    response = Silent()
    agent = OpenAIAgent(ScriptedTransport(response), CONFIG, idle_timeout_s=0.05)
    error = await failure(agent)
    assert (error.code, error.params) == ("timeout", {"seconds": 0}) and response.closed


async def test_no_response_headers_in_time_is_a_timeout():
    class Hanging(ScriptedTransport):
        async def post_stream(self, url, headers, body):
            await asyncio.Event().wait()

    error = await failure(OpenAIAgent(Hanging(), CONFIG, idle_timeout_s=0.05))
    assert error.code == "timeout"


async def test_a_model_without_tool_support_is_asked_again_without_tools():
    refused = ScriptedResponse(400, body=json.dumps({"error": {"message": "gemma does not support tools"}}))
    ok = ScriptedResponse(chunks=[sse(text_chunk("plain answer"), FINISH, "[DONE]")])
    transport = ScriptedTransport(refused, ok)
    events = await collect(OpenAIAgent(transport, CONFIG))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "plain answer"
    assert "tools" in transport.posts[0]["body"] and "tools" not in transport.posts[1]["body"]
    other = ScriptedResponse(400, body=json.dumps({"error": {"message": "bad request"}}))
    assert (await failure(OpenAIAgent(ScriptedTransport(other), CONFIG))).code == "http"


def test_usage_event_in_turn_meta_shape():
    assert UsageReported("m", TokenUsage(3, 4, 7)).to_turn_meta() == {
        "model": "m", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}}
    assert UsageReported("m", None).to_turn_meta() == {"model": "m", "usage": None}


async def test_a_server_that_ignores_stream_gets_its_whole_completion_used():
    completion = {"model": "whole-model", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Let me do that.", "tool_calls": [{"id": "x", "type": "function", "function": {
            "name": "regenerate_scene", "arguments": json.dumps({"sceneId": "scene-1"})}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}
    json_headers = {"content-type": "application/json; charset=utf-8"}
    first = ScriptedResponse(headers=json_headers, body=json.dumps(completion))
    second = ScriptedResponse(headers=json_headers, body=json.dumps({"model": "whole-model", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22}}))
    events = await collect(OpenAIAgent(ScriptedTransport(first, second), CONFIG))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me do that.", "Done."]
    assert next(e for e in events if isinstance(e, ToolCallStarted)).args == {"sceneId": "scene-1"}
    assert events[-1] == UsageReported("whole-model", TokenUsage(29, 6, 35))
    broken = ScriptedResponse(headers=json_headers, body="<html>")
    assert (await failure(OpenAIAgent(ScriptedTransport(broken), CONFIG))).code == "bad-event"


@pytest.mark.parametrize("reported", [True, False])
async def test_history_records_the_servers_usage_or_says_it_was_not_reported(reported):
    """DESIGN.md §12: usage and model of a turn come from the server's last chunk; without usage
    the turn meta says "not reported" (None), never invented numbers — and the stats add nothing."""
    body = sse(text_chunk("ok"), FINISH, *([USAGE] if reported else []), "[DONE]")
    runtime, service, recorder = recorded_runtime(OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG))
    await runtime.send("question")
    await recorder.drain()
    meta, turns = await service.active("intro-ml")
    assert [t.model for t in turns] == ["served-model"]
    if reported:
        assert turns[0].usage.model_dump() == {"inputTokens": 11, "outputTokens": 3, "totalTokens": 14}
        assert meta.stats.totalTokens == 14
    else:
        assert turns[0].usage is None and meta.stats.totalTokens == 0


async def test_a_failed_model_turn_records_the_model_it_asked_for():
    down = ScriptedResponse(503, body='{"error":{"message":"overloaded"}}')
    runtime, service, recorder = recorded_runtime(OpenAIAgent(ScriptedTransport(down), CONFIG))
    with pytest.raises(ModelError):
        await runtime.send("question")
    await recorder.drain()
    _, turns = await service.active("intro-ml")
    assert [(t.model, t.usage) for t in turns] == [(CONFIG.model, None)]


async def test_one_huge_read_is_parsed_in_slices_with_a_pause_between_and_arrives_whole():
    from app.agents.openai import FEED_BYTES

    content = ("x" * 99 + "\n") * 30_000 + "é🎨"  # 3 MB in one event, multi-byte characters at the very end
    body = sse(text_chunk("<"), text_chunk(content), text_chunk(">"), FINISH, "[DONE]")
    pauses = []

    async def pause():
        pauses.append(True)
        await asyncio.sleep(0)

    agent = OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG, pause=pause)
    events = await collect(agent)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "<" + content + ">"
    assert len(pauses) >= (len(body) - 1) // FEED_BYTES  # one read of 3 MB: parsed in 256 KB slices (and decoded in slices)


async def test_one_huge_event_is_decoded_in_slices_with_a_pause_between_and_arrives_whole(monkeypatch):
    from app.agents.openai import FEED_BYTES

    content = ("x" * 98 + '"\n') * 30_000 + "é🎨"  # 3 MB of text in one event's JSON string
    body = sse(text_chunk("<"), text_chunk(content), text_chunk(">"), FINISH, "[DONE]")
    log = []
    loads = json.loads

    def logged_loads(text, *args, **kwargs):
        log.append(len(text))
        return loads(text, *args, **kwargs)

    async def pause():
        log.append("pause")
        await asyncio.sleep(0)

    monkeypatch.setattr(json, "loads", logged_loads)
    agent = OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG, pause=pause)
    events = await collect(agent)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "<" + content + ">"
    parsed = [n for n in log if n != "pause"]
    assert sum(parsed) >= len(content)  # every character was parsed ...
    assert max(parsed) <= 2 * FEED_BYTES  # ... never 3 MB in one call: the decode is sliced ...
    big = [i for i, n in enumerate(log) if n != "pause" and n > 1000]  # ... with a pause between slices
    assert len(big) >= len(content) // (2 * FEED_BYTES) and all("pause" in log[i:j] for i, j in zip(big, big[1:]))


async def test_a_multi_byte_character_cut_between_two_slices_stays_whole():
    from app.agents.openai import FEED_BYTES

    head = b'data: {"choices":[{"index":0,"delta":{"content":"'
    filler = "a" * (FEED_BYTES - len(head) - 1)
    body = sse(text_chunk(filler + "图" + "b"), FINISH, "[DONE]")  # "图" (3 bytes) straddles the slice border
    events = await collect(OpenAIAgent(ScriptedTransport(ScriptedResponse(chunks=[body])), CONFIG))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == filler + "图b"
