"""The app in Firefox ESR and WebKitGTK (DESIGN.md §2): what the Chromium suite shows, in the other
engines a visitor uses. Each engine's page is booted as few times as the chain of cases allows; a
failure names the engine and the case.

Firefox runs with its default permission behaviour: ``navigator.storage.persist()`` opens a prompt
nobody answers, so the New-conversation case shows no history write waits for it (DESIGN.md §9).

The first chain also keeps two courses' threads apart across its reload, shows the paint record drawn
before Python after it (DESIGN.md §13) or, in WebKit, whose WebDriver session is ephemeral (Cache
Storage ends with the page, as in a private window), nothing drawn early and nothing said, and runs the
OpenAI-compatible back end against ``tools/fake_openai.py`` (a streamed reply, a tool call run in the
page; DESIGN.md §12). Two profiles of one engine sync through ``pouchdb-server`` in a test of their
own (DESIGN.md §16); where the session's IndexedDB keeps no Blob (WebKit's ephemeral session, as a
private window) PouchDB could never answer, and the case shows the page says so: sync is off there
with its own notice, never "offline"/stalled, and turns are still kept.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

from app.agent import element_count
from bench.scripts import ACTIVE_JS
from tests.e2e.test_build import BASE
from tests.e2e.test_sync import DATABASE, _doc_texts, _poll, _server_docs
from tools import fake_openai

LOCALES = Path(__file__).resolve().parents[2] / "app" / "locales"

READY = ("document.documentElement.dataset.ready === 'true'"
         " || document.documentElement.getAttribute('data-error')")
IDLE = "document.querySelector('[data-testid=agent-panel]').dataset.running === 'false'"
MESSAGES = "document.querySelectorAll('[data-testid=agent-message]').length"


@contextmanager
def case(engine, name: str):
    """One case of the chain: a failure inside names the engine and the case."""
    try:
        yield
    except Exception as error:
        raise AssertionError(f"{engine.name}, case {name!r}: {type(error).__name__}: {error}") from error


def app_url(base: str, **params) -> str:
    return f"{base}index.html?{urlencode({'delay': 0, **params})}"


def wait_ready(engine) -> None:
    """Wait for ``html[data-ready]``; fail at once with ``html[data-error]``'s message."""
    result = engine.wait(READY, timeout_s=180)
    assert result is True, f"the app failed to start: {result}"


SNAPSHOT_FETCHES = ("performance.getEntriesByType('resource')"
                    ".filter((r) => new URL(r.name).pathname.endsWith('/snapshot.bin.gz')).length")


def snapshot_fetches(engine) -> int:
    """How many times this load of the page asked for the interpreter snapshot (its resource timing
    entries: a preload the engine did not reuse for ``static/pyodide-boot.mjs``'s fetch counts twice)."""
    return engine.js(SNAPSHOT_FETCHES)


def send(engine, text: str) -> None:
    """Type ``text`` in the composer, press send, and wait for the turn to end (its two messages shown)."""
    before = engine.js(MESSAGES)
    engine.fill(engine.testid("agent-input"), text)
    engine.click(engine.testid("agent-send"))
    engine.wait(f"{IDLE} && {MESSAGES} >= {before + 2}")


def scene_version(engine, scene_id: str) -> str:
    return engine.js(f"document.querySelector('[data-testid=scene][data-scene-id={scene_id}]').dataset.version")


VERSIONS = "document.querySelectorAll('[data-testid=scene][data-scene-id=scene-1] [data-testid=checkpoint-item]')"


USER_TEXTS = ("[...document.querySelectorAll('[data-testid=agent-message][data-role=user] [data-testid=agent-message-text]')]"
              ".map((m) => m.textContent.trim())")


def user_texts(engine) -> list[str]:
    return engine.js(USER_TEXTS)


