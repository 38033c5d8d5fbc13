"""Never lose a conversation: storage faults, migrations, tabs, races, hostile text (DESIGN.md §4, §5).

``localStorage`` is seeded before the page loads; notices are identified by
their ``data-code``, never by translated text.
"""

from __future__ import annotations

import json

import pytest

from tests.corrupt_values import BACKUP_PREFIX, CORRUPT_VALUES, GOOD, KEEPS_GOOD_THREAD, KEY, envelope, thread, turn


def notice_codes(agent) -> list[str]:
    return [n.get_attribute("data-code") for n in agent.testid("agent-notice").all()]


def backups(agent) -> dict[str, str]:
    return agent.page.evaluate(
        "prefix => Object.fromEntries(Object.keys(localStorage).filter(k => k.startsWith(prefix))"
        ".map(k => [k, localStorage.getItem(k)]))", BACKUP_PREFIX)


def message_texts(agent) -> list[str]:
    return [t.strip() for t in agent.messages().all_inner_texts()]


# Every value of CORRUPT_VALUES is unit-proven (tests/unit/test_store_corrupt_values.py); the page
# shows the whole chain in real localStorage for the one that needs Pyodide's own stack to read,
# and for one whose kept thread is drawn.
PAGE_CASES = ["nested-too-deep", "unknown-part-type"]


@pytest.mark.parametrize("case", PAGE_CASES)
def test_corrupt_value_is_backed_up_valid_parts_kept_and_one_notice_shown(agent, case):
    raw = CORRUPT_VALUES[case]
    agent.seed({KEY: raw})
    agent.open(course="intro-ml")
    assert notice_codes(agent) == ["storage-corrupt"]
    assert list(backups(agent).values()) == [raw]
    if case in KEEPS_GOOD_THREAD:
        shown = message_texts(agent)
        assert len(shown) == 2 and "good question" in shown[0] and "good answer" in shown[1]
    agent.send("after the repair")
    stored = agent.stored()
    assert stored["version"] == 1
    assert stored["state"]["threads"]["intro-ml"]["messages"][-2]["content"][0]["text"] == "after the repair"
    assert list(backups(agent).values()) == [raw]
    assert notice_codes(agent) == ["storage-corrupt"]


def test_newer_version_is_never_overwritten(agent):
    raw = envelope({"intro-ml": GOOD}, version=99)
    agent.seed({KEY: raw})
    agent.open(course="intro-ml")
    assert notice_codes(agent) == ["storage-newer-version"]
    agent.send("in memory only")
    assert agent.messages().count() >= 2
    assert agent.stored_raw() == raw


def test_version_0_value_is_migrated_and_written_back_once(agent):
    v0 = json.dumps({"state": {"threads": {"intro-ml": {"messages": [
        {"role": "user", "content": "旧的问题"}, {"role": "assistant", "content": "old answer"}]}}}, "version": 0},
        ensure_ascii=False)
    agent.seed({KEY: v0})
    agent.page.add_init_script(
        "(() => { const set = Storage.prototype.setItem; window.__writes = [];"
        " Storage.prototype.setItem = function (k, v) { window.__writes.push(k); return set.call(this, k, v); }; })()")
    agent.open(course="intro-ml")
    assert agent.page.evaluate("window.__writes.filter(k => k === 'maic-agent-threads').length") == 1
    stored = agent.stored()
    assert stored["version"] == 1
    assert stored["state"]["threads"]["intro-ml"] == {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "旧的问题"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]}], "updatedAt": 0}
    assert "旧的问题" in message_texts(agent)[0]
    assert notice_codes(agent) == []


FILL_JS = """([key, slack]) => {
  // Fill the origin's quota with pieces of 256 Ki units (key:1, key:2, ..., then key holds the
  // rest), so no attempt allocates more than a piece or two (a binary search over one value
  // allocated up to 12 M units a try, about 0.8 GB of strings in all, before the app started).
  const PIECE = 1 << 18;
  let n = 1;
  try { for (;;) { localStorage.setItem(key + ':' + n, 'x'.repeat(PIECE)); n++; } } catch (e) { /* full */ }
  let lo = 0, hi = PIECE;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    try { localStorage.setItem(key, 'x'.repeat(mid)); lo = mid; } catch (e) { hi = mid - 1; }
  }
  while (lo < slack && n > 1) { localStorage.removeItem(key + ':' + (--n)); lo += PIECE; }  // give back slack units
  localStorage.setItem(key, 'x'.repeat(Math.max(0, lo - slack)));
  return (n - 1) * PIECE + lo;
}"""

UNFILL_JS = """(key) => {
  for (const k of Object.keys(localStorage)) if (k === key || k.startsWith(key + ':')) localStorage.removeItem(k);
}"""


