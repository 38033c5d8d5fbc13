"""What the composer sends is exactly what was typed (it crosses into Python as UTF-8 bytes,
``app.browser.dom.field_text``, fast for a long message)."""

from __future__ import annotations

import json

from app.composer import composer_text



def type_and_send(agent, value: str) -> None:
    agent.page.evaluate("v => { document.querySelector('[data-testid=agent-input]').value = v; }", value)
    agent.testid("agent-send").click()
    agent.wait_idle()


def sent_texts(agent) -> list[str]:
    messages = json.loads(agent.stored_raw())["state"]["threads"]["intro-ml"]["messages"]
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


TYPED = [
    "\n\n    indented 代码\tand 🎨 e\u0301 “quotes” \u3000 عربى\n  next\n\n",
    ("lorem ipsum dolor sit amet 中文 " * 10_000)[:300_000],
]


def test_typed_text_arrives_unchanged_even_with_a_lone_surrogate(agent):
    """One page, one turn per value: each arrives as ``composer_text`` of what was typed."""
    agent.open(course="intro-ml")
    for i, value in enumerate(TYPED):
        type_and_send(agent, value)
        assert sent_texts(agent) == [composer_text(v) for v in TYPED[:i + 1]]
        assert agent.testid("agent-input").input_value() == ""
    agent.page.evaluate("() => { document.querySelector('[data-testid=agent-input]').value = 'half \\ud800 of a pair'; }")
    agent.testid("agent-send").click()
    agent.wait_idle()
    assert "\\ud800" in agent.stored_raw()
    assert sent_texts(agent)[-1] == "half \ud800 of a pair"
