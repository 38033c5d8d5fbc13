"""The OpenAI-compatible model back end in Chromium against tools/fake_openai.py (DESIGN.md §12).

Every test proves, through the ``agent`` fixture, that no request left the app
server and the fake model server (both on 127.0.0.1).

Pyodide boots cost most of the run, so each test boots once (a reload when a
case needs one) and runs its cases one after another, each in its own course
(``show_course``: switched in the page, no boot; the URL's ``lang`` and ``delay``
are read only at boot, so the cases sharing a boot share those). A failing case
is named in the failure (``in_case``). One reload checks what several cases stored.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

from playwright.sync_api import expect

from app.agent import element_count
from tools import fake_openai

KEY = "sk-e2e-secret-4242"
PLAIN = "".join(fake_openai.PLAIN_PIECES)


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


def show_course(agent, course: str) -> None:
    """Switch the booted page to ``course`` as Back/Forward does (no boot; the URL keeps ``lang``)."""
    agent.page.evaluate("""id => {
        const url = new URL(location.href);
        if (url.searchParams.get('course') === id) return;
        url.searchParams.set('course', id);
        history.pushState({}, '', url.href);
        dispatchEvent(new PopStateEvent('popstate'));
    }""", course)
    agent.page.wait_for_function("id => document.querySelector('[data-testid=course-select]').value === id", arg=course)


@contextmanager
def in_case(agent, name: str, course: str):
    """Run one case in ``course`` (shown first); a failure inside says which case it was."""
    show_course(agent, course)
    try:
        yield course
    except BaseException as error:
        error.add_note(f"-- in case {name!r} (course {course!r})")
        raise


def thread(agent, course: str) -> list[dict]:
    return agent.stored()["state"]["threads"][course]["messages"]


def posts_since(server, start: int) -> list[dict]:
    return server.posts()[start:]


def wait_aborted(agent, server) -> None:
    """Wait (up to 5 s) until the fake server saw a stream broken off."""
    for _ in range(50):
        if server.aborted:
            break
        agent.page.wait_for_timeout(100)


# -- boot 1: ja-JP, the server requires KEY -------------------------------------------------------------

ERRORS = [("#401", "auth"), ("#403", "auth"), ("#404", "not-found"), ("#429", "rate-limited"),
          ("#500", "server"), ("#503", "server"), ("#cut", "stream-cut"), ("#badjson", "bad-event")]


def settings_send_streamed_reply(agent, server, course: str) -> None:
    configure(agent, server, key=KEY, model="", test=True)
    # The connection test filled the empty model field from the listed models; it was saved with it.
    agent.testid("settings-open").click()
    assert agent.testid("settings-model").input_value() == fake_openai.MODELS[0]
    agent.page.keyboard.press("Escape")
    agent.send("Hello there")
    assert assistant_texts(agent) == [PLAIN]
    post = server.posts()[-1]
    assert post["headers"]["authorization"] == f"Bearer {KEY}"
    assert post["body"]["stream"] is True and post["body"]["stream_options"] == {"include_usage": True}
    assert post["body"]["messages"][-1] == {"role": "user", "content": "Hello there"}
    assert post["body"]["messages"][0]["role"] == "system"


def settings_send_streamed_reply_after_reload(agent, server, course: str) -> None:
    assert agent.page.evaluate("document.documentElement.dataset.agent") == "openai"
    assert assistant_texts(agent) == [PLAIN]
    agent.send("Second question")  # the key survives a reload of this tab (sessionStorage)
    assert len(assistant_texts(agent)) == 2 and agent.testid("turn-error").count() == 0
    history = server.posts()[-1]["body"]["messages"]
    assert [m["content"] for m in history[1:]] == ["Hello there", PLAIN, "Second question"]
    stored = every_stored_value(agent)
    assert stored["session"]["agentbar-model-key"] == KEY
    assert "agentbar-model-key" not in stored["local"]
    assert all(KEY not in value for value in stored["local"].values())
    settings = json.loads(stored["local"]["agentbar-model-settings"])
    assert settings["agent"] == "openai" and settings["baseUrl"] == f"{server.origin}/v1"
    assert [m["role"] for m in thread(agent, course)] == ["user", "assistant"] * 2


def tool_call_runs_locally_and_the_model_finishes(agent, server, course: str) -> None:
    start = len(server.posts())
    agent.send("#tool please")
    card = agent.testid("tool-card")
    assert card.count() == 1
    assert card.get_attribute("data-status") == "ok"
    assert card.get_attribute("data-element-count") == str(element_count("scene-2"))
    assert agent.page.locator("[data-testid=scene][data-scene-id=scene-2]").get_attribute("data-version")
    assert assistant_texts(agent)[0].endswith("Scene regenerated as asked.")
    first, second = posts_since(server, start)
    assert first["body"]["tools"][0]["function"]["name"] == "regenerate_scene"
    call = second["body"]["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"sceneId": "scene-2", "instruction": "add a diagram 🎨 图"}
    tool_message = second["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == call["id"]
    assert call["id"] == fake_openai.TOOL_CALL_ID  # the model's own id goes back, unchanged (DESIGN.md §12)
    assert "base64" not in tool_message["content"]
    part = thread(agent, course)[1]["content"][0]
    assert part["type"] == "tool-call" and part["args"] == {"sceneId": "scene-2", "instruction": "add a diagram 🎨 图"}
    assert len(part["result"]["details"]["content"]["elements"]) == element_count("scene-2")


def tool_call_after_reload(agent, server, course: str) -> None:
    assert agent.testid("tool-card").get_attribute("data-status") == "ok"


def unparseable_tool_arguments_give_an_error_card(agent, server, course: str) -> None:
    agent.send("#badargs")
    assert agent.testid("tool-card").get_attribute("data-status") == "error"
    assert agent.testid("turn-error").count() == 0
    assert assistant_texts(agent)[0].endswith("Scene regenerated as asked.")


def stop_aborts_the_stream_and_saves_the_turn_as_stopped(agent, server, course: str) -> None:
    with server.lock:
        server.aborted = 0
    agent.send("#slow", wait=False)
    agent.page.wait_for_function(
        "() => (document.querySelector('[data-role=assistant] .bubble')?.textContent || '').includes('t5')")
    agent.testid("agent-stop").click()
    agent.wait_idle()
    message = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert message.get_attribute("data-status") == "incomplete"
    assert agent.testid("turn-error").count() == 0
    text = thread(agent, course)[1]["content"][0]["text"]
    assert " t5" in text and " t399" not in text
    # The request was aborted (AbortController): the server's stream broke off long before its 10 s.
    wait_aborted(agent, server)
    assert server.aborted == 1
    agent.send("after stop")
    assert assistant_texts(agent)[-1] == PLAIN


def every_server_error_fails_the_turn_with_a_localized_message(agent, server, course: str, console: list[str]) -> None:
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
    assert assistant_texts(agent)[0] == PLAIN
    # Completed turns are kept: the good turn, and what the cut and bad streams had delivered.
    assert thread(agent, course)[1]["content"][0]["text"] == PLAIN


def a_stream_cut_as_the_page_is_left_never_ends_the_turn(agent, server, course: str) -> None:
    """Firefox aborts a reply's request as the page is left (a reload) and still runs the page's
    tasks: the turn ended as ``stream-cut`` and its fragment was stored, blamed on the server, its
    question's draft dropped. A cut after ``beforeunload`` never ends the turn (DESIGN.md §4: a refresh
    mid-stream loses only the in-flight turn): nothing is stored and no error drawn while the page
    is left; should it come back (``pageshow``, the back-forward cache), the cut is said then."""
    running = "() => document.querySelector('[data-testid=agent-panel]').dataset.running"
    agent.page.evaluate("() => dispatchEvent(new Event('beforeunload'))")  # Firefox cuts right after it
    agent.send("#cut", wait=False)
    agent.page.wait_for_function(
        "() => (document.querySelector('[data-role=assistant] .bubble')?.textContent || '').includes('fake')")
    agent.page.wait_for_timeout(500)  # the cut's read has had its turn: the turn is still running, unsaved
    assert agent.page.evaluate(running) == "true" and agent.testid("turn-error").count() == 0
    agent.page.evaluate("() => dispatchEvent(new PageTransitionEvent('pagehide'))")
    agent.page.wait_for_timeout(200)
    assert agent.page.evaluate(running) == "true" and agent.testid("turn-error").count() == 0
    assert course not in agent.stored()["state"]["threads"]
    agent.page.evaluate("() => dispatchEvent(new PageTransitionEvent('pageshow'))")
    agent.wait_idle()
    assert agent.testid("turn-error").get_attribute("data-code") == "stream-cut"
    assert thread(agent, course)[1]["content"][0]["text"] == "".join(fake_openai.PLAIN_PIECES[:5])


def every_server_error_after_reload(agent, server, course: str) -> None:
    assert assistant_texts(agent)[0] == PLAIN


def markdown_reply_is_rendered_safely_and_stored_raw(agent, server, course: str) -> None:
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'ready'")
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
    assert thread(agent, course)[1]["content"][0]["text"] == fake_openai.MARKDOWN_REPLY
    agent.testid("code-copy").click()
    assert agent.testid("code-copy").get_attribute("data-copied") == "true"


def markdown_reply_after_reload(agent, server, course: str) -> None:
    # the reload opened this course: drawn as text first, then re-drawn as Markdown once markdown-it is installed
    agent.page.wait_for_function("() => document.documentElement.dataset.markdown === 'ready'")
    assert agent.page.locator("[data-role=assistant] [data-testid=markdown] table").count() == 1


def history_shows_the_servers_token_counts(agent, server, course: str) -> None:
    """DESIGN.md §9, §12: a model turn's usage comes from the server's last chunk and is what
    history shows, after a reload too; a server that sends no usage gives "not reported"; a server
    that names its model by a file path (llama-server without --alias) is shown by the file's name."""
    agent.send("Hello there")
    agent.send("#nousage and again")
    agent.send("#pathmodel")
    # history is written just after the turn ends: let it land before reloading
    agent.page.wait_for_selector("[data-testid=conversation-stats][data-turns='3']", state="attached")