QUESTION = "[data-testid=agent-message][data-role=user]"
REPLY = "[data-testid=agent-message][data-role=assistant]"
PICKER = "document.querySelector('%s [data-testid=branch-picker]')"
STORED_THREADS = "JSON.parse(localStorage.getItem('maic-agent-threads')).state.threads"
ASSISTANT_TEXTS = ("[...document.querySelectorAll('[data-testid=agent-message][data-role=assistant]')]"
                   ".map((m) => m.innerText.trim())")


PAINT_RECORDS = ("caches.open('agentbar.paint').then((c) => c.keys())"
                 ".then((keys) => keys.map((r) => decodeURIComponent(new URL(r.url).pathname.split('/paint/')[1])))")
QUIET = ("[document.documentElement.getAttribute('data-error'),"
         " [...document.querySelectorAll('[data-testid=agent-notice]')].filter((n) => !n.hidden && n.textContent.trim()).length]")


def show_course(engine, course: str) -> None:
    """Switch the booted page to ``course`` as Back/Forward does (no boot; the URL's course is then
    ``course``, so a reload boots into it)."""
    engine.js(f"""(() => {{ const url = new URL(location.href); url.searchParams.set('course', {json.dumps(course)});
      history.pushState({{}}, '', url.href); dispatchEvent(new PopStateEvent('popstate')); return true; }})()""")
    engine.wait(f"document.querySelector('[data-testid=course-select]').value === {json.dumps(course)}")


def choose(engine, testid: str, value: str) -> None:
    """Pick ``value`` in the ``<select>`` ``testid`` as a user does (its ``change`` event fired)."""
    engine.js(f"""(() => {{ const s = document.querySelector('[data-testid={testid}]'); s.value = {json.dumps(value)};
      s.dispatchEvent(new Event('change', {{bubbles: true}})); return s.value; }})()""")


def tick(engine, testid: str, on: bool = True) -> None:
    """Check (or uncheck) the checkbox ``testid`` by clicking it when it is not so."""
    if engine.js(f"document.querySelector('[data-testid={testid}]').checked") != on:
        engine.click(engine.testid(testid))


def save_settings(engine) -> None:
    engine.click(engine.testid("settings-save"))
    engine.wait("!document.querySelector('[data-testid=settings-dialog]').open")


def sync_state(engine) -> str:
    return engine.js("document.querySelector('[data-testid=sync-status]').dataset.state")


def turn_sync_on(engine, origin: str, expect: str = "synced") -> None:
    """Turn sync on to ``origin``/``DATABASE`` (no account) and wait for ``synced`` or ``error``; fail
    unless it is ``expect``."""
    engine.click(engine.testid("settings-open"))
    tick(engine, "sync-enabled")
    engine.fill(engine.testid("sync-url"), origin)
    engine.fill(engine.testid("sync-database"), DATABASE)
    save_settings(engine)
    status = "({...document.querySelector('[data-testid=sync-status]').dataset})"
    try:
        state = engine.wait(f"['synced', 'error'].includes({status}.state) && {status}.state", timeout_s=60)
    except AssertionError:
        raise AssertionError(f"sync never ended: {engine.js(status)}") from None
    assert state == expect, engine.js(status)


# Whether IndexedDB keeps a Blob here: WebKit's ephemeral sessions (its WebDriver's, Safari's private
# windows) abort the transaction ("Error preparing Blob/File data to be stored"), and PouchDB's
# IndexedDB adapter, which stores one to learn whether it may, then never answers.
BLOB_IN_INDEXEDDB = """new Promise((resolve) => {
  const open = indexedDB.open('agentbar-blob-probe', 1);
  open.onupgradeneeded = () => open.result.createObjectStore('s');
  open.onerror = () => resolve(false);
  open.onsuccess = () => {
    const db = open.result, tx = db.transaction('s', 'readwrite');
    tx.objectStore('s').put(new Blob(['x'], {type: 'text/plain'}), 'k');
    const end = (kept) => { db.close(); indexedDB.deleteDatabase('agentbar-blob-probe'); resolve(kept); };
    tx.oncomplete = () => end(true);
    tx.onabort = () => end(false);
  };
})"""


