"""The product's core in a real Chromium (issue: per-course conversations that survive a refresh).

Every test here also proves, through the ``agent`` fixture, that no request
left the local server.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

from playwright.sync_api import expect

from app.agent import element_count as regenerate_element_count
from app.i18n import LOCALES, Translator, resolve_locale
from tests.e2e.test_import_chatgpt import (
    chatgpt_exports_import_the_current_branch_report_what_they_could_not_read_and_refuse_other_files,
    hostile_exports_import_what_can_be_read_name_the_rest_and_leave_the_page_its_turn, imports_are_kept_after_a_reload)
from tools.cldr_numbers import CldrNumbers, cldr_numbers

NEW_CONVERSATION = {
    "zh-CN": "新对话", "zh-TW": "新對話", "en-US": "New conversation", "ja-JP": "新しい会話",
    "ru-RU": "Новый диалог", "ar-SA": "محادثة جديدة", "pt-BR": "Nova conversa", "ko-KR": "새 대화",
}


def texts(agent) -> list[str]:
    return [t.strip() for t in agent.messages().all_inner_texts()]


SWITCH_JS = """id => {
  const url = new URL(location.href);
  url.searchParams.set("course", id);
  history.pushState({}, "", url.href);
  dispatchEvent(new PopStateEvent("popstate"));
}"""


def switch_course(agent, course_id: str) -> None:
    """Show ``course_id`` in the booted page as Back/Forward does (app.browser.page ``_on_popstate``):
    no boot. The URL's other parameters stay (``lang`` and ``delay`` are read only at boot)."""
    agent.page.evaluate(SWITCH_JS, course_id)
    expect(agent.testid("course-select")).to_have_value(course_id)


@contextmanager
def case(name: str):
    """A step of a combined test: a failure inside says which case it was."""
    try:
        yield
    except BaseException as error:  # an assertion or a Playwright timeout
        error.add_note(f"in case: {name}")
        raise


# --- several cases, each in its own course of one booted page, and one shared reload ---------------
# Each case's first half runs before the reload, its second half (what must have persisted) after it.


def new_conversation_is_hidden_on_an_empty_thread_and_clears_only_its_course(agent) -> None:
    button = agent.testid("agent-new-conversation")
    assert button.is_hidden()  # the booted course has no thread
    agent.send("keep me")
    switch_course(agent, "core-clear")
    assert button.is_hidden()
    agent.send("clear me")
    assert button.is_visible()
    kept = agent.stored()["state"]["threads"]["core-keep"]
    button.click()
    assert agent.messages().count() == 0
    assert button.is_hidden()
    threads = agent.stored()["state"]["threads"]
    assert "core-clear" not in threads
    assert threads["core-keep"] == kept


def new_conversation_after_reload(agent) -> None:
    switch_course(agent, "core-clear")
    assert agent.messages().count() == 0
    switch_course(agent, "core-keep")
    assert "keep me" in texts(agent)[0]


def two_courses_picked_in_the_picker_keep_separate_threads(agent) -> list[str]:
    switch_course(agent, "linear-algebra")
    agent.send("alpha question")
    agent.page.select_option("[data-testid=course-select]", "poetry-tang")
    agent.page.wait_for_function("() => new URL(location.href).searchParams.get('course') === 'poetry-tang'")
    assert agent.messages().count() == 0
    agent.send("beta question")
    beta = texts(agent)
    agent.page.select_option("[data-testid=course-select]", "linear-algebra")
    assert "alpha question" in texts(agent)[0]
    return beta


def two_courses_after_reload(agent, beta: list[str]) -> None:
    switch_course(agent, "poetry-tang")
    assert texts(agent) == beta
    threads = agent.stored()["state"]["threads"]
    assert threads["linear-algebra"]["messages"][0]["content"][0]["text"] == "alpha question"
    assert threads["poetry-tang"]["messages"][0]["content"][0]["text"] == "beta question"


def thread_is_sent(agent) -> list[str]:
    switch_course(agent, "core-reload")
    assert agent.messages().count() == 0
    agent.send("What is overfitting?")
    before = texts(agent)
    assert len(before) == 2
    assert agent.messages().nth(0).get_attribute("data-role") == "user"
    assert agent.messages().nth(1).get_attribute("data-role") == "assistant"
    return before


def thread_survives_reload(agent, before: list[str]) -> None:
    switch_course(agent, "core-reload")
    assert texts(agent) == before
    stored = agent.stored()
    assert stored["version"] == 1
    assert [m["role"] for m in stored["state"]["threads"]["core-reload"]["messages"]] == ["user", "assistant"]