def history_shows_the_servers_token_counts_after_reload(agent, server, course: str) -> None:
    from tests.e2e.test_history import open_list, wait_history

    assert wait_history(agent) == "ready"
    metas = agent.page.locator("[data-testid=agent-message][data-role=assistant] [data-testid=turn-meta]")
    metas.nth(2).wait_for(state="attached")
    first, second, third = metas.nth(0), metas.nth(1), metas.nth(2)
    assert first.get_attribute("data-total-tokens") == str(fake_openai.USAGE["total_tokens"])
    assert first.get_attribute("data-model") == fake_openai.MODEL_NAME
    assert second.get_attribute("data-usage") == "not-reported" and second.get_attribute("data-total-tokens") is None
    # the model's whole id is kept (data-model, the tooltip); the line names the file only
    assert third.get_attribute("data-model") == fake_openai.PATH_MODEL
    assert "tiny-tool.gguf" in third.get_attribute("data-label") and "/" not in third.get_attribute("data-label")
    assert fake_openai.PATH_MODEL in third.get_attribute("title")
    total = 2 * fake_openai.USAGE["total_tokens"]
    stats = agent.testid("conversation-stats")
    assert stats.get_attribute("data-total-tokens") == str(total)
    assert stats.get_attribute("data-turns") == "3"
    open_list(agent)
    item = agent.testid("history-item").first
    assert item.get_attribute("data-total-tokens") == str(total)
    agent.testid("history-close").click()
    agent.page.wait_for_selector("[data-testid=history-drawer]", state="hidden")