def history_ids(engine) -> list[str]:
    open_history(engine)
    ids = engine.js("[...document.querySelectorAll('[data-testid=history-item]')].map((e) => e.dataset.taskId)")
    engine.click(engine.testid("history-close"))
    return ids


def current_task(engine) -> str:
    open_history(engine)
    task = engine.wait("document.querySelector('[data-testid=history-item][data-current=true]')?.dataset.taskId")
    engine.click(engine.testid("history-close"))
    return task


def open_history(engine) -> None:
    if engine.js("document.querySelector('[data-testid=history-drawer]').hidden"):
        engine.click(engine.testid("history-open"))
    engine.wait("!document.querySelector('[data-testid=history-drawer]').hidden")


HEADER_ROWS = """(() => {
  const box = (id) => document.querySelector(`[data-testid=${id}]`).getBoundingClientRect().toJSON();
  return { search: box('history-search'), sort: box('history-sort'), range: box('history-range'),
           close: box('history-close'), drawer: box('history-drawer'), width: innerWidth };
})()"""


def assert_header_on_one_row(engine, width: int) -> None:
    """The drawer's header (search, sort, range, close) is one row: the close button's box overlaps
    the search field's vertically and ends inside the drawer."""
    boxes = engine.js(HEADER_ROWS)
    assert boxes["width"] == width, boxes
    search, close = boxes["search"], boxes["close"]
    overlap = min(search["bottom"], close["bottom"]) - max(search["top"], close["top"])
    assert overlap > 0, f"{width} px: the close button is on another row than the search field: {json.dumps(boxes)}"
    assert close["right"] <= boxes["drawer"]["right"] + 0.5, f"{width} px: the close button overflows: {json.dumps(boxes)}"


