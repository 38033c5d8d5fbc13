"""History at scale in Chromium (DESIGN.md §14): big and impossible imports refused with a message,
damaged records listed and deletable, search folding through the page's adapter, two tabs' current
mark, the drawer's keyboard trap and axe-core on its states."""

from __future__ import annotations

import json

from tests.e2e.test_history import (announce_written, case, item_ids, open_file_actions, open_list, seed_conversations,
                                    show_course, wait_history)
from tests.e2e.test_indexeddb import run_py

STATUS = "[data-testid=history-status]"


def export_document(task_id="task_20260101_abc123", text="hello", total_tokens=3):
    return {"format": "agentbar-conversation", "version": 1,
            "meta": {"taskId": task_id, "taskName": text, "stageId": "x", "createdAt": "2026-01-01T00:00:00.000Z",
                     "updatedAt": "2026-01-02T00:00:00.000Z",
                     "stats": {"credits": 0, "totalTokens": total_tokens, "inputTokens": 1, "outputTokens": 2}},
            "messages": [{"role": "user", "id": "u1", "content": [{"type": "text", "text": text}]},
                         {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "ok"}]}],
            "turns": []}


def total(agent) -> str:
    return agent.page.evaluate("() => document.querySelector('[data-testid=history-list]').dataset.total")


def refused_with(agent, reason: str, timeout: float = 30_000) -> str:
    agent.page.wait_for_selector(f"{STATUS}[data-result=error][data-reason={reason}]", timeout=timeout)
    text = agent.testid("history-status").inner_text()
    assert text.strip()
    return text


def an_import_over_50_mb_is_refused_unread_and_a_big_one_under_it_imports(agent, tmp_path) -> None:
    open_list(agent)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as out:  # 50 MB + 1 byte: never read, whatever it holds
        out.truncate(50_000_001)
    agent.testid("import-json").set_input_files(str(huge))
    refused_with(agent, "size")
    assert total(agent) == "0"
    unit = 'a"b\\c\n中文é😀'  # escape-dense text with 2-, 3- and 4-byte characters across 1 MB slices
    too_long = tmp_path / "too-long.json"  # past the one limit of every way in (app.history.limits): refused
    too_long.write_text(json.dumps(export_document(task_id=BIG_TASK_ID, text=unit * 210_000), ensure_ascii=False),
                        encoding="utf-8")
    agent.testid("import-json").set_input_files(str(too_long))
    said = refused_with(agent, "too-long", timeout=120_000)  # read and checked whole first
    assert "000" in said.replace(",", "").replace(".", "").replace("\u202f", "").replace(" ", "")
    assert total(agent) == "0"
    big = tmp_path / "big.json"
    text = unit * 199_000  # 1,990,000 characters, and the reply's two: under the limit
    big.write_text(json.dumps(export_document(task_id=BIG_TASK_ID, text=text), ensure_ascii=False), encoding="utf-8")
    agent.testid("import-json").set_input_files(str(big))
    agent.page.wait_for_selector(f"{STATUS}[data-result=ok]", timeout=120_000)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    stored = run_py(agent.page, f"""
        b = IndexedDbBackend()
        await b.open()
        record = await b.get("messages", {BIG_TASK_ID!r})
        json.dumps(record["messages"][0]["content"][0]["text"])
    """)
    assert stored == text
    agent.assert_accessible("history drawer after a big import")


