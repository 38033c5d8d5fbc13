"""Sync across devices (DESIGN.md §16) in Chromium: two browser profiles (contexts: their own
localStorage and IndexedDB) against a real CouchDB-protocol server on 127.0.0.1 that the suite starts
(``pouchdb-server --in-memory``, ``tools/couchdb_server.py``).

One pair of booted pages carries the cases, each in a course of its own (switched in the page), and
B is reloaded once for all of them: sync off loads nothing and sends nothing off the origin; a
conversation made before sync was on goes out at the first sync; a conversation made on A appears on
B; a delete on A undone at once never leaves A (back under its id, never a copy), and deleted again it
goes out once Undo can no longer take it back, is gone on B and stays gone after both sync again; scene versions made on both keep
distinct numbers and B restores one made on A; a delete on A while B, apart, adds a turn wins on both,
B's turn kept as a conversation of its own; conflicting revisions written to the server are merged
with no conflicts left, and what an import refuses does not come in by sync; the two devices, on a
server of their own that is stopped, each add a turn and find both in time order once it is back. A
page of its own checks a wrong password, a server that is not CouchDB and a database the user may not
read (each a clear ``sync-status``, nothing lost, the password nowhere but ``sessionStorage``), then
stops a server of its own mid-sync (``offline``, the turn kept) and starts it again (the turn reaches
it, ``synced``). A first sync into an empty profile says ``synced`` only once history holds every
conversation. A first sync through a relay that stops answering mid-sync (its server killed and
started again behind it) leaves ``syncing`` for ``offline``/``stalled`` and completes once it answers
(the watchdog's restart); on the built site under its CSP a server the policy does not admit is
``error``/``blocked``. Two tabs of one profile: one replicates (Web Locks), the other follows it, and
takes over when it closes.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import base64
import socket
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import AgentPage
from tests.e2e.test_build import dist_site, source_tree  # noqa: F401 - the built site's fixtures
from tools import couchdb_server

DATABASE = "agentbar-e2e"
SYNC_TIMEOUT_MS = 30_000
HISTORY_READY = "() => document.documentElement.dataset.history"


@pytest.fixture(scope="module")
def couch():
    """``pouchdb-server --in-memory`` on a free 127.0.0.1 port for this module."""
    server = couchdb_server.start()
    yield server
    server.stop()


def _device(browser, app_server, couch) -> tuple:
    context = browser.new_context()
    helper = AgentPage(context.new_page(), app_server)
    helper.allowed_origins.append(couch.origin)
    return context, helper


def _state(agent) -> str:
    return agent.testid("sync-status").get_attribute("data-state")


def _wait_state(agent, *states: str) -> str:
    """The first of ``states`` that ``sync-status`` shows (the one seen, not a later read: right after
    its first sync a device may go on syncing what it held before, so ``synced`` can turn back)."""
    handle = agent.page.wait_for_function(
        "states => { const s = document.querySelector('[data-testid=sync-status]');"
        " return s && states.includes(s.dataset.state) ? s.dataset.state : null; }", arg=list(states),
        timeout=SYNC_TIMEOUT_MS)
    return handle.json_value()


def _ended_after(agent, starts: int) -> tuple[str, str | None]:
    """``(state, reason)`` of ``sync-status`` once a start after the first ``starts`` has ended in
    ``synced``, ``error`` or ``offline`` (an error of the start before must not be taken for its)."""
    handle = agent.page.wait_for_function(
        "n => { const s = document.querySelector('[data-testid=sync-status]');"
        " return Number(s.dataset.starts || 0) > n && ['synced', 'error', 'offline'].includes(s.dataset.state)"
        " ? [s.dataset.state, s.dataset.reason || null] : null; }",
        arg=starts, timeout=SYNC_TIMEOUT_MS)
    state, reason = handle.json_value()
    return state, reason


def _starts(agent) -> int:
    return int(agent.testid("sync-status").get_attribute("data-starts") or 0)


def _configure(agent, url: str, *, user: str = "", password: str = "", database: str = DATABASE) -> None:
    agent.testid("settings-open").click()
    agent.testid("sync-enabled").check()
    agent.testid("sync-url").fill(url)
    agent.testid("sync-database").fill(database)
    agent.testid("sync-user").fill(user)
    agent.testid("sync-password").fill(password)
    agent.testid("settings-save").click()
    agent.page.wait_for_selector("[data-testid=settings-dialog]:not([open])", state="attached")


def _sync_now(agent) -> None:
    """Press Sync now and wait until that new start of the replication has caught up: ``synced``
    (``error`` fails at once), having never read ``offline`` on its way there (the server is up: an
    ``offline`` would be the ended replication's word, or a start that failed)."""
    starts = int(agent.testid("sync-status").get_attribute("data-starts") or 0)
    agent.page.evaluate("""n => { const s = document.querySelector('[data-testid=sync-status]');
      if (window.__syncNowSeen) window.__syncNowSeen.observer.disconnect();
      const seen = window.__syncNowSeen = {states: [], observer: new MutationObserver(() => {
        if (Number(s.dataset.starts) > n) seen.states.push(s.dataset.state); })};
      seen.observer.observe(s, {attributes: true, attributeFilter: ['data-state', 'data-starts']}); }""", starts)
    agent.panel_action("sync-now")
    try:
        handle = agent.page.wait_for_function(
            "n => { const s = document.querySelector('[data-testid=sync-status]');"
            " return Number(s.dataset.starts) > n && ['synced', 'error'].includes(s.dataset.state)"
            " ? s.dataset.state : null; }",
            arg=starts, timeout=SYNC_TIMEOUT_MS)
    except Exception:  # say where the status stood
        status = agent.page.evaluate("() => ({...document.querySelector('[data-testid=sync-status]').dataset})")
        raise AssertionError(f"Sync now never reached synced: {status} (starts before: {starts})") from None
    assert handle.json_value() == "synced"
    seen = agent.page.evaluate("() => window.__syncNowSeen.states")
    assert "offline" not in seen, f"Sync now read offline on its way to synced: {seen}"


def _turn_off(agent) -> None:
    agent.testid("settings-open").click()
    agent.testid("sync-enabled").uncheck()
    agent.testid("settings-save").click()
    agent.page.wait_for_selector("[data-testid=settings-dialog]:not([open])", state="attached")
    assert _wait_state(agent, "off") == "off"


def _scene(agent, scene_id: str):
    return agent.page.locator(f"[data-testid=scene][data-scene-id='{scene_id}']")


def _versions(agent, scene_id: str):
    """Open the scene's checkpoint list (once) and return its items, newest first."""
    node = _scene(agent, scene_id)
    button = node.locator("[data-testid=scene-versions-open]")
    if button.get_attribute("aria-expanded") != "true":
        button.click()
    expect(node.locator("[data-testid=checkpoint-list]")).to_be_visible()
    return node.locator("[data-testid=checkpoint-item]")


def _listed(items) -> list[tuple[str, str, str]]:
    """``(data-version, data-checkpoint-id, data-current)`` of each item."""
    return [(i.get_attribute("data-version"), i.get_attribute("data-checkpoint-id"), i.get_attribute("data-current"))
            for i in items.all()]


def _switch(agent, course: str) -> None:
    agent.testid("course-select").select_option(course)
    agent.page.wait_for_function("c => new URLSearchParams(location.search).get('course') === c", arg=course)


def _show(agent, course: str) -> None:
    """Switch the booted page to ``course``, one the picker need not list, as Back/Forward does (no
    boot; the URL's course is then ``course``, so a reload boots into it)."""
    agent.page.evaluate("""id => { const url = new URL(location.href); url.searchParams.set('course', id);
      history.pushState({}, '', url.href); dispatchEvent(new PopStateEvent('popstate')); }""", course)
    expect(agent.testid("course-select")).to_have_value(course)


def _history_ids(agent) -> list[str]:
    agent.testid("history-open").click()
    agent.page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    ids = agent.page.eval_on_selector_all("[data-testid=history-item]", "els => els.map(e => e.dataset.taskId)")
    agent.testid("history-close").click()
    return ids


def _list_total(agent) -> int:
    """The course's conversation count the history list says (``[data-testid=history-list]`` ``data-total``)."""
    agent.testid("history-open").click()
    agent.page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total")
    total = agent.testid("history-list").get_attribute("data-total")
    agent.testid("history-close").click()
    return int(total)


def _wait_history_ids(agent, check, arg) -> list[str]:
    """Open the list (again, every half second) until its items' task ids satisfy ``check(ids, arg)``;
    returns them. Fails after ``SYNC_TIMEOUT_MS``."""
    deadline = time.monotonic() + SYNC_TIMEOUT_MS / 1000
    while True:
        ids = _history_ids(agent)
        if check(ids, arg):
            return ids
        if time.monotonic() > deadline:
            pytest.fail(f"history list {ids} never satisfied the check for {arg}")
        agent.page.wait_for_timeout(500)


def _server_docs(couch) -> dict:
    with urllib.request.urlopen(f"{couch.origin}/{DATABASE}/_all_docs?include_docs=true", timeout=5) as answer:
        rows = json.loads(answer.read())["rows"]
    return {row["id"]: row["doc"] for row in rows}


def _synced_on(devices, course: str, origin: str, database: str = DATABASE) -> None:
    """Open ``course`` on each device, turn sync on to ``origin``/``database`` and wait for ``synced``."""
    for device in devices:
        device.open(course=course)
        device.page.wait_for_function(HISTORY_READY)
        _configure(device, origin, database=database)
        assert _wait_state(device, "synced", "error", "offline") == "synced"


def _continue_on(agent, task_id: str, shown: int = 2) -> None:
    """Resume conversation ``task_id`` from the history list on ``agent`` (another device's), then wait
    until its ``shown`` messages are drawn."""
    agent.testid("history-open").click()
    agent.page.locator(f"[data-testid=history-item][data-task-id={task_id}]").click()
    agent.page.wait_for_function(f"() => document.querySelectorAll('[data-testid=agent-message]').length === {shown}")


def _current_task(agent) -> str:
    agent.testid("history-open").click()
    item = agent.page.wait_for_selector("[data-testid=history-item][data-current=true]")
    task_id = item.get_attribute("data-task-id")
    agent.testid("history-close").click()
    return task_id


def test_two_devices_one_course_per_case(browser, app_server, couch):
    """Two profiles booted once each (and B reloaded once, for every case): each case in a course of
    its own. The last one stops a server of the devices' own (``away``) and starts it again."""
    away = couchdb_server.start()
    context_a, a = _device(browser, app_server, couch)
    context_b, b = _device(browser, app_server, couch)
    for device in (a, b):
        device.allowed_origins.append(away.origin)
    try:
        # -- sync off: nothing loaded, nothing sent off the origin -----------------------------
        a.open(course="intro-ml")
        b.open(course="intro-ml")
        for device in (a, b):
            device.page.wait_for_function(HISTORY_READY)
            assert _wait_state(device, "off") == "off"
        a.send("hello from A before sync")  # a turn with sync off: no request for the client or the server
        assert a.page.evaluate("() => typeof window.PouchDB") == "undefined"
        assert not any("pouchdb" in url or "sync.js" in url or "sync-worker" in url or url.startswith(couch.origin)
                       for url in a.requests)

        b.send("made on B before sync")  # history holds it before sync is turned on
        before_sync = _current_task(b)

        # -- a conversation made on A appears on B --------------------------------------------
        _configure(a, couch.origin)
        assert _wait_state(a, "synced", "error", "offline") == "synced"
        # a call on a replication that ended (Sync now, the watchdog, sync off) is refused at once:
        # its worker never answers, and a history step left waiting on it held every later step
        # (the next start's 'synced' among them) until the watchdog called it stalled
        assert a.page.evaluate(CALL_AFTER_STOP_JS) == "refused"
        # the client runs in its worker, off the page's main thread
        assert a.page.evaluate("() => typeof window.PouchDB") == "undefined"
        assert any(url.endswith("/static/sync-worker.js") for url in a.requests)
        assert any(url.endswith("/static/vendor/pouchdb/pouchdb.min.js") for url in a.requests)
        a.send("made on device A")  # recorded in history: its document goes out
        task_a = _current_task(a)
        _configure(b, couch.origin)
        assert _wait_state(b, "synced", "error", "offline") == "synced"
        _wait_history_ids(b, lambda ids, t: t in ids, task_a)
        # what B held before sync was on went out at its first sync, unchanged since: on the server and on A
        assert "made on B before sync" in _doc_texts(
            _poll(lambda: _server_docs(couch).get(f"conversation:{before_sync}"), "B's earlier conversation sent"))
        _wait_history_ids(a, lambda ids, t: t in ids, before_sync)
        doc = _server_docs(couch)[f"conversation:{task_a}"]
        texts = [part.get("text") for m in doc["messages"] for part in m.get("content", []) if isinstance(part, dict)]
        assert "made on device A" in texts
        assert "password" not in json.dumps(doc).lower()
        # a turn whose document the replication refused because Sync now ended it while the write was
        # under way goes out with the next start (before: only with that conversation's next change)
        a.page.evaluate(HOLD_NEXT_PUT_JS)
        a.send("sent while A restarted")
        a.page.wait_for_function("() => window.__heldPut.held")
        starts = _starts(a)
        a.panel_action("sync-now")
        a.page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=sync-status]').dataset.starts) > n", arg=starts)
        assert a.page.evaluate("() => window.__heldPut.release()") == "refused"
        _poll(lambda: "sent while A restarted" in _doc_texts(_server_docs(couch)[f"conversation:{task_a}"]) or None,
              "the refused turn sent by the next start")
        # B resumes it: the same messages, A's active conversation stays A's own
        b.testid("history-open").click()
        b.page.locator(f"[data-testid=history-item][data-task-id={task_a}]").click()
        b.page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=agent-message][data-role=user]')]"
            ".some(m => m.textContent.includes('made on device A'))")

        # -- a delete on A is gone on B and stays gone ------------------------------------------
        _switch(a, "linear-algebra")
        a.send("to be deleted on A")
        doomed = _current_task(a)
        a.testid("agent-new-conversation").click()  # archived: it can be deleted
        a.page.wait_for_function("() => document.querySelector('[data-testid=agent-new-conversation]').hidden")
        _switch(b, "linear-algebra")
        _wait_history_ids(b, lambda ids, t: t in ids, doomed)
        a.testid("history-open").click()
        a.page.locator(f"[data-testid=history-item][data-task-id={doomed}] [data-testid=history-delete]").click()
        a.page.wait_for_function(
            "t => !document.querySelector(`[data-testid=history-item][data-task-id=${t}]`)", arg=doomed)
        a.testid("history-undo").click()  # undone before its deletion went out (it is held): back under its id
        a.page.wait_for_function(
            "t => document.querySelector(`[data-testid=history-item][data-task-id=${t}]`)", arg=doomed)
        a.page.locator(f"[data-testid=history-item][data-task-id={doomed}] [data-testid=history-delete]").click()
        a.page.wait_for_function(
            "t => !document.querySelector(`[data-testid=history-item][data-task-id=${t}]`)", arg=doomed)
        a.testid("history-close").click()
        assert _history_ids(a) == []  # never a copy under a new id
        assert "to be deleted on A" in _doc_texts(_server_docs(couch)[f"conversation:{doomed}"])  # nothing went out
        # kept deleted: it goes out once Undo can no longer take it back, and is gone on B and the server
        _wait_history_ids(b, lambda ids, t: t not in ids, doomed)
        assert _server_docs(couch).get(f"conversation:{doomed}") is None
        assert _history_ids(a) == []
        for device in (a, b):  # both sync again (a fresh start of the replication): still gone
            _sync_now(device)
        b.reload()
        b.page.wait_for_function(HISTORY_READY)
        assert _wait_state(b, "synced", "error", "offline") == "synced"
        assert doomed not in _history_ids(b)
        _switch(b, "intro-ml")
        assert task_a in _history_ids(b)  # what came before stays

        # -- scene versions made on both keep distinct numbers; B restores one made on A ----------
        for device in (a, b):
            _switch(device, "poetry-tang")
        _turn_off(b)  # B apart: both devices make their version 1 of scene-2
        a.send("/regenerate scene-2 made on A")
        expect(_scene(a, "scene-2")).to_have_attribute("data-version", "1")
        b.send("/regenerate scene-2 made on B")
        expect(_scene(b, "scene-2")).to_have_attribute("data-version", "1")
        items_a, items_b = _versions(a, "scene-2"), _versions(b, "scene-2")
        made_on_a, made_on_b = (items.nth(0).get_attribute("data-checkpoint-id") for items in (items_a, items_b))
        assert made_on_a != made_on_b
        _configure(b, couch.origin)  # on again: B's version goes out (made while off), A's comes in
        expect(items_b).to_have_count(2, timeout=SYNC_TIMEOUT_MS)
        expect(items_a).to_have_count(2, timeout=SYNC_TIMEOUT_MS)
        # each device keeps its own as version 1 and numbers the other's past it; the one made last
        # (B's) is current on both
        assert _listed(items_a) == [("2", made_on_b, "true"), ("1", made_on_a, "false")]
        assert _listed(items_b) == [("2", made_on_a, "false"), ("1", made_on_b, "true")]
        expect(_scene(a, "scene-2")).to_have_attribute("data-version", "2")
        expect(_scene(b, "scene-2")).to_have_attribute("data-version", "1")
        docs = _server_docs(couch)
        assert "made on A" in json.dumps(docs[f"version:{made_on_a}"]["document"])
        assert "made on B" in json.dumps(docs[f"version:{made_on_b}"]["document"])
        # B restores A's version (its version 2 there): a new version 3 on B, and on A too
        _scene(b, "scene-2").locator(
            f"[data-testid=checkpoint-item][data-checkpoint-id={made_on_a}] [data-testid=checkpoint-restore]").click()
        expect(_scene(b, "scene-2")).to_have_attribute("data-version", "3")
        expect(items_b).to_have_count(3)
        restored = items_b.nth(0).get_attribute("data-checkpoint-id")
        assert (items_b.nth(0).get_attribute("data-source"), items_b.nth(0).get_attribute("data-current")) == \
            ("restore", "true")
        expect(items_a).to_have_count(3, timeout=SYNC_TIMEOUT_MS)
        expect(_scene(a, "scene-2")).to_have_attribute("data-version", "3")
        assert _listed(items_a)[0] == ("3", restored, "true") and items_a.nth(0).get_attribute("data-source") == "restore"
        restored_doc = _poll(lambda: _server_docs(couch).get(f"version:{restored}"), "the restore on the server")
        assert "made on A" in json.dumps(restored_doc["document"])  # A's document, restored on B
        assert "made on B" not in json.dumps(restored_doc["document"])
        # -- a delete made while B is apart wins, B's turn is kept on its own --------------------------------------------------------
        for device in (a, b):
            _show(device, "sync-delete-wins")
        a.send("shared before the split")
        deleted = _current_task(a)
        _wait_history_ids(b, lambda ids, t: t in ids, deleted)
        _continue_on(b, deleted)  # B goes on with it
        _turn_off(b)  # B apart
        b.send("made on B while apart")
        a.testid("agent-new-conversation").click()  # archived on A, then deleted there
        a.page.wait_for_function("() => document.querySelector('[data-testid=agent-new-conversation]').hidden")
        a.testid("history-open").click()
        a.page.locator(f"[data-testid=history-item][data-task-id={deleted}] [data-testid=history-delete]").click()
        a.page.wait_for_function(
            "t => !document.querySelector(`[data-testid=history-item][data-task-id=${t}]`)", arg=deleted)
        a.testid("history-close").click()
        _poll(lambda: _doc(couch, DATABASE, f"conversation:{deleted}") is None, "A's delete on the server")
        _configure(b, couch.origin)  # B back: its turn and A's delete meet
        expect(b.page.locator("[data-testid=agent-notice][data-code=sync-deleted-kept]")).to_be_visible(
            timeout=SYNC_TIMEOUT_MS)
        b.page.wait_for_function(f"() => JSON.stringify(({USER_TEXTS_JS})()) === "
                                 "JSON.stringify(['made on B while apart'])", timeout=SYNC_TIMEOUT_MS)
        kept = _current_task(b)
        assert kept != deleted and deleted not in _history_ids(b)
        kept_doc = _poll(lambda: _doc(couch, DATABASE, f"conversation:{kept}"), "B's kept turn on the server")
        assert _user_texts(kept_doc) == ["made on B while apart"]
        _wait_history_ids(a, lambda ids, t: t in ids, kept)  # A gets it as a conversation of its own
        assert deleted not in _history_ids(a)
        _poll(lambda: all(leaf.get("_deleted") for leaf in _leaves_of(couch, DATABASE, f"conversation:{deleted}")),
              "every leaf of the deleted conversation deleted on the server")
        for device in (a, b):  # both sync again, and B reloads: still gone, nothing adopted again
            _sync_now(device)

        # -- one reload of B for every case above ----------------------------------------------------
        b.reload()  # boots on sync-delete-wins (the URL's course)
        b.page.wait_for_function(HISTORY_READY)
        assert _wait_state(b, "synced", "error", "offline") == "synced"
        b.send("after the reload on B")  # the delete made while B was apart: still gone, nothing adopted again
        assert deleted not in _history_ids(b) and _current_task(b) == kept
        assert _doc(couch, DATABASE, f"conversation:{deleted}") is None
        assert deleted not in _history_ids(a)
        _switch(b, "linear-algebra")  # the delete on A: still gone on B, and no copy of it anywhere
        assert _history_ids(b) == []
        _switch(b, "intro-ml")
        assert task_a in _history_ids(b)  # what came before stays
        _switch(b, "poetry-tang")  # B still has the three versions, numbered as before
        items_b = _versions(b, "scene-2")
        expect(items_b).to_have_count(3)
        assert [v for v, _, _ in _listed(items_b)] == ["3", "2", "1"]

        # -- conflicting revisions written straight to the server -----------------------------------
        _show(a, "sync-revisions")
        a.send("the base turn")
        task = _current_task(a)
        doc_id = f"conversation:{task}"
        base = _poll(lambda: _doc(couch, DATABASE, doc_id, "?revs=true"), "the base revision on the server")
        generation, ids = base["_revisions"]["start"], base["_revisions"]["ids"]
        content = {k: v for k, v in base.items() if not k.startswith("_")}
        leaves = []
        for n, text in enumerate(["continued one", "continued two", "continued three"]):
            messages = content["messages"] + [
                {"role": "user", "id": f"u-c{n}", "content": [{"type": "text", "text": text}]},
                {"role": "assistant", "id": f"a-c{n}", "content": [{"type": "text", "text": "ok " + text}]}]
            rev_hash = f"{n + 1:032x}"
            leaves.append({**content, "messages": messages, "_id": doc_id, "_rev": f"{generation + 1}-{rev_hash}",
                           "_revisions": {"start": generation + 1, "ids": [rev_hash, *ids]}})
        stranger = [{"role": "user", "id": "u-s", "content": [{"type": "text", "text": "no shared history"}]}]
        leaves.append({**content, "messages": stranger, "turns": [], "_id": doc_id, "_rev": f"1-{'f' * 32}",
                       "_revisions": {"start": 1, "ids": ["f" * 32]}})
        request = urllib.request.Request(f"{couch.origin}/{DATABASE}/_bulk_docs", method="POST",
                                         data=json.dumps({"docs": leaves, "new_edits": False}).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=10).close()
        assert len(_doc(couch, DATABASE, doc_id, "?conflicts=true").get("_conflicts", [])) == 3  # four leaves
        wanted = {"the base turn", "continued one", "continued two", "continued three", "no shared history"}

        def resolved():
            doc = _doc(couch, DATABASE, doc_id, "?conflicts=true")
            return doc if doc and not doc.get("_conflicts") and set(_tree_user_texts(doc)) == wanted else None
        merged = _poll(resolved, "one merged revision on the server, holding every leaf's turns as branches (§17)")
        roles = [m["role"] for m in merged["messages"]]
        assert not any(x == y == "user" for x, y in zip(roles, roles[1:]))
        assert sorted(_tree_user_texts(merged)) == sorted(wanted)  # each once
        assert [leaf for leaf in _leaves_of(couch, DATABASE, doc_id) if not leaf.get("_deleted")] == \
            [_doc(couch, DATABASE, doc_id)]  # one live leaf: the losers deleted
        _poll(lambda: all(text in a.page.evaluate(IDB_DUMP_JS) for text in wanted), "every leaf's turns in A's history")
        _poll(lambda: a.page.evaluate(USER_TEXTS_JS) == _user_texts(_doc(couch, DATABASE, doc_id)),
              "A's panel shows the merged conversation's shown path")

        # -- what an import refuses does not come in by sync either, and one notice counts it ----------
        from app.history.chatgpt import MAX_CONVERSATION_CHARS

        huge = {**content, "_id": "conversation:task_20261201_huge00", "turns": [],
                "meta": {**content["meta"], "taskId": "task_20261201_huge00"},
                "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * (MAX_CONVERSATION_CHARS + 1)}]}]}
        broken = {"_id": "conversation:task_20261201_broken", "meta": "not a meta"}
        request = urllib.request.Request(f"{couch.origin}/{DATABASE}/_bulk_docs", method="POST",
                                         data=json.dumps({"docs": [huge, broken]}).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
        notice = a.page.locator("[data-testid=agent-notice][data-code=sync-unreadable]")
        expect(notice).to_have_count(1, timeout=SYNC_TIMEOUT_MS)
        expect(notice).to_contain_text(LOCALE["notice"]["sync-unreadable"]["other"].format(count=2))
        assert not {"task_20261201_huge00", "task_20261201_broken"} & set(_history_ids(a))

        # -- a turn added on both while a server of their own is down: on both afterwards, as siblings
        #    where the two diverged (DESIGN.md §17), the later one shown
        port = away.port
        for device in (a, b):
            _show(device, "sync-both-away")
            before = _starts(device)
            _configure(device, away.origin)
            assert _ended_after(device, before)[0] == "synced"
        a.send("the common first turn")
        task = _current_task(a)
        _wait_history_ids(b, lambda ids, t: t in ids, task)
        _continue_on(b, task)  # B goes on with it
        away.stop()
        a.send("turn on A while away")
        b.page.wait_for_timeout(50)  # B's turn is the later one
        b.send("turn on B while away")
        for device in (a, b):
            assert _wait_state(device, "offline", "error") == "offline"
        away = couchdb_server.start(port)
        urllib.request.urlopen(urllib.request.Request(f"{away.origin}/{DATABASE}", method="PUT"), timeout=5).close()
        for device in (a, b):
            device.panel_action("sync-now")
        wanted = ["the common first turn", "turn on A while away", "turn on B while away"]

        def on_server():
            doc = _server_docs(away).get(f"conversation:{task}")
            return doc if doc and sorted(_tree_user_texts(doc)) == sorted(wanted) else None
        doc = _poll(on_server, "the server's conversation holds both turns, one a branch beside the other")
        assert _user_texts(doc) == ["the common first turn", "turn on B while away"]  # B's, the later, shown
        assert _tree_user_texts(doc).count("the common first turn") == 1 and doc.get("shownAt")
        for device in (a, b):
            _poll(lambda: all(text in device.page.evaluate(IDB_DUMP_JS) for text in wanted),
                  "both turns in each device's history")
            assert _wait_history_ids(device, lambda ids, t: ids == [t], task) == [task]  # one conversation, no copy
            assert _list_total(device) == 1
        assert "turn on B while away" in (a.stored_raw() or "") and "turn on B while away" in (b.stored_raw() or "")
        # each device's active thread is rebuilt from the merged conversation: its panel shows the shown
        # path, and the next turn goes on in that conversation (no second one of the same title)
        shown = ("() => [...document.querySelectorAll('[data-testid=agent-message][data-role=user]')]"
                 ".map((m) => m.textContent.trim())")
        for device in (a, b):
            device.page.wait_for_function(f"w => JSON.stringify(({shown})()) === JSON.stringify(w)",
                                          arg=_user_texts(doc), timeout=SYNC_TIMEOUT_MS)
        a.send("after the merge on A")
        assert _current_task(a) == task and _history_ids(a) == [task]
        for device in (a, b):
            assert device.off_origin_requests() == []
    finally:
        context_a.close()
        context_b.close()
        away.stop()


class _NotCouch(BaseHTTPRequestHandler):
    """An HTTP server that is not CouchDB: an HTML page for every path, with CORS allowed."""

    def do_GET(self):  # noqa: N802
        body = b"<!doctype html><title>not couch</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_wrong_password_a_server_not_couchdb_a_closed_database_and_a_stopped_server_end_in_a_clear_status(
        browser, app_server, couch):
    other = ThreadingHTTPServer(("127.0.0.1", 0), _NotCouch)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    not_couch = f"http://127.0.0.1:{other.server_address[1]}"
    closed = server = None
    context, agent = _device(browser, app_server, couch)
    agent.allowed_origins.append(not_couch)
    logged: list[str] = []
    agent.page.on("console", lambda message: logged.append(message.text))
    try:
        agent.open(course="poetry-tang")
        agent.page.wait_for_function(HISTORY_READY)
        agent.send("kept whatever the server says")
        before = _starts(agent)
        _configure(agent, not_couch)
        assert _ended_after(agent, before) == ("error", "notCouchdb")
        before = _starts(agent)
        _configure(agent, couch.origin, user="nobody", password="wrong-password-123")
        assert _ended_after(agent, before) == ("error", "unauthorized")  # not the error of the start before
        assert agent.messages().count() == 2  # nothing lost: the turn is still shown
        assert "kept whatever the server says" in (agent.stored_raw() or "")
        # the password is in sessionStorage only (not remembered): not in localStorage, history or logs
        assert agent.page.evaluate("() => sessionStorage.getItem('agentbar-sync-password')") == "wrong-password-123"
        assert "wrong-password-123" not in agent.page.evaluate("() => JSON.stringify({...localStorage})")
        history = agent.page.evaluate(IDB_DUMP_JS)
        assert "kept whatever the server says" in history and "wrong-password-123" not in history
        assert not any("wrong-password-123" in line for line in logged)
        # a password written into the server URL is refused with its own words, never stored
        agent.testid("settings-open").click()
        agent.testid("sync-url").fill(couch.origin.replace("http://", "http://nobody:url-secret-456@"))
        agent.testid("settings-save").click()
        assert agent.testid("settings-dialog").is_visible() and agent.testid("settings-error").is_visible()
        assert "url-secret-456" not in agent.page.evaluate("() => JSON.stringify({...localStorage})")
        agent.page.keyboard.press("Escape")

        # -- a database this user may not read: forbidden, nothing lost ----------------------------
        closed = couchdb_server.start()
        agent.allowed_origins.append(closed.origin)
        _secure(closed, members=["ann"])
        before = _starts(agent)
        _configure(agent, closed.origin, user="bob", password="bob-pw-456", database=CLOSED)
        assert _ended_after(agent, before) == ("error", "forbidden")
        status = agent.testid("sync-status")
        assert status.text_content() == LOCALE["sync"]["reason"]["forbidden"]
        # sync on: its status shown in the panel's one status line, Sync now in the panel's menu
        assert status.is_visible() and status.evaluate(
            "n => n.parentElement.matches('[data-testid=checkpoint-summary]')")
        assert agent.testid("panel-menu-list").locator("[data-testid=sync-now]").count() == 1
        assert agent.messages().count() == 2 and "kept whatever the server says" in (agent.stored_raw() or "")
        _admin(closed, "PUT", f"/{CLOSED}/_security", {"admins": {"names": [], "roles": []},
                                                       "members": {"names": ["ann", "bob"], "roles": []}})
        _sync_now(agent)  # let in: synced, and the turn kept meanwhile reaches the database

        def on_closed() -> bool:
            rows = _admin(closed, "GET", f"/{CLOSED}/_all_docs?include_docs=true")[1].get("rows", [])
            return any("kept whatever the server says" in _doc_texts(row["doc"]) for row in rows)
        _poll(on_closed, "the turn on the database once the user may read it")

        # -- a server stopped mid-sync: offline, a turn made meanwhile kept and sent once it is back on
        #    the same port (DESIGN.md §16: off-line first, changes queue) ---------------------------------
        server = couchdb_server.start()
        port = server.port
        agent.allowed_origins.append(server.origin)
        _switch(agent, "linear-algebra")
        before = _starts(agent)
        _configure(agent, server.origin)
        assert _ended_after(agent, before)[0] == "synced"
        server.stop()
        agent.send("made while the server is away")
        assert _wait_state(agent, "offline", "error") == "offline"
        assert agent.testid("sync-status").get_attribute("data-reason") == "unreachable"
        assert "made while the server is away" in (agent.stored_raw() or "")
        task = _current_task(agent)
        agent.page.evaluate(SEEN_STATES_JS)
        server = couchdb_server.start(port)  # back without its database (in memory): the app makes it again
        deadline = time.monotonic() + SYNC_TIMEOUT_MS / 1000
        while True:
            try:
                docs = _server_docs(server)
            except OSError:
                docs = {}
            if f"conversation:{task}" in docs:
                break
            if time.monotonic() > deadline:
                pytest.fail("the turn made while the server was away never reached it")
            time.sleep(0.5)
        texts = [p.get("text") for m in docs[f"conversation:{task}"]["messages"] for p in m.get("content", [])
                 if isinstance(p, dict)]
        assert "made while the server is away" in texts
        assert _wait_state(agent, "synced") == "synced"
        seen = agent.page.evaluate("() => window.__syncSeen")
        assert seen and all(reason != "notCouchdb" for _, reason in seen), seen  # never taken for another server
        assert agent.off_origin_requests() == []
    finally:
        context.close()
        other.shutdown()
        other.server_close()
        for server_started in (closed, server):
            if server_started is not None:
                server_started.stop()


CLOSED = "agentbar-closed"
LOCALE = json.loads((Path(__file__).resolve().parents[2] / "app" / "locales" / "en-US.json").read_text("utf-8"))
ADMIN = ("admin", "admin-pw-789")


def _admin(server, method: str, path: str, body=None) -> tuple[int, dict]:
    """A request to ``server`` as its admin: ``(status, parsed answer)``."""
    request = urllib.request.Request(server.origin + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Basic " +
                                              base64.b64encode(":".join(ADMIN).encode()).decode()})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _secure(server, members: list[str]) -> None:
    """An admin, database ``CLOSED`` readable by ``members`` only, and user ``bob`` (not a member)."""
    urllib.request.urlopen(urllib.request.Request(f"{server.origin}/_config/admins/{ADMIN[0]}", method="PUT",
                                                  data=json.dumps(ADMIN[1]).encode()), timeout=5).close()
    assert _admin(server, "PUT", f"/{CLOSED}")[0] == 201
    assert _admin(server, "PUT", f"/{CLOSED}/_security", {"admins": {"names": [], "roles": []},
                                                          "members": {"names": members, "roles": []}})[0] == 200
    assert _admin(server, "PUT", "/_users/org.couchdb.user:bob",
                  {"name": "bob", "password": "bob-pw-456", "roles": [], "type": "user"})[0] == 201
    with pytest.raises(urllib.error.HTTPError) as refused:  # the server itself refuses bob that database
        urllib.request.urlopen(urllib.request.Request(f"{server.origin}/{CLOSED}", headers={
            "Authorization": "Basic " + base64.b64encode(b"bob:bob-pw-456").decode()}), timeout=5)
    assert refused.value.code in (401, 403)