def test_boot_send_reload_new_conversation_resume_search(engine, app_server, fake_model_server, shots):
    """Boot with the memory snapshot, a turn and a checkpoint restore kept across a reload beside
    another course's thread and a third course's branches (an edit, a regenerate, a picker move), New conversation, the archived one resumed from history, history search,
    the drawer's header on one row at 1280 and 390 px, and the OpenAI-compatible back end against the
    fake server (a streamed reply; a tool call run in the page, its result sent back)."""
    course, other = f"x-{engine.name}", f"x-{engine.name}-other"
    first = f"gradients question in {engine.name}"
    with case(engine, "boot with the snapshot restored"):
        engine.viewport(1280, 800)
        engine.goto(app_url(app_server, course=course))
        wait_ready(engine)
        assert engine.js("document.documentElement.dataset.snapshot") == "restored"
        assert snapshot_fetches(engine) == 1  # 7 MB: asked for once
    with case(engine, "send a turn"):
        send(engine, first)
        assert engine.js(MESSAGES) == 2 and user_texts(engine) == [first]
    with case(engine, "a scene regenerated twice, its first version restored"):
        send(engine, "/regenerate scene-1 brighter")
        send(engine, "/regenerate scene-1 again")
        assert scene_version(engine, "scene-1") == "2"
        engine.click("[data-testid=scene][data-scene-id=scene-1] [data-testid=scene-versions-open]")
        engine.wait(f"{VERSIONS}.length === 2")
        engine.click("[data-testid=scene][data-scene-id=scene-1] [data-testid=checkpoint-item][data-version='1'] [data-testid=checkpoint-restore]")
        engine.wait(f"{VERSIONS}.length === 3 && {VERSIONS}[0].dataset.source === 'restore'")
        assert scene_version(engine, "scene-1") == "3"
    with case(engine, "another course has a thread of its own"):
        show_course(engine, other)
        engine.wait(f"{MESSAGES} === 0")
        send(engine, "a question in another course")
        show_course(engine, course)
        engine.wait(f"{MESSAGES} === 6")
        assert user_texts(engine)[0] == first and scene_version(engine, "scene-1") == "3"
    branched = f"x-{engine.name}-branches"
    with case(engine, "edit, regenerate and the branch picker (DESIGN.md §17)"):
        show_course(engine, branched)
        engine.wait(f"{MESSAGES} === 0")
        send(engine, "first question")
        send(engine, "second question")
        engine.click(f"{QUESTION} [data-testid=message-edit]")
        engine.wait("document.querySelector('[data-testid=message-edit-input]') !== null")
        engine.fill(engine.testid("message-edit-input"), "first question, edited")
        engine.click(engine.testid("message-edit-save"))
        engine.wait(f"{IDLE} && {MESSAGES} === 2 && {PICKER % QUESTION} !== null")
        assert engine.js(f"[{PICKER % QUESTION}.dataset.index, {PICKER % QUESTION}.dataset.count]") == ["2", "2"]
        engine.click(f"{REPLY} [data-testid=message-regenerate]")
        engine.wait(f"{IDLE} && {PICKER % REPLY} !== null && {PICKER % REPLY}.dataset.index === '2'")
        engine.click(f"{QUESTION} [data-testid=branch-prev]")
        engine.wait(f"{MESSAGES} === 4")
        assert user_texts(engine) == ["first question", "second question"]
        show_course(engine, course)
        engine.wait(f"{MESSAGES} === 6")
    with case(engine, "the shown course's paint record is kept"):
        engine.wait(f"{PAINT_RECORDS}.then((ids) => ids.includes({json.dumps(course)}))")
    with case(engine, "reload"):
        engine.reload()
        wait_ready(engine)
        assert snapshot_fetches(engine) == 1
    with case(engine, "the paint record drawn before Python, or, where Cache Storage did not outlive the page, nothing said"):
        painted, kept = engine.js("document.documentElement.dataset.painted || null"), engine.js(PAINT_RECORDS)
        if engine.name == "webkit":  # its WebDriver session is ephemeral: Cache Storage ends with the page
            assert kept == [] and painted is None, (kept, painted)
            assert engine.js(QUIET) == [None, 0]  # no error, no notice: only the early paint is missing
        else:
            assert course in kept and painted == "true", (kept, painted)
    with case(engine, "the turns and the restored version are there, each course's thread its own"):
        engine.wait(f"{MESSAGES} === 6")
        assert user_texts(engine)[0] == first and scene_version(engine, "scene-1") == "3"
        threads = engine.js(STORED_THREADS)
        assert len(threads[course]["messages"]) == 6 and len(threads[other]["messages"]) == 2, threads.keys()
        assert threads[other]["messages"][0]["content"][0]["text"] == "a question in another course"
        show_course(engine, other)
        engine.wait(f"{MESSAGES} === 2")
        assert user_texts(engine) == ["a question in another course"]
        show_course(engine, course)
        engine.wait(f"{MESSAGES} === 6")
    with case(engine, "after the reload, the branch shown stays at every fork"):
        show_course(engine, branched)
        engine.wait(f"{MESSAGES} === 4 && {PICKER % QUESTION} !== null && {PICKER % QUESTION}.dataset.index === '1'")
        assert user_texts(engine) == ["first question", "second question"]
        show_course(engine, course)
        engine.wait(f"{MESSAGES} === 6")
    with case(engine, "New conversation, whose turns end with their record written"):
        engine.click(engine.testid("agent-new-conversation"))
        engine.wait(f"{MESSAGES} === 0")
        send(engine, "a second conversation")
        engine.wait("document.querySelector('[data-testid=conversation-stats]').dataset.turns === '1'", timeout_s=10)
        assert engine.js("document.querySelector('[data-testid=turn-meta]').dataset.model") == "demo"
    with case(engine, "the archived conversation listed and resumed"):
        open_history(engine)
        engine.wait("document.querySelector('[data-testid=history-list]').dataset.total === '2'")
        engine.click("[data-testid=history-item][data-current=false]")
        engine.wait(f"{USER_TEXTS}[0] === {json.dumps(first)}")
        assert engine.js(MESSAGES) == 6
    with case(engine, "history search finds it"):
        open_history(engine)
        engine.fill(engine.testid("history-search"), "gradients")
        engine.wait("document.querySelectorAll('[data-testid=history-item]').length === 1")
        assert engine.js("document.querySelector('[data-testid=history-title]').textContent") == first
    with case(engine, "the drawer's header is one row at 1280 px"):
        engine.screenshot(shots / f"{engine.name}-1280.png")
        assert_header_on_one_row(engine, 1280)
    with case(engine, "the model back end against the fake OpenAI-compatible server"):
        engine.click(engine.testid("history-close"))
        show_course(engine, f"x-{engine.name}-model")
        engine.click(engine.testid("settings-open"))
        choose(engine, "settings-agent", "openai")
        engine.fill(engine.testid("settings-base-url"), f"{fake_model_server.origin}/v1")
        engine.fill(engine.testid("settings-api-key"), "sk-engines")
        engine.fill(engine.testid("settings-model"), fake_openai.MODELS[0])
        save_settings(engine)
        start = len(fake_model_server.posts())
        send(engine, f"Hello from {engine.name}")
        assert engine.js(ASSISTANT_TEXTS) == ["".join(fake_openai.PLAIN_PIECES)]
        assert engine.js("document.querySelectorAll('[data-testid=turn-error]').length") == 0
        post = fake_model_server.posts()[start]
        assert post["headers"]["authorization"] == "Bearer sk-engines" and post["body"]["stream"] is True
        assert post["body"]["messages"][-1] == {"role": "user", "content": f"Hello from {engine.name}"}
        send(engine, "#tool please")
        card = "document.querySelector('[data-testid=tool-card]')"
        assert engine.js(f"[{card}.dataset.status, {card}.dataset.elementCount]") == ["ok", str(element_count("scene-2"))]
        assert engine.js(ASSISTANT_TEXTS)[-1].endswith("Scene regenerated as asked.")
        first_post, second_post = fake_model_server.posts()[start + 1:start + 3]
        assert first_post["body"]["tools"][0]["function"]["name"] == "regenerate_scene"
        tool_message = second_post["body"]["messages"][-1]
        assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == fake_openai.TOOL_CALL_ID
        show_course(engine, course)
    with case(engine, "the drawer's header is one row at 390 px"):
        if engine.narrow(app_url(app_server, course=course), 390, 800):  # booted anew, in a frame
            wait_ready(engine)
        open_history(engine)
        engine.wait("document.querySelectorAll('[data-testid=history-item]').length > 0")
        engine.js("document.querySelector('[data-testid=history-drawer]').scrollIntoView({block: 'center'})")
        engine.screenshot(shots / f"{engine.name}-390.png")
        assert_header_on_one_row(engine, 390)