def impossible_numbers_and_dates_are_refused_with_a_message(agent, tmp_path) -> None:
    open_list(agent)
    for name, document, reason in (
            ("tokens", export_document(total_tokens=10**22), "numbers"),
            ("negative", export_document(total_tokens=-1_000_000), "numbers"),
            ("future", {**export_document(), "meta": {**export_document()["meta"],
                                                       "updatedAt": "9999-01-01T00:00:00.000Z"}}, "dates")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        agent.testid("import-json").set_input_files(str(path))
        refused_with(agent, reason)
        assert total(agent) == "0"
    agent.assert_accessible("history drawer, import refused")


def a_damaged_record_is_listed_deletable_and_a_corrected_import_replaces_it(agent, course: str, tmp_path) -> None:
    """What an older version stored from a 10^22-token import: IndexedDB gives back a float, the record
    no longer reads as a conversation. It is listed as damaged (never hidden while counted), opening it
    says why it cannot be, a corrected import replaces it, and a damaged one can be deleted. One whose
    ``updatedAt`` is a string (IndexedDB sorts it after every number, past the list's times) is listed
    with no time and deleted too."""
    document = export_document()
    run_py(agent.page, f"""
        b = IndexedDbBackend()
        await b.open()
        for task_id, at in (("task_20260101_abc123", 1767312000000), ("task_20260101_zzz999", "yesterday")):
            await b.write([("put", "conversations", {{"taskId": task_id, "taskName": "t", "stageId": {course!r},
                           "createdAt": 1767225600000, "updatedAt": at,
                           "stats": {{"credits": 0, "totalTokens": 1e22, "inputTokens": 1, "outputTokens": 2}}}}),
                           ("put", "messages", {{"taskId": task_id, "messages": {json.dumps(document["messages"])}}})])
        json.dumps(True)
    """)
    announce_written(agent, course)  # written behind the app's back: said as another tab's write is
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item][data-damaged=true]').length === 2")
    assert total(agent) == "2"
    times = "[data-testid=history-item][data-task-id=task_20260101_{}] [data-testid=history-time]"
    assert agent.page.locator(times.format("abc123")).count() == 1  # its time could be read
    assert agent.page.locator(times.format("zzz999")).count() == 0  # none drawn, never 1 January 1970
    damaged = agent.page.locator("[data-testid=history-item][data-task-id=task_20260101_abc123]")
    damaged.click()
    agent.page.wait_for_selector(f"{STATUS}[data-kind=resume][data-result=error]")
    assert agent.messages().count() == 0
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps(document))
    agent.testid("import-json").set_input_files(str(path))
    agent.page.wait_for_selector(f"{STATUS}[data-result=ok]")
    agent.page.wait_for_selector("[data-testid=history-item][data-task-id=task_20260101_abc123][data-damaged=false]")
    agent.page.locator("[data-testid=history-item][data-task-id=task_20260101_zzz999] [data-testid=history-delete]").click()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    assert item_ids(agent) == ["task_20260101_abc123"]


def search_folds_case_turkish_i_width_and_accents_and_marks_the_original(agent, course: str) -> None:
    seed_conversations(agent, course, ["ẞ" * 300 + " Wir wohnen in der Straße", "A trip to İstanbul",
                                           "Un cafe\u0301 noir", "ＦＵＬＬ width"])
    open_list(agent)
    for keyword, marked in (("STRASSE", "Straße"), ("istanbul", "İstanbul"), ("ISTANBUL", "İstanbul"),
                            ("café", "cafe\u0301"), ("full", "ＦＵＬＬ")):
        agent.testid("history-search").fill(keyword)
        agent.page.wait_for_function("k => document.querySelector('[data-testid=history-list]').dataset.query === k",
                                     arg=keyword)
        marks = agent.page.eval_on_selector_all("[data-testid=history-snippet] mark", "els => els.map(e => e.textContent)")
        assert marks == [marked], keyword
    agent.assert_accessible("history drawer with search results")
    agent.testid("history-search").fill("")  # the drawer keeps its search box: the next case lists plainly
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === ''")


def search_results_page_like_the_list_newest_first(agent, course: str) -> None:
    """12 conversations hold the word, one does not: ten hits newest first with ``data-has-more``
    true, the rest when scrolled to the end, then false; a word inside another word is not a hit
    (whole words, DESIGN.md §14); typing a new keyword replaces the results."""
    ids = seed_conversations(agent, course, [f"gradient descent step {i}" for i in range(12)] + ["gradients only"])
    open_list(agent)
    listing = agent.testid("history-list")
    agent.testid("history-search").fill("Gradient")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === 'Gradient'")
    assert item_ids(agent) == ids[:12][::-1][:10]
    assert listing.get_attribute("data-has-more") == "true" and listing.get_attribute("data-total") == "12"
    agent.page.eval_on_selector("[data-testid=history-list]",
                                "el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.hasMore === 'false'")
    assert item_ids(agent) == ids[:12][::-1]
    agent.testid("history-search").press_sequentially("s", delay=30)  # "Gradients": the other one only
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === 'Gradients'")
    assert item_ids(agent) == [ids[12]] and listing.get_attribute("data-has-more") == "false"
    agent.testid("history-search").fill("")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === ''")