SEEN_STATES_JS = """() => {
  const node = document.querySelector('[data-testid=sync-status]');
  window.__syncSeen = [[node.dataset.state, node.dataset.reason || null]];
  new MutationObserver(() => window.__syncSeen.push([node.dataset.state, node.dataset.reason || null]))
    .observe(node, { attributes: true, attributeFilter: ['data-state', 'data-reason'] });
}"""


CALL_AFTER_STOP_JS = """async () => {
  const ended = window.agentbarSync.open(JSON.stringify({feed: false}), () => {}, () => {});
  await ended.opened;
  ended.stop();
  await ended.put("{}").catch(() => null);  // made before its worker ended: settled once it has
  const late = ended.put(JSON.stringify({_id: "conversation:task_20261207_late00"}))
    .then(() => "answered", () => "refused");
  return Promise.race([late, new Promise((done) => setTimeout(() => done("never settled"), 5000))]);
}"""
HOLD_NEXT_PUT_JS = """async () => {
  // the next conversation document the page writes waits until release(), then goes to the
  // replication it was made for (by then ended by Sync now): 'refused' or 'written'
  const probe = window.agentbarSync.open(JSON.stringify({feed: false}), () => {}, () => {});
  await probe.opened;
  probe.stop();
  const proto = Object.getPrototypeOf(probe);
  const original = proto.put;
  let open;
  const gate = new Promise((done) => { open = done; });
  const held = window.__heldPut = { held: false };
  proto.put = function (docJson) {
    if (!docJson.includes('"conversation:')) return original.call(this, docJson);
    proto.put = original;
    held.held = true;
    const result = gate.then(() => original.call(this, docJson));
    held.settled = result.then(() => "written", () => "refused");
    return result;
  };
  held.release = () => { open(); return held.settled; };
}"""
IDB_DUMP_JS = """async () => {
  const db = await new Promise((ok, bad) => { const r = indexedDB.open('agentbar'); r.onsuccess = () => ok(r.result); r.onerror = bad; });
  const out = [];
  for (const name of db.objectStoreNames) {
    out.push(await new Promise((ok) => { const q = db.transaction(name).objectStore(name).getAll(); q.onsuccess = () => ok(JSON.stringify(q.result)); }));
  }
  db.close();
  return out.join("\\n");
}"""


