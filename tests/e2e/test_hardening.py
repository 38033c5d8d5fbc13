"""Second hardening round, in Chromium: DESIGN.md §5 (storage, tabs, unique ids), §4 (stopped
replies), the composer and commands, and §3 (what the TS original writes).

Data-loss paths first: a thread kept in memory must not cost another course's
stored thread, and another tab's damaged write must not wipe this tab's turns.
Notices are identified by ``data-code``, never by translated text.
"""

from __future__ import annotations

import json

from app.courses import find_course
from tests.e2e.test_core import case, switch_course
from tests.e2e.test_snapshot import a_missing_damaged_or_refused_snapshot_leaves_a_normal_start
from tests.e2e.test_resilience import (
    BACKUP_PREFIX, FILL_JS, KEY, backups, envelope, message_texts, notice_codes,
    quota_prunes_least_recently_updated_other_threads_until_the_turn_fits, thread, turn,
    turn_that_cannot_fit_stays_in_memory_and_saving_resumes_when_space_frees)

RUNNING = "() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'"


def user_texts(agent, stage_id: str) -> list[str]:
    threads = (agent.stored() or {"state": {"threads": {}}})["state"]["threads"]
    return [m["content"][0]["text"] for m in threads.get(stage_id, {}).get("messages", []) if m["role"] == "user"]


# --- a thread kept in memory never costs a stored one (DESIGN.md §5) -----------------------------


FULL = "linear-algebra"  # the course whose fifth turn does not fit (a demo course, so the picker lists it)
KEPT = "poetry-tang"  # the course whose turn fits beside it (a demo course too)


def full_quota_threads() -> dict[str, dict]:
    """Course id → stored thread the full-quota case needs in the stored value at boot: ``FULL``'s
    four turns and ``KEPT``'s one, least recently updated."""
    eight = [m for i in range(4) for m in turn(f"full question {i}", f"full answer {i}")]
    return {KEPT: thread(turn("intro question"), 1_000), FULL: thread(eight, 2_000)}


def a_turn_kept_in_memory_never_makes_another_courses_save_drop_its_stored_thread(agent) -> None:
    """In a page booted with ``full_quota_threads()`` stored (beside others) and the quota nearly full
    (``FILL_JS`` leaving 3,000 units), no notice shown: ``FULL``'s fifth turn, far too big, is kept in
    memory; ``KEPT``'s turn is then saved without dropping ``FULL``'s stored thread; New conversation
    on ``FULL`` ends it all (``FULL`` no longer stored, no notice)."""
    seeded = full_quota_threads()
    agent.page.select_option("[data-testid=course-select]", FULL)
    assert agent.messages().count() == 8
    before = agent.stored()["state"]["threads"]
    assert {k: before[k] for k in seeded} == seeded
    agent.send("\n".join(["a long line of the fifth turn, far too big for what is left"] * 200))
    assert notice_codes(agent) == ["storage-full-kept"]  # not stored here, but history recorded the turn
    assert agent.stored()["state"]["threads"] == before  # nothing stored, nothing pruned
    agent.page.select_option("[data-testid=course-select]", KEPT)
    [kept_notice] = agent.testid("agent-notice").all()
    # it names its course by its title, in a run of its own
    assert kept_notice.locator("[data-testid=agent-notice-key]").inner_text() == find_course(FULL).title
    agent.send("hi")
    threads = agent.stored()["state"]["threads"]
    assert threads[FULL] == seeded[FULL]
    assert [m["content"][0]["text"] for m in threads[KEPT]["messages"] if m["role"] == "user"] == [
        "intro question", "hi"]
    assert notice_codes(agent) == ["storage-full-kept"]  # still true for 'full', and nothing was pruned
    assert {k: v for k, v in threads.items() if k != KEPT} == {k: v for k, v in before.items() if k != KEPT}
    agent.page.select_option("[data-testid=course-select]", FULL)
    assert agent.messages().count() == 10
    agent.testid("agent-new-conversation").click()
    agent.page.wait_for_function("() => !document.querySelector('[data-testid=agent-notice]')")
    assert notice_codes(agent) == []
    assert FULL not in agent.stored()["state"]["threads"]


# --- another tab's writes: its damaged write keeps this tab's turns (DESIGN.md §5) ----------------


def other_tab(second_agent):
    """A second tab on this origin that is not the app (so no boot): what it writes to localStorage
    reaches the app as the same ``storage`` event another app tab's write would (app.browser.signals
    reads only the event's key)."""
    second_agent.page.goto(f"{second_agent.base_url}static/icons/agentbar.svg")
    return second_agent.page


# --- ids unique across courses (DESIGN.md §5) -----------------------------------------------------


def scene_version(agent, scene_id: str) -> str | None:
    """The regenerate call whose in-memory snapshot marks the scene (``data-regenerated-by``)."""
    return agent.page.locator(f"[data-testid=scene][data-scene-id={scene_id}]").get_attribute("data-regenerated-by")