def regenerate_card_shows_its_element_count_and_status(agent) -> None:
    switch_course(agent, "core-regenerate")
    agent.send("/regenerate scene-2 make it brighter")
    card = agent.testid("tool-card")
    assert card.get_attribute("data-status") == "ok"
    assert card.get_attribute("data-element-count") == str(regenerate_element_count("scene-2"))


def regenerate_card_keeps_them_after_reload_without_element_data(agent) -> None:
    expected = regenerate_element_count("scene-2")
    switch_course(agent, "core-regenerate")
    card = agent.testid("tool-card")
    assert card.get_attribute("data-status") == "ok"
    assert card.get_attribute("data-element-count") == str(expected)
    raw = agent.stored_raw()
    assert "base64" not in raw and "data:image" not in raw
    part = next(p for m in json.loads(raw)["state"]["threads"]["core-regenerate"]["messages"]
                for p in m["content"] if p["type"] == "tool-call")
    assert part["args"] == {"sceneId": "scene-2", "instruction": "make it brighter"}
    assert part["result"]["details"]["content"] == {"elements": [{}] * expected}
    assert "isError" not in part


def fail_card_shows_a_failure_badge(agent) -> None:
    switch_course(agent, "core-fail")
    agent.send("/fail scene-3")
    assert agent.testid("tool-card").get_attribute("data-status") == "error"


def fail_card_keeps_it_after_reload(agent) -> None:
    switch_course(agent, "core-fail")
    card = agent.testid("tool-card")
    assert card.get_attribute("data-status") == "error"
    assert card.get_attribute("data-element-count") is None
    part = agent.stored()["state"]["threads"]["core-fail"]["messages"][1]["content"][0]
    assert part["isError"] is True
    assert part["result"]["details"]["content"] is None


def restore_button_exists_while_the_in_memory_snapshot_does(agent) -> None:
    switch_course(agent, "intro-ml")
    agent.send("/regenerate scene-1")
    scene = agent.page.locator("[data-testid=scene][data-scene-id=scene-1]")
    expect(scene).to_have_attribute("data-version", "1")
    assert agent.testid("tool-card-restore").count() == 1
    agent.testid("tool-card-restore").click()
    assert agent.testid("tool-card-restore").count() == 0
    expect(scene).to_have_attribute("data-version", "2")  # the restore is a new version (DESIGN.md §10)
    expect(scene).to_have_attribute("data-element-count", "2")  # the course's own scene again
    agent.send("/regenerate scene-1 again")
    assert agent.testid("tool-card-restore").count() == 1


def restore_button_is_gone_after_reload(agent) -> None:
    switch_course(agent, "intro-ml")
    assert agent.testid("tool-card").count() == 2
    assert agent.testid("tool-card-restore").count() == 0


SCROLLED_TO_END = ("() => { const m = document.getElementById('agent-messages');"
                   " return m.scrollHeight > m.clientHeight && m.scrollHeight - m.scrollTop - m.clientHeight < 40; }")


def many_long_messages_are_sent(agent) -> None:
    switch_course(agent, "core-scroll")  # the last case: the reload lands on this course
    for n in range(8):
        agent.send(f"question number {n} " + "with some more words " * 10)


def newest_message_is_scrolled_into_view_on_load_and_after_sending(agent) -> None:
    assert agent.page.evaluate("new URL(location.href).searchParams.get('course')") == "core-scroll"
    assert agent.page.evaluate(SCROLLED_TO_END)
    agent.page.evaluate("document.getElementById('agent-messages').scrollTop = 0")
    agent.send("one more")
    assert agent.page.evaluate(SCROLLED_TO_END)


