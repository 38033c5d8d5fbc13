"""The app in the reader's locale, in Chromium (DESIGN.md §6, §7): what the user reads is in the
page's language, and the layout holds in a narrow window and right to left.

Texts are compared with the catalogue's own strings (``app.i18n.Translator``), never written here.
Every test also proves, through the ``agent`` fixture, that no request left the local server.
"""

from __future__ import annotations

from playwright.sync_api import expect

from app.agent import action_count, element_count
from app.i18n import Translator, catalogue


def card_of(agent, n: int):
    return agent.testid("tool-card").nth(n)


def assert_demo_cards_read_in(agent, locale: str) -> None:
    """The cards of ``/regenerate scene-2 …`` (the first card) and ``/fail scene-1`` (the second)."""
    t = Translator(locale)
    done, failed = card_of(agent, 0), card_of(agent, 1)
    expect(done.locator("[data-testid=tool-card-summary]")).to_have_text(
        t("edit.agent.tool.result.regenerated", sceneId="scene-2", count=element_count("scene-2")))
    names = list(catalogue(locale)["edit"]["agent"]["tool"]["actionType"].values())[:action_count("scene-2")]
    expect(done.locator("[data-testid=tool-card-actions]")).to_have_text(
        t("edit.agent.tool.actions", count=len(names), types=t("edit.agent.tool.actionSeparator").join(names)))
    expect(failed.locator("[data-testid=tool-card-summary]")).to_have_text(
        t("edit.agent.tool.result.toldToFail", sceneId="scene-1"))
    expect(failed.locator("[data-testid=tool-card-actions]")).to_have_count(0)


def test_the_demo_tool_cards_read_in_the_page_locale_and_the_stored_thread_keeps_the_tools_words(agent):
    """ja-JP: the cards' summaries and action names come from the catalogue, live, painted before
    Python after a reload, and drawn by Python again; ``maic-agent-threads`` keeps the tool's own
    (English) result text and action types, as the storage contract has them (§3)."""
    agent.open(course="intro-ml", lang="ja-JP")
    agent.send("/regenerate scene-2 brighter")
    agent.send("/fail scene-1")
    assert_demo_cards_read_in(agent, "ja-JP")
    parts = [p for m in agent.stored()["state"]["threads"]["intro-ml"]["messages"] for p in m["content"]
             if p["type"] == "tool-call"]
    assert parts[0]["result"]["content"] == [
        {"type": "text", "text": f"Regenerated scene scene-2 with {element_count('scene-2')} elements."}]
    assert parts[0]["result"]["details"]["actions"][0] == {"type": "update_element"}
    assert parts[1]["result"]["content"][0]["text"] == "Regenerating scene scene-1 failed: the demo agent was told to fail."
    agent.page.goto(agent.url(course="intro-ml", lang="ja-JP"))  # the paint record's rows, before Python
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    assert_demo_cards_read_in(agent, "ja-JP")
    agent.wait_ready()
    assert_demo_cards_read_in(agent, "ja-JP")
