"""Ways out of storage trouble in Chromium (DESIGN.md §5): the download that ends read-only, a
backup made once, a newer version from another tab, a course another tab pruned.

Notices are found by ``data-code``, actions by ``data-testid``, never by translated text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.test_history import case, show_course
from tests.e2e.test_resilience import (
    FILL_JS, KEY, UNFILL_JS, backups, envelope, message_texts, notice_codes, thread, turn)


def user_texts(agent, stage_id: str) -> list[str]:
    threads = (agent.stored() or {"state": {"threads": {}}})["state"]["threads"]
    return [m["content"][0]["text"] for m in threads.get(stage_id, {}).get("messages", []) if m["role"] == "user"]


def wait_notice(agent, code: str) -> None:
    agent.page.wait_for_function(
        "code => document.querySelector(`[data-testid=agent-notice][data-code=${code}]`)", arg=code)


def test_a_damaged_value_too_big_to_back_up_is_downloaded_by_the_user_and_saving_resumes(agent):
    # One extra key in `state` (about 3 M characters): damaged, and no second copy fits the quota.
    raw = json.dumps({"state": {"threads": {"intro-ml": thread(turn("kept question", "kept answer"))},
                                "extra": "x" * 3_000_000}, "version": 1}, separators=(",", ":"))
    agent.seed({KEY: raw})
    agent.open(course="intro-ml")
    assert notice_codes(agent) == ["storage-read-only"]
    assert backups(agent) == {}
    agent.send("a turn while read-only")
    assert agent.stored_raw() == raw  # never overwritten while it is kept nowhere
    action = agent.testid("agent-notice-action")
    expect(action).to_have_accessible_name(re.compile(r"\S"))
    agent.assert_accessible("read-only notice with its action")
    with agent.page.expect_download() as download:
        action.focus()
        agent.page.keyboard.press("Enter")
    assert Path(download.value.path()).read_text() == raw
    assert re.fullmatch(re.escape(KEY) + r"\.backup\.\d+\.txt", download.value.suggested_filename)
    assert notice_codes(agent) == ["storage-exported"]
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "agent-input"
    threads = agent.stored()["state"]["threads"]
    assert [m["content"][0]["text"] for m in threads["intro-ml"]["messages"] if m["role"] == "user"] == [
        "kept question", "a turn while read-only"]
    agent.reload()
    assert notice_codes(agent) == []  # fixed for good: the next load is clean
    assert "a turn while read-only" in message_texts(agent)[2]
    agent.send("after the download")
    assert user_texts(agent, "intro-ml")[-1] == "after the download"


def another_tab_writing_the_same_damaged_value_again_and_again_makes_one_backup(agent, other, course: str) -> None:
    """Both tabs open: ``agent`` on ``course``, with no notice and no backup yet; ``other`` writes."""
    garbage = "{" + "g" * 1_000_000
    assert backups(agent) == {} and notice_codes(agent) == []
    for n in range(6):
        other.page.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, garbage])
        wait_notice(agent, "storage-corrupt")
        agent.send(f"turn {n}")
        assert user_texts(agent, course)[-1] == f"turn {n}"
    assert list(backups(agent).values()) == [garbage]
    assert notice_codes(agent) == ["storage-corrupt"]


def a_newer_version_written_by_another_tab_keeps_this_tabs_turns_on_show(agent, second_agent, course: str) -> None:
    """``agent`` on ``course`` (no turn yet), ``second_agent`` open; the stored value then stays a
    newer version this tab does not overwrite: the last case."""
    agent.send("my own turn")
    newer = envelope({course: thread(turn("future question", "future answer"))}, version=2)
    second_agent.page.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, newer])
    wait_notice(agent, "storage-newer-version")
    shown = message_texts(agent)
    assert len(shown) == 2 and "my own turn" in shown[0] and not any("future" in t for t in shown)
    agent.send("another turn")
    assert agent.messages().count() == 4
    assert agent.stored_raw() == newer


def a_course_another_tab_pruned_stays_shown_with_a_notice_and_its_next_turn_writes_it_back(agent, second_agent) -> None:
    """On a fresh origin: both tabs boot here (tab C = ``second_agent`` on linear-algebra, tab A =
    ``agent`` on intro-ml)."""
    tab_c, tab_a = second_agent, agent
    tab_c.open(course="linear-algebra")
    tab_c.send("c00 " + "long line of course c00 " * 1_500)  # about 36 K units: room for tab A's turn
    tab_a.open(course="intro-ml")
    tab_a.page.evaluate(FILL_JS, ["filler", 2_000])
    tab_a.send("a's turn " * 2_000)  # does not fit unless c00 goes
    threads = tab_a.stored()["state"]["threads"]
    assert "linear-algebra" not in threads and "intro-ml" in threads
    wait_notice(tab_c, "storage-pruned-elsewhere")
    assert tab_c.messages().count() == 2
    assert "long line of course c00" in message_texts(tab_c)[0]
    tab_a.page.evaluate(UNFILL_JS, "filler")
    tab_c.send("c00 next turn")
    assert [t[:4] for t in user_texts(tab_c, "linear-algebra")] == ["c00 ", "c00 "]
    assert len(user_texts(tab_c, "linear-algebra")) == 2
    assert "storage-pruned-elsewhere" not in notice_codes(tab_c)
    assert user_texts(tab_c, "intro-ml") == [("a's turn " * 2_000).strip()]  # tab A's turn is kept too


def test_other_tabs_prune_damage_and_upgrade_the_store_while_two_tabs_run(agent, second_agent):
    """Two boots (one per tab) for three cases, each on the tabs as the one before left them: the
    pruning case on a fresh origin first (its quota arithmetic counts every stored unit), the
    repeated damaged value next (checked by the tab with no notice), the newer version (which
    this tab never overwrites) last."""
    with case("a course another tab pruned stays shown with a notice and its next turn writes it back"):
        a_course_another_tab_pruned_stays_shown_with_a_notice_and_its_next_turn_writes_it_back(agent, second_agent)
    with case("another tab writing the same damaged value again and again makes one backup"):
        # tab C (second_agent) checks: tab A (agent) pruned, so it shows storage-pruned; C's notice went
        another_tab_writing_the_same_damaged_value_again_and_again_makes_one_backup(
            second_agent, agent, "linear-algebra")
    with case("a newer version written by another tab keeps this tab's turns on show"):
        show_course(agent, "r-newer")
        a_newer_version_written_by_another_tab_keeps_this_tabs_turns_on_show(agent, second_agent, "r-newer")