def test_each_courses_thread_and_tool_cards_survive_one_shared_reload(agent, tmp_path):
    """Seven cases, each in its own course of one booted page, then one reload. The page is booted by
    test_startup's damaged paint records (five boots, the last one left ready on s-damaged); ChatGPT's
    exports (test_import_chatgpt) are imported in that page first, in courses of their own, read back
    after the reload, then the hostile exports run last."""
    from tests.e2e.test_startup import a_damaged_record_draws_nothing_and_breaks_nothing

    with case("a damaged paint record draws nothing and breaks nothing (test_startup; this page's boots)"):
        a_damaged_record_draws_nothing_and_breaks_nothing(agent, "s-damaged")
    with case("ChatGPT exports import the current branch, report what they could not read, refuse other files"):
        chatgpt_exports_import_the_current_branch_report_what_they_could_not_read_and_refuse_other_files(
            agent, tmp_path, "c-import", "c-import-other")
    switch_course(agent, "core-keep")
    with case("new conversation"):
        new_conversation_is_hidden_on_an_empty_thread_and_clears_only_its_course(agent)
    with case("two courses in the picker"):
        beta = two_courses_picked_in_the_picker_keep_separate_threads(agent)
    with case("thread survives reload"):
        before = thread_is_sent(agent)
    with case("regenerate card"):
        regenerate_card_shows_its_element_count_and_status(agent)
    with case("fail card"):
        fail_card_shows_a_failure_badge(agent)
    with case("restore button"):
        restore_button_exists_while_the_in_memory_snapshot_does(agent)
    with case("scrolled into view"):
        many_long_messages_are_sent(agent)

    agent.reload()

    with case("scrolled into view"):
        newest_message_is_scrolled_into_view_on_load_and_after_sending(agent)
    with case("new conversation"):
        new_conversation_after_reload(agent)
    with case("two courses in the picker"):
        two_courses_after_reload(agent, beta)
    with case("thread survives reload"):
        thread_survives_reload(agent, before)
    with case("regenerate card"):
        regenerate_card_keeps_them_after_reload_without_element_data(agent)
    with case("fail card"):
        fail_card_keeps_it_after_reload(agent)
    with case("restore button"):
        restore_button_is_gone_after_reload(agent)
    with case("only the courses with a thread are stored"):
        assert set(agent.stored()["state"]["threads"]) == {
            "core-keep", "linear-algebra", "poetry-tang", "core-reload", "core-regenerate", "core-fail",
            "intro-ml", "core-scroll", "c-import", "s-damaged"}  # c-import: the imported conversation resumed
        # there; s-damaged: the thread stored for test_startup's boots
    with case("ChatGPT imports are kept after the reload"):
        imports_are_kept_after_a_reload(agent, "c-import", "c-import-other")
    with case("hostile ChatGPT exports import what can be read and name the rest"):
        hostile_exports_import_what_can_be_read_name_the_rest_and_leave_the_page_its_turn(agent, tmp_path)


# Each catalogue's label and plural forms are unit-proven for all eight locales (tests/unit/test_i18n.py);
# the page shows they are drawn, with the document's direction, and counted through Intl: one
# left-to-right locale with three plural forms, and the right-to-left one. The locale is read at boot:
# this case runs in a course of its own in test_checkpoints' ru-RU page and test_startup's ar-SA page.
def new_conversation_button_and_counts_are_in_the_pages_locale(agent, locale: str, course: str) -> None:
    switch_course(agent, course)
    agent.send("hello")
    button = agent.testid("agent-new-conversation")
    assert button.get_attribute("aria-label") == NEW_CONVERSATION[locale]
    assert button.get_attribute("title")
    assert agent.page.evaluate("document.documentElement.lang") == locale
    assert agent.page.evaluate("document.documentElement.dir") == ("rtl" if locale == "ar-SA" else "ltr")
    agent.send("/regenerate scene-2 make it brighter")
    line = Translator(locale, cldr_numbers).t("edit.agent.tool.elements", count=regenerate_element_count("scene-2"))
    expect(agent.testid("tool-card").locator(".tool-card-line").first).to_have_text(line)


INTL_NUMBERS_JS = """([locales, counts]) => locales.map((locale) => {
  const plural = new Intl.PluralRules(locale), format = new Intl.NumberFormat(`${locale}-u-nu-latn`);
  return { plurals: counts.map((n) => plural.select(n)), integers: counts.map((n) => format.format(n)),
           decimal: format.formatToParts(1.5).find((part) => part.type === "decimal").value };
})"""


def test_the_browsers_intl_and_babels_cldr_agree_on_the_eight_locales(page, app_server):
    """app.browser.intl.IntlNumbers asks Intl exactly this; CPython code uses tools.cldr_numbers."""
    page.goto(f"{app_server}static/icons/agentbar.svg")  # any page: no app needed
    counts = [*range(0, 230), 1000, 1001, 1209, 12_345, 100_000, 1_000_001, 2_000_000]
    found = page.evaluate(INTL_NUMBERS_JS, [list(LOCALES), counts])
    for locale, intl in zip(LOCALES, found):
        cldr = CldrNumbers(locale)
        assert intl["plurals"] == [cldr.plural(n) for n in counts], locale
        assert intl["integers"] == [cldr.integer(n) for n in counts], locale
        assert intl["decimal"] == cldr.decimal_mark(), locale


