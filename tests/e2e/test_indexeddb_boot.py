"""Blocked IndexedDB does not stop the app (DESIGN.md §5: it starts and works in memory).

PyScript opens IndexedDB while it boots. Each case breaks the browser's
IndexedDB with an init script that runs before any page script; the app must
start, work (a turn is sent and saved to ``localStorage``), say so in exactly
one notice, and expose the *real* status as ``window.agentbarIndexedDb`` while
PyScript runs on the in-memory substitute.
"""

from __future__ import annotations

import json

from tests.e2e.conftest import AgentPage
from tests.e2e.test_checkpoints import (
    versions_made_in_memory_are_gone_at_the_next_boot, without_indexeddb_regenerate_works_in_memory_and_the_panel_says_so_once)
from tests.e2e.test_core import switch_course
from tests.e2e.test_history import wait_history
from tests.e2e.test_indexeddb import run_py

NOTICE = "indexeddb-unavailable"

BREAKAGES = {
    # What Firefox does when site data is blocked.
    "open-throws": """
        IDBFactory.prototype.open = function () {
          throw new DOMException("The operation is insecure.", "SecurityError");
        };
    """,
    # Some private modes and embedded webviews.
    "missing": """
        delete window.indexedDB;
        delete Window.prototype.indexedDB;
        if (typeof indexedDB !== "undefined") Object.defineProperty(window, "indexedDB", {value: undefined, configurable: true});
    """,
    # The request is created, then fails asynchronously.
    "fails-async": """
        IDBFactory.prototype.open = function () {
          const request = new EventTarget();
          const error = new DOMException("Simulated open failure", "UnknownError");
          Object.defineProperty(request, "error", {get: () => error});
          setTimeout(() => {
            const event = new Event("error");
            request.dispatchEvent(event);
            if (typeof request.onerror === "function") request.onerror(event);
          }, 5);
          return request;
        };
    """,
}


def notice_codes(agent) -> list[str]:
    return [n.get_attribute("data-code") for n in agent.testid("agent-notice").all()]


# open-throws first: the boots after it show the thread it saved (localStorage still holds it)
ORDER = ["open-throws", "missing", "fails-async"]


def new_conversation_asks_before_the_thread_is_lost(agent, course: str, tmp_path) -> None:
    """IndexedDB unusable from the start (static/indexeddb-guard.js): history cannot keep the thread,
    so New conversation says so and waits for a choice; keeping it changes nothing (DESIGN.md §5).
    Run in ``course`` of its own, which it leaves with no thread."""
    switch_course(agent, course)
    assert wait_history(agent) == "unavailable:unavailable"
    agent.send("do not lose me")
    confirm = agent.testid("discard-confirm")
    assert confirm.is_hidden()
    agent.testid("agent-new-conversation").click()
    assert confirm.is_visible() and agent.testid("discard-confirm-text").inner_text().strip() != ""
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "discard-confirm-keep"
    agent.assert_accessible("new conversation asks before discarding")
    assert agent.messages().count() == 2 and agent.stored()["state"]["threads"][course]
    with agent.page.expect_download() as info:  # a careful way out: keep a copy first
        agent.testid("discard-confirm-export").click()
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    document = json.loads(saved.read_text(encoding="utf-8"))
    assert document["format"] == "agentbar-conversation" and saved.name == document["meta"]["taskId"] + ".json"
    assert [{k: v for k, v in m.items() if k != "parentId"} for m in document["messages"]] == \
        agent.stored()["state"]["threads"][course]["messages"]
    assert document["meta"]["taskName"] == "do not lose me"
    assert confirm.is_visible() and agent.messages().count() == 2  # downloading discards nothing
    agent.testid("discard-confirm-keep").click()
    assert confirm.is_hidden() and agent.messages().count() == 2
    assert len(agent.stored()["state"]["threads"][course]["messages"]) == 2
    agent.testid("agent-new-conversation").click()
    agent.page.keyboard.press("Escape")  # Escape keeps it too
    assert confirm.is_hidden() and agent.messages().count() == 2
    agent.testid("agent-new-conversation").click()
    agent.testid("discard-confirm-yes").click()
    assert confirm.is_hidden() and agent.messages().count() == 0
    assert agent.stored()["state"]["threads"].get(course) is None


def test_app_starts_in_memory_when_indexeddb_is_unusable(agent, context, app_server, tmp_path):
    """One boot per breakage, each in its own tab of one browser context (its init script runs
    before any page script there): each boot also shows the turns the boots before it saved. The
    first (open throwing) also makes scene versions in memory, with one notice for history and
    versions (the second boot shows none of them), and shows New conversation asking before a thread
    history cannot keep is lost, each in a course of its own."""
    assert sorted(ORDER) == sorted(BREAKAGES)
    tabs = [agent]
    for n, case in enumerate(ORDER):
        if n:
            tabs[-1].page.close()  # no other app in the context while this one boots
            tabs.append(AgentPage(context.new_page(), app_server))
        tab = tabs[-1]
        tab.page.add_init_script(BREAKAGES[case])
        tab.open(course="intro-ml")

        status = tab.page.evaluate("() => ({...window.agentbarIndexedDb})")
        assert status["available"] is False, case
        assert status["substitute"] == "fake-indexeddb", case
        assert status["reason"], case
        if case == "open-throws":
            assert "SecurityError" in status["reason"]
        assert notice_codes(tab) == [NOTICE], case
        assert tab.messages().count() == 2 * n, f"{case}: the earlier boots' turns, from localStorage"

        tab.send(f"hello while IndexedDB is blocked ({case})")
        assert tab.messages().count() == 2 * n + 2, case
        stored = tab.stored()
        assert len(stored["state"]["threads"]["intro-ml"]["messages"]) == 2 * n + 2, case
        assert notice_codes(tab) == [NOTICE], f"{case}: said once, not again per turn"

        if case == "missing":  # the boot after the versions made in memory: none of them
            versions_made_in_memory_are_gone_at_the_next_boot(tab, "idb-versions")
        if case != "open-throws":
            continue  # the rest does not depend on how IndexedDB broke: one case shows it
        without_indexeddb_regenerate_works_in_memory_and_the_panel_says_so_once(tab, "idb-versions")
        new_conversation_asks_before_the_thread_is_lost(tab, "idb-discard", tmp_path)
        # The adapter believes the boot guard's flag, not the in-memory substitute; with no indexedDB
        # at all it is unavailable too (tests/e2e/test_indexeddb.py's helpers run Python in the page).
        flagged = run_py(tab.page, "json.dumps(await attempt(IndexedDbBackend().open()))")
        assert flagged[0] == "unavailable" and "insecure" in flagged[1]
        tab.page.evaluate("Object.defineProperty(window, 'indexedDB', {value: undefined, configurable: true})")
        missing = run_py(tab.page, "json.dumps(await attempt(IndexedDbBackend().open()))")
        assert missing[0] == "unavailable"
    for tab in tabs[1:]:
        assert tab.off_origin_requests() == []
