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


def version_0_value_is_migrated_and_written_back_once(agent, course: str) -> None:
    """Boots the page on ``course``, the only course of the version-0 value stored before it (the
    page's writes to localStorage counted from then on): test_llama_server's page is this boot."""
    v0 = json.dumps({"state": {"threads": {course: {"messages": [
        {"role": "user", "content": "旧的问题"}, {"role": "assistant", "content": "old answer"}]}}}, "version": 0},
        ensure_ascii=False)
    agent.seed({KEY: v0})
    agent.page.add_init_script(
        "(() => { const set = Storage.prototype.setItem; window.__writes = [];"
        " Storage.prototype.setItem = function (k, v) { window.__writes.push(k); return set.call(this, k, v); }; })()")
    agent.open(course=course)
    assert agent.page.evaluate("window.__writes.filter(k => k === 'maic-agent-threads').length") == 1
    stored = agent.stored()
    assert stored["version"] == 1
    assert stored["state"]["threads"][course] == {"messages": [
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


def quota_prunes_least_recently_updated_other_threads_until_the_turn_fits(agent, writer, course: str) -> None:
    """In a booted page with no turn in ``course`` (a course of its own) and no filler stored: another
    tab (``writer``, a page of this origin that is not the app) adds three older courses to the stored
    value, two of them bulky; the quota is then filled to the brim, and ``course``'s turn fits once the
    least recently updated one is pruned. The filler is removed at the end. (It runs in
    test_hardening's full-quota page, after that test's own cases.)"""
    bulk = "填充" * 20_000
    others = {
        "oldest": thread(turn(bulk), 1_000), "middle": thread(turn(bulk), 2_000), "newest": thread(turn("small"), 3_000)}
    value = json.loads(agent.stored_raw())
    value["state"]["threads"] = {**others, **value["state"]["threads"]}
    writer.evaluate("([key, value]) => localStorage.setItem(key, value)",
                    [KEY, json.dumps(value, ensure_ascii=False, separators=(",", ":"))])
    agent.page.evaluate(FILL_JS, ["filler", 0])
    switch_course(agent, course)
    agent.send("/regenerate scene-1 with lots of elements")
    threads = agent.stored()["state"]["threads"]
    assert "oldest" not in threads
    assert course in threads and "newest" in threads
    assert threads["newest"] == others["newest"]
    assert "storage-pruned" in notice_codes(agent)
    agent.page.evaluate(UNFILL_JS, "filler")


def turn_that_cannot_fit_stays_in_memory_and_saving_resumes_when_space_frees(agent, course: str, other: str) -> None:
    """In a booted page whose stored value holds one small course, ``other`` (too small for pruning it
    to make room), and no notice: the quota is filled to the brim, then ``course``, a course of its own
    with no turn yet, gets a turn that cannot fit; it stays in memory, and saving resumes once space
    frees. (It runs in test_hardening's full-quota page, after that test's own cases.)"""
    switch_course(agent, course)
    agent.page.evaluate(FILL_JS, ["filler", 0])
    before = agent.stored_raw()
    kept = json.loads(before)["state"]["threads"][other]
    agent.send("/regenerate scene-2")
    assert agent.stored_raw() == before
    assert "storage-full-kept" in notice_codes(agent)  # history recorded the turn
    assert agent.testid("tool-card").get_attribute("data-status") == "ok"
    agent.page.evaluate(UNFILL_JS, "filler")
    agent.send("space is back")
    assert not {"storage-full", "storage-full-kept"} & set(notice_codes(agent))
    threads = agent.stored()["state"]["threads"]
    assert threads[other] == kept
    assert [m["role"] for m in threads[course]["messages"]] == ["user", "assistant", "user", "assistant"]


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


# Cases that need no boot of their own run in one booted page, each in its own course: the page
# switches course the way Back/Forward does (``_on_popstate``, no boot). The URL keeps its other
# parameters, so a reload boots with the same ``delay`` (read only at boot).
SWITCH_JS = """id => {
  const url = new URL(location.href);
  url.searchParams.set('course', id);
  history.pushState({}, '', url.href);
  dispatchEvent(new PopStateEvent('popstate'));
}"""


def switch_course(agent, course_id: str) -> None:
    agent.page.evaluate(SWITCH_JS, course_id)
    assert agent.testid("course-select").input_value() == course_id, f"the page did not switch to {course_id[:40]!r}"


def wait_running(agent) -> None:
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")


def wait_message_count(agent, n: int) -> None:
    agent.page.wait_for_function(f"() => document.querySelectorAll('[data-testid=agent-message]').length === {n}")


def user_texts(stored_thread: dict) -> list[str]:
    return [m["content"][0]["text"] for m in stored_thread["messages"] if m["role"] == "user"]


def test_two_tabs_and_runs_cut_short_keep_every_finished_turn(agent, second_agent):
    """Two tabs, then one, each case in its own course (tab one is booted by test_startup's click-at-ready
    case, four boots at delay 150 on a course of its own, linear-algebra stored beside it; then the
    second tab's boot): an idle tab shows the other tab's turn without reload; two tabs sending on one
    course at once keep both turns; two tabs on different courses keep both courses; a new
    conversation mid-run discards the late output; switching course mid-run saves the reply under its
    own course; Chinese and emoji are stored literally; a reload mid-stream loses only the in-flight
    turn (the click-at-ready case's own reload mid-reply, after its first boot and these cases). The
    page reloaded (that case's three reloads) then shows what every case saved (each course switched
    to in the reloaded page)."""
    from tests.e2e.test_core import case
    from tests.e2e.test_startup import (
        a_click_and_a_turn_at_ready_are_not_lost_then_a_reload_mid_reply_gives_the_message_back_as_a_draft as at_ready)

    other = thread(turn("untouched"), 1_234)
    at_ready_name = "a click and a turn at ready are not lost, a reload mid-reply gives the message back (test_startup)"
    at_ready_steps = at_ready(agent, "s-at-ready", {"linear-algebra": other})
    # tab one streams slowly (delay 150): the races act while its turn runs
    with case(at_ready_name):
        next(at_ready_steps)  # its first boot: the page is ready
    switch_course(agent, "intro-ml")
    second_agent.open(course="intro-ml")

    # 1. An idle tab on the same course shows the other tab's turn without reload.
    agent.send("written in tab one")
    wait_message_count(second_agent, 2)
    assert "written in tab one" in message_texts(second_agent)[0], "idle tab"

    # 2. Two tabs sending on the same course at once keep both turns.
    switch_course(agent, "poetry-tang")
    switch_course(second_agent, "poetry-tang")
    agent.send("slow turn from tab one", wait=False)
    wait_running(agent)
    second_agent.send("quick turn from tab two")
    agent.wait_idle()
    users = user_texts(agent.stored()["state"]["threads"]["poetry-tang"])
    assert users == ["quick turn from tab two", "slow turn from tab one"], "same course at once"
    assert agent.messages().count() == 4, "same course at once"
    wait_message_count(second_agent, 4)

    # 3. Two tabs on different courses keep both courses (shown again after the reload, step 8).
    switch_course(agent, "tab-one-course")
    switch_course(second_agent, "tab-two-course")
    agent.send("tab one, turn one")
    second_agent.send("tab two, turn one")
    agent.send("tab one, turn two")
    second_agent.send("tab two, turn two")
    threads = agent.stored()["state"]["threads"]
    assert len(threads["tab-one-course"]["messages"]) == 4, "different courses"
    assert len(threads["tab-two-course"]["messages"]) == 4, "different courses"
    second_agent.page.close()  # the rest is one tab's: no other writer

    # 4. A new conversation mid-run discards the late output.
    switch_course(agent, "cancelled-run")
    agent.send("first turn, cancelled", wait=False)
    wait_running(agent)
    agent.testid("agent-new-conversation").click()
    agent.wait_idle()
    assert agent.messages().count() == 0, "new conversation mid-run"
    agent.page.wait_for_timeout(1_500)  # the cancelled reply's tokens would have kept coming
    assert agent.messages().count() == 0, "new conversation mid-run: late output shown"
    assert "cancelled-run" not in agent.stored()["state"]["threads"], "new conversation mid-run: late output saved"
    agent.send("second turn")
    assert user_texts(agent.stored()["state"]["threads"]["cancelled-run"]) == ["second turn"], "new conversation mid-run"

    # 5. Switching course mid-run saves the reply under its own course.
    switch_course(agent, "switched-away")
    agent.send("a long answer please", wait=False)
    wait_running(agent)
    agent.page.select_option("[data-testid=course-select]", "linear-algebra")
    assert "untouched" in message_texts(agent)[0], "switching mid-run"
    agent.page.wait_for_function(
        "() => { const v = JSON.parse(localStorage.getItem('maic-agent-threads'));"
        " return v.state.threads['switched-away'] && v.state.threads['switched-away'].messages.length === 2; }",
        timeout=30_000)
    threads = agent.stored()["state"]["threads"]
    assert threads["linear-algebra"] == other, "switching mid-run"
    assert threads["switched-away"]["messages"][0]["content"][0]["text"] == "a long answer please", "switching mid-run"
    agent.wait_idle()

    # 6. Chinese and emoji are stored literally (and round-trip: step 8).
    text = "你好，世界！“引号” 🌏👩‍💻 café"
    switch_course(agent, "chinese-text")
    agent.send(text)
    raw = agent.stored_raw()
    assert text in raw and "\\u" not in raw, "Chinese and emoji"

    # 7. A reload mid-stream loses only the in-flight turn: the click-at-ready case's turn in flight
    #    in its own course, a finished turn stored in another.
    switch_course(agent, "reloaded-mid-stream")
    agent.send("a finished turn")
    switch_course(agent, "s-at-ready")
    saved, shown = agent.stored_raw(), agent.messages().count()
    with case(at_ready_name):
        next(at_ready_steps)  # its turn in flight, the page reloaded
    assert agent.stored_raw() == saved, "reload mid-stream"
    assert agent.messages().count() == shown, "reload mid-stream"
    with case(at_ready_name):
        assert next(at_ready_steps, "ended") == "ended"  # the rest of it, two more reloads

    # 8. The reloaded page shows what each case saved.
    for course_id, count in (("reloaded-mid-stream", 2), ("poetry-tang", 4), ("tab-one-course", 4),
                             ("tab-two-course", 4), ("cancelled-run", 2)):
        switch_course(agent, course_id)
        assert agent.messages().count() == count, f"after the reload: {course_id}"
    assert "second turn" in message_texts(agent)[0], "after the reload: cancelled-run"
    switch_course(agent, "chinese-text")
    assert message_texts(agent)[0] == text, "after the reload: Chinese and emoji"


HOSTILE = '<img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=2</script>'
HOSTILE_COURSE = '<img src=x onerror="alert(1)">'
UNUSUAL_COURSE_IDS = ["42", "__proto__", "课程·线性代数", "c" * 300]

PAINT_RECORD_JS = """async id => {
  const url = new URL('paint/' + encodeURIComponent(id), document.baseURI).href;
  return !!(await (await caches.open('agentbar.paint')).match(url));
}"""


def assert_inert(agent):
    assert agent.page.evaluate("window.__pwned === undefined")
    assert agent.dialogs == []
    assert agent.page.locator("img[src=x], #agent-messages script, [data-testid=stage-view] script").count() == 0


def assert_hostile_thread_shown_as_text(agent, when: str):
    assert HOSTILE in message_texts(agent)[0], when
    assert agent.page.locator("a[href^='javascript']").count() == 0, when
    assert agent.testid("tool-card").first.get_attribute("data-element-count") == "1", when
    assert_inert(agent)


def test_boots_cut_short_then_unusual_and_hostile_course_ids_from_the_url_stay_isolated_and_inert(agent):
    """Reloads before boot finishes leave the stored value unchanged (three boots cut short, then
    the first id's boot finishes). Then each unusual course id, and a hostile one, comes through
    the URL at boot (one boot per id, 5 in all): a fresh id to its own empty thread, saved under
    its own key beside the others (a store round trip of such ids is unit-proven, test_store.py).
    Hostile text in messages, tool names, results and the course id renders as text, shown by
    Python and, at the hostile course's boot, by the paint record. A lone surrogate in stored text
    does not break saving."""
    tool = {"type": "tool-call", "toolCallId": "t1", "toolName": HOSTILE, "args": {"sceneId": HOSTILE},
            "result": {"content": [{"type": "text", "text": HOSTILE}],
                       "details": {"sceneId": HOSTILE, "content": {"elements": [{}]}, "actions": [{"type": HOSTILE}]}}}
    hostile = thread([{"role": "user", "content": [{"type": "text", "text": HOSTILE}]},
                      {"role": "assistant", "content": [tool, {"type": "text", "text": "go to javascript:alert(1)"}]}])
    surrogate = thread(turn("broken \\ud800 half"))
    raw = envelope({HOSTILE_COURSE: hostile, "intro-ml": surrogate, "linear-algebra": thread(turn("另一个"), 5)}
                   ).replace("\\\\ud800", "\\ud800")
    agent.seed({KEY: raw})

    # 0. Reloads before boot finishes leave the stored value unchanged: three boots cut short (on a
    #    course with a stored thread), then the first id's boot finishes and the value is as seeded.
    for _ in range(3):
        agent.page.goto(agent.url(course="intro-ml"))
        agent.page.wait_for_timeout(300)

    def fresh_id_shown_empty_then_saved(course_id: str) -> None:
        assert agent.messages().count() == 0, f"{course_id[:40]!r} shows another course's thread"
        agent.send(f"belongs to {course_id[:20]}")

    # 1. The first id's boot: the boot that finishes after those cut short; in its page, seeded threads.
    agent.open(course=UNUSUAL_COURSE_IDS[0])
    assert agent.stored_raw() == raw, "reloads before boot finished changed the stored value"
    fresh_id_shown_empty_then_saved(UNUSUAL_COURSE_IDS[0])

    # A lone surrogate in stored text does not break saving.
    switch_course(agent, "intro-ml")
    agent.send("still saving")
    stored_raw = agent.stored_raw()
    assert "\\ud800" in stored_raw, "lone surrogate"
    messages = json.loads(stored_raw)["state"]["threads"]["intro-ml"]["messages"]
    assert messages[0]["content"][0]["text"] == "broken \ud800 half", "lone surrogate"
    assert messages[2]["content"][0]["text"] == "still saving", "lone surrogate"

    # Hostile text shown by Python; a turn on the hostile course writes its paint record.
    switch_course(agent, HOSTILE_COURSE)
    agent.send(HOSTILE)
    assert_hostile_thread_shown_as_text(agent, "hostile, switched to")
    agent.page.wait_for_function(PAINT_RECORD_JS, arg=HOSTILE_COURSE)

    # 2. Every other unusual id's boot.
    for course_id in UNUSUAL_COURSE_IDS[1:]:
        agent.open(course=course_id)
        fresh_id_shown_empty_then_saved(course_id)

    # 3. The hostile course's boot: its paint record is drawn, then Python renders; all inert.
    agent.open(course=HOSTILE_COURSE)
    assert agent.page.evaluate("() => document.documentElement.dataset.painted") == "true", "hostile paint record"
    assert_hostile_thread_shown_as_text(agent, "hostile, at boot")

    # 4. What each id saved, read back in this page.
    switch_course(agent, UNUSUAL_COURSE_IDS[-1])
    assert f"belongs to {UNUSUAL_COURSE_IDS[-1][:20]}" in message_texts(agent)[0]
    threads = agent.stored()["state"]["threads"]
    assert set(threads) == {"intro-ml", "linear-algebra", HOSTILE_COURSE, *UNUSUAL_COURSE_IDS}
    for course_id in UNUSUAL_COURSE_IDS:
        assert threads[course_id]["messages"][0]["content"][0]["text"] == f"belongs to {course_id[:20]}", course_id
        assert len(threads[course_id]["messages"]) == 2, course_id
    assert threads["intro-ml"]["messages"][0]["content"][0]["text"] == "broken \ud800 half", "lone surrogate, kept"