def a_conversation_that_outgrows_the_servers_context_stays_answerable(agent, server, course: str) -> None:
    """The server's context fills up (the fake answers as llama-server, HTTP 400): every turn is still
    answered, with fewer of the oldest turns, and its turn meta says so, after a reload too."""
    start = len(server.posts())
    server.context_chars = 4500
    try:
        for i in range(5):
            agent.send(f"question {i} " + "z" * 900)
    finally:
        server.context_chars = 0
    assert agent.testid("turn-error").count() == 0
    assert len(assistant_texts(agent)) == 5
    posts = posts_since(server, start)
    refused = [p for p in posts if p["body"] and len(json.dumps(p["body"]["messages"])) > 4500]
    assert refused  # the context did fill up
    for post in posts:
        roles = [m["role"] for m in post["body"]["messages"]]
        assert all(not (a == b == "user") for a, b in zip(roles, roles[1:]))
    agent.page.wait_for_selector("[data-testid=conversation-stats][data-turns='5']", state="attached")


def a_conversation_that_outgrows_the_context_after_reload(agent, server, course: str) -> None:
    from tests.e2e.test_history import wait_history

    assert wait_history(agent) == "ready"
    metas = agent.page.locator("[data-testid=agent-message][data-role=assistant] [data-testid=turn-meta]")
    metas.nth(4).wait_for(state="attached")
    dropped = [metas.nth(i).get_attribute("data-dropped-turns") for i in range(5)]
    assert dropped[0] is None and dropped[-1] and int(dropped[-1]) >= 1
    assert dropped[-1] in metas.nth(4).get_attribute("data-label")


