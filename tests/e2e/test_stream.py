"""A fast or endless model stream in Chromium (DESIGN.md §6, §12): drawn once per frame, only the
growing message touched, Stop at once, a 10 MB line whole. Against ``tools/fake_openai.py``.

The cases need no boot of their own: they run in test_model's Japanese page (its model settings
saved, ``COURSE`` stored at its boot: ``stored_threads``), each in a course of its own; that page's
one reload shows what Stop kept, and the 10 MB line comes last of the page."""

from __future__ import annotations

import re

from bench.data import cards_thread
from tools import fake_openai

COURSE = "stream-cards"


def stored_threads() -> dict[str, dict]:
    """Course id → stored thread to seed before the page boots: ``COURSE``, six turns whose replies
    hold 12 tool cards."""
    return {COURSE: {"messages": cards_thread(COURSE, cards=12, turns=6), "updatedAt": 1_780_000_000_000}}


# Watches the message list from now on: which message nodes any DOM change touched (a text or
# attribute inside one, or the node itself added or removed), how many change batches there were
# (one per drawing task) and how many animation frames passed.
WATCH = """
() => {
  const box = document.getElementById("agent-messages");
  const messages = Array.from(box.querySelectorAll("[data-testid=agent-message]"));
  const watch = window.__watch = { older: messages.slice(0, -1), cards: Array.from(box.querySelectorAll(
    "[data-testid=tool-card]")), touched: new Set(), batches: 0, frames: 0, outside: [] };
  const frame = () => { watch.frames++; requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
  const owner = (node) => (node.nodeType === 1 ? node : node.parentElement)?.closest("[data-testid=agent-message]");
  new MutationObserver((records) => {
    watch.batches++;
    for (const r of records) {
      if (r.target === box) {
        if (r.type !== "childList") { watch.outside.push("list " + r.attributeName); continue; }
        for (const n of [...r.addedNodes, ...r.removedNodes]) watch.touched.add(n);
      } else {
        const message = owner(r.target);
        if (message) watch.touched.add(message); else watch.outside.push(r.type);
      }
    }
  }).observe(box, { subtree: true, childList: true, attributes: true, characterData: true });
}
"""

VERDICT = """
() => {
  const watch = window.__watch, box = document.getElementById("agent-messages");
  const now = Array.from(box.querySelectorAll("[data-testid=agent-message]"));
  const growing = now[now.length - 1];
  return {
    olderTouched: watch.older.filter((n) => watch.touched.has(n)).length,
    othersTouched: Array.from(watch.touched).filter((n) => n !== growing && !watch.older.includes(n)
      && n.isConnected).length,
    olderSame: watch.older.length > 0 && watch.older.every((n, i) => n === now[i]),
    cards: watch.cards.length,
    cardsSame: watch.cards.every((c) => c.isConnected && box.contains(c)),
    cardsInGrowing: growing.querySelectorAll("[data-testid=tool-card]").length,
    outside: watch.outside, batches: watch.batches, frames: watch.frames,
  };
}
"""


def last_reply_text(agent) -> str:
    return agent.page.evaluate("""() => {
        const replies = document.querySelectorAll("[data-testid=agent-message][data-role=assistant]");
        return replies[replies.length - 1].querySelector("[data-testid=agent-message-text]")?.textContent || "";
    }""")


def wait_aborted(agent, server, count: int) -> None:
    """Wait (up to 5 s) until the fake server saw ``count`` streams broken off."""
    for _ in range(50):
        if server.aborted >= count:
            break
        agent.page.wait_for_timeout(100)


def streamed_tokens_touch_only_the_growing_message_once_per_frame(agent, server) -> None:
    agent.send("hello")  # a turn whose turn meta (history) is drawn on an older message during the stream
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=turn-meta]').length >= 1")
    agent.send("#endless 5", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-running=true]') && (Array.from("
                                 "document.querySelectorAll('[data-role=assistant]')).pop().textContent.includes(' e3'))")
    agent.page.evaluate(WATCH)
    # Past the collapse limit: the collapsed bubble stays the same node, only its count grows.
    agent.page.wait_for_function("() => Number(document.querySelector("
                                 "'[data-running=true] [data-testid=agent-message-expand]')?.dataset.chars) > 4500",
                                 timeout=30_000)
    bubble = agent.page.evaluate_handle("() => Array.from(document.querySelectorAll("
                                        "'[data-testid=agent-message-text]')).pop()")
    chars = int(agent.testid("agent-message-expand").last.get_attribute("data-chars"))
    agent.page.wait_for_function(f"() => Number(Array.from(document.querySelectorAll("
                                 f"'[data-testid=agent-message-expand]')).pop().dataset.chars) > {chars + 500}")
    assert agent.page.evaluate("(b) => b.isConnected && b === Array.from(document.querySelectorAll("
                               "'[data-testid=agent-message-text]')).pop()", bubble)
    verdict = agent.page.evaluate(VERDICT)
    assert verdict["olderTouched"] == 0 and verdict["othersTouched"] == 0 and verdict["outside"] == [], verdict
    assert verdict["olderSame"] and verdict["cards"] == 12 and verdict["cardsSame"], verdict
    # Hundreds of tokens arrived, each in its own read; the page drew at most once per frame.
    assert 0 < verdict["batches"] <= verdict["frames"] + 2, verdict
    agent.testid("agent-stop").click()
    agent.wait_idle()
    assert agent.testid("tool-card").count() == 12
    wait_aborted(agent, server, 1)  # this stream's own abort is counted before the next case starts counting
    with server.lock:
        server.aborted = 0


def stop_during_an_endless_stream_makes_the_panel_idle_and_keeps_what_arrived(agent, server, course: str) -> list[str]:
    """Returns the ``e<n>`` tokens kept."""
    agent.send("#endless 5", wait=False)
    agent.page.wait_for_function("() => (Array.from(document.querySelectorAll('[data-testid=agent-message-text]'))"
                                 ".pop()?.textContent || '').includes(' e60')")
    shown = re.findall(r"e\d+", last_reply_text(agent))
    agent.testid("agent-stop").click()
    agent.wait_idle()
    assert agent.testid("agent-stop").is_hidden() and agent.testid("agent-send").is_enabled()
    reply = agent.page.locator("[data-testid=agent-message][data-role=assistant]").last
    assert reply.get_attribute("data-status") == "incomplete" and agent.testid("turn-error").count() == 0
    stored = agent.stored()["state"]["threads"][course]["messages"][1]["content"][0]["text"]
    kept = re.findall(r"e\d+", stored)
    assert kept[:len(shown)] == shown and kept == [f"e{i}" for i in range(len(kept))]  # in order, none lost
    assert re.findall(r"e\d+", reply.text_content()) == kept  # the page shows what was kept
    wait_aborted(agent, server, 1)
    assert server.aborted == 1  # the request was aborted, not only the reading
    return kept


def a_10_mb_line_arrives_whole(agent) -> None:
    agent.send("#bigline", wait=False)
    agent.page.wait_for_function(
        "() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'false'", timeout=60_000)
    expand = agent.page.locator("[data-role=assistant] [data-testid=agent-message-expand]")
    assert expand.get_attribute("data-chars") == str(fake_openai.BIGLINE_CHARS + 2)
    assert agent.testid("turn-error").count() == 0
    assert last_reply_text(agent).startswith("<" + fake_openai.bigline_text(1000))