def _doc_texts(doc: dict) -> list[str]:
    return [p.get("text") for m in doc.get("messages", []) for p in m.get("content", []) if isinstance(p, dict)]


def _poll(check, what: str, timeout_s: float = SYNC_TIMEOUT_MS / 1000):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"never: {what}")
        time.sleep(0.5)


# How many conversations IndexedDB's history holds (a read in a connection of its own).
HISTORY_COUNT_JS = """() => new Promise((resolve, reject) => {
  const r = indexedDB.open('agentbar');
  r.onerror = () => reject(r.error);
  r.onsuccess = () => {
    const db = r.result;
    const q = db.transaction('conversations').objectStore('conversations').count();
    q.onsuccess = () => { db.close(); resolve(q.result); };
    q.onerror = () => { db.close(); reject(q.error); };
  };
})"""


# At the moment sync-status turns 'synced', how many conversations IndexedDB's history holds (a read
# begun right then): window.__heldAtSynced, a list, one count per 'synced'.
HELD_AT_SYNCED_JS = """() => {
  const node = document.querySelector('[data-testid=sync-status]');
  const counts = (window.__heldAtSynced = []);
  const count = """ + HISTORY_COUNT_JS + """;
  let last = node.dataset.state;
  new MutationObserver(() => {
    if (node.dataset.state === 'synced' && last !== 'synced') count().then((n) => counts.push(n), () => counts.push(-1));
    last = node.dataset.state;
  }).observe(node, { attributes: true, attributeFilter: ['data-state'] });
}"""