def another_tabs_resume_moves_the_current_mark_and_deleting_the_current_one_says_why(agent, second_agent,
                                                                                   course: str) -> None:
    agent.send("first conversation")
    agent.testid("agent-new-conversation").click()
    agent.send("second conversation")
    show_course(second_agent, course)  # booted by the names case
    wait_history(second_agent)
    open_list(second_agent)
    second_agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 2")
    current = "[data-testid=history-item][data-current=true] [data-testid=history-title]"
    second_agent.page.wait_for_function(f"() => document.querySelector('{current}')?.textContent === 'second conversation'")
    open_list(agent)
    agent.page.locator("[data-testid=history-item]:not([data-current=true])").click()
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    # the other tab's open list follows: the resumed one is current there too, and only it
    second_agent.page.wait_for_function(f"() => document.querySelector('{current}')?.textContent === 'first conversation'")
    assert second_agent.page.locator("[data-testid=history-item][data-current=true]").count() == 1
    item = second_agent.page.locator("[data-testid=history-item][data-current=true]")
    item.focus()
    second_agent.page.keyboard.press("Delete")
    second_agent.page.wait_for_selector(f"{STATUS}[data-kind=delete][data-result=error]")
    assert second_agent.testid("history-status").inner_text().strip()
    assert second_agent.page.locator("[data-testid=history-item]").count() == 2


def tab_stays_in_the_open_drawer_and_escape_closes_it_from_anywhere_in_it_and_axe_finds_nothing_serious(
        agent, course: str) -> None:
    """The drawer's focus trap and Escape with three seeded items, then axe on the drawer with two
    more (sent here) and on the settings dialog (left open: the last case)."""
    seed_conversations(agent, course, ["one", "two", "three"])
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 3")
    inside = "() => document.querySelector('[data-testid=history-drawer]').contains(document.activeElement)"

    def tab_round() -> set:  # more presses than the drawer has stops: each way round at least once
        seen = set()
        for key in ["Tab"] * 24 + ["Shift+Tab"] * 24:
            agent.page.keyboard.press(key)
            assert agent.page.evaluate(inside), f"{key} left the drawer"
            seen.add(agent.page.evaluate("() => document.activeElement.dataset.testid || document.activeElement.id"))
        return seen

    # with the file actions folded (an earlier case of this page left them open), their toggle (a
    # summary) is the last stop: Tab from it stays in
    agent.page.evaluate("() => { document.querySelector('[data-testid=history-more]').open = false; }")
    assert {"history-search", "history-close", "history-item", "history-more-toggle"} <= tab_round()
    open_file_actions(agent)  # its file pickers are in the Tab order once open
    assert {"history-search", "history-close", "history-item", "import-json"} <= tab_round()
    agent.testid("history-sort").focus()
    agent.page.keyboard.press("Escape")
    agent.page.wait_for_selector("[data-testid=history-drawer][hidden]", state="attached")
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "history-open"
    axe_finds_nothing_serious_in_the_drawer_with_items_and_the_settings_dialog(agent, listed_before=3)


def axe_finds_nothing_serious_in_the_drawer_with_items_and_the_settings_dialog(agent, listed_before: int) -> None:
    agent.send("a question")
    agent.testid("agent-new-conversation").click()
    agent.send("another question")
    open_list(agent)
    agent.page.wait_for_function("n => document.querySelectorAll('[data-testid=history-item]').length === n",
                                 arg=listed_before + 2)
    agent.assert_accessible("history drawer open with items")
    agent.testid("history-close").click()
    agent.testid("settings-open").click()
    agent.page.wait_for_selector("[data-testid=settings-dialog][open]")
    agent.assert_accessible("settings dialog open")


