"""The model back end in Chromium against llama.cpp's own ``llama-server`` (DESIGN.md §12).

Not the project's fake: the real C++ server, built from the pinned sdist by
``tools/llama_server.py``, serving the tiny models of ``tools/tiny_gguf.py``
(replies known in advance) with ``-t 1`` on 127.0.0.1. Each kind of server
(plain, tool-calling, endless, small context, without templates, CORS for
another origin) starts at most once for this module, when a test first needs
it, and stops at the end. One page runs every case, each in its own course
(``in_case``: switched in the page, no boot) against its own server.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from tests.e2e.test_model import assistant_texts, configure, in_case
from tools import llama_server, tiny_gguf

SMALL_CONTEXT = 4096
"""Tokens of context of the ``small-context`` server (the tiny model reads about one token per character)."""
OTHER_ORIGIN = "http://127.0.0.1:9"
"""An origin that is not the page's: the ``cors`` server admits only it."""

SERVERS: dict[str, tuple[str, ...]] = {
    "plain": ("plain",),
    "tool": ("tool",),
    "endless": ("endless", "-c", "65536"),  # about a minute of tokens at full speed: time enough to press Stop
    "small-context": ("plain", "-c", str(SMALL_CONTEXT)),
    "no-jinja": ("plain", "--no-jinja"),
    "cors": ("plain", "--cors-origins", OTHER_ORIGIN),
}
"""Kind of server → ``(tiny model, extra llama-server options…)``."""


@pytest.fixture(scope="module")
def llama_servers(tmp_path_factory):
    """``get(kind)`` → a running ``llama_server.Server`` of that kind (``SERVERS``), started once per
    module on first use (built first when missing); all stopped at the end."""
    llama_server.ensure()
    log_dir = tmp_path_factory.mktemp("llama-server")
    running: dict[str, llama_server.Server] = {}

    def get(kind: str) -> llama_server.Server:
        if kind not in running:
            model, *options = SERVERS[kind]
            running[kind] = llama_server.start(model, *options, alias=f"tiny-{kind}", log_dir=log_dir)
        return running[kind]

    yield get
    for server in running.values():
        server.stop()


@pytest.fixture
def llama(llama_servers, agent):
    """``use(kind)`` → that server, its origin admitted by ``agent``'s no-request-leaves check."""
    def use(kind: str) -> llama_server.Server:
        server = llama_servers(kind)
        agent.allowed_origins.append(server.origin)
        return server
    return use


def chat_posts(agent) -> list[dict]:
    """Every ``POST …/chat/completions`` body the page sends from now on (parsed JSON), in order."""
    bodies: list[dict] = []

    def record(request) -> None:
        if request.method == "POST" and request.url.endswith("/chat/completions"):
            bodies.append(json.loads(request.post_data))
    agent.page.on("request", record)
    return bodies


def chat_statuses(agent) -> list[int]:
    """The HTTP status of every ``…/chat/completions`` answer the page gets from now on, in order."""
    statuses: list[int] = []
    agent.page.on("response", lambda r: statuses.append(r.status) if r.url.endswith("/chat/completions")
                  and r.request.method == "POST" else None)
    return statuses


def replayed_usage(server: llama_server.Server, body: dict) -> dict:
    """The usage the server reports for ``body`` sent again (the tiny model answers the same every time)."""
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    usage = None
    with urllib.request.urlopen(request, timeout=120) as answer:
        for line in answer:
            if line.startswith(b"data: {"):
                usage = json.loads(line[6:]).get("usage") or usage
    assert usage, "the server reported no usage"
    return usage


def turn_meta(agent, index: int = 0):
    """The ``index``-th assistant message's turn meta, once history has written it."""
    meta = agent.page.locator("[data-testid=agent-message][data-role=assistant] [data-testid=turn-meta]").nth(index)
    meta.wait_for(state="attached")
    return meta