def connection_test_warns_of_a_server_without_tools_or_without_the_model(agent, server, course: str) -> None:
    """llama-server --no-jinja refuses tools with HTTP 500: Test connection finds it with one tiny tools
    request and warns; turns are answered without tools. A model the server does not list is warned of,
    naming the models it lists. (Last of its page: this tab remembers the refusal.)"""
    server.required_key, server.no_jinja = None, True
    try:
        configure(agent, server, test=True)  # no key: settings unlike the earlier cases', a new agent
        result = agent.testid("settings-test-result")
        assert result.get_attribute("data-state") == "warning"
        assert result.get_attribute("data-warnings") == "tools-refused"
        probe = server.posts()[-1]["body"]
        assert probe["tools"] and probe["max_tokens"] == 1
        agent.send("Hello there")
        assert agent.testid("turn-error").count() == 0
        assert assistant_texts(agent) == [PLAIN]
        assert "tools" not in server.posts()[-1]["body"]  # remembered: the turn did not offer them
    finally:
        server.no_jinja = False
    agent.testid("settings-open").click()
    agent.testid("settings-model").fill("llama3")
    agent.testid("settings-test").click()
    agent.page.wait_for_function(
        "() => document.querySelector('[data-testid=settings-test-result]').dataset.state === 'warning'")
    assert result.get_attribute("data-warnings") == "model-not-listed"
    assert "llama3" in result.inner_text() and ", ".join(fake_openai.MODELS) in result.inner_text()
    agent.assert_accessible()
    agent.page.keyboard.press("Escape")


