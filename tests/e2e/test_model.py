"""The OpenAI-compatible model back end in Chromium against tools/fake_openai.py (DESIGN.md §12).

Every test proves, through the ``agent`` fixture, that no request left the app
server and the fake model server (both on 127.0.0.1).
"""

from __future__ import annotations

import json

import pytest

from app.agent import element_count
from tools import fake_openai

KEY = "sk-e2e-secret-4242"


def configure(agent, server, *, base_url: str | None = None, key: str = "", remember: bool = False,
              model: str = "fake-model-1", test: bool = False) -> None:
    """Fill the settings dialog and save it."""
    agent.testid("settings-open").click()
    dialog = agent.testid("settings-dialog")
    assert dialog.is_visible()
    agent.testid("settings-agent").select_option("openai")
    agent.testid("settings-base-url").fill(base_url or f"{server.origin}/v1")
    agent.testid("settings-api-key").fill(key)
    agent.testid("settings-model").fill(model)
    if remember:
        agent.testid("settings-remember").check()
    if test:
        agent.testid("settings-test").click()
        agent.page.wait_for_function("() => ['ok','warning','error'].includes("
                                     "document.querySelector('[data-testid=settings-test-result]').dataset.state)")
    agent.testid("settings-save").click()
    assert dialog.is_hidden()


def assistant_texts(agent) -> list[str]:
    return [t.strip() for t in agent.page.locator("[data-testid=agent-message][data-role=assistant]").all_inner_texts()]


def every_stored_value(agent) -> dict[str, dict[str, str]]:
    return agent.page.evaluate("""() => {
        const dump = (s) => Object.fromEntries(Array.from({length: s.length}, (_, i) => [s.key(i), s.getItem(s.key(i))]));
        return {local: dump(localStorage), session: dump(sessionStorage)};
    }""")


def test_settings_send_streamed_reply_and_reload(agent, fake_model):
    fake_model.required_key = KEY
    agent.open(course="intro-ml")
    configure(agent, fake_model, key=KEY, model="", test=True)
    # The connection test filled the empty model field from the listed models; it was saved with it.
    agent.testid("settings-open").click()
    assert agent.testid("settings-model").input_value() == fake_openai.MODELS[0]
    agent.page.keyboard.press("Escape")
    agent.send("Hello there")
    assert assistant_texts(agent) == ["".join(fake_openai.PLAIN_PIECES)]
    post = fake_model.posts()[-1]
    assert post["headers"]["authorization"] == f"Bearer {KEY}"
    assert post["body"]["stream"] is True and post["body"]["stream_options"] == {"include_usage": True}
    assert post["body"]["messages"][-1] == {"role": "user", "content": "Hello there"}
    assert post["body"]["messages"][0]["role"] == "system"

    agent.reload()
    assert agent.page.evaluate("document.documentElement.dataset.agent") == "openai"
    assert assistant_texts(agent) == ["".join(fake_openai.PLAIN_PIECES)]
    agent.send("Second question")  # the key survives a reload of this tab (sessionStorage)
    assert len(assistant_texts(agent)) == 2 and agent.testid("turn-error").count() == 0
    history = fake_model.posts()[-1]["body"]["messages"]
    assert [m["content"] for m in history[1:]] == ["Hello there", "".join(fake_openai.PLAIN_PIECES), "Second question"]

    stored = every_stored_value(agent)
    assert stored["session"]["agentbar-model-key"] == KEY
    assert "agentbar-model-key" not in stored["local"]
    assert all(KEY not in value for value in stored["local"].values())
    settings = json.loads(stored["local"]["agentbar-model-settings"])
    assert settings["agent"] == "openai" and settings["baseUrl"] == f"{fake_model.origin}/v1"
    threads = agent.stored()["state"]["threads"]["intro-ml"]["messages"]
    assert [m["role"] for m in threads] == ["user", "assistant"] * 2


