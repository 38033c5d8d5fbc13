"""Panel behaviour only a browser shows: long text, course history, Escape rules, the bounded
render window, narrow screens, focus, bidi isolation, typed text sent unchanged. The cases that need a
Chinese page with slow replies (Escape rules, placeholder scenes) run in test_history's slow tab.

Every test also proves, through the ``agent`` fixture, that no request left the local server.
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

from app.presentation import CHUNK_CHARS, COLLAPSED_CHARS, RENDER_SLACK, RENDER_WINDOW
from tests.e2e.test_history import case, show_course

KEY = "maic-agent-threads"


def envelope(threads: dict) -> str:
    return json.dumps({"state": {"threads": threads}, "version": 1}, ensure_ascii=False, separators=(",", ":"))


def turns(n: int, prefix: str = "") -> list[dict]:
    out = []
    for i in range(n):
        out += [{"role": "user", "content": [{"type": "text", "text": f"{prefix}question {i}"}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"{prefix}answer {i}"}]}]
    return out


def thread(messages: list[dict], updated_at: int = 1_780_000_000_000) -> dict:
    return {"messages": messages, "updatedAt": updated_at}


def running(agent) -> bool:
    return agent.testid("agent-panel").get_attribute("data-running") == "true"


def active_testid(agent) -> str | None:
    return agent.page.evaluate("() => document.activeElement && document.activeElement.getAttribute('data-testid')")


def set_input(agent, text: str) -> None:
    """Put ``text`` into the composer in one step (``fill`` types long text slowly)."""
    agent.page.evaluate("t => { const i = document.querySelector('[data-testid=agent-input]'); i.value = t; }", text)


# ---- long text (a long paragraph never freezes the page) ------------------------------------


LONG_TEXT = ("lorem ipsum dolor sit amet 中文 " * 700)[:20_000]


def long_paragraph_renders_collapsed_and_expands_by_keyboard_in_chunks(agent, course: str) -> None:
    """Long paragraph (1/2); after a reload, ``after_a_reload_the_long_paragraph_is_collapsed``."""
    text = LONG_TEXT
    set_input(agent, text)
    agent.testid("agent-send").click()
    agent.wait_idle()
    user = agent.messages().nth(0)
    bubble = user.locator("[data-testid=agent-message-text]")
    assert bubble.get_attribute("data-long") == "collapsed"
    shown = bubble.evaluate("b => b.querySelector('[data-testid=agent-text-chunk]').textContent")
    assert len(shown) <= COLLAPSED_CHARS + 1 and text.startswith(shown.rstrip("…"))
    toggle = user.locator("[data-testid=agent-message-expand]")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert toggle.evaluate("b => b.tagName") == "BUTTON" and toggle.inner_text().strip()
    toggle.focus()
    agent.page.keyboard.press("Enter")
    toggle = agent.messages().nth(0).locator("[data-testid=agent-message-expand]")
    assert toggle.get_attribute("aria-expanded") == "true"
    assert active_testid(agent) == "agent-message-expand"  # focus stays on the control
    chunks = agent.messages().nth(0).locator("[data-testid=agent-text-chunk]").all_text_contents()
    assert "".join(chunks) == text and len(chunks) > 1 and max(map(len, chunks)) <= CHUNK_CHARS
    agent.page.keyboard.press("Space")
    assert agent.messages().nth(0).locator("[data-testid=agent-message-text]").get_attribute("data-long") == "collapsed"
    assert agent.stored()["state"]["threads"][course]["messages"][0]["content"][0]["text"] == text


def after_a_reload_the_long_paragraph_is_collapsed(agent) -> None:
    """Long paragraph (2/2): the page booted on its course."""
    assert agent.messages().nth(0).locator("[data-testid=agent-message-text]").get_attribute("data-long") == "collapsed"
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    short = agent.messages().nth(1)  # the short reply: plain bubble, or Markdown once markdown-it is there
    assert short.locator("[data-long]").count() == 0 and short.locator("[data-testid=agent-message-expand]").count() == 0
    assert short.locator("[data-testid=agent-message-text], [data-testid=markdown]").count() == 1


# ---- courses by URL stay reachable; Back/Forward -------------------------------------------


def course_opened_by_url_stays_in_the_picker_and_back_forward_switch_in_the_page(agent) -> None:
    """Course by URL (1/2), on the page booted with ``course=my-course``, ``stored-elsewhere`` seeded;
    after a reload, ``after_a_reload_the_course_opened_by_url_is_still_offered``."""
    agent.send("hello my course")
    options = agent.page.eval_on_selector_all("[data-testid=course-select] option", "os => os.map(o => [o.value, o.textContent])")
    values = [v for v, _ in options]
    assert {"intro-ml", "my-course", "stored-elsewhere"} <= set(values)
    assert dict(options)["stored-elsewhere"] == "Course stored-elsewhere"
    agent.page.evaluate("() => { window.__samePage = true; }")
    length = agent.page.evaluate("() => history.length")
    agent.page.select_option("[data-testid=course-select]", "intro-ml")
    assert agent.page.evaluate("() => history.length") == length + 1
    assert "my-course" in [o for o in agent.page.eval_on_selector_all(
        "[data-testid=course-select] option", "os => os.map(o => o.value)")]
    agent.page.go_back()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=course-select]').value === 'my-course'")
    assert agent.page.evaluate("() => window.__samePage === true")  # no reload
    assert "hello my course" in agent.messages().nth(0).inner_text()
    agent.page.go_forward()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=course-select]').value === 'intro-ml'")
    assert agent.page.evaluate("() => window.__samePage === true")
    assert agent.messages().count() == 0


def after_a_reload_the_course_opened_by_url_is_still_offered(agent) -> None:
    """Course by URL (2/2): after a reload the stored course is still offered."""
    assert "my-course" in agent.page.eval_on_selector_all("[data-testid=course-select] option", "os => os.map(o => o.value)")


# ---- Escape stops a run only when not composing, with focus in the panel ------------------


def escape_stops_the_reply_only_outside_ime_composition_and_the_course_picker(agent) -> None:
    """In a page booted with a slow ``delay`` (test_history's slow tab), in a course with no turn yet.
    Three slow replies: Escape during IME composition or on the course picker does not stop the
    first, Escape in the composer does; Escape with focus nowhere stops the second; the third shows
    focus moving to the composer when the focused Stop button hides."""
    agent.send("a slow reply please", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    cdp = agent.page.context.new_cdp_session(agent.page)
    agent.testid("agent-input").focus()
    cdp.send("Input.imeSetComposition", {"text": "zhong", "selectionStart": 5, "selectionEnd": 5})
    agent.page.keyboard.press("Escape")
    assert running(agent)
    cdp.send("Input.insertText", {"text": "中"})  # commits: the composition ends
    agent.testid("course-select").focus()
    agent.page.keyboard.press("Escape")
    assert running(agent)
    agent.testid("agent-input").focus()
    agent.page.keyboard.press("Escape")
    agent.wait_idle()
    assert agent.messages().nth(1).get_attribute("data-status") == "incomplete"
    escape_with_focus_nowhere_stops_the_reply(agent)
    focus_moves_to_the_composer_when_the_focused_stop_button_hides(agent)


def escape_with_focus_nowhere_stops_the_reply(agent) -> None:
    agent.send("a slow reply please", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.page.evaluate("() => document.activeElement && document.activeElement.blur()")
    agent.page.keyboard.press("Escape")
    agent.wait_idle()
    assert agent.messages().last.get_attribute("data-status") == "incomplete"


def focus_moves_to_the_composer_when_the_focused_stop_button_hides(agent) -> None:
    agent.send("hello", wait=False)  # ~40 tokens at the page's delay: several seconds to focus Stop
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.testid("agent-stop").focus()
    assert active_testid(agent) == "agent-stop"
    agent.wait_idle()
    assert active_testid(agent) == "agent-input"


# ---- bounded window during a session, as after a reload -------------------------------------


WINDOW_SEEDED = RENDER_WINDOW + RENDER_SLACK - 2
"""Messages seeded for the bounded-window case: a session adds two turns, past the bound."""


def rendered_window_stays_bounded_during_a_session_and_show_earlier_brings_messages_back(agent) -> None:
    seeded = WINDOW_SEEDED
    assert agent.messages().count() == RENDER_WINDOW
    for i in range(RENDER_SLACK // 2 + 1):
        agent.send(f"session turn {i}")
    total = seeded + 2 * (RENDER_SLACK // 2 + 1)
    assert agent.messages().count() <= RENDER_WINDOW + RENDER_SLACK < total
    assert f"session turn {RENDER_SLACK // 2}" in agent.messages().nth(agent.messages().count() - 2).inner_text()
    shown = agent.messages().count()
    agent.testid("agent-load-earlier").click()
    assert agent.messages().count() == min(total, shown + RENDER_WINDOW)


# ---- narrow screens, focus, localisation, bidi ----------------------------------------------


def panel_at_390px_keeps_the_viewport_height_and_the_composer_in_view(agent) -> None:
    """On a page made 390 × 844 before its course (16 seeded turns) is shown."""
    assert agent.messages().count() == 32
    agent.testid("agent-input").scroll_into_view_if_needed()
    panel = agent.testid("agent-panel").bounding_box()
    assert panel["height"] <= 844
    box = agent.testid("agent-input").bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 844
    scroll = agent.testid("agent-messages").evaluate("m => [m.scrollHeight, m.clientHeight]")
    assert scroll[0] > scroll[1]  # the messages scroll inside the panel
    assert agent.messages().last.is_visible()


def focus_moves_to_the_first_shown_message_when_the_focused_show_earlier_button_goes(agent) -> None:
    agent.testid("agent-load-earlier").focus()
    agent.page.keyboard.press("Enter")
    assert agent.testid("agent-load-earlier").count() == 0
    assert active_testid(agent) == "agent-message"
    assert agent.page.evaluate("() => document.activeElement === document.querySelector('[data-testid=agent-message]')")


def placeholder_scenes_are_localised_and_demo_scenes_stay_as_written(agent) -> None:
    """In a page booted with ``lang=zh-CN`` (test_history's slow tab), on ``my-course``, a course of
    its own; ends on intro-ml."""
    titles = agent.testid("scene-title").all_text_contents()
    assert titles == ["场景 1", "场景 2", "场景 3"]
    assert "Scene" not in agent.testid("stage-view").inner_text()
    agent.page.select_option("[data-testid=course-select]", "intro-ml")  # in the page, the same locale
    expect(agent.testid("scene-title").first).to_have_text("What is learning?")


# -- what the composer sends is exactly what was typed (it crosses into Python as UTF-8 bytes,
#    ``app.browser.dom.field_text``, fast for a long message) ------------------------------------------


def type_and_send(agent, value: str) -> None:
    agent.page.evaluate("v => { document.querySelector('[data-testid=agent-input]').value = v; }", value)
    agent.testid("agent-send").click()
    agent.wait_idle()


def sent_texts(agent, course: str) -> list[str]:
    messages = json.loads(agent.stored_raw())["state"]["threads"][course]["messages"]
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


TYPED = [
    "\n\n    indented 代码\tand 🎨 e\u0301 “quotes” \u3000 عربى\n  next\n\n",
    ("lorem ipsum dolor sit amet 中文 " * 10_000)[:300_000],
]


def typed_text_arrives_unchanged_even_with_a_lone_surrogate(agent, course: str) -> None:
    """In ``course``, with no turn yet, one turn per value: each arrives as ``composer_text`` of what
    was typed."""
    from app.composer import composer_text

    for i, value in enumerate(TYPED):
        type_and_send(agent, value)
        assert sent_texts(agent, course) == [composer_text(v) for v in TYPED[:i + 1]]
        assert agent.testid("agent-input").input_value() == ""
    agent.page.evaluate("() => { document.querySelector('[data-testid=agent-input]').value = 'half \\ud800 of a pair'; }")
    agent.testid("agent-send").click()
    agent.wait_idle()
    assert "\\ud800" in agent.stored_raw()
    assert sent_texts(agent, course)[-1] == "half \ud800 of a pair"


def test_one_page_in_english_one_course_per_case(agent):
    """Course by URL, long paragraph (both checked again after the one reload), bounded window, focus
    after Show earlier, typed text sent unchanged, 390 px: every case in its own course of one page, switched in place (no boot);
    their threads seeded at once before it boots. The 390 px case comes last (the page stays narrow)."""
    agent.seed({KEY: envelope({"stored-elsewhere": thread(turns(1, "else ")),
                               "u-window": thread(turns(WINDOW_SEEDED // 2)),
                               "u-focus": thread(turns(RENDER_WINDOW // 2 + 3)),
                               "u-narrow": thread(turns(16))})})
    agent.open(course="my-course", lang="en-US")
    with case("course opened by URL stays in the picker and Back/Forward switch in the page"):
        course_opened_by_url_stays_in_the_picker_and_back_forward_switch_in_the_page(agent)
    with case("long paragraph renders collapsed and expands by keyboard in chunks"):
        show_course(agent, "u-long")
        long_paragraph_renders_collapsed_and_expands_by_keyboard_in_chunks(agent, "u-long")
    agent.reload()  # boots on u-long (the URL's course), lang=en-US as before
    with case("long paragraph: after a reload"):
        after_a_reload_the_long_paragraph_is_collapsed(agent)
    with case("course opened by URL: after a reload"):
        after_a_reload_the_course_opened_by_url_is_still_offered(agent)
    with case("rendered window stays bounded during a session and Show earlier brings messages back"):
        show_course(agent, "u-window")
        rendered_window_stays_bounded_during_a_session_and_show_earlier_brings_messages_back(agent)
    with case("focus moves to the first shown message when the focused Show earlier button goes"):
        show_course(agent, "u-focus")
        focus_moves_to_the_first_shown_message_when_the_focused_show_earlier_button_goes(agent)
    with case("typed text arrives unchanged, even with a lone surrogate"):
        show_course(agent, "u-typed")
        typed_text_arrives_unchanged_even_with_a_lone_surrogate(agent, "u-typed")
    with case("panel at 390px keeps the viewport height and the composer in view"):
        agent.page.set_viewport_size({"width": 390, "height": 844})
        show_course(agent, "u-narrow")
        panel_at_390px_keeps_the_viewport_height_and_the_composer_in_view(agent)