def test_model_turns_in_japanese_each_case_in_its_own_course_then_one_reload(agent, fake_model, tmp_path):
    """One page (ja-JP, the server requiring the key of the first case's settings), booted by
    test_startup's every-status case (Python held until the painted rows are read). Then, before any
    model is set, the demo agent's cards in Japanese (locale_cases; its second boot, on intro-ml, is
    this page's). Then settings and a streamed reply, a tool call, bad tool arguments, Stop, every
    server error, Markdown, usage in history, an outgrown context; one reload checks what each
    stored; then a server without tools. test_stream's cases run here too, each in a course of its own
    (its cards' course stored at the boot): streamed tokens drawn once per frame and Stop during an
    endless stream before the reload, what Stop kept after it, and the 10 MB line last of the page."""
    from tests.e2e import test_stream as stream
    from tests.e2e.locale_cases import the_demo_tool_cards_read_in_the_page_locale_and_the_stored_thread_keeps_the_tools_words

    from tests.e2e.test_core import case
    from tests.e2e.test_startup import rows_of_every_status_are_painted_as_python_first_renders_them

    console: list[str] = []
    agent.page.on("console", lambda message: console.append(message.text))
    fake_model.required_key = KEY
    with case("rows of every status are painted as Python first renders them (test_startup; the page's boot)"):
        rows_of_every_status_are_painted_as_python_first_renders_them(agent, "s-every-status", "ja-JP",
                                                                      stream.stored_threads())
    show_course(agent, "intro-ml")  # no turn yet: the demo agent's cases start there
    the_demo_tool_cards_read_in_the_page_locale_and_the_stored_thread_keeps_the_tools_words(agent, tmp_path)
    with in_case(agent, "settings, send, streamed reply", "m-settings") as course:
        settings_send_streamed_reply(agent, fake_model, course)
    with in_case(agent, "tool call", "linear-algebra") as course:
        tool_call_runs_locally_and_the_model_finishes(agent, fake_model, course)
    with in_case(agent, "unparseable tool arguments", "m-badargs") as course:
        unparseable_tool_arguments_give_an_error_card(agent, fake_model, course)
    with in_case(agent, "stop", "m-stop") as course:
        stop_aborts_the_stream_and_saves_the_turn_as_stopped(agent, fake_model, course)
    with in_case(agent, "every server error", "m-errors") as course:
        every_server_error_fails_the_turn_with_a_localized_message(agent, fake_model, course, console)
    with in_case(agent, "a stream cut as the page is left", "m-leaving") as course:
        a_stream_cut_as_the_page_is_left_never_ends_the_turn(agent, fake_model, course)
    with in_case(agent, "token counts in history", "m-usage") as course:
        history_shows_the_servers_token_counts(agent, fake_model, course)
    with in_case(agent, "outgrown context", "m-context") as course:
        a_conversation_that_outgrows_the_servers_context_stays_answerable(agent, fake_model, course)
    with fake_model.lock:
        fake_model.aborted = 0  # the stream cases count the streams broken off from here
    with in_case(agent, "stream: tokens touch only the growing message", stream.COURSE):
        stream.streamed_tokens_touch_only_the_growing_message_once_per_frame(agent, fake_model)
    with in_case(agent, "stream: stop during an endless stream", "m-stream-stop") as course:
        kept = stream.stop_during_an_endless_stream_makes_the_panel_idle_and_keeps_what_arrived(agent, fake_model, course)
    with in_case(agent, "markdown", "m-markdown") as course:  # the course the reload opens
        markdown_reply_is_rendered_safely_and_stored_raw(agent, fake_model, course)

    agent.reload()
    with in_case(agent, "markdown after the reload", "m-markdown") as course:
        markdown_reply_after_reload(agent, fake_model, course)
    with in_case(agent, "settings after the reload", "m-settings") as course:
        settings_send_streamed_reply_after_reload(agent, fake_model, course)
    with in_case(agent, "tool call after the reload", "linear-algebra") as course:
        tool_call_after_reload(agent, fake_model, course)
    with in_case(agent, "every server error after the reload", "m-errors") as course:
        every_server_error_after_reload(agent, fake_model, course)
    with in_case(agent, "outgrown context after the reload", "m-context") as course:
        a_conversation_that_outgrows_the_context_after_reload(agent, fake_model, course)
    with in_case(agent, "token counts in history after the reload", "m-usage") as course:
        history_shows_the_servers_token_counts_after_reload(agent, fake_model, course)
    with in_case(agent, "stream: stop, what was kept, after the reload", "m-stream-stop"):
        assert re.findall(r"e\d+", agent.page.locator("[data-role=assistant]").last.text_content()) == kept
    with in_case(agent, "test connection: no tools, unlisted model", "m-nojinja") as course:
        connection_test_warns_of_a_server_without_tools_or_without_the_model(agent, fake_model, course)
    # last: a 10 MB reply is more than localStorage holds, so nothing is reloaded after it
    with in_case(agent, "stream: a 10 MB line", "m-stream-bigline"):
        stream.a_10_mb_line_arrives_whole(agent)
    assert not any(KEY in line for line in console)  # the whole page's log: never the key