def test_the_first_sync_says_synced_only_once_history_holds_every_conversation(browser, app_server, couch):
    """A first sync into an empty profile: the replication catches up well before history has taken
    every conversation in (Python writes them a slice at a time); ``synced`` waits for history (§16)."""
    from bench.sync import documents

    database, n = "agentbar-e2e-first", 300
    url = f"{couch.origin}/{database}"
    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=10).close()
    body = json.dumps({"docs": documents(n, 10)}).encode("utf-8")
    request = urllib.request.Request(f"{url}/_bulk_docs", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=60).close()
    context, agent = _device(browser, app_server, couch)
    try:
        agent.open(course="intro-ml")
        agent.page.wait_for_function(HISTORY_READY)
        agent.page.evaluate(HELD_AT_SYNCED_JS)
        _configure(agent, couch.origin, database=database)
        agent.page.wait_for_function("() => window.__heldAtSynced.length > 0", timeout=120_000)
        assert agent.page.evaluate("() => window.__heldAtSynced") == [n]
    finally:
        context.close()


class _Relay:
    """A TCP relay on 127.0.0.1 to the server on ``upstream`` (a port): the sync server the page is
    given. It relays every connection until the page writes its ``hang_at``-th replication checkpoint
    there (``PUT …/_local/…``, after each batch written); from then on, until ``resume()``, nothing
    passes either way: connections are accepted and read, and no answer ever comes (a server that
    stopped answering mid-sync, as one killed and restarted under load left the replication, never
    told of an error). A connection that carried a request while hanging stays silent for good; one
    whose server closed it while hanging (the server killed) is closed only on ``resume()``: until
    then the page sees neither answers nor closes."""

    CHECKPOINT = re.compile(rb"PUT [^ ]*/_local/")
    FEED = re.compile(rb"GET [^ ]*/_changes")

    def __init__(self, upstream: int, hang_at: int) -> None:
        self.upstream = upstream
        self.hang_at = hang_at
        self.checkpoints = 0
        self.feeds = 0  # the _changes requests the server got through this relay
        self.hanging = threading.Event()
        self.resumed = False
        self.answering = threading.Event()  # set by ``resume`` (and ``close``)
        self.sockets: list = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def resume(self) -> None:
        """Relay again, for good (connections held while hanging stay silent)."""
        self.resumed = True
        self.hanging.clear()
        self.answering.set()

    def close(self) -> None:
        self.answering.set()
        self.listener.close()
        for held in self.sockets:
            try:
                held.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client) -> None:
        held = [self.hanging.is_set()]  # accepted while hanging: this one never answers
        upstream = None
        if not held[0]:
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                return
            self.sockets.append(upstream)
            threading.Thread(target=self._back, args=(upstream, client, held), daemon=True).start()
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.feeds += len(self.FEED.findall(data))
            if not held[0] and not self.resumed:
                self.checkpoints += len(self.CHECKPOINT.findall(data))
                if self.checkpoints >= self.hang_at:
                    self.hanging.set()
            if held[0] or self.hanging.is_set():
                held[0] = True  # a connection caught by the hang stays silent
                continue
            try:
                upstream.sendall(data)
            except OSError:
                return

    def _back(self, upstream, client, held: list) -> None:
        while True:
            try:
                data = upstream.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            if held[0] or self.hanging.is_set():
                held[0] = True  # an answer swallowed: this connection never answers again
                continue
            try:
                client.sendall(data)
            except OSError:
                return
        if not held[0] and self.hanging.is_set():  # closed while hanging: no close reaches the page either
            self.answering.wait()
        if not held[0]:  # the server closed an idle connection: so does the relay, as the server would
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _seed(server, database: str, docs: list[dict]) -> None:
    url = f"{server.origin}/{database}"
    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=10).close()
    body = json.dumps({"docs": docs}).encode("utf-8")
    urllib.request.urlopen(urllib.request.Request(f"{url}/_bulk_docs", data=body, method="POST",
                                                  headers={"Content-Type": "application/json"}), timeout=60).close()