BOOT_MATCH_JS = """async ([tags, languages]) => {
  // static/boot.js's own locale rule (LOCALES, matchLocale, pickLocale), run on each tag in turn.
  const source = await (await fetch("static/boot.js")).text();
  const start = source.indexOf("const LOCALES"), end = source.indexOf("const locale = pickLocale();");
  const pick = new Function("location", "navigator", source.slice(start, end) + "return pickLocale();");
  return tags.map((tag) => pick({ search: "?lang=" + encodeURIComponent(tag) }, { languages }));
}"""
TAGS = ["zh-HK", "zh-Hant", "zh-Hant-TW", "zh-MO", "zh", "zh-Hans", "zh_CN", "pt", "pt-PT", "AR", "ar-EG",
        "xx", "ko_kr", "JA", "ru-UA", "en-GB", "fr", ""]


def runtime_is_served_from_the_local_origin(agent) -> None:
    served = [u for u in agent.requests if u.endswith(("pyodide.asm.wasm", "python_stdlib.zip", ".whl"))]
    assert any(u.endswith("pyodide.asm.wasm") for u in served)
    assert any("pydantic_core" in u for u in served)
    assert all(u.startswith(agent.base_url) for u in served)


def long_thread_renders_its_newest_messages_first_and_earlier_ones_on_request(agent) -> None:
    from app.presentation import RENDER_WINDOW

    assert agent.messages().count() == RENDER_WINDOW
    assert agent.messages().last.inner_text().strip() == "answer 49"
    agent.testid("agent-load-earlier").click()
    assert agent.messages().count() == 2 * RENDER_WINDOW
    agent.testid("agent-load-earlier").click()
    assert agent.messages().count() == 100
    assert agent.messages().first.inner_text().strip() == "question 0"
    assert agent.testid("agent-load-earlier").count() == 0
    agent.send("one more")  # the session grows: the window is cut back as after a reload
    assert agent.messages().count() == RENDER_WINDOW
    assert "one more" in agent.messages().nth(RENDER_WINDOW - 2).inner_text()
    assert agent.testid("agent-load-earlier").count() == 1


def collapse_button_collapses_and_expands_the_panel(agent) -> None:
    toggle = agent.testid("agent-collapse")
    panel = agent.testid("agent-panel")
    toggle.click()
    assert panel.get_attribute("data-collapsed") == "true"
    assert toggle.get_attribute("aria-expanded") == "false"
    assert agent.testid("agent-input").is_hidden()
    toggle.press("Enter")
    assert panel.get_attribute("data-collapsed") == "false"
    assert toggle.get_attribute("aria-expanded") == "true"
    assert agent.testid("agent-input").is_visible()


def loading_screen_and_app_pick_the_same_locale(agent) -> None:
    """Both pick it in a real page; every tag is then run through boot.js's rule there and
    compared with the app's (app.i18n.resolve_locale, unit-tested itself)."""
    agent.page.goto(agent.url(course="intro-ml", lang="zh-HK"))
    boot_lang = agent.page.evaluate("document.documentElement.lang")
    agent.wait_ready()
    assert agent.page.evaluate("document.documentElement.lang") == boot_lang == "zh-TW"
    for languages in ([], ["pt-PT", "en"], ["xx", "ko-KR"]):
        picked = agent.page.evaluate(BOOT_MATCH_JS, [TAGS, languages])
        assert picked == [resolve_locale(tag or None, languages) for tag in TAGS], languages


def test_one_boot_in_zh_hk_on_a_long_seeded_thread_locale_local_runtime_render_window_and_collapse(agent):
    """The locale is read at boot; the other cases need only a booted page (the seeded thread is
    read at boot too)."""
    messages = []
    for n in range(50):
        messages += [{"role": "user", "content": [{"type": "text", "text": f"question {n}"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]}]
    value = {"state": {"threads": {"intro-ml": {"messages": messages, "updatedAt": 1}}}, "version": 1}
    agent.seed({"maic-agent-threads": json.dumps(value, separators=(",", ":"))})
    with case("loading screen and app pick the same locale"):
        loading_screen_and_app_pick_the_same_locale(agent)
    with case("runtime served from the local origin"):
        runtime_is_served_from_the_local_origin(agent)
    with case("long thread's render window"):
        long_thread_renders_its_newest_messages_first_and_earlier_ones_on_request(agent)
    with case("collapse button"):
        collapse_button_collapses_and_expands_the_panel(agent)