# -- boot 2: ar-SA ------------------------------------------------------------------------------------


def failed_turn_is_stored(agent, server, course: str) -> str:
    """Returns the turn error's text as drawn live."""
    configure(agent, server)
    agent.send("#500")
    live_text = agent.testid("turn-error").inner_text()
    assert agent.testid("turn-error").get_attribute("data-code") == "server"
    stored = thread(agent, course)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    # Within the v1 shape: the failed reply is one ordinary text part holding the error.
    assert [p["type"] for p in stored[1]["content"]] == ["text"]
    assert json.loads(stored[1]["content"][0]["text"].split(" ", 1)[1])["code"] == "server"
    return live_text


def failed_turn_is_shown_after_a_reload_then_retried(agent, server, course: str, live_text: str) -> None:
    roles = [m.get_attribute("data-role") for m in agent.messages().all()]
    assert roles == ["user", "assistant"]
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert reply.get_attribute("data-status") == "incomplete"
    error = reply.locator("[data-testid=turn-error]")
    assert error.get_attribute("data-code") == "server" and error.inner_text() == live_text
    assert reply.locator("[data-testid=agent-message-text]").count() == 0  # the marker is not drawn as text
    # Retry: the user sends again; the model is sent the question, never the marker.
    agent.send("please answer")
    assert assistant_texts(agent)[-1] == PLAIN
    sent = server.posts()[-1]["body"]["messages"]
    # the failed turn had no reply text: it is left out, never two user messages in a row (DESIGN.md §12)
    assert [m["content"] for m in sent if m["role"] == "user"] == ["please answer"]
    assert "turn-error" not in json.dumps(sent)


def failed_turn_and_retry_after_a_second_reload(agent, server, course: str) -> None:
    assert agent.testid("turn-error").count() == 1 and assistant_texts(agent)[-1] == PLAIN


def a_reply_the_server_cut_says_so(agent, server, course: str) -> str:
    """DESIGN.md §12 turn-cut: finish_reason "length" is shown inside the reply, and stored, so a reload
    shows it again; the reply's text is kept and nothing of the marker is drawn as text. Returns the
    cut notice as drawn live."""
    agent.send("#length")
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    cut = reply.locator("[data-testid=turn-cut]")
    assert cut.count() == 1 and cut.inner_text() and "model." not in cut.inner_text()
    live = cut.inner_text()
    assert reply.get_attribute("data-status") == "incomplete" and agent.testid("turn-error").count() == 0
    agent.send("Hello there")  # a later, complete reply is not marked
    assert agent.page.locator("[data-testid=turn-cut]").count() == 1
    return live


def a_reply_the_server_cut_says_so_after_a_reload(agent, server, course: str, live: str) -> None:
    replies = agent.page.locator("[data-testid=agent-message][data-role=assistant]")
    assert replies.nth(0).locator("[data-testid=turn-cut]").inner_text() == live
    assert replies.nth(1).locator("[data-testid=turn-cut]").count() == 0
    shown = replies.nth(0).inner_text()
    assert "".join(fake_openai.PLAIN_PIECES[:6]).strip() in shown and "turn-cut" not in shown
    agent.assert_accessible()


def cors_refusal_is_named_and_a_network_failure_is_told_apart(agent, server, course: str) -> None:
    configure(agent, server, base_url=f"{server.origin}/nocors/v1")
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
    configure(agent, server)
    pattern = f"{server.origin}/**"
    agent.page.route(pattern, lambda route: route.abort("connectionrefused"))
    try:
        agent.send("hello again")
        assert agent.testid("turn-error").last.get_attribute("data-code") == "network"
        assert agent.page.locator("[data-testid=agent-panel]").get_attribute("data-running") == "false"
    finally:
        agent.page.unroute(pattern)


