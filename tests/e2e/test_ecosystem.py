"""Works with what people already use: the real zustand, axe-core, the keyboard.

- zustand 5.1.0's ``persist`` (vendored test-only) runs the TS original's thread
  store in ``tests/e2e/pages/ts-original-store.html``; values cross both ways,
  in one tab after the other and in two tabs at once.
- axe-core 4.14.1 (vendored test-only, ``agent.assert_accessible()``) finds no
  serious or critical violation in any state the page shows (the loading screen and a start-up
  error: test_startup's first damaged-record boot; the Arabic cards: test_startup's Arabic page).
- Every control is reachable and usable with Tab, Enter and Escape, with a
  visible focus; focus comes back to the composer after New conversation and Stop.
- A streamed reply is announced once: the log is ``aria-busy`` while it streams.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_history import case, show_course

KEY = "maic-agent-threads"
TS_PAGE = "tests/e2e/pages/ts-original-store.html"
T0 = 1_780_000_000_000


def ts_thread(question: str, updated_at: int = T0) -> dict:
    """A thread as the TS original's serializer writes it: text, and a regenerate card with its slim result."""
    return {"messages": [
        {"role": "user", "id": f"u-{question}", "content": [{"type": "text", "text": question}]},
        {"role": "assistant", "id": f"a-{question}", "content": [
            {"type": "tool-call", "toolCallId": f"call-{question}", "toolName": "regenerate_scene",
             "args": {"sceneId": "scene-1", "instruction": question},
             "result": {"content": [{"type": "text", "text": "Regenerated scene scene-1 with 3 elements."}],
                        "details": {"sceneId": "scene-1", "content": {"elements": [{}, {}, {}]},
                                    "actions": [{"type": "update_element"}]}}},
            {"type": "text", "text": f"Answer to {question}"},
        ]},
    ], "updatedAt": updated_at}


def open_ts_store(page, base_url: str) -> None:
    page.goto(base_url + TS_PAGE)
    page.wait_for_function("() => document.documentElement.dataset.ready === 'true'")


def ts_state(page) -> dict:
    """What the zustand store holds after rehydrating from localStorage (functions left out)."""
    return page.evaluate("async () => { await tsStore.persist.rehydrate(); return JSON.parse(JSON.stringify(tsStore.getState())); }")


def notice_codes(agent) -> list[str]:
    return [n.get_attribute("data-code") for n in agent.testid("agent-notice").all()]


# -- zustand ---------------------------------------------------------------------------------


def zustand_writes_and_agentbar_reads_without_rewriting(agent, course: str) -> None:
    """On a fresh origin: zustand writes first, then AgentBar boots on ``course``."""
    open_ts_store(agent.page, agent.base_url)
    agent.page.evaluate("([c, t]) => tsStore.getState().save(c, t)", [course, ts_thread("zustand question")])
    written = agent.stored_raw()
    assert json.loads(written)["version"] == 1

    agent.open(course=course)
    assert agent.messages().count() == 2
    card = agent.testid("tool-card")
    assert card.get_attribute("data-status") == "ok" and card.get_attribute("data-element-count") == "3"
    assert notice_codes(agent) == []
    assert agent.stored_raw() == written  # read as it is: no backup, no rewrite
    assert [k for k in agent.page.evaluate("() => Object.keys(localStorage)") if k.startswith(KEY + ".backup")] == []


def agentbar_writes_zustand_rehydrates_and_its_next_save_keeps_agentbar_course(agent) -> None:
    """On intro-ml; zustand's save goes to poetry-tang; AgentBar boots again on intro-ml."""
    agent.send("hello from AgentBar")
    agent.send("/regenerate scene-1 brighter")
    ours = agent.stored()["state"]["threads"]["intro-ml"]

    open_ts_store(agent.page, agent.base_url)
    state = ts_state(agent.page)
    assert state["threads"]["intro-ml"] == ours
    assert agent.page.evaluate("() => tsStore.getState().load('intro-ml').messages.length") == 4

    agent.page.evaluate("t => tsStore.getState().save('poetry-tang', t)", ts_thread("from zustand"))
    stored = agent.stored()
    assert stored["version"] == 1
    assert stored["state"]["threads"]["intro-ml"] == ours  # zustand's save kept AgentBar's course
    assert stored["state"]["threads"]["poetry-tang"]["messages"][0]["content"][0]["text"] == "from zustand"

    agent.open(course="intro-ml")
    assert agent.messages().count() == 4
    agent.testid("course-select").select_option("poetry-tang")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")


