"""A fast or endless model stream in Chromium (DESIGN.md §6, §12): drawn once per frame, only the
growing message touched, Stop at once, a 10 MB line whole. Against ``tools/fake_openai.py``."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

from bench.data import STORAGE_KEY, cards_thread
from tools import fake_openai

COURSE = "stream-cards"


def seed_openai(agent, server, threads: dict[str, list] | None = None) -> None:
    """Store the model settings (and ``threads``) before the app loads."""
    settings = {"agent": "openai", "baseUrl": f"{server.origin}/v1", "model": fake_openai.MODEL_NAME,
                "maxTurns": 0, "remember": False}
    items = {"agentbar-model-settings": json.dumps(settings)}
    if threads:
        items[STORAGE_KEY] = json.dumps({"state": {"threads": {
            stage: {"messages": messages, "updatedAt": 1_780_000_000_000} for stage, messages in threads.items()}},
            "version": 1})
    agent.seed(items)


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


@contextmanager
def in_case(agent, name: str, course: str):
    """Run one case in ``course``, switched to in the booted page as Back/Forward does (no boot; the
    URL's ``delay`` is read only at boot); a failure inside says which case it was."""
    agent.page.evaluate("""id => {
        const url = new URL(location.href);
        if (url.searchParams.get('course') === id) return;
        url.searchParams.set('course', id);
        history.pushState({}, '', url.href);
        dispatchEvent(new PopStateEvent('popstate'));
    }""", course)
    agent.page.wait_for_function("id => document.querySelector('[data-testid=course-select]').value === id", arg=course)
    try:
        yield course
    except BaseException as error:
        error.add_note(f"-- in case {name!r} (course {course!r})")
        raise


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


def test_stream_cases_each_in_its_own_course_then_one_reload(agent, fake_model):
    """One page with the model settings stored before boot: streamed tokens drawn once per frame,
    Stop during an endless stream (one reload shows what it kept), then a 10 MB line."""
    seed_openai(agent, fake_model, {COURSE: cards_thread(COURSE, cards=12, turns=6)})
    agent.open(course=COURSE)
    with in_case(agent, "tokens touch only the growing message", COURSE):
        streamed_tokens_touch_only_the_growing_message_once_per_frame(agent, fake_model)
    with in_case(agent, "stop during an endless stream", "intro-ml") as course:
        kept = stop_during_an_endless_stream_makes_the_panel_idle_and_keeps_what_arrived(agent, fake_model, course)
    agent.reload()
    with in_case(agent, "stop: what was kept, after the reload", "intro-ml"):
        assert re.findall(r"e\d+", agent.page.locator("[data-role=assistant]").last.text_content()) == kept
    # last: a 10 MB reply is more than localStorage holds, so nothing is reloaded after it
    with in_case(agent, "a 10 MB line", "s-bigline"):
        a_10_mb_line_arrives_whole(agent)