def test_quota_prunes_least_recently_updated_other_threads_until_the_turn_fits(agent):
    bulk = "填充" * 20_000
    others = {
        "oldest": thread(turn(bulk), 1_000), "middle": thread(turn(bulk), 2_000), "newest": thread(turn("small"), 3_000)}
    agent.seed({KEY: envelope(others)})
    agent.page.evaluate(FILL_JS, ["filler", 0])
    agent.open(course="intro-ml")
    agent.send("/regenerate scene-1 with lots of elements")
    threads = agent.stored()["state"]["threads"]
    assert "oldest" not in threads
    assert "intro-ml" in threads and "newest" in threads
    assert threads["newest"] == others["newest"]
    assert "storage-pruned" in notice_codes(agent)


def test_turn_that_cannot_fit_stays_in_memory_and_saving_resumes_when_space_frees(agent):
    before = envelope({"linear-algebra": GOOD})
    agent.seed({KEY: before})
    agent.page.evaluate(FILL_JS, ["filler", 0])
    agent.open(course="intro-ml")
    agent.send("/regenerate scene-2")
    assert agent.stored_raw() == before
    assert "storage-full" in notice_codes(agent)
    assert agent.testid("tool-card").get_attribute("data-status") == "ok"
    agent.page.evaluate(UNFILL_JS, "filler")
    agent.send("space is back")
    assert "storage-full" not in notice_codes(agent)
    threads = agent.stored()["state"]["threads"]
    assert threads["linear-algebra"] == GOOD
    assert [m["role"] for m in threads["intro-ml"]["messages"]] == ["user", "assistant", "user", "assistant"]


def test_unavailable_storage_runs_in_memory_and_says_so_once(agent):
    agent.page.add_init_script(
        "Object.defineProperty(window, 'localStorage', { configurable: true,"
        " get() { throw new DOMException('blocked', 'SecurityError'); } })")
    agent.open(course="intro-ml")
    assert notice_codes(agent) == ["storage-unavailable"]
    agent.send("first")
    agent.send("second")
    assert agent.messages().count() == 4
    assert notice_codes(agent) == ["storage-unavailable"]
    agent.testid("agent-notice-dismiss").click()
    assert notice_codes(agent) == []


def test_two_tabs_on_different_courses_keep_both_courses(agent, second_agent):
    agent.open(course="intro-ml")
    second_agent.open(course="linear-algebra")
    agent.send("tab one, turn one")
    second_agent.send("tab two, turn one")
    agent.send("tab one, turn two")
    second_agent.send("tab two, turn two")
    agent.reload()
    second_agent.reload()
    assert agent.messages().count() == 4
    assert second_agent.messages().count() == 4
    threads = agent.stored()["state"]["threads"]
    assert len(threads["intro-ml"]["messages"]) == 4 and len(threads["linear-algebra"]["messages"]) == 4


def test_idle_tab_on_the_same_course_shows_the_other_tabs_turn_without_reload(agent, second_agent):
    agent.open(course="intro-ml")
    second_agent.open(course="intro-ml")
    agent.send("written in tab one")
    second_agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    assert "written in tab one" in message_texts(second_agent)[0]