def test_a_server_that_stops_answering_mid_sync_is_noticed_reported_and_the_sync_restarted(browser, app_server):
    """The server stops answering in the middle of a first sync (requests accepted, never answered,
    no error): the status leaves ``syncing`` for ``offline`` with the reason ``stalled`` once nothing
    moved for the watchdog's time (app/sync/watchdog.py), even though the server behind was killed and
    started again on its port with the same documents meanwhile. Once it answers again the
    replication is restarted on its own (no Sync now), every conversation arrives and it reads
    ``synced`` (DESIGN.md §16: a replication that makes no progress is noticed, restarted, reported)."""
    from bench.sync import documents
    from app.sync.watchdog import STALL_AFTER_S

    database, n = "agentbar-e2e-stall", 200
    docs = documents(n, 4)
    server = couchdb_server.start()
    _seed(server, database, docs)
    relay = _Relay(server.port, hang_at=2)  # a batch or two of 25 pass, then nothing answers
    context, agent = _device(browser, app_server, server)
    agent.allowed_origins.append(relay.origin)
    try:
        agent.open(course="intro-ml")
        agent.page.wait_for_function(HISTORY_READY)
        agent.page.evaluate(SEEN_STATES_JS)
        _configure(agent, relay.origin, database=database)
        agent.page.wait_for_function("() => window.__syncSeen.some(([state]) => state === 'syncing')")
        _poll(relay.hanging.is_set, "the server stops answering mid-sync")
        server.stop()  # killed, and back on its port (in memory: its documents written again, same revisions)
        server = couchdb_server.start(relay.upstream)
        _seed(server, database, docs)
        agent.page.wait_for_function(  # before the watchdog, it said 'syncing' for good
            "() => document.querySelector('[data-testid=sync-status]').dataset.state !== 'syncing'",
            timeout=int((STALL_AFTER_S + 30) * 1000))
        assert relay.hanging.is_set()  # the stall is the relay's, mid-sync
        status = agent.testid("sync-status")
        assert (status.get_attribute("data-state"), status.get_attribute("data-reason")) == ("offline", "stalled")
        held = agent.page.evaluate(HISTORY_COUNT_JS)
        assert 0 < held < n, held
        seen = agent.page.evaluate("() => window.__syncSeen")
        assert seen[-1] == ["offline", "stalled"] and ["syncing", None] in seen, seen
        relay.resume()  # the server answers again: the watchdog's restart (no Sync now) takes the rest
        # (a restart that came before the resume stalls too, then the next one, 2 s later, goes through)
        _poll(lambda: agent.page.evaluate(HISTORY_COUNT_JS) == n, "every conversation after the restart",
              timeout_s=3 * STALL_AFTER_S + 30)
        assert _wait_state(agent, "synced") == "synced"
        assert _starts(agent) >= 2  # saving the settings started it once; the watchdog again (no Sync now)
        assert len(_server_docs_of(server, database)) == n  # nothing more, nothing less: no conflict copies
    finally:
        context.close()
        relay.close()
        server.stop()