def wait_for_log(server: llama_server.Server, text: str, timeout_s: float = 10.0) -> bool:
    """True once ``text`` is in the server's log (polled for up to ``timeout_s`` seconds)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in server.log():
            return True
        time.sleep(0.1)
    return False


def streamed_reply_shows_the_servers_model_and_token_counts(agent, server) -> None:
    configure(agent, server, base_url=server.base_url, model="asked-for-model")
    posts = chat_posts(agent)
    with agent.page.expect_response(lambda r: r.url.endswith("/chat/completions")) as answer:
        agent.send("Hello there")
    assert answer.value.headers["content-type"].startswith("text/event-stream")
    assert posts[-1]["stream"] is True and posts[-1]["stream_options"] == {"include_usage": True}
    assert assistant_texts(agent) == [tiny_gguf.PLAIN_TEXT]
    assert agent.testid("turn-error").count() == 0
    meta = turn_meta(agent)
    # llama.cpp names its own model (the alias), whatever the request asked for; usage is its last chunk's
    assert meta.get_attribute("data-model") == server.alias
    usage = replayed_usage(server, posts[-1])
    assert usage["completion_tokens"] >= len(tiny_gguf.PLAIN_REPLY) and usage["prompt_tokens"] > 0
    assert meta.get_attribute("data-total-tokens") == str(usage["total_tokens"])
    assert meta.get_attribute("data-usage") is None


def an_edit_and_a_regenerate_send_the_shown_path_only(agent, server) -> None:
    """DESIGN.md §17: the model reads the shown path up to the message it answers, never a sibling;
    the real server answers such a request."""
    configure(agent, server, base_url=server.base_url)
    posts = chat_posts(agent)
    agent.send("First question")
    agent.send("Second question")
    said = lambda body: [m["content"] for m in body["messages"] if m["role"] != "system"]  # noqa: E731
    assert said(posts[-1])[0] == "First question" and said(posts[-1])[-1] == "Second question"
    first = agent.page.locator("[data-testid=agent-message][data-role=user]").first
    first.locator("[data-testid=message-edit]").click()
    field = agent.testid("message-edit-input")
    field.fill("First question, edited")
    field.press("Control+Enter")
    agent.wait_idle()
    assert said(posts[-1]) == ["First question, edited"]  # nothing of the other branch
    assert assistant_texts(agent) == [tiny_gguf.PLAIN_TEXT]
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]").first
    reply.locator("[data-testid=message-regenerate]").click()
    agent.wait_idle()
    assert said(posts[-1]) == ["First question, edited"]
    assert assistant_texts(agent) == [tiny_gguf.PLAIN_TEXT]
    picker = agent.page.locator("[data-testid=agent-message][data-role=assistant]").first.locator(
        "[data-testid=branch-picker]")
    assert (picker.get_attribute("data-index"), picker.get_attribute("data-count")) == ("2", "2")
    assert len(posts) == 4


def stop_ends_the_request_on_the_server(agent, server, course: str) -> None:
    configure(agent, server, base_url=server.base_url, model=server.alias)
    agent.send("Tell me everything", wait=False)
    agent.page.wait_for_function(
        "() => (document.querySelector('[data-role=assistant] .bubble')?.textContent || '').includes('on and on')")
    cancels = server.log().count("cancel task")
    agent.testid("agent-stop").click()
    agent.wait_idle()
    message = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert message.get_attribute("data-status") == "incomplete"
    assert agent.testid("turn-error").count() == 0
    # the server saw the connection close and cancelled its generation task
    assert wait_for_log(server, "cancel task") and server.log().count("cancel task") > cancels
    stored = agent.stored()["state"]["threads"][course]["messages"]
    assert stored[1]["content"][0]["text"].startswith(tiny_gguf.ENDLESS_START + " and on")


def tool_call_from_the_server_regenerates_the_scene_and_the_model_finishes(agent, server) -> None:
    configure(agent, server, base_url=server.base_url, model=server.alias)
    posts = chat_posts(agent)
    agent.send("Please redo the second scene")
    card = agent.testid("tool-card")
    assert card.count() == 1 and card.get_attribute("data-status") == "ok"
    scene = agent.page.locator("[data-testid=scene][data-scene-id=scene-2]")
    assert scene.get_attribute("data-version") == "1"
    assert agent.testid("checkpoint-summary").get_attribute("data-count") == "1"
    assert assistant_texts(agent)[0].endswith(tiny_gguf.ANSWER_TEXT)
    assert agent.testid("turn-error").count() == 0
    first, second = posts
    assert first["tools"][0]["function"]["name"] == "regenerate_scene"
    call = second["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"sceneId": "scene-2", "instruction": "llama chart"}
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == call["id"]
    # llama.cpp's own 32-character id goes back unchanged (DESIGN.md §12), and llama.cpp takes it
    assert len(call["id"]) == 32 and call["id"].isascii() and call["id"].isalnum()


def a_conversation_that_outgrows_the_context_is_still_answered_with_fewer_turns(agent, server) -> None:
    configure(agent, server, base_url=server.base_url, model=server.alias)
    posts = chat_posts(agent)
    agent.send("Hello")
    base = replayed_usage(server, posts[-1])["prompt_tokens"]  # system prompt, tools, one short turn
    long_text = "abc " * int((SMALL_CONTEXT - base) * 0.4 / 4)  # a token per character: 40 % of what is left
    for turn in range(2, 5):  # turn 4 no longer fits whole
        agent.send(f"{turn} {long_text}")
    assert assistant_texts(agent) == [tiny_gguf.PLAIN_TEXT] * 4
    assert agent.testid("turn-error").count() == 0
    refused, retried = posts[-2], posts[-1]
    users = [[m for m in body["messages"] if m["role"] == "user"] for body in (refused, retried)]
    assert len(users[0]) == 4 and 1 <= len(users[1]) < 4 and users[1][-1]["content"].startswith("4 ")
    assert "exceeds the available context size" in server.log()
    meta = turn_meta(agent, 3)
    dropped = int(meta.get_attribute("data-dropped-turns"))
    assert dropped == 4 - len(users[1])
    assert all(turn_meta(agent, n).get_attribute("data-dropped-turns") is None for n in range(3))


def a_server_without_templates_is_asked_again_without_tools_and_test_connection_says_so(agent, server) -> None:
    """The turns first, before any Test connection on this page: nothing is remembered, the first
    turn finds out itself; then Test connection warns. (Last of its page: the tab remembers the refusal.)"""
    configure(agent, server, base_url=server.base_url, model=server.alias)
    posts, statuses = chat_posts(agent), chat_statuses(agent)
    agent.send("Hello there")
    agent.send("And again")
    assert assistant_texts(agent) == [tiny_gguf.PLAIN_TEXT] * 2
    assert agent.testid("turn-error").count() == 0
    # HTTP 500 "tools param requires --jinja flag", then the same request without tools; remembered after
    assert ["tools" in body for body in posts] == [True, False, False]
    assert statuses == [500, 200, 200]
    agent.testid("settings-open").click()
    agent.testid("settings-test").click()
    result = agent.testid("settings-test-result")
    agent.page.wait_for_function("() => ['ok', 'warning', 'error'].includes("
                                 "document.querySelector('[data-testid=settings-test-result]').dataset.state)")
    assert result.get_attribute("data-state") == "warning"
    assert "tools-refused" in result.get_attribute("data-warnings").split()
    agent.page.keyboard.press("Escape")


def cors_refusal_names_the_servers_switch(agent, server) -> None:
    configure(agent, server, base_url=server.base_url, model=server.alias)
    agent.send("hello")
    error = agent.testid("turn-error")
    assert error.get_attribute("data-code") == "cors"
    assert "--cors-origins" in error.inner_text()


def test_every_kind_of_llama_server_in_one_page_each_in_its_own_course(agent, llama):
    """One boot, test_resilience's version-0 value migrated at it (in a course of its own): a streamed
    reply with the server's model and usage, an edit and a regenerate (the shown path only), Stop, a tool call, a context outgrown, a server admitting
    another origin only, a server without templates (last)."""
    from tests.e2e.test_core import case
    from tests.e2e.test_resilience import version_0_value_is_migrated_and_written_back_once

    with case("a version 0 value is migrated and written back once (test_resilience; the page's boot)"):
        version_0_value_is_migrated_and_written_back_once(agent, "r-version-0")
    with in_case(agent, "plain: streamed reply, model, token counts", "intro-ml"):
        streamed_reply_shows_the_servers_model_and_token_counts(agent, llama("plain"))
    with in_case(agent, "plain: an edit and a regenerate send the shown path only", "l-branches"):
        an_edit_and_a_regenerate_send_the_shown_path_only(agent, llama("plain"))
    with in_case(agent, "endless: Stop ends the request", "l-endless") as course:
        stop_ends_the_request_on_the_server(agent, llama("endless"), course)
    with in_case(agent, "tool: a tool call regenerates the scene", "linear-algebra"):
        tool_call_from_the_server_regenerates_the_scene_and_the_model_finishes(agent, llama("tool"))
    with in_case(agent, "small context: answered with fewer turns", "l-small-context"):
        a_conversation_that_outgrows_the_context_is_still_answered_with_fewer_turns(agent, llama("small-context"))
    with in_case(agent, "cors: refusal names the switch", "l-cors"):
        cors_refusal_names_the_servers_switch(agent, llama("cors"))
    with in_case(agent, "no-jinja: asked again without tools, test connection warns", "l-no-jinja"):
        a_server_without_templates_is_asked_again_without_tools_and_test_connection_says_so(agent, llama("no-jinja"))