def test_remembered_key_lives_in_local_storage_and_nowhere_else(agent, fake_model):
    agent.open(course="intro-ml")
    configure(agent, fake_model, key=KEY, remember=True)
    agent.send("/regenerate scene-1 via the model")
    stored = every_stored_value(agent)
    assert stored["local"]["agentbar-model-key"] == KEY
    assert "agentbar-model-key" not in stored["session"]
    others = {k: v for k, v in {**stored["local"], **stored["session"]}.items() if k != "agentbar-model-key"}
    assert "maic-agent-threads" in others and all(KEY not in v for v in others.values())
    agent.page.evaluate("sessionStorage.clear()")  # a new tab: the remembered key is still there
    agent.reload()
    agent.testid("settings-open").click()
    assert agent.testid("settings-api-key").input_value() == KEY
    assert agent.testid("settings-remember").is_checked()
    agent.testid("settings-remember").uncheck()  # un-remember: the key moves to sessionStorage
    agent.testid("settings-save").click()
    stored = every_stored_value(agent)
    assert "agentbar-model-key" not in stored["local"] and stored["session"]["agentbar-model-key"] == KEY


def test_tool_call_runs_locally_and_the_model_finishes(agent, fake_model):
    agent.open(course="intro-ml")
    configure(agent, fake_model)
    agent.send("#tool please")
    card = agent.testid("tool-card")
    assert card.count() == 1
    assert card.get_attribute("data-status") == "ok"
    assert card.get_attribute("data-element-count") == str(element_count("scene-2"))
    assert agent.page.locator("[data-testid=scene][data-scene-id=scene-2]").get_attribute("data-version")
    assert assistant_texts(agent)[0].endswith("Scene regenerated as asked.")
    first, second = fake_model.posts()
    assert first["body"]["tools"][0]["function"]["name"] == "regenerate_scene"
    call = second["body"]["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"sceneId": "scene-2", "instruction": "add a diagram 🎨 图"}
    tool_message = second["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == call["id"]
    assert call["id"] == fake_openai.TOOL_CALL_ID  # the model's own id goes back, unchanged (DESIGN.md §12)
    assert "base64" not in tool_message["content"]
    part = agent.stored()["state"]["threads"]["intro-ml"]["messages"][1]["content"][0]
    assert part["type"] == "tool-call" and part["args"] == {"sceneId": "scene-2", "instruction": "add a diagram 🎨 图"}
    assert len(part["result"]["details"]["content"]["elements"]) == element_count("scene-2")
    agent.reload()
    assert agent.testid("tool-card").get_attribute("data-status") == "ok"


def test_unparseable_tool_arguments_give_an_error_card(agent, fake_model):
    agent.open(course="intro-ml")
    configure(agent, fake_model)
    agent.send("#badargs")
    assert agent.testid("tool-card").get_attribute("data-status") == "error"
    assert agent.testid("turn-error").count() == 0
    assert assistant_texts(agent)[0].endswith("Scene regenerated as asked.")


def test_stop_aborts_the_stream_and_saves_the_turn_as_stopped(agent, fake_model):
    agent.open(course="intro-ml")
    configure(agent, fake_model)
    agent.send("#slow", wait=False)
    agent.page.wait_for_function(
        "() => (document.querySelector('[data-role=assistant] .bubble')?.textContent || '').includes('t5')")
    agent.testid("agent-stop").click()
    agent.wait_idle()
    message = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert message.get_attribute("data-status") == "incomplete"
    assert agent.testid("turn-error").count() == 0
    stored = agent.stored()["state"]["threads"]["intro-ml"]["messages"]
    text = stored[1]["content"][0]["text"]
    assert " t5" in text and " t399" not in text
    # The request was aborted (AbortController): the server's stream broke off long before its 10 s.
    for _ in range(50):
        if fake_model.aborted:
            break
        agent.page.wait_for_timeout(100)
    assert fake_model.aborted == 1
    agent.send("after stop")
    assert assistant_texts(agent)[-1] == "".join(fake_openai.PLAIN_PIECES)


ERRORS = [("#401", "auth"), ("#403", "auth"), ("#404", "not-found"), ("#429", "rate-limited"),
          ("#500", "server"), ("#503", "server"), ("#cut", "stream-cut"), ("#badjson", "bad-event")]


def test_every_server_error_fails_the_turn_with_a_localized_message(agent, fake_model):
    console: list[str] = []
    agent.page.on("console", lambda message: console.append(message.text))
    agent.open(course="intro-ml", lang="ja-JP")
    configure(agent, fake_model, key=KEY)
    agent.send("a good turn first")
    for index, (command, code) in enumerate(ERRORS):
        agent.send(command)
        assert agent.page.locator("[data-testid=agent-panel]").get_attribute("data-running") == "false"
        messages = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
        assert messages.count() == index + 2
        failed = messages.nth(index + 1)
        assert failed.get_attribute("data-status") == "incomplete"
        error = failed.locator("[data-testid=turn-error]")
        assert error.get_attribute("data-code") == code, command
        text = error.inner_text()
        assert text and "model.error" not in text
        if code == "rate-limited":
            assert "7" in text
    assert agent.page.locator("[data-testid=turn-error]").count() == len(ERRORS)
    # The 401 body repeated the key: the message shows it masked; no log line holds it.
    auth_text = agent.page.locator("[data-testid=turn-error][data-code=auth]").first.inner_text()
    assert "•••" in auth_text and KEY not in auth_text
    assert any("ModelError" in line for line in console) and not any(KEY in line for line in console)
    assert all(KEY not in value for value in every_stored_value(agent)["local"].values())
    assert assistant_texts(agent)[0] == "".join(fake_openai.PLAIN_PIECES)
    # Completed turns are kept: the good turn, and what the cut and bad streams had delivered.
    stored = agent.stored()["state"]["threads"]["intro-ml"]["messages"]
    assert stored[1]["content"][0]["text"] == "".join(fake_openai.PLAIN_PIECES)
    agent.reload()
    assert assistant_texts(agent)[0] == "".join(fake_openai.PLAIN_PIECES)


def test_failed_turn_is_stored_and_shown_after_a_reload_then_retried(agent, fake_model):
    agent.open(course="intro-ml", lang="ar-SA")
    configure(agent, fake_model)
    agent.send("#500")
    live_text = agent.testid("turn-error").inner_text()
    assert agent.testid("turn-error").get_attribute("data-code") == "server"
    stored = agent.stored()["state"]["threads"]["intro-ml"]["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    # Within the v1 shape: the failed reply is one ordinary text part holding the error.
    assert [p["type"] for p in stored[1]["content"]] == ["text"]
    assert json.loads(stored[1]["content"][0]["text"].split(" ", 1)[1])["code"] == "server"
    agent.reload()
    roles = [m.get_attribute("data-role") for m in agent.messages().all()]
    assert roles == ["user", "assistant"]
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert reply.get_attribute("data-status") == "incomplete"
    error = reply.locator("[data-testid=turn-error]")
    assert error.get_attribute("data-code") == "server" and error.inner_text() == live_text
    assert reply.locator("[data-testid=agent-message-text]").count() == 0  # the marker is not drawn as text
    # Retry: the user sends again; the model is sent the question, never the marker.
    agent.send("please answer")
    assert assistant_texts(agent)[-1] == "".join(fake_openai.PLAIN_PIECES)
    sent = fake_model.posts()[-1]["body"]["messages"]
    # the failed turn had no reply text: it is left out, never two user messages in a row (DESIGN.md §12)
    assert [m["content"] for m in sent if m["role"] == "user"] == ["please answer"]
    assert "turn-error" not in json.dumps(sent)
    agent.reload()
    assert agent.testid("turn-error").count() == 1 and assistant_texts(agent)[-1] == "".join(fake_openai.PLAIN_PIECES)


def test_cors_refusal_is_named_in_the_turn_and_the_dialog_and_a_network_failure_is_told_apart(agent, fake_model):
    agent.open(course="intro-ml")
    configure(agent, fake_model, base_url=f"{fake_model.origin}/nocors/v1")
    agent.send("hello")
    error = agent.testid("turn-error")
    assert error.get_attribute("data-code") == "cors"
    assert "README" in error.inner_text()
    agent.testid("settings-open").click()
    agent.testid("settings-test").click()
    result = agent.testid("settings-test-result")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=settings-test-result]').dataset.state === 'error'")
    assert result.get_attribute("data-code") == "cors" and "README" in result.inner_text()
    agent.page.keyboard.press("Escape")
    # The same page, a server that cannot be reached at all: a network failure, not CORS.
    configure(agent, fake_model)
    agent.page.route(f"{fake_model.origin}/**", lambda route: route.abort("connectionrefused"))
    agent.send("hello again")
    assert agent.testid("turn-error").last.get_attribute("data-code") == "network"
    assert agent.page.locator("[data-testid=agent-panel]").get_attribute("data-running") == "false"


def test_content_security_policy_refusal(agent, fake_model):
    def with_csp(route):
        response = route.fetch()
        headers = {**response.headers, "content-security-policy": "connect-src 'self'"}
        route.fulfill(response=response, headers=headers)

    agent.page.route("**/index.html*", with_csp)
    agent.open(course="intro-ml")
    configure(agent, fake_model)
    agent.send("hello")
    error = agent.testid("turn-error")
    assert error.get_attribute("data-code") == "blocked"
    assert "README" in error.inner_text()


def test_bad_settings_are_refused_and_the_error_goes_once_it_no_longer_holds(agent):
    agent.open(course="intro-ml")
    agent.testid("settings-open").click()
    agent.testid("settings-agent").select_option("openai")
    error = agent.testid("settings-error")
    agent.testid("settings-base-url").fill("javascript:alert(1)")
    agent.testid("settings-model").fill("m")
    agent.testid("settings-save").click()
    assert agent.testid("settings-dialog").is_visible()
    assert error.is_visible()
    assert agent.page.evaluate("localStorage.getItem('agentbar-model-settings')") is None
    refused = error.inner_text()
    agent.testid("settings-model").fill("m2")  # an edit that does not correct the URL: the error holds
    assert error.is_visible() and error.inner_text() == refused
    agent.testid("settings-base-url").fill("http://127.0.0.1:9/v1")  # corrected: the error goes at once
    assert error.is_hidden() and agent.testid("settings-dialog").is_visible()
    agent.testid("settings-model").fill("")
    agent.testid("settings-save").click()  # another field's error (no model)
    assert error.is_visible() and error.inner_text() != refused
    agent.testid("settings-model").fill("m")
    assert error.is_hidden()
    agent.testid("settings-base-url").fill("ftp://nowhere")
    agent.testid("settings-save").click()
    assert error.is_visible()
    agent.testid("settings-base-url").fill("http://127.0.0.1:9/v1")
    agent.testid("settings-base-url").press("Enter")  # a valid save (Enter submits): stored, closed, error gone
    assert agent.testid("settings-dialog").is_hidden()
    assert error.evaluate("node => node.hidden && node.textContent === ''")
    assert agent.page.evaluate("JSON.parse(localStorage.getItem('agentbar-model-settings')).model") == "m"
    agent.testid("settings-open").click()
    assert agent.testid("settings-dialog").is_visible() and error.is_hidden()
    max_turns_that_is_not_a_whole_number_in_range_is_refused_not_replaced(agent)


def max_turns_that_is_not_a_whole_number_in_range_is_refused_not_replaced(agent) -> None:
    """In the open dialog: each refused max turns leaves the stored settings as they were."""
    before = agent.page.evaluate("localStorage.getItem('agentbar-model-settings')")
    agent.testid("settings-agent").select_option("openai")
    agent.testid("settings-base-url").fill("http://127.0.0.1:9/v1")
    agent.testid("settings-model").fill("m")
    for typed in ("1e2", "2.5", "300"):
        agent.testid("settings-max-turns").fill(typed)
        agent.testid("settings-save").click()
        assert agent.testid("settings-dialog").is_visible() and agent.testid("settings-error").is_visible(), typed
        assert agent.page.evaluate("localStorage.getItem('agentbar-model-settings')") == before
    agent.testid("settings-max-turns").fill("12")
    agent.testid("settings-save").click()
    assert agent.testid("settings-dialog").is_hidden()
    assert json.loads(agent.page.evaluate("localStorage.getItem('agentbar-model-settings')"))["maxTurns"] == 12


def test_dialog_is_keyboard_usable(agent, fake_model):
    agent.open(course="intro-ml", delay=40)
    agent.send("a long demo reply", wait=False)  # a demo turn is running while the dialog opens
    agent.testid("settings-open").focus()
    agent.page.keyboard.press("Enter")
    assert agent.testid("settings-dialog").is_visible()
    agent.page.keyboard.press("Escape")
    assert agent.testid("settings-dialog").is_hidden()
    assert agent.page.evaluate("document.activeElement.dataset.testid") == "settings-open"
    # Escape closed the dialog without stopping the running turn.
    assert agent.page.locator("[data-testid=agent-panel]").get_attribute("data-running") == "true"
    agent.wait_idle()
    assert agent.page.locator("[data-testid=agent-message][data-role=assistant]").get_attribute("data-status") != "incomplete"


def test_markdown_reply_is_rendered_safely_and_stored_raw(agent, fake_model):
    agent.open(course="intro-ml")
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'ready'")
    configure(agent, fake_model)
    agent.send("#markdown **not rendered for the user**")
    bubble = agent.page.locator("[data-role=assistant] [data-testid=markdown]")
    assert bubble.locator("h2").inner_text() == "Summary"
    assert bubble.locator("strong").first.inner_text() == "bold"
    assert bubble.locator("table tbody tr").count() == 2
    assert bubble.locator("td[data-align=right]").first.inner_text() == "1"
    assert bubble.locator("ul li").count() == 2 and bubble.locator("ol li").count() == 2
    assert bubble.locator("pre code").text_content() == "print('hi <b>')\n"
    assert bubble.locator("[data-testid=code-copy]").count() == 1
    links = bubble.locator("a")
    assert links.count() == 1 and links.get_attribute("href") == "https://example.org/page"
    assert bubble.locator("img, script, b").count() == 0
    assert "<img src=x" in bubble.inner_text() and "[bad link](javascript:" in bubble.inner_text()
    assert agent.page.evaluate("window.__xss") is None
    assert agent.page.locator("[data-role=user] strong").count() == 0
    stored = agent.stored()["state"]["threads"]["intro-ml"]["messages"][1]["content"][0]["text"]
    assert stored == fake_openai.MARKDOWN_REPLY
    agent.testid("code-copy").click()
    assert agent.testid("code-copy").get_attribute("data-copied") == "true"
    agent.reload()  # drawn as text first, then re-drawn as Markdown once markdown-it is installed
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'ready'")
    assert agent.page.locator("[data-role=assistant] [data-testid=markdown] table").count() == 1


def test_markdown_redraw_keeps_earlier_messages_shown(agent):
    from app.presentation import RENDER_WINDOW

    messages = []
    for n in range(30):
        messages += [{"role": "user", "content": [{"type": "text", "text": f"question {n}"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": f"**answer** {n}"}]}]
    value = {"state": {"threads": {"intro-ml": {"messages": messages, "updatedAt": 1}}}, "version": 1}
    agent.seed({"maic-agent-threads": json.dumps(value, separators=(",", ":"))})
    held = []  # hold markdown-it's wheel until the earlier messages are shown
    agent.page.route("**/markdown_it_py-*.whl", lambda route: held.append(route))
    agent.page.goto(agent.url(course="intro-ml"))
    agent.wait_ready()
    assert agent.page.locator("[data-testid=markdown]").count() == 0  # first drawn as plain text
    agent.testid("agent-load-earlier").click()
    assert agent.messages().count() == 60
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'loading'")
    agent.page.wait_for_timeout(200)
    assert held and agent.page.evaluate("document.documentElement.dataset.markdown") == "loading"
    held[0].continue_()
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'ready'")
    assert agent.messages().count() == 60 > RENDER_WINDOW
    assert agent.page.locator("[data-role=assistant] [data-testid=markdown] strong").count() == 30
    assert agent.page.locator("[data-role=user] strong").count() == 0


def test_history_shows_the_servers_token_counts_after_a_reload_or_says_not_reported(agent, fake_model):
    """DESIGN.md §9, §12: a model turn's usage comes from the server's last chunk and is what
    history shows, after a reload too; a server that sends no usage gives "not reported"."""
    from tests.e2e.test_history import open_list, wait_history

    agent.open(course="intro-ml")
    configure(agent, fake_model)
    agent.send("Hello there")
    agent.send("#nousage and again")
    # history is written just after the turn ends: let it land before reloading
    agent.page.wait_for_selector("[data-testid=conversation-stats][data-turns='2']", state="attached")
    agent.reload()
    assert wait_history(agent) == "ready"
    metas = agent.page.locator("[data-testid=agent-message][data-role=assistant] [data-testid=turn-meta]")
    metas.nth(1).wait_for(state="attached")
    first, second = metas.nth(0), metas.nth(1)
    assert first.get_attribute("data-total-tokens") == str(fake_openai.USAGE["total_tokens"])
    assert first.get_attribute("data-model") == fake_openai.MODEL_NAME
    assert second.get_attribute("data-usage") == "not-reported" and second.get_attribute("data-total-tokens") is None
    stats = agent.testid("conversation-stats")
    assert stats.get_attribute("data-total-tokens") == str(fake_openai.USAGE["total_tokens"])
    assert stats.get_attribute("data-turns") == "2"
    open_list(agent)
    item = agent.testid("history-item").first
    assert item.get_attribute("data-total-tokens") == str(fake_openai.USAGE["total_tokens"])


def test_a_reply_the_server_cut_says_so_after_a_reload_too(agent, fake_model):
    """DESIGN.md §12 turn-cut: finish_reason "length" is shown inside the reply, and stored, so a reload
    shows it again; the reply's text is kept and nothing of the marker is drawn as text."""
    agent.open(course="intro-ml", lang="ko-KR")
    configure(agent, fake_model)
    agent.send("#length")
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    cut = reply.locator("[data-testid=turn-cut]")
    assert cut.count() == 1 and cut.inner_text() and "model." not in cut.inner_text()
    live = cut.inner_text()
    assert reply.get_attribute("data-status") == "incomplete" and agent.testid("turn-error").count() == 0
    agent.send("Hello there")  # a later, complete reply is not marked
    assert agent.page.locator("[data-testid=turn-cut]").count() == 1
    agent.reload()
    replies = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert replies.nth(0).locator("[data-testid=turn-cut]").inner_text() == live
    assert replies.nth(1).locator("[data-testid=turn-cut]").count() == 0
    shown = replies.nth(0).inner_text()
    assert "".join(fake_openai.PLAIN_PIECES[:6]).strip() in shown and "turn-cut" not in shown
    agent.assert_accessible()


def test_a_conversation_that_outgrows_the_servers_context_stays_answerable(agent, fake_model):
    """The server's context fills up (the fake answers as llama-server, HTTP 400): every turn is still
    answered, with fewer of the oldest turns, and its turn meta says so, after a reload too."""
    from tests.e2e.test_history import wait_history

    fake_model.context_chars = 4500
    agent.open(course="intro-ml")
    configure(agent, fake_model)
    for i in range(5):
        agent.send(f"question {i} " + "z" * 900)
    assert agent.testid("turn-error").count() == 0
    assert len(assistant_texts(agent)) == 5
    refused = [p for p in fake_model.posts() if p["body"] and len(json.dumps(p["body"]["messages"])) > 4500]
    assert refused  # the context did fill up
    for post in fake_model.posts():
        roles = [m["role"] for m in post["body"]["messages"]]
        assert all(not (a == b == "user") for a, b in zip(roles, roles[1:]))
    agent.page.wait_for_selector("[data-testid=conversation-stats][data-turns='5']", state="attached")
    agent.reload()
    assert wait_history(agent) == "ready"
    metas = agent.page.locator("[data-testid=agent-message][data-role=assistant] [data-testid=turn-meta]")
    metas.nth(4).wait_for(state="attached")
    dropped = [metas.nth(i).get_attribute("data-dropped-turns") for i in range(5)]
    assert dropped[0] is None and dropped[-1] and int(dropped[-1]) >= 1
    assert dropped[-1] in metas.nth(4).get_attribute("data-label")


def test_test_connection_warns_of_a_server_without_tools_or_without_the_model(agent, fake_model):
    """llama-server --no-jinja refuses tools with HTTP 500: Test connection finds it with one tiny tools
    request and warns; turns are answered without tools. A model the server does not list is warned of,
    naming the models it lists."""
    fake_model.no_jinja = True
    agent.open(course="intro-ml")
    configure(agent, fake_model, test=True)
    result = agent.testid("settings-test-result")
    assert result.get_attribute("data-state") == "warning"
    assert result.get_attribute("data-warnings") == "tools-refused"
    probe = fake_model.posts()[-1]["body"]
    assert probe["tools"] and probe["max_tokens"] == 1
    agent.send("Hello there")
    assert agent.testid("turn-error").count() == 0
    assert assistant_texts(agent) == ["".join(fake_openai.PLAIN_PIECES)]
    assert "tools" not in fake_model.posts()[-1]["body"]  # remembered: the turn did not offer them
    fake_model.no_jinja = False
    agent.testid("settings-open").click()
    agent.testid("settings-model").fill("llama3")
    agent.testid("settings-test").click()
    agent.page.wait_for_function(
        "() => document.querySelector('[data-testid=settings-test-result]').dataset.state === 'warning'")
    assert result.get_attribute("data-warnings") == "model-not-listed"
    assert "llama3" in result.inner_text() and ", ".join(fake_openai.MODELS) in result.inner_text()
    agent.assert_accessible()
    agent.page.keyboard.press("Escape")