def adopted_thread_value() -> tuple[str, int]:
    """A stored value whose intro-ml thread (3 turns, updated 3 hours ago) only localStorage holds:
    ``(value, updatedAt)``."""
    import time

    updated = (int(time.time()) - 3 * 3600) * 1000
    messages = []
    for n in range(3):
        messages += [{"role": "user", "content": [{"type": "text", "text": f"question {n}"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]}]
    value = {"state": {"threads": {"intro-ml": {"messages": messages, "updatedAt": updated}}}, "version": 1}
    return json.dumps(value, separators=(",", ":")), updated


def a_thread_only_in_local_storage_is_adopted_with_its_turns_and_its_time(agent, updated: int) -> None:
    """The TS original's value (or a thread a wiped IndexedDB lacks) is adopted at start-up: it listed
    "0 turns · 0 tokens" and "just now", and one more turn made it "1 turn" (DESIGN.md §9). The page
    booted on intro-ml with ``adopted_thread_value()`` stored."""
    from app.history.records import iso

    stats = "() => document.querySelector('[data-testid=conversation-stats]').dataset.turns"
    agent.page.wait_for_function(f"() => ({stats})() === '3'")
    open_list(agent)
    item = agent.page.locator("[data-testid=history-item]", has_text="question 0")
    item.wait_for()
    said = item.inner_text()
    assert "3 turns" in said and "tokens not reported" in said and "0 tokens" not in said, said
    when = item.locator("[data-testid=history-time]")
    assert when.get_attribute("datetime") == iso(updated), said
    assert "just now" not in said and "3 hours ago" in said, said
    agent.testid("history-close").click()
    agent.send("one more")
    agent.page.wait_for_function(f"() => ({stats})() === '4'")


BIG_TASK_ID = "task_20260101_big001"
"""The big import's task id (task ids are keys of the whole database: another case has its own)."""


def test_history_at_scale_one_course_per_case(agent, second_agent, tmp_path):
    """Every case in its own course of one page, switched in place (no boot); the second tab boots
    once, in test_history_names' case, which also reloads this page once (it runs before the big
    import: its backup round trip carries every conversation); the two-tab case goes on in that tab.
    The search case clears its search box; the focus-trap case leaves the settings dialog open, so it
    comes last. The page boots on intro-ml with a thread only localStorage holds (its adoption at
    start-up is the first case)."""
    from tests.e2e.test_history_names import (
        rename_and_pin_from_the_list_reach_another_tab_survive_a_reload_and_the_new_title_is_found as names)

    value, updated = adopted_thread_value()
    agent.seed({"maic-agent-threads": value})
    agent.open(course="intro-ml")
    assert wait_history(agent) == "ready"
    with case("a thread only in localStorage is adopted with its turns and its time"):
        a_thread_only_in_local_storage_is_adopted_with_its_turns_and_its_time(agent, updated)
    with case("rename and pin from the list reach another tab, survive a reload, the new title is found "
              "(test_history_names; the other tab's boot and this page's reload)"):
        names(agent, second_agent, tmp_path)
    with case("an import over 50 MB is refused unread and a big one under it imports"):
        show_course(agent, "h-big-import")
        an_import_over_50_mb_is_refused_unread_and_a_big_one_under_it_imports(agent, tmp_path)
    with case("impossible numbers and dates are refused with a message"):
        show_course(agent, "h-impossible")
        impossible_numbers_and_dates_are_refused_with_a_message(agent, tmp_path)
    with case("a damaged record is listed, deletable, and a corrected import replaces it"):
        show_course(agent, "h-damaged")
        a_damaged_record_is_listed_deletable_and_a_corrected_import_replaces_it(agent, "h-damaged", tmp_path)
    with case("another tab's resume moves the current mark and deleting the current one says why"):
        show_course(agent, "h-current-mark")
        another_tabs_resume_moves_the_current_mark_and_deleting_the_current_one_says_why(
            agent, second_agent, "h-current-mark")
    with case("search folds case, Turkish i, width and accents and marks the original"):
        show_course(agent, "h-search-folds")
        search_folds_case_turkish_i_width_and_accents_and_marks_the_original(agent, "h-search-folds")
    with case("search results page like the list, newest first"):
        show_course(agent, "h-search-pages")
        search_results_page_like_the_list_newest_first(agent, "h-search-pages")
    with case("Tab stays in the open drawer, Escape closes it from anywhere in it, axe finds nothing serious"):
        show_course(agent, "h-focus-trap")
        tab_stays_in_the_open_drawer_and_escape_closes_it_from_anywhere_in_it_and_axe_finds_nothing_serious(
            agent, "h-focus-trap")