def test_reload_mid_stream_loses_only_the_in_flight_turn(agent):
    agent.open(course="intro-ml")
    agent.send("a finished turn")
    saved = agent.stored_raw()
    agent.open(course="intro-ml", delay=300)
    agent.send("interrupted by a reload", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.reload()
    assert agent.stored_raw() == saved
    assert agent.messages().count() == 2


def test_switching_course_mid_run_saves_the_reply_under_its_own_course(agent):
    other = thread(turn("untouched"), 1_234)
    agent.seed({KEY: envelope({"linear-algebra": other})})
    agent.open(course="intro-ml", delay=60)
    agent.send("a long answer please", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.page.select_option("[data-testid=course-select]", "linear-algebra")
    assert "untouched" in message_texts(agent)[0]
    agent.page.wait_for_function(
        "() => { const v = JSON.parse(localStorage.getItem('maic-agent-threads'));"
        " return v.state.threads['intro-ml'] && v.state.threads['intro-ml'].messages.length === 2; }",
        timeout=30_000)
    threads = agent.stored()["state"]["threads"]
    assert threads["linear-algebra"] == other
    assert threads["intro-ml"]["messages"][0]["content"][0]["text"] == "a long answer please"


def test_new_conversation_mid_run_discards_the_late_output(agent):
    agent.open(course="intro-ml", delay=80)
    agent.send("first turn, cancelled", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.testid("agent-new-conversation").click()
    agent.wait_idle()
    assert agent.messages().count() == 0
    agent.page.wait_for_timeout(1_500)  # longer than the cancelled reply would have taken
    assert agent.messages().count() == 0
    threads = (agent.stored() or {"state": {"threads": {}}})["state"]["threads"]
    assert "intro-ml" not in threads
    agent.open(course="intro-ml")
    agent.send("second turn")
    messages = agent.stored()["state"]["threads"]["intro-ml"]["messages"]
    assert [m["content"][0]["text"] for m in messages if m["role"] == "user"] == ["second turn"]


def test_reloads_before_boot_finishes_leave_the_stored_value_unchanged(agent):
    raw = envelope({"intro-ml": GOOD, "linear-algebra": thread(turn("另一个"), 5)})
    agent.seed({KEY: raw})
    for _ in range(3):
        agent.page.goto(agent.url(course="intro-ml"))
        agent.page.wait_for_timeout(300)
    agent.page.goto(agent.url(course="intro-ml"))
    agent.wait_ready()
    assert agent.stored_raw() == raw


HOSTILE = '<img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=2</script>'


def assert_inert(agent):
    assert agent.page.evaluate("window.__pwned === undefined")
    assert agent.dialogs == []
    assert agent.page.locator("img[src=x], #agent-messages script, [data-testid=stage-view] script").count() == 0


def test_hostile_text_in_messages_tool_names_results_and_course_ids_renders_as_text(agent):
    course = '<img src=x onerror="alert(1)">'
    tool = {"type": "tool-call", "toolCallId": "t1", "toolName": HOSTILE, "args": {"sceneId": HOSTILE},
            "result": {"content": [{"type": "text", "text": HOSTILE}],
                       "details": {"sceneId": HOSTILE, "content": {"elements": [{}]}, "actions": [{"type": HOSTILE}]}}}
    seeded = thread([{"role": "user", "content": [{"type": "text", "text": HOSTILE}]},
                     {"role": "assistant", "content": [tool, {"type": "text", "text": "go to javascript:alert(1)"}]}])
    agent.seed({KEY: envelope({course: seeded})})
    agent.open(course=course)
    agent.send(HOSTILE)
    assert HOSTILE in message_texts(agent)[0]
    assert agent.page.locator("a[href^='javascript']").count() == 0
    assert agent.testid("tool-card").first.get_attribute("data-element-count") == "1"
    assert_inert(agent)
    agent.reload()
    assert_inert(agent)


def test_chinese_and_emoji_are_stored_literally_and_round_trip(agent):
    text = "你好，世界！“引号” 🌏👩‍💻 café"
    agent.open(course="intro-ml")
    agent.send(text)
    raw = agent.stored_raw()
    assert text in raw and "\\u" not in raw
    agent.reload()
    assert message_texts(agent)[0] == text


def test_lone_surrogate_in_stored_text_does_not_break_saving(agent):
    raw = envelope({"intro-ml": thread(turn("broken \\ud800 half"))}).replace("\\\\ud800", "\\ud800")
    agent.seed({KEY: raw})
    agent.open(course="intro-ml")
    agent.send("still saving")
    stored_raw = agent.stored_raw()
    assert "\\ud800" in stored_raw
    messages = json.loads(stored_raw)["state"]["threads"]["intro-ml"]["messages"]
    assert messages[0]["content"][0]["text"] == "broken \ud800 half"
    assert messages[2]["content"][0]["text"] == "still saving"


UNUSUAL_COURSE_IDS = ["42", "__proto__", "课程·线性代数", "c" * 300]


def test_unusual_course_ids_work_and_stay_isolated(agent):
    """Each id comes through the URL to its own empty thread and is saved under its own key beside
    the others (one page per id; a store round trip of such ids is unit-proven, test_store.py)."""
    agent.open(course="intro-ml")
    agent.send("belongs to intro-ml")
    for course_id in UNUSUAL_COURSE_IDS:
        agent.open(course=course_id)
        assert agent.messages().count() == 0, course_id
        agent.send(f"belongs to {course_id[:20]}")
    agent.reload()
    assert f"belongs to {UNUSUAL_COURSE_IDS[-1][:20]}" in message_texts(agent)[0]
    threads = agent.stored()["state"]["threads"]
    assert set(threads) == {"intro-ml", *UNUSUAL_COURSE_IDS}
    for course_id in ["intro-ml", *UNUSUAL_COURSE_IDS]:
        assert threads[course_id]["messages"][0]["content"][0]["text"] == f"belongs to {course_id[:20]}", course_id
        assert len(threads[course_id]["messages"]) == 2, course_id


def test_two_tabs_sending_on_the_same_course_at_once_keep_both_turns(agent, second_agent):
    agent.open(course="intro-ml", delay=120)
    second_agent.open(course="intro-ml")
    agent.send("slow turn from tab one", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    second_agent.send("quick turn from tab two")
    agent.wait_idle()
    users = [m["content"][0]["text"] for m in agent.stored()["state"]["threads"]["intro-ml"]["messages"]
             if m["role"] == "user"]
    assert users == ["quick turn from tab two", "slow turn from tab one"]
    assert agent.messages().count() == 4
    second_agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 4")