def test_build_under_a_sub_path_with_the_worker_then_offline(engine, dist_server):
    """The build served under a sub-path: the snapshot restored, the service worker in control after a
    reload, and with the server gone a reload under the worker and a turn saved (DESIGN.md §11)."""
    url, server = dist_server
    with case(engine, "first visit of the build under a sub-path"):
        engine.goto(f"{url}index.html?course=linear-algebra&delay=0")
        wait_ready(engine)
        assert engine.js("location.pathname") == f"{BASE}index.html"
        assert engine.js("document.documentElement.dataset.snapshot") == "restored"
        assert engine.js(f"({ACTIVE_JS})()") is True  # the build is precached
    with case(engine, "a reload under the worker"):
        engine.reload()
        wait_ready(engine)
        assert engine.js("!!navigator.serviceWorker.controller") is True
        assert snapshot_fetches(engine) == 1  # from the worker's cache, once
    with case(engine, "the server gone: a reload under the worker, a turn saved"):
        server.shutdown()
        server.server_close()
        engine.reload()
        wait_ready(engine)
        assert engine.js("document.documentElement.dataset.snapshot") == "restored"
        send(engine, "hello without a server")
        stored = engine.js("JSON.parse(localStorage.getItem('maic-agent-threads')).state.threads['linear-algebra'].messages.length")
        assert stored == 2