def remembered_key_lives_in_local_storage_and_nowhere_else(agent, server, course: str) -> None:
    configure(agent, server, key=KEY, remember=True)
    agent.send("/regenerate scene-1 via the model")
    stored = every_stored_value(agent)
    assert stored["local"]["agentbar-model-key"] == KEY
    assert "agentbar-model-key" not in stored["session"]
    others = {k: v for k, v in {**stored["local"], **stored["session"]}.items() if k != "agentbar-model-key"}
    assert "maic-agent-threads" in others and all(KEY not in v for v in others.values())
    agent.page.evaluate("sessionStorage.clear()")  # a new tab: the remembered key is still there


def remembered_key_after_a_reload_then_forgotten(agent, server, course: str) -> None:
    agent.testid("settings-open").click()
    assert agent.testid("settings-api-key").input_value() == KEY
    assert agent.testid("settings-remember").is_checked()
    agent.testid("settings-remember").uncheck()  # un-remember: the key moves to sessionStorage
    agent.testid("settings-save").click()
    stored = every_stored_value(agent)
    assert "agentbar-model-key" not in stored["local"] and stored["session"]["agentbar-model-key"] == KEY


def test_failed_and_cut_replies_cors_and_a_remembered_key_in_arabic_over_two_reloads(agent, fake_model, tmp_path):
    """One page (ar-SA), booted by test_startup's Arabic paint case (two boots, each case here in a course
    of its own): a failed turn, a cut reply, a CORS refusal and a network failure, a remembered key (its
    session cleared as in a new tab); a reload checks each, the failed turn is retried, and a second
    reload checks the retry. That second reload is test_branches' (edit, regenerate and the branch
    picker, in a course of its own, run just before it and after it). Then, the demo agent chosen
    again, the right-to-left cases (locale_cases)."""
    from tests.e2e.locale_cases import right_to_left_cases
    from tests.e2e.test_branches import edit_regenerate_and_the_picker_keep_the_branch_shown_across_a_reload
    from tests.e2e.test_history import open_list
    from tests.e2e.test_core import case
    from tests.e2e.test_startup import the_painted_thread_matches_the_live_one_in_arabic_and_python_takes_over_without_a_flash

    with case("the painted thread matches the live one in Arabic, Python takes over without a flash (test_startup)"):
        the_painted_thread_matches_the_live_one_in_arabic_and_python_takes_over_without_a_flash(agent)
    with in_case(agent, "failed turn stored", "m-failed") as course:
        live_error = failed_turn_is_stored(agent, fake_model, course)
    with in_case(agent, "cut reply", "m-cut") as course:
        live_cut = a_reply_the_server_cut_says_so(agent, fake_model, course)
    with in_case(agent, "cors and network failures", "m-cors") as course:
        cors_refusal_is_named_and_a_network_failure_is_told_apart(agent, fake_model, course)
    with in_case(agent, "remembered key", "m-remember") as course:
        remembered_key_lives_in_local_storage_and_nowhere_else(agent, fake_model, course)

    agent.reload()
    with in_case(agent, "remembered key after the reload", "m-remember") as course:
        remembered_key_after_a_reload_then_forgotten(agent, fake_model, course)
    with in_case(agent, "cut reply after the reload", "m-cut") as course:
        a_reply_the_server_cut_says_so_after_a_reload(agent, fake_model, course, live_cut)
    with in_case(agent, "failed turn after the reload, retried", "m-failed") as course:
        failed_turn_is_shown_after_a_reload_then_retried(agent, fake_model, course, live_error)

    with case("edit, regenerate and the picker keep the branch shown across a reload (test_branches; the "
              "second reload)"):
        edit_regenerate_and_the_picker_keep_the_branch_shown_across_a_reload(agent, fake_model)
        open_list(agent)  # its search stays set in the drawer: emptied for the cases after it
        agent.testid("history-search").fill("")
        agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === ''")
        agent.testid("history-close").click()
    with in_case(agent, "failed turn and retry after the second reload", "m-failed") as course:
        failed_turn_and_retry_after_a_second_reload(agent, fake_model, course)

    agent.testid("settings-open").click()  # the demo agent again: the right-to-left cases ask it
    agent.testid("settings-agent").select_option("demo")
    agent.testid("settings-save").click()
    expect(agent.testid("settings-dialog")).to_be_hidden()
    right_to_left_cases(agent, tmp_path)