def restore_undoes_only_its_own_courses_scene(agent) -> None:
    agent.page.select_option("[data-testid=course-select]", "linear-algebra")
    agent.send("/regenerate scene-1")
    algebra_call = agent.testid("tool-card").get_attribute("data-tool-call-id")
    agent.page.select_option("[data-testid=course-select]", "poetry-tang")
    agent.send("/regenerate scene-1")
    poetry_call = agent.testid("tool-card").get_attribute("data-tool-call-id")
    assert algebra_call != poetry_call
    agent.page.select_option("[data-testid=course-select]", "linear-algebra")
    assert scene_version(agent, "scene-1") == algebra_call
    agent.testid("tool-card-restore").click()
    agent.page.wait_for_function(
        "() => !document.querySelector('[data-testid=scene][data-scene-id=scene-1]').hasAttribute('data-regenerated-by')")
    agent.page.select_option("[data-testid=course-select]", "poetry-tang")
    assert scene_version(agent, "scene-1") == poetry_call
    assert agent.testid("tool-card-restore").count() == 1


# --- indentation, commands after any whitespace -----------------------------------------------------


def composer_keeps_the_first_lines_indentation(agent) -> None:
    switch_course(agent, "hardening-indent")
    agent.send("\n\n    def f():\n        return 1\n\n")
    assert user_texts(agent, "hardening-indent") == ["    def f():\n        return 1"]


def commands_followed_by_ideographic_space_tab_or_newline_are_tool_calls(agent) -> None:
    switch_course(agent, "hardening-commands")
    for gap in ("\u3000", "\t", "\n"):
        agent.send(f"/regenerate{gap}scene-2")
    agent.send("/fail\u3000scene-3")
    statuses = [c.get_attribute("data-status") for c in agent.testid("tool-card").all()]
    assert statuses == ["ok", "ok", "ok", "error"]


# --- DESIGN.md §3, last two rules: what the TS original writes reads without a false alarm -------------


def ts_original_value() -> str:
    call = {"type": "tool-call", "toolCallId": "ts-1", "toolName": "regenerate_scene", "args": {"sceneId": "scene-1"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "/regenerate scene-1"}]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
        {"role": "assistant", "content": [{**call, "toolCallId": "ts-2", "result": {"content": [
            {"type": "text", "text": "Regenerated"}]}}]},
        {"role": "assistant", "content": [{**call, "toolCallId": "ts-3", "result": {"details": {
            "sceneId": "scene-1", "content": {"elements": [{}, {}]}}}}]},
    ]
    return json.dumps({"state": {"threads": {"intro-ml": {"messages": messages, "updatedAt": 1_780_000_000_000}}},
                      "version": 1}, ensure_ascii=False, separators=(",", ":"))


def value_the_ts_original_writes_starts_with_no_notice_no_backup_and_unchanged_bytes(agent, raw: str) -> None:
    assert notice_codes(agent) == []
    assert agent.page.evaluate(
        "prefix => Object.keys(localStorage).filter(k => k.startsWith(prefix)).length", BACKUP_PREFIX) == 0
    assert agent.stored_raw() == raw
    statuses = [c.get_attribute("data-status") for c in agent.testid("tool-card").all()]
    assert statuses == ["interrupted", "ok", "ok"]
    assert agent.testid("tool-card").nth(2).get_attribute("data-element-count") == "2"


STREAMING = "hardening-streaming"  # the course of the mid-stream damaged write


def earlier_turn_is_sent(agent) -> None:
    switch_course(agent, STREAMING)
    agent.send("/regenerate scene-1")


def another_tabs_damaged_write_while_this_tab_streams_keeps_its_earlier_turns(agent, second_agent) -> None:
    writer = other_tab(second_agent)  # ready first: the write below must land mid-stream
    agent.send("streaming turn", wait=False)
    agent.page.wait_for_function(RUNNING)
    writer.evaluate("key => localStorage.setItem(key, '{\"state\":{\"threads\":{\"%s\":7}}}')" % STREAMING, KEY)
    assert agent.page.evaluate(RUNNING), "the damaged write must land while the reply streams"
    agent.wait_idle()
    assert user_texts(agent, STREAMING) == ["/regenerate scene-1", "streaming turn"]
    assert agent.messages().count() == 4
    assert len(backups(agent)) == 1


# --- stopped replies (DESIGN.md §4) -----------------------------------------------------------------


def reply_is_stopped_before_any_output(agent) -> None:
    switch_course(agent, "hardening-stop-at-once")
    agent.send("stop me at once", wait=False)
    agent.page.wait_for_function(RUNNING)
    agent.testid("agent-stop").click()
    agent.wait_idle()