def zustand_tab_and_agentbar_tab_side_by_side(agent, second_agent, course: str) -> None:
    """AgentBar on ``course``; the zustand tab (``second_agent``'s page) changes linear-algebra."""
    agent.send("first AgentBar turn")
    ts_page = second_agent.page
    open_ts_store(ts_page, second_agent.base_url)

    # The zustand tab writes another course: AgentBar's next save keeps it.
    ts_page.evaluate("t => tsStore.getState().save('linear-algebra', t)", ts_thread("zustand tab"))
    agent.send("second AgentBar turn")
    threads = agent.stored()["state"]["threads"]
    assert len(threads[course]["messages"]) == 4
    assert threads["linear-algebra"]["messages"][0]["content"][0]["text"] == "zustand tab"

    # The zustand tab rehydrates and sees AgentBar's turns; its next save keeps them.
    assert len(ts_state(ts_page)["threads"][course]["messages"]) == 4
    ts_page.evaluate("t => tsStore.getState().save('linear-algebra', t)", ts_thread("zustand again", T0 + 1))
    assert len(agent.stored()["state"]["threads"][course]["messages"]) == 4

    # An idle AgentBar tab showing the course the zustand tab changed follows it without a reload.
    agent.testid("course-select").select_option("linear-algebra")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    ts_page.evaluate("() => tsStore.getState().clear('linear-algebra')")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 0")
    assert "linear-algebra" not in agent.stored()["state"]["threads"]


def test_zustand_and_agentbar_both_ways_in_one_tab_then_side_by_side(agent, second_agent):
    """Two AgentBar boots in all (zustand's page is no boot): the first after zustand wrote on a
    fresh origin, the second after zustand rehydrated AgentBar's turns and saved; the side-by-side
    case then runs on that page in a course of its own."""
    with case("zustand writes and AgentBar reads without rewriting"):
        zustand_writes_and_agentbar_reads_without_rewriting(agent, "e-from-zustand")
    with case("AgentBar writes, zustand rehydrates and its next save keeps AgentBar's course"):
        show_course(agent, "intro-ml")
        agentbar_writes_zustand_rehydrates_and_its_next_save_keeps_agentbar_course(agent)
    with case("zustand tab and AgentBar tab side by side"):
        show_course(agent, "e-side")
        zustand_tab_and_agentbar_tab_side_by_side(agent, second_agent, "e-side")


# -- axe-core --------------------------------------------------------------------------------


CARDS_COURSE = "linear-algebra"
"""The course of ``ALL_STATUSES``'s thread."""

ALL_STATUSES = {"state": {"threads": {CARDS_COURSE: {"messages": [
    {"role": "user", "content": [{"type": "text", "text": "three cards please"}]},
    {"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "ok-1", "toolName": "regenerate_scene", "args": {"sceneId": "scene-1"},
         "result": {"content": [{"type": "text", "text": "ok"}],
                    "details": {"sceneId": "scene-1", "content": {"elements": [{}, {}]}, "actions": [{"type": "add_element"}]}}},
        {"type": "tool-call", "toolCallId": "err-1", "toolName": "regenerate_scene", "args": {"sceneId": "scene-2"},
         "isError": True, "result": {"content": [{"type": "text", "text": "failed"}],
                                     "details": {"sceneId": "scene-2", "content": None, "actions": []}}},
        {"type": "tool-call", "toolCallId": "int-1", "toolName": "regenerate_scene", "args": {"sceneId": "scene-3"},
         "isError": True},
        {"type": "text", "text": "Done, see https://example.org/x and <b>not bold</b>"},
    ]},
], "updatedAt": T0}}}, "version": 1}


