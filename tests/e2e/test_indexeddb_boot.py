"""Blocked IndexedDB does not stop the app (DESIGN.md §5: it starts and works in memory).

PyScript opens IndexedDB while it boots. Each case breaks the browser's
IndexedDB with an init script that runs before any page script; the app must
start, work (a turn is sent and saved to ``localStorage``), say so in exactly
one notice, and expose the *real* status as ``window.agentbarIndexedDb`` while
PyScript runs on the in-memory substitute.
"""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_app_starts_in_memory_when_indexeddb_is_unusable(agent, case):
    agent.page.add_init_script(BREAKAGES[case])
    agent.open(course="intro-ml")

    status = agent.page.evaluate("() => ({...window.agentbarIndexedDb})")
    assert status["available"] is False
    assert status["substitute"] == "fake-indexeddb"
    assert status["reason"]
    if case == "open-throws":
        assert "SecurityError" in status["reason"]
    assert notice_codes(agent) == [NOTICE]

    agent.send("hello while IndexedDB is blocked")
    assert agent.messages().count() == 2
    stored = agent.stored()
    assert len(stored["state"]["threads"]["intro-ml"]["messages"]) == 2
    assert notice_codes(agent) == [NOTICE]  # said once, not again per turn

    if case != "open-throws":
        return  # the rest does not depend on how IndexedDB broke: one case shows it
    # The adapter believes the boot guard's flag, not the in-memory substitute; with no indexedDB
    # at all it is unavailable too (tests/e2e/test_indexeddb.py's helpers run Python in the page).
    flagged = run_py(agent.page, "json.dumps(await attempt(IndexedDbBackend().open()))")
    assert flagged[0] == "unavailable" and "insecure" in flagged[1]
    agent.reload()
    assert agent.messages().count() == 2  # localStorage still holds the thread
    assert notice_codes(agent) == [NOTICE]
    agent.page.evaluate("Object.defineProperty(window, 'indexedDB', {value: undefined, configurable: true})")
    missing = run_py(agent.page, "json.dumps(await attempt(IndexedDbBackend().open()))")
    assert missing[0] == "unavailable"


def test_working_indexeddb_is_reported_available_without_notice(agent):
    agent.open(course="intro-ml")
    status = agent.page.evaluate("() => ({...window.agentbarIndexedDb})")
    assert status == {"available": True, "reason": None, "substitute": None}
    assert NOTICE not in notice_codes(agent)
    # PyScript uses the browser's own IndexedDB, not the substitute.
    assert agent.page.evaluate("() => indexedDB instanceof IDBFactory && Object.getPrototypeOf(indexedDB) === IDBFactory.prototype")