def reply_stopped_before_any_output_survives_reload_as_stopped(agent) -> None:
    switch_course(agent, "hardening-stop-at-once")
    roles = [m.get_attribute("data-role") for m in agent.messages().all()]
    assert roles == ["user", "assistant"]
    assert agent.messages().nth(1).locator("[data-testid=agent-stopped]").count() == 1
    agent.send("next turn")
    roles = [m.get_attribute("data-role") for m in agent.messages().all()]
    assert roles == ["user", "assistant", "user", "assistant"]


def reply_is_stopped_part_way(agent) -> str:
    switch_course(agent, "hardening-stop-part-way")
    agent.send("a reply to cut short", wait=False)
    agent.page.wait_for_function(
        "() => { const m = document.querySelectorAll('[data-testid=agent-message]');"
        " return m.length === 2 && m[1].textContent.length > 12; }")
    agent.testid("agent-stop").click()
    agent.wait_idle()
    return message_texts(agent)[1]


def partly_stopped_reply_says_it_was_stopped_after_reload(agent, partial: str) -> None:
    switch_course(agent, "hardening-stop-part-way")
    reply = agent.messages().nth(1)
    assert reply.locator("[data-testid=agent-stopped]").count() == 1
    assert reply.inner_text().startswith(partial.splitlines()[0])


def escape_before_the_first_token_shows_a_stopped_reply(agent) -> None:
    switch_course(agent, "hardening-escape-at-once")
    agent.send("stop me", wait=False)
    agent.page.keyboard.press("Escape")
    agent.wait_idle()
    reply = agent.messages().nth(1)
    assert reply.get_attribute("data-status") == "incomplete"
    assert reply.inner_text().strip()


def test_ts_originals_value_restore_indentation_commands_stopped_replies_then_a_damaged_write_mid_stream(
        agent, second_agent):
    """Two boots. The seeded value is read at the first (intro-ml), a slow one (2 s a token: the first
    stop lands before any output; Escape before the first token shows a stopped reply too); both stops
    run after it, each in a course of its own. A second boot (250 ms a token, on the mid-stream case's
    course) reads both stopped replies back; the other cases run after it in courses of their own, up
    to the earlier turn of the mid-stream case, which then streams while another tab's damaged write
    lands."""
    raw = ts_original_value()
    agent.seed({KEY: raw})
    agent.open(course="intro-ml", delay=2_000)
    with case("the TS original's value"):
        value_the_ts_original_writes_starts_with_no_notice_no_backup_and_unchanged_bytes(agent, raw)
    with case("Escape before the first token"):
        escape_before_the_first_token_shows_a_stopped_reply(agent)
    with case("stopped before any output"):
        reply_is_stopped_before_any_output(agent)
    with case("stopped part way"):
        partial = reply_is_stopped_part_way(agent)
    agent.open(course=STREAMING, delay=250)
    with case("stopped before any output"):
        reply_stopped_before_any_output_survives_reload_as_stopped(agent)
    with case("stopped part way"):
        partly_stopped_reply_says_it_was_stopped_after_reload(agent, partial)
    with case("restore undoes only its own course's scene (ids unique across courses)"):
        restore_undoes_only_its_own_courses_scene(agent)
    with case("composer keeps indentation"):
        composer_keeps_the_first_lines_indentation(agent)
    with case("commands after any whitespace"):
        commands_followed_by_ideographic_space_tab_or_newline_are_tool_calls(agent)
    with case("another tab's damaged write mid-stream"):  # last: the damaged value replaces every course's
        earlier_turn_is_sent(agent)
        another_tabs_damaged_write_while_this_tab_streams_keeps_its_earlier_turns(agent, second_agent)


# --- no long task on a save: the first save splices, another tab's save is read as a change -------

COUNT_BRIDGE = """() => {
  const b = window.agentbarStorage;
  window.__calls = [];
  for (const name of ["get", "set", "splice", "readChanges"]) {
    const f = b[name];
    b[name] = function (...args) { const r = f.apply(this, args); window.__calls.push([name, JSON.stringify(r).slice(0, 20)]); return r; };
  }
}"""


def bridge_calls(agent) -> list[str]:
    calls = agent.page.evaluate("() => window.__calls.splice(0)")
    return [name for name, _ in calls]