def _server_docs_of(server, database: str) -> dict:
    with urllib.request.urlopen(f"{server.origin}/{database}/_all_docs?conflicts=true&include_docs=true",
                                timeout=5) as answer:
        rows = json.loads(answer.read())["rows"]
    assert not [row["id"] for row in rows if row["doc"].get("_conflicts")]
    return {row["id"]: row["doc"] for row in rows}


def test_on_the_build_a_sync_server_the_csp_does_not_admit_is_an_error_that_says_so(page, dist_site, couch):
    """The built site under its CSP (``connect-src 'self'``, sent with every file as README's
    "Deploying" asks): a sync server the policy does not admit is ``error`` with the reason
    ``blocked`` and a text that names the server and the build's ``--connect-src``, not "Offline…
    will sync when it is back" (it never will); the model settings say the same of a model endpoint."""
    agent = AgentPage(page, dist_site[0])
    agent.allowed_origins.append(couch.origin)
    agent.open(course="intro-ml")
    agent.page.wait_for_function(HISTORY_READY)
    before = _starts(agent)
    _configure(agent, couch.origin)
    assert _ended_after(agent, before) == ("error", "blocked")
    text = agent.testid("sync-status").text_content()
    assert couch.origin in text and f"--connect-src {couch.origin}" in text
