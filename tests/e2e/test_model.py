"""The OpenAI-compatible model back end in Chromium against tools/fake_openai.py (issue 11, DESIGN.md §12).

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
        agent.page.wait_for_function(
            "() => ['ok','error'].includes(document.querySelector('[data-testid=settings-test-result]').dataset.state)")
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
    # (the test filled the model field from the listed models; saved with it)
    result = agent.testid("settings-test-result")
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