def first_save_splices_and_another_tabs_save_is_read_as_a_change(agent, second_agent) -> None:
    emoji = "😀👩‍💻“引号”𝒳"
    seeded = {"a-course": thread(turn(f"first {emoji}"), 1), "intro-ml": thread(turn(f"mine {emoji}"), 2),
              "z-course": thread(turn(f"last {emoji}"), 3)}
    raw = envelope(seeded)
    agent.seed({KEY: raw})
    agent.open(course="intro-ml")
    agent.page.evaluate(COUNT_BRIDGE)
    agent.send(f"a new turn {emoji}")
    assert "splice" in bridge_calls(agent)
    stored_raw = agent.stored_raw()
    assert stored_raw.startswith(raw[: raw.index('"intro-ml"')])
    assert stored_raw.endswith(raw[raw.index(',"z-course"'):])
    # the other tab's boots: test_snapshot's five (on a course of its own), the last one left ready
    with case("a missing, damaged or refused snapshot leaves a normal start (test_snapshot; the other tab's boots)"):
        a_missing_damaged_or_refused_snapshot_leaves_a_normal_start(second_agent, "s-snapshot")
    switch_course(second_agent, "z-course")
    read = "() => window.__calls.filter(([name]) => name === 'readChanges').length"
    before = agent.page.evaluate(read)  # the other tab's snapshot turns were read as changes too
    second_agent.send(f"from the other tab {emoji}")
    agent.page.wait_for_function(f"() => ({read})() > {before}")
    calls = bridge_calls(agent)
    assert "get" not in calls and "set" not in calls
    agent.send(f"after the other tab {emoji}")
    assert bridge_calls(agent).count("splice") == 1
    threads = agent.stored()["state"]["threads"]
    assert [m["content"][0]["text"] for m in threads["z-course"]["messages"] if m["role"] == "user"] == [
        f"last {emoji}", f"from the other tab {emoji}"]
    assert [m["content"][0]["text"] for m in threads["intro-ml"]["messages"] if m["role"] == "user"] == [
        f"mine {emoji}", f"a new turn {emoji}", f"after the other tab {emoji}"]
    assert threads["a-course"] == seeded["a-course"]
    # the reload boots with the full-quota case's threads beside these, and the quota nearly full
    value = agent.stored()
    value["state"]["threads"].update(full_quota_threads())
    agent.page.evaluate("([key, value]) => localStorage.setItem(key, value)",
                        [KEY, json.dumps(value, ensure_ascii=False, separators=(",", ":"))])
    agent.page.evaluate(FILL_JS, ["filler", 3_000])  # room for a small turn, not for a big one
    agent.reload()
    assert agent.messages().count() == 6 and notice_codes(agent) == []


def another_tabs_clear_of_storage_is_followed(agent, second_agent) -> None:
    switch_course(agent, "hardening-cleared")
    agent.send("a turn")
    second_agent.page.evaluate("() => localStorage.clear()")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 0")
    assert notice_codes(agent) == []
    assert agent.stored_raw() is None


def another_tabs_damaged_write_keeps_this_tabs_turns_and_the_next_save_writes_them_back(agent, second_agent) -> None:
    switch_course(agent, "hardening-damaged")
    agent.send("first turn")
    agent.send("second turn")
    second_agent.page.evaluate("key => localStorage.setItem(key, 'garbage{')", KEY)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-notice]')")
    assert notice_codes(agent) == ["storage-corrupt"]
    assert agent.messages().count() == 4
    agent.send("third turn")
    assert user_texts(agent, "hardening-damaged") == ["first turn", "second turn", "third turn"]
    assert list(backups(agent).values()) == ["garbage{"]
    assert notice_codes(agent) == ["storage-corrupt"]


def test_another_tabs_save_clear_and_damaged_write_and_a_turn_kept_in_memory_in_a_full_quota(agent, second_agent):
    """Two app tabs (this one booted once and reloaded once, the other booted by test_snapshot's five
    snapshot cases). The splice case needs the seeded value at boot; the full-quota case's threads
    and filler are stored before the reload (the quota nearly full at that boot). Then, each in a
    course of its own: the clear (which takes the filler too), test_resilience's turn that cannot fit
    (the stored value then holds one small course, no notice), the damaged write, and last
    test_resilience's pruning (its notice stays)."""
    with case("first save splices, another tab's save is read as a change"):
        first_save_splices_and_another_tabs_save_is_read_as_a_change(agent, second_agent)
    with case("a turn kept in memory never makes another course's save drop its stored thread"):
        a_turn_kept_in_memory_never_makes_another_courses_save_drop_its_stored_thread(agent)
    with case("another tab's clear of storage"):
        another_tabs_clear_of_storage_is_followed(agent, second_agent)
    with case("a turn that cannot fit stays in memory and saving resumes when space frees"):
        switch_course(agent, KEPT)
        agent.send("hi")  # the stored value holds this one small course, too small for pruning it to make room
        turn_that_cannot_fit_stays_in_memory_and_saving_resumes_when_space_frees(agent, "r-cannot-fit", KEPT)
    with case("another tab's damaged write"):
        another_tabs_damaged_write_keeps_this_tabs_turns_and_the_next_save_writes_them_back(agent, second_agent)
    with case("quota prunes least recently updated other threads until the turn fits"):
        quota_prunes_least_recently_updated_other_threads_until_the_turn_fits(agent, other_tab(second_agent), "r-prune")