USER_TEXTS_JS = ("() => [...document.querySelectorAll('[data-testid=agent-message][data-role=user]')]"
                 ".map((m) => m.textContent.trim())")


def _doc(server, database: str, doc_id: str, query: str = "") -> dict | None:
    """The server's document ``doc_id`` (``query``: e.g. ``?conflicts=true``), None when it has none."""
    try:
        with urllib.request.urlopen(f"{server.origin}/{database}/{doc_id}{query}", timeout=5) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def _leaves_of(server, database: str, doc_id: str) -> list[dict]:
    """Every leaf revision of ``doc_id`` on the server (``open_revs=all``), deleted ones included."""
    request = urllib.request.Request(f"{server.origin}/{database}/{doc_id}?open_revs=all",
                                     headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return [row["ok"] for row in json.loads(answer.read()) if "ok" in row]


def _user_texts(doc: dict) -> list[str]:
    """The user texts of a conversation document's shown path."""
    return [p["text"] for m in doc.get("messages", []) if m.get("role") == "user" for p in m.get("content", [])
            if isinstance(p, dict) and p.get("type") == "text"]


def _tree_user_texts(doc: dict) -> list[str]:
    """The user texts of a conversation document on every branch (its shown path and ``branches``,
    DESIGN.md §17)."""
    return _user_texts({"messages": [*doc.get("messages", []), *doc.get("branches", [])]})


TABS = "agentbar-e2e-tabs"


def _changes_feeds(agent, origin: str) -> int:
    """How many ``_changes`` requests of the sync server this tab (its worker included) has made: one
    per poll of a replication's pull."""
    return sum(1 for url in agent.requests if url.startswith(origin + "/") and "/_changes" in url)


def test_one_tab_of_a_browser_replicates_the_others_hear_it_and_one_takes_over_when_it_closes(
        browser, app_server, couch):
    """Two tabs of one profile with sync on (DESIGN.md §15, §16): only one replicates (Web Locks): the
    server (through a counting relay) gets ``_changes`` feeds from it alone, the other shows its
    status (``data-role`` ``following``); a conversation another device wrote shows in both tabs; a
    turn made in the tab that follows goes out through the one that replicates; Sync now there asks
    that one; closing the replicating tab hands the lock over: the other replicates (and brings a new
    change in) itself."""
    relay = _Relay(couch.port, hang_at=1_000_000)  # never hangs: it counts what the profile's tabs ask
    context_a, first = _device(browser, app_server, couch)
    second = AgentPage(context_a.new_page(), app_server)
    for tab in (first, second):
        tab.allowed_origins.append(relay.origin)
    context_b, b = _device(browser, app_server, couch)
    try:
        first.open(course="intro-ml")
        first.page.wait_for_function(HISTORY_READY)
        _configure(first, relay.origin, database=TABS)
        assert _wait_state(first, "synced", "error", "offline") == "synced"
        second.open(course="intro-ml")  # the same profile: its settings say sync is on
        second.page.wait_for_function(HISTORY_READY)
        _synced_on([b], "intro-ml", couch.origin, database=TABS)
        b.send("made on device B")
        from_b = _current_task(b)
        for tab in (first, second):  # both tabs show it; one of them brought it in
            _wait_history_ids(tab, lambda ids, t: t in ids, from_b)
        assert _changes_feeds(first, relay.origin) > 0  # the first tab replicates ...
        assert _changes_feeds(second, relay.origin) == 0  # ... and the second does not:
        _poll(lambda: relay.feeds == _changes_feeds(first, relay.origin),  # every feed the server got is the first's
              "the server's _changes feeds from this profile all the first tab's")
        expect(second.testid("sync-status")).to_have_attribute("data-role", "following")
        expect(first.testid("sync-status")).to_have_attribute("data-role", "replicating")
        expect(second.testid("sync-status")).to_have_attribute("data-state", "synced")  # the first tab's, relayed

        second.send("made in the second tab")  # into the local database; the first tab sends it
        from_second = _current_task(second)
        _wait_history_ids(b, lambda ids, t: t in ids, from_second)
        starts = _starts(first)
        second.panel_action("sync-now")  # asks the replicating tab
        first.page.wait_for_function("n => Number(document.querySelector('[data-testid=sync-status]')"
                                     ".dataset.starts) > n", arg=starts, timeout=SYNC_TIMEOUT_MS)
        assert _changes_feeds(second, relay.origin) == 0

        first.page.close()  # its lock is released: the second tab takes over
        expect(second.testid("sync-status")).to_have_attribute("data-role", "replicating", timeout=SYNC_TIMEOUT_MS)
        assert _wait_state(second, "synced", "error", "offline") == "synced"
        b.testid("agent-new-conversation").click()
        b.page.wait_for_function("() => document.querySelector('[data-testid=agent-new-conversation]').hidden")
        b.send("made on device B after the first tab closed")
        later = _current_task(b)
        _wait_history_ids(second, lambda ids, t: t in ids, later)
        assert _changes_feeds(second, relay.origin) > 0
        for device in (second, b):
            assert device.off_origin_requests() == []
    finally:
        context_a.close()
        context_b.close()
        relay.close()