def every_card_status_notices_and_collapsed_panel_pass_axe(agent, lang: str, with_notice=None) -> None:
    """On the course holding ``ALL_STATUSES``; the damaged value and the collapsed panel stay: the last case.
    ``with_notice(agent)``, when given, checks more while the damaged value's notice is shown."""
    statuses = [c.get_attribute("data-status") for c in agent.testid("tool-card").all()]
    assert statuses == ["ok", "error", "interrupted"]
    assert agent.page.evaluate("() => document.documentElement.dir") == ("rtl" if lang == "ar-SA" else "ltr")
    agent.assert_accessible(f"{lang}: cards ok/error/interrupted")

    agent.page.evaluate("k => localStorage.setItem(k, 'garbage{')", KEY)  # another tab writes a damaged value
    agent.page.evaluate("k => window.dispatchEvent(new StorageEvent('storage', {key: k}))", KEY)
    agent.page.wait_for_selector("[data-testid=agent-notice]")
    agent.assert_accessible(f"{lang}: with a notice")
    if with_notice:
        with_notice(agent)

    agent.testid("agent-collapse").click()
    assert agent.testid("agent-panel").get_attribute("data-collapsed") == "true"
    agent.assert_accessible(f"{lang}: collapsed panel")


def backup_key_in_the_notice_is_isolated_as_ltr_text(agent) -> None:
    """The damaged value's backup key, named in the notice, is one left-to-right isolate set as text."""
    key = agent.testid("agent-notice-key")
    assert key.count() == 1
    stored_keys = agent.page.evaluate("() => Object.keys(localStorage)")
    backup = [k for k in stored_keys if k.startswith(KEY + ".backup.")]
    assert key.text_content() == backup[0]
    assert key.get_attribute("dir") == "ltr"
    assert key.evaluate("k => getComputedStyle(k).unicodeBidi") == "isolate"
    assert key.evaluate("k => k.children.length") == 0  # set as text


def test_one_slow_page_in_english_keyboard_axe_and_announcements(agent):
    """One page (delay 300: replies long enough to stop, a running card long enough for axe), one
    course per case, switched in place: the keyboard case first (a fresh page, intro-ml), the
    running card and empty panel on poetry-tang, every card status (seeded) on linear-algebra last."""
    agent.seed({KEY: json.dumps(ALL_STATUSES), KEY + ".extra": None})
    agent.open(course="intro-ml", lang="en-US", delay=300)
    with case("every control works from the keyboard alone"):
        every_control_works_from_the_keyboard_alone(agent)
    with case("axe: running card and empty panel; a streamed reply is announced once when complete"):
        show_course(agent, "poetry-tang")
        running_card_and_empty_panel_pass_axe_and_a_streamed_reply_is_announced_once_when_complete(agent)
    with case("axe: every card status, notices and collapsed panel (en-US)"):
        show_course(agent, CARDS_COURSE)
        every_card_status_notices_and_collapsed_panel_pass_axe(agent, "en-US")


def running_card_and_empty_panel_pass_axe_and_a_streamed_reply_is_announced_once_when_complete(agent) -> None:
    agent.assert_accessible("empty panel")
    streamed_reply_is_announced_once_when_complete(agent)
    agent.send("/regenerate scene-1", wait=False)
    agent.page.wait_for_selector("[data-testid=tool-card][data-status=running]")
    agent.assert_accessible("running card")
    agent.wait_idle()


# -- keyboard only ---------------------------------------------------------------------------

FOCUSED_JS = "() => { const e = document.activeElement; return e && (e.dataset.testid || e.id || e.tagName); }"
FOCUS_VISIBLE_JS = """() => {
  const e = document.activeElement, s = getComputedStyle(e);
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
  return e.matches(":focus-visible") && (outline || s.boxShadow !== "none");
}"""