# -- boot 3: default locale, delay=40, a Content-Security-Policy, 60 stored messages -------------------


def markdown_redraw_keeps_earlier_messages_shown(agent, held: list, course: str) -> None:
    """The page booted with 60 stored messages and markdown-it's wheel held (``held``)."""
    from app.presentation import RENDER_WINDOW

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


def dialog_is_keyboard_usable(agent, course: str) -> None:
    agent.send("a long demo reply", wait=False)  # a demo turn is running (delay=40) while the dialog opens
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


def bad_settings_are_refused_and_the_error_goes_once_it_no_longer_holds(agent, course: str) -> None:
    """Before any settings were saved on this origin."""
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
    agent.testid("settings-base-url").fill("http://ann:secret@127.0.0.1:9/v1")  # a key in the URL: its own words
    agent.testid("settings-save").click()
    assert error.is_visible() and error.inner_text() != refused
    assert "secret" not in (agent.page.evaluate("localStorage.getItem('agentbar-model-settings')") or "")
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


def content_security_policy_refusal(agent, server, course: str) -> None:
    """The page was served with ``connect-src 'self'``."""
    configure(agent, server)
    agent.send("hello")
    error = agent.testid("turn-error")
    assert error.get_attribute("data-code") == "blocked"
    assert "README" in error.inner_text()


def test_markdown_redraw_keyboard_dialog_bad_settings_and_a_csp_refusal_in_one_page(agent, fake_model):
    """One page, served with ``Content-Security-Policy: connect-src 'self'``, ``delay=40``, 60 stored
    messages and markdown-it's wheel held at boot: the Markdown re-draw, then (demo agent) the dialog by
    keyboard during a turn, bad settings refused (none saved before), then a model blocked by the CSP."""
    messages = []
    for n in range(30):
        messages += [{"role": "user", "content": [{"type": "text", "text": f"question {n}"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": f"**answer** {n}"}]}]
    value = {"state": {"threads": {"intro-ml": {"messages": messages, "updatedAt": 1}}}, "version": 1}
    agent.seed({"maic-agent-threads": json.dumps(value, separators=(",", ":"))})

    def with_csp(route):
        response = route.fetch()
        headers = {**response.headers, "content-security-policy": "connect-src 'self'"}
        route.fulfill(response=response, headers=headers)

    agent.page.route("**/index.html*", with_csp)
    held = []  # hold markdown-it's wheel until the earlier messages are shown
    agent.page.route("**/markdown_it_py-*.whl", lambda route: held.append(route))
    agent.page.goto(agent.url(course="intro-ml", delay=40))
    agent.wait_ready()
    with in_case(agent, "markdown redraw keeps earlier messages", "intro-ml") as course:
        markdown_redraw_keeps_earlier_messages_shown(agent, held, course)
    with in_case(agent, "dialog by keyboard during a turn", "m-keyboard") as course:
        dialog_is_keyboard_usable(agent, course)
    with in_case(agent, "bad settings refused", "m-bad-settings") as course:
        bad_settings_are_refused_and_the_error_goes_once_it_no_longer_holds(agent, course)
    with in_case(agent, "content security policy refusal", "m-csp") as course:
        content_security_policy_refusal(agent, fake_model, course)