def test_two_profiles_sync_through_a_couchdb_server(engine, second_page, app_server, couch):
    """Two profiles of one engine (two devices) against ``pouchdb-server``: a conversation made on A
    appears in B's history and B resumes it; B's turn made before its sync went out, reaches the
    server and A's history, live (DESIGN.md §16)."""
    course = f"sync-{engine.name}"
    engine.goto(f"{app_server}bench/pages/blank.html")
    if not engine.js(BLOB_IN_INDEXEDDB):  # WebKit's ephemeral session: PouchDB could never answer here
        storage_keeps_no_blob(engine, app_server, couch, course)
        return
    a, b = engine, second_page(engine.name)
    with case(engine, "A syncs a conversation made there"):
        a.goto(app_url(app_server, course=course))
        wait_ready(a)
        turn_sync_on(a, couch.origin)
        send(a, f"made on {engine.name} A")
        task_a = current_task(a)
    with case(engine, "B, holding a conversation of its own, syncs: A's comes in and B resumes it"):
        b.goto(app_url(app_server, course=course))
        wait_ready(b)
        send(b, f"made on {engine.name} B before sync")
        task_b = current_task(b)
        turn_sync_on(b, couch.origin)
        _poll(lambda: task_a in history_ids(b), "A's conversation in B's history")
        open_history(b)
        b.click(f"[data-testid=history-item][data-task-id='{task_a}']")
        b.wait(f"{USER_TEXTS}[0] === {json.dumps(f'made on {engine.name} A')}")
    with case(engine, "B's earlier conversation reaches the server and A"):
        doc = _poll(lambda: _server_docs(couch).get(f"conversation:{task_b}"), "B's conversation on the server")
        assert f"made on {engine.name} B before sync" in _doc_texts(doc)
        _poll(lambda: task_b in history_ids(a), "B's conversation in A's history")
        assert sync_state(a) == "synced"


SYNC_STATES = """(() => { const node = document.querySelector('[data-testid=sync-status]'); window.syncStatesSeen = [];
  new MutationObserver(() => window.syncStatesSeen.push(node.dataset.state))
    .observe(node, {attributes: true, attributeFilter: ['data-state']}); return true; })()"""


def storage_keeps_no_blob(engine, app_server: str, couch, course: str) -> None:
    """A's IndexedDB keeps no Blob: turning sync on reads ``error``/``storageUnsupported`` with its own
    notice (never ``offline``, never the stall), the watchdog does not restart it, and a turn is
    still kept on this device."""
    notices = {json.loads(path.read_text("utf-8"))["sync"]["reason"]["storageUnsupported"]
               for path in LOCALES.glob("*.json")}
    with case(engine, "A's storage keeps no Blob: sync is off here, and says why"):
        engine.goto(app_url(app_server, course=course))
        wait_ready(engine)
        engine.wait("!!document.querySelector('[data-testid=sync-status]')")  # drawn after ready
        assert engine.js(SYNC_STATES) is True
        turn_sync_on(engine, couch.origin, expect="error")
        status = engine.js("({...document.querySelector('[data-testid=sync-status]').dataset,"
                           " text: document.querySelector('[data-testid=sync-status]').textContent})")
        assert status["reason"] == "storageUnsupported" and status["text"] in notices, status
    with case(engine, "A keeps its turns, and sync is not restarted"):
        send(engine, f"made on {engine.name} A with sync off")
        assert user_texts(engine) == [f"made on {engine.name} A with sync off"]
        status = engine.js("({...document.querySelector('[data-testid=sync-status]').dataset})")
        assert status["state"] == "error" and status["starts"] == "1", status
        assert "offline" not in engine.js("window.syncStatesSeen"), engine.js("window.syncStatesSeen")