def tab_to(agent, testid: str, limit: int = 25, backwards: bool = False) -> None:
    """Press Tab (or Shift+Tab) until the element with ``testid`` has the focus; its focus must be visible."""
    for _ in range(limit):
        agent.page.keyboard.press("Shift+Tab" if backwards else "Tab")
        if agent.page.evaluate(FOCUSED_JS) == testid:
            assert agent.page.evaluate(FOCUS_VISIBLE_JS), f"focus on {testid} is not visible"
            return
    pytest.fail(f"{testid} not reachable with Tab")


def every_control_works_from_the_keyboard_alone(agent) -> None:
    """On a fresh page, on intro-ml with no turn; ends on the course after it in the picker."""
    keyboard = agent.page.keyboard

    tab_to(agent, "agent-input")
    keyboard.type("typed with the keyboard")
    keyboard.press("Enter")
    agent.wait_idle()
    assert agent.messages().count() == 2

    tab_to(agent, "agent-send")
    agent.page.evaluate("() => { document.getElementById('agent-input').value = 'sent with the button'; }")
    keyboard.press("Enter")
    agent.wait_idle()
    assert agent.messages().count() == 4

    # Stop with Escape from the composer, then with Enter on the Stop button: focus back in the composer.
    tab_to(agent, "agent-input", backwards=True)
    keyboard.type("stop me")
    keyboard.press("Enter")
    agent.page.wait_for_selector("[data-testid=agent-stop]:not([hidden])")
    keyboard.press("Escape")
    agent.wait_idle()
    assert agent.page.evaluate(FOCUSED_JS) == "agent-input"
    keyboard.type("stop me too")
    keyboard.press("Enter")
    agent.page.wait_for_selector("[data-testid=agent-stop]:not([hidden])")
    tab_to(agent, "agent-stop")
    keyboard.press("Enter")
    agent.wait_idle()
    assert agent.page.evaluate(FOCUSED_JS) == "agent-input"
    assert agent.testid("agent-panel").get_attribute("data-running") == "false"

    # The message log is reachable (it scrolls) and New conversation works with Enter.
    tab_to(agent, "agent-messages", backwards=True)
    tab_to(agent, "agent-new-conversation", backwards=True)
    keyboard.press("Enter")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 0")
    assert agent.page.evaluate(FOCUSED_JS) == "agent-input"

    # Collapse and expand with the keyboard.
    tab_to(agent, "agent-collapse", backwards=True)
    keyboard.press("Enter")
    assert agent.testid("agent-panel").get_attribute("data-collapsed") == "true"
    assert agent.testid("agent-collapse").get_attribute("aria-expanded") == "false"
    keyboard.press("Enter")
    assert agent.testid("agent-panel").get_attribute("data-collapsed") == "false"

    # The course picker: arrow keys switch course in the page.
    tab_to(agent, "course-select", backwards=True)
    keyboard.press("ArrowDown")
    agent.page.wait_for_function("() => new URLSearchParams(location.search).get('course') !== 'intro-ml'")


# -- announcements ---------------------------------------------------------------------------


def streamed_reply_is_announced_once_when_complete(agent) -> None:
    """On a page with no turn yet: the role=log is busy while tokens arrive and read once when complete."""
    log = agent.page.locator("#agent-messages")  # the role=log element (it has no data-testid in DESIGN §6)
    assert log.get_attribute("role") == "log"
    assert log.get_attribute("aria-busy") in (None, "false")
    agent.send("tell me something long", wait=False)
    agent.page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=agent-message][data-role=assistant]').length === 1"
        " && document.querySelector('[data-testid=agent-message][data-role=assistant]').textContent.trim().length > 0")
    assert log.get_attribute("aria-busy") == "true"  # tokens arriving: assistive technology waits
    agent.wait_idle()
    assert log.get_attribute("aria-busy") == "false"  # complete: the log is read once
    assert agent.messages().nth(1).inner_text().strip()
