"""The app in Firefox ESR and WebKitGTK (DESIGN.md §2): what the Chromium suite shows, in the other
engines a visitor uses. Each engine's page is booted as few times as the chain of cases allows; a
failure names the engine and the case.

Firefox runs with its default permission behaviour: ``navigator.storage.persist()`` opens a prompt
nobody answers, so the New-conversation case shows no history write waits for it (DESIGN.md §9).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from urllib.parse import urlencode

from bench.scripts import ACTIVE_JS
from tests.e2e.test_build import BASE

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


def test_boot_send_reload_new_conversation_resume_search(engine, app_server, shots):
    """Boot with the memory snapshot, a turn and a checkpoint restore kept across a reload, New
    conversation, the archived one resumed from history, history search, and the drawer's header on
    one row at 1280 and 390 px."""
    course = f"x-{engine.name}"
    first = f"gradients question in {engine.name}"
    with case(engine, "boot with the snapshot restored"):
        engine.viewport(1280, 800)
        engine.goto(app_url(app_server, course=course))
        wait_ready(engine)
        assert engine.js("document.documentElement.dataset.snapshot") == "restored"
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
    with case(engine, "reload: the turns and the restored version are there"):
        engine.reload()
        wait_ready(engine)
        engine.wait(f"{MESSAGES} === 6")
        assert user_texts(engine)[0] == first and scene_version(engine, "scene-1") == "3"
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
    with case(engine, "the server gone: a reload under the worker, a turn saved"):
        server.shutdown()
        server.server_close()
        engine.reload()
        wait_ready(engine)
        assert engine.js("document.documentElement.dataset.snapshot") == "restored"
        send(engine, "hello without a server")
        stored = engine.js("JSON.parse(localStorage.getItem('maic-agent-threads')).state.threads['linear-algebra'].messages.length")
        assert stored == 2
