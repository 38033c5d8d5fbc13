"""Start-up (DESIGN.md §13): the conversation painted before Python starts, and typing before ready.

Python is held back by holding the app wheel's response (``hold_python``), so "before ready"
is a state the test controls, not a race. Records are made by the same pure code the app
uses (``app.paint.build_record``) and put into Cache Storage, or written by the app itself.

Each case here boots the page itself, on a course of its own, and leaves it ready: it is the
start of another test's page, whose own cases then run in it (no boot of their own): the Arabic
paint and the every-status rows in test_model's pages, the damaged records in test_core's, the
hostile text and drafts in test_checkpoints', the click at ready in test_resilience's two-tab page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from app.i18n import Translator
from app.paint import build_record, encode_record, paint_cache_key
from app.projection import live_thread
from app.store.jsjson import js_json

KEY = "maic-agent-threads"
COURSE = "intro-ml"
UPDATED = 1_780_000_000_000
WHEEL = re.compile(r"agentbar-[^/]*\.whl")
SHELL_KEYS = re.findall(r'data-i18n(?:-label|-title|-placeholder)?="([^"]+)"',
                        (Path(__file__).resolve().parents[2] / "index.html").read_text())


def envelope(threads: dict) -> str:
    return js_json({"state": {"threads": threads}, "version": 1})  # a lone surrogate as JSON.stringify writes it


def stored_thread(turns: int, *, extra: list | None = None) -> list[dict]:
    out = []
    for i in range(turns):
        out += [{"role": "user", "content": [{"type": "text", "text": f"سؤال {i} question"}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"answer {i} جواب"}]}]
    return out + (extra or [])


LONG = ("lorem ipsum dolor sit amet " * 400)
CARD = {"role": "assistant", "content": [
    {"type": "tool-call", "toolCallId": "call-1", "toolName": "regenerate_scene", "args": {"sceneId": "scene-1"},
     "result": {"content": [{"type": "text", "text": "Scene regenerated"}],
                "details": {"sceneId": "scene-1", "content": {"elements": [{}, {}]}, "actions": [{"type": "speech"}]}}}]}


class Held:
    """Holds the app wheel's response, so Python cannot start until ``release()``."""

    def __init__(self, page) -> None:
        self.page = page
        self.routes: list = []
        page.route(WHEEL, self._hold)

    def _hold(self, route) -> None:
        self.routes.append(route)

    def release(self) -> None:
        self.page.unroute(WHEEL, self._hold)
        for route in self.routes:
            try:
                route.continue_()
            except Exception:  # a request of a page that was reloaded meanwhile
                pass
        self.routes.clear()


def put_record(agent, stage_id: str, text: str) -> None:
    agent.page.evaluate(
        """async ([url, text]) => {
          const cache = await caches.open("agentbar.paint");
          await cache.put(url, new Response(text, { headers: { "content-type": "application/json" } }));
        }""",
        [agent.base_url + paint_cache_key(stage_id), text])


def record_text(messages: list[dict], locale: str = "en-US", updated_at: int = UPDATED, course: str = COURSE) -> str:
    t = Translator(locale)
    return encode_record(build_record(course, updated_at, live_thread(messages), t, locale=locale,
                                      rtl=t.rtl, title="Introduction to Machine Learning",
                                      label_keys=SHELL_KEYS))


def wait_checked(agent) -> None:
    agent.page.wait_for_function("() => performance.getEntriesByName('agentbar:paint-checked').length > 0")


ROWS = """() => [...document.querySelectorAll('[data-testid=agent-messages] [data-testid=agent-message]')].map((m) => ({
  role: m.dataset.role, painted: m.dataset.painted || null, dir: getComputedStyle(m).direction,
  text: [...m.querySelectorAll('[data-testid=agent-message-text], [data-testid=markdown], [data-testid=tool-card], [data-testid=agent-stopped]')]
    .map((n) => (n.dataset.long ? n.querySelector('[data-testid=agent-text-chunk]').textContent : n.textContent).trim()),
  long: [...m.querySelectorAll('[data-long]')].map((n) => n.dataset.long),
  cards: [...m.querySelectorAll('[data-testid=tool-card]')].map((n) => [n.dataset.status, n.dataset.elementCount]),
}))"""

# The panel's status line as shown: its summary, its visible buttons (the menu's, closed) and its height.
BAR = """() => { const b = document.querySelector('.checkpoint-bar'); return {
  text: b.querySelector('.checkpoint-summary-text').textContent, height: Math.round(b.getBoundingClientRect().height),
  buttons: [...b.querySelectorAll('button')].filter((n) => n.getClientRects().length)
    .map((n) => [n.className, n.textContent, n.getAttribute('aria-label')]),
  visible: [...b.children].filter((n) => n.getClientRects().length).map((n) => n.className) }; }"""

# Every animation frame from now on: how many rows are shown, and how far the log is from its end.
WATCH_FRAMES = """() => {
  window.__frames = [];
  const log = document.querySelector('[data-testid=agent-messages]');
  const tick = () => {
    window.__frames.push([log.querySelectorAll('[data-testid=agent-message]').length,
                          Math.round(log.scrollHeight - log.scrollTop - log.clientHeight)]);
    if (document.documentElement.dataset.ready !== 'true' || window.__frames.length < 400) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


# Whether a shown message's text holds the lone surrogate U+D800 (Playwright's strings cannot carry one).
HAS_LONE_SURROGATE = """() => [...document.querySelectorAll('[data-testid=agent-messages] [data-testid=agent-message]')]
  .filter((m) => m.textContent.includes('half \\ud800 pair')).length"""


def the_painted_thread_matches_the_live_one_in_arabic_and_python_takes_over_without_a_flash(agent) -> None:
    """Two boots in ar-SA on intro-ml (stored with its thread, and test_ecosystem's thread of every card
    status in a course of its own), the page left ready: test_model's Arabic page goes on in it, its
    own cases and reloads, then the right-to-left cases (locale_cases; the locale is read at boot)."""
    from tests.e2e.test_ecosystem import ALL_STATUSES, CARDS_COURSE

    # One stored text holds a lone surrogate: the store keeps it exactly; writing the paint record of
    # it once raised in pydantic's encoder, so no record was written.
    messages = stored_thread(45, extra=[{"role": "user", "content": [{"type": "text", "text": "half \ud800 pair"}]},
                                        {"role": "user", "content": [{"type": "text", "text": LONG}]}, CARD])
    agent.seed({KEY: envelope({COURSE: {"messages": messages, "updatedAt": UPDATED},
                               CARDS_COURSE: ALL_STATUSES["state"]["threads"][CARDS_COURSE]})})
    agent.open(course=COURSE, lang="ar-SA")
    live = agent.page.evaluate(ROWS)
    live_bar = agent.page.evaluate(BAR)
    assert agent.page.evaluate(HAS_LONE_SURROGATE) == 1
    agent.page.wait_for_function(  # the app wrote the course's record after ready
        "url => caches.open('agentbar.paint').then((c) => c.match(url)).then(Boolean)",
        arg=agent.base_url + paint_cache_key(COURSE), polling=100)
    held = Held(agent.page)
    agent.page.reload()
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    painted = agent.page.evaluate(ROWS)
    assert agent.page.evaluate(HAS_LONE_SURROGATE) == 1
    assert agent.page.evaluate("() => document.documentElement.dataset.ready") is None
    assert agent.testid("agent-messages").is_visible() and agent.page.locator("#boot").is_hidden()
    assert len(painted) == len(live) == 40
    assert all(row["painted"] == "true" and row["dir"] == "rtl" for row in painted)
    assert [dict(r, painted=None) for r in painted] == live
    assert painted[-2]["long"] == ["collapsed"] and painted[-1]["cards"] == [["ok", "2"]]
    assert agent.page.evaluate(BAR) == live_bar  # the status line and its menu button, as Python draws them
    assert live_bar["visible"] == ["checkpoint-summary-text", "panel-menu"]  # sync off: nothing of it shown
    assert agent.testid("agent-load-earlier").is_disabled()
    assert agent.testid("history-open").is_disabled() and agent.testid("agent-input").is_editable()
    agent.assert_accessible("painted before Python")
    agent.page.evaluate(WATCH_FRAMES)
    held.release()
    agent.wait_ready()
    agent.page.wait_for_function("() => window.__frames.length > 5")
    after = agent.page.evaluate(ROWS)
    assert [r["painted"] for r in after] == [None] * 40 and after == live
    frames = agent.page.evaluate("() => window.__frames")
    assert min(f[0] for f in frames) == 40, frames  # never an empty or half-drawn log
    assert max(f[1] for f in frames) <= 1, frames  # kept at its newest message throughout
    assert agent.testid("history-open").is_enabled()


class HeldModule:
    """Holds Pyodide's module (``pyodide.asm.mjs``, a preload and the import too) unanswered until
    ``fail()`` answers every request for it 404: the loading screen stays up, then a start-up error."""

    def __init__(self, page) -> None:
        self.page = page
        self.routes: list = []
        self.failing = False
        page.route("**/pyodide.asm.mjs", self._hold)

    def _hold(self, route) -> None:
        if self.failing:
            route.fulfill(status=404, body="missing")
        else:
            self.routes.append(route)

    def fail(self) -> None:
        self.failing = True
        for route in self.routes:
            route.fulfill(status=404, body="missing")

    def release(self) -> None:
        self.page.unroute("**/pyodide.asm.mjs", self._hold)


def the_loading_screen_then_a_startup_error_pass_axe(agent, module: HeldModule) -> None:
    """With Pyodide's module held (``module``), the page stays on its loading screen: axe finds nothing
    serious; the module then answered 404: the start-up error, axe again."""
    agent.page.wait_for_function("() => document.getElementById('boot-text').textContent.length > 0")
    for _ in range(600):
        if module.routes:
            break
        agent.page.wait_for_timeout(100)
    assert module.routes, "pyodide.asm.mjs was never requested"
    assert not agent.page.evaluate("() => document.documentElement.hasAttribute('data-error')")
    assert agent.page.evaluate("() => document.documentElement.dataset.ready") != "true"
    agent.assert_accessible("loading screen")
    module.fail()
    agent.page.wait_for_function("() => document.documentElement.hasAttribute('data-error')")
    assert agent.testid("app-loading").is_visible()
    agent.assert_accessible("start-up error")


# Each row in a normal form: its own attributes, then every element inside it that has a test id, with
# its status, code and text (a bubble's text, or a long one's shown start).
NORMAL_ROWS = """() => [...document.querySelectorAll('[data-testid=agent-messages] [data-testid=agent-message]')].map((m) => [
  m.dataset.role, m.dataset.status || null, m.dataset.painted || null,
  ...[...m.querySelectorAll('[data-testid]')].map((n) => [n.dataset.testid, n.dataset.status || null,
    n.dataset.code || null, n.dataset.long ? null : n.textContent.trim()])])"""

# The rows as Python's first render leaves them: kept in the microtask after data-ready is set.
KEEP_ROWS_AT_READY = """() => {
  const rows = %s;
  const root = document.documentElement;
  new MutationObserver((_, observer) => {
    if (root.dataset.ready === "true") { observer.disconnect(); window.__rowsAtReady = rows(); }
  }).observe(root, { attributes: true, attributeFilter: ["data-ready"] });
}""" % NORMAL_ROWS


def every_status() -> list[dict]:
    """A stored thread with a reply of every status and a tool card of every status a reload shows."""
    from app.model import Message, MessageStatus, TextPart, ToolCallPart
    from app.projection import CUT, FAILED, STOPPED, serialize_thread

    def ask(text: str) -> Message:
        return Message(role="user", content=[TextPart(text=text)])

    def reply(*parts, status) -> Message:
        return Message(role="assistant", content=list(parts), status=status)

    def card(call_id: str, result, *, is_error: bool | None = None) -> ToolCallPart:
        return ToolCallPart(tool_call_id=call_id, tool_name="regenerate_scene", args={"sceneId": "scene-1"},
                            result=result, is_error=is_error)

    done = MessageStatus(type="complete", reason="stop")
    failed = FAILED.model_copy(update={"error": {"code": "server", "params": {"status": 500}}})
    return serialize_thread([
        ask("complete"), reply(TextPart(text="a whole answer"), status=done),
        ask("stopped"), reply(TextPart(text="half an answer"), status=STOPPED),
        ask("stopped early"), reply(status=STOPPED),
        ask("failed"), reply(TextPart(text="so far"), status=failed),
        ask("failed early"), reply(status=failed),
        ask("cut"), reply(TextPart(text="as long as allowed"), status=CUT),
        ask("cut early"), reply(status=CUT),
        ask("cards"), reply(card("c-ok", {"content": [{"type": "text", "text": "Scene regenerated"}],
                                          "details": {"content": {"elements": [{}, {}]}}}),
                            card("c-error", {"content": [{"type": "text", "text": "no such scene"}]}, is_error=True),
                            card("c-none", None), TextPart(text="three cards"), status=done),
        ask("long"), reply(TextPart(text=LONG), status=done),
    ])


def rows_of_every_status_are_painted_as_python_first_renders_them(agent, course: str, lang: str,
                                                                 others: dict | None = None) -> None:
    """One row model draws the paint record and the panel (DESIGN.md §13, §15): a reply complete,
    stopped, failed or cut at the length limit, with text or without, and tool cards done, failed and
    interrupted, are painted before Python starts exactly as Python's first render then draws them.
    This boots the page, on ``course`` (stored with that thread, beside ``others``: course id → stored
    thread) in ``lang``: test_model's Japanese page is this boot, its own cases following in other
    courses."""
    messages = every_status()
    agent.seed({KEY: envelope({course: {"messages": messages, "updatedAt": UPDATED}, **(others or {})})})
    put_record(agent, course, record_text(messages, locale=lang, course=course))
    held = Held(agent.page)
    agent.page.goto(agent.url(course=course, lang=lang))
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    painted = agent.page.evaluate(NORMAL_ROWS)
    agent.page.evaluate(KEEP_ROWS_AT_READY)
    held.release()
    agent.wait_ready()
    first = agent.page.evaluate("() => window.__rowsAtReady")
    assert [row[2] for row in painted] == ["true"] * len(messages) and [row[2] for row in first] == [None] * len(messages)
    assert [row[:2] + row[3:] for row in painted] == [row[:2] + row[3:] for row in first]
    notes = [[n[0] for n in row[3:] if n[0] in ("agent-stopped", "turn-error", "turn-cut")] for row in first]
    assert notes[1::2] == [[], ["agent-stopped"], ["agent-stopped"], ["turn-error"], ["turn-error"], ["turn-cut"],
                           ["turn-cut"], [], []]
    assert [n[1] for n in first[-3][3:] if n[0] == "tool-card"] == ["ok", "error", "interrupted"]


def a_damaged_record_draws_nothing_and_breaks_nothing(agent, course: str) -> None:
    """(A stale record draws nothing either: the last boot of the test below.) The first boot also holds
    Pyodide's module: the loading screen, then a start-up error, pass axe. Its boots are the first of
    test_core's shared page, on ``course`` (stored with its thread), which is left ready."""
    messages = stored_thread(3)
    agent.seed({KEY: envelope({course: {"messages": messages, "updatedAt": UPDATED + 1}})})
    held = Held(agent.page)
    hostile = {"v": 1, "stageId": course, "updatedAt": UPDATED + 1, "locale": "en-US", "dir": "ltr", "title": "x"}
    damaged_records = ["{not json", json.dumps({**hostile, "rows": [{"t": "script", "x": "window.__pwned = 1"}]}),
                       json.dumps({**hostile, "rows": [{"t": "div", "a": {"onclick": "window.__pwned = 1"}}]}),
                       json.dumps({**hostile, "rows": [{"t": "div", "c": [{"t": "img", "a": {"src": "x"}}]}]}),
                       json.dumps({**hostile, "v": 2, "rows": []})]
    for number, damaged in enumerate(damaged_records):  # each one boot: the record is read before Python
        put_record(agent, course, damaged)
        if number == 0:
            module = HeldModule(agent.page)
            agent.page.goto(agent.url(course=course))
        else:
            agent.page.reload()
        wait_checked(agent)
        assert agent.page.evaluate("() => document.documentElement.hasAttribute('data-painted')") is False, damaged
        assert agent.page.evaluate("() => document.querySelectorAll('#agent-messages > *').length") == 0
        assert agent.page.locator("#app").is_hidden()
        if number == 0:
            the_loading_screen_then_a_startup_error_pass_axe(agent, module)
            module.release()

    held.release()
    agent.wait_ready()  # the last damaged record broke nothing: the stored thread is shown
    assert agent.messages().count() == 6
    assert agent.page.evaluate("() => window.__pwned") is None


RECORD_OF_THE_STORED_THREAD = """async ([url, course]) => {
  const hit = await (await caches.open('agentbar.paint')).match(url);
  const thread = JSON.parse(localStorage.getItem('maic-agent-threads')).state.threads[course];
  return !!hit && (await hit.json()).updatedAt === thread.updatedAt;
}"""


def user_texts(agent) -> list[str]:
    return agent.page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=agent-message][data-role=user]')].map((m) => m.textContent)")


def assert_hostile_text_painted_as_text(agent, script: str) -> None:
    row = agent.messages().first
    assert row.locator("[data-testid=agent-message-text]").text_content() == script
    assert agent.page.evaluate("() => document.querySelectorAll('#agent-messages script, #agent-messages img').length") == 0


PENDING_SEND = "() => sessionStorage.getItem('agentbar-pending-send')"
"""A message sent before ready (or answered by a turn in flight), kept for the next load (static/paint.js)."""


def a_hostile_text_stays_text_a_message_sent_before_ready_is_sent_once_a_reload_keeps_it_as_a_draft_and_a_stale_record_draws_nothing(
        agent, course: str) -> Iterator[None]:
    """The record painted on the first two boots (made by the app's own code, its updatedAt the stored
    thread's) holds one message whose text looks like HTML: it is painted as text, and once ready the
    stored thread is shown. The last boot paints nothing: its record is stale. Its four boots, on
    ``course`` (stored with its thread), are test_checkpoints' shared page, left ready.

    A generator: it pauses (``yield``) twice, each time with the page ready, no message of its own
    pending, before one of its reloads after ready; the caller may run other cases meanwhile, each
    in a course of its own, and shows ``course`` again before resuming it (their reloads are these)."""
    messages = stored_thread(2)
    agent.seed({KEY: envelope({course: {"messages": messages, "updatedAt": UPDATED}})})
    script = "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned = 1'>"
    put_record(agent, course, record_text([{"role": "user", "content": [{"type": "text", "text": script}]}], course=course))
    held = Held(agent.page)
    agent.page.goto(agent.url(course=course))
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    assert_hostile_text_painted_as_text(agent, script)
    field = agent.testid("agent-input")
    field.fill("kept as a draft")
    field.press("Enter")
    assert agent.testid("composer-status").is_visible() and not field.is_editable()

    agent.page.reload()  # before ready: the message comes back as a draft
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    assert_hostile_text_painted_as_text(agent, script)
    assert field.input_value() == "kept as a draft" and field.is_editable()
    assert agent.testid("composer-status").is_hidden()
    held.release()
    agent.wait_ready()
    agent.page.wait_for_timeout(300)
    assert "kept as a draft" not in user_texts(agent) and field.input_value() == "kept as a draft"
    assert agent.messages().count() == 4  # the painted hostile text broke nothing: the stored thread is shown
    assert agent.page.evaluate("() => window.__pwned") is None
    assert agent.page.evaluate(PENDING_SEND) is None  # the draft is the composer's alone now

    yield  # other cases may run here, in courses of their own
    assert agent.testid("course-select").input_value() == course
    field.fill("kept as a draft")  # the composer as this case left it (other cases sent from it)
    assert agent.page.evaluate(PENDING_SEND) is None
    held = Held(agent.page)
    agent.page.reload()
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    assert field.input_value() == ""  # the draft was the composer's until Python was ready
    field.fill("sent before ready")
    field.press("Enter")
    agent.testid("agent-send").click()  # pressed again while it waits: still one message
    field.press("Enter")
    held.release()
    agent.wait_ready()
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length >= 6")
    agent.wait_idle()
    assert field.input_value() == "" and field.is_editable()
    assert user_texts(agent).count("sent before ready") == 1
    stored = [m for m in agent.stored()["state"]["threads"][course]["messages"] if m["role"] == "user"]
    assert [m["content"][0]["text"] for m in stored].count("sent before ready") == 1
    assert agent.page.evaluate(PENDING_SEND) is None  # sent: nothing kept to be sent again

    yield  # other cases may run here, in courses of their own
    assert agent.testid("course-select").input_value() == course
    assert agent.page.evaluate(PENDING_SEND) is None
    # A stale record draws nothing: the app's record of the thread it saved is replaced by one of the
    # thread as seeded, older than the stored thread (another tab saved since).
    agent.page.wait_for_function(RECORD_OF_THE_STORED_THREAD, arg=[agent.base_url + paint_cache_key(course), course],
                                 polling=100)
    put_record(agent, course, record_text(messages, course=course))
    held = Held(agent.page)
    agent.page.reload()  # sent once: a reload after ready sends nothing again
    wait_checked(agent)
    assert agent.page.evaluate("() => document.documentElement.hasAttribute('data-painted')") is False
    assert agent.page.locator("#app").is_hidden()
    held.release()
    agent.wait_ready()
    assert field.input_value() == "" and user_texts(agent).count("sent before ready") == 1


HOLD_HISTORY_JS = """(ms) => new Promise((resolve, reject) => {
  const request = indexedDB.open('agentbar');
  request.onerror = () => reject(request.error);
  request.onsuccess = () => {
    const db = request.result;
    const names = Array.from(db.objectStoreNames);
    const store = db.transaction(names, 'readwrite').objectStore(names[0]);
    const end = performance.now() + ms;
    const spin = () => { if (performance.now() < end) store.count().onsuccess = spin; };
    spin();
    resolve(names.length);
  };
})"""


CLICK_HISTORY_AT_READY = """() => new Promise((resolve) => {
  const root = document.documentElement;
  const go = () => {
    const loading = !root.hasAttribute("data-history");
    // where a mouse click on the button lands: its icon's path (an SVG element has no click())
    const icon = document.querySelector("[data-testid=history-open] path");
    icon.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true }));
    resolve(loading);
  };
  if (root.dataset.ready === "true") go();
  else new MutationObserver((_, observer) => {
    if (root.dataset.ready === "true") { observer.disconnect(); go(); }
  }).observe(root, { attributes: true, attributeFilter: ["data-ready"] });
})"""


def a_click_and_a_turn_at_ready_are_not_lost_then_a_reload_mid_reply_gives_the_message_back_as_a_draft(
        agent, course: str, others: dict) -> Iterator[None]:
    """DESIGN.md §13: history's modules load after ready, in slices. The history button clicked at the
    moment of ready (history not loaded yet; the click lands on its icon, as a mouse's does) opens the
    drawer once it is; a turn sent then is recorded in history (the recorder's queue waits for it): its
    conversation is listed, with its turn meta.
    Then, in that page, DESIGN.md §4: a refresh mid-stream loses the in-flight turn (nothing is written
    mid-stream); the message it answered comes back in the composer instead of vanishing.
    Four boots at delay 150 on ``course`` (stored with its thread, beside ``others``: course id → stored
    thread), the page left ready: test_resilience's two-tab page.

    A generator: it pauses (``yield``) first once the page is ready and idle after the turn at ready
    (the caller may run other cases meanwhile, each in a course of its own, and shows ``course`` again
    before resuming it), then right after the reload mid-reply (the caller may only read the page)."""
    agent.seed({KEY: envelope({course: {"messages": stored_thread(2), "updatedAt": UPDATED}, **others})})
    agent.page.goto(agent.url(course=course, delay=150))
    assert agent.page.evaluate(CLICK_HISTORY_AT_READY) is True  # clicked while history was still loading
    field = agent.testid("agent-input")
    field.fill("sent at ready")
    field.press("Enter")
    agent.testid("history-drawer").wait_for(state="visible")
    agent.wait_idle()
    agent.page.wait_for_function("() => document.documentElement.dataset.history === 'ready'")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=turn-meta]').length === 1")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 1"
                                 " && document.querySelector('[data-testid=history-item]').dataset.current === 'true'")
    agent.testid("history-close").click()

    yield  # other cases may run here, in courses of their own
    assert agent.testid("course-select").input_value() == course
    agent.send("asked while it streams", wait=False)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    agent.page.wait_for_timeout(600)  # some of the reply is shown
    # the draft is written only as the page goes away: a turn never pays for a long message's
    # sessionStorage write (DESIGN.md §13; 70–630 ms for 2,000,000 characters)
    assert agent.page.evaluate("() => sessionStorage.getItem('agentbar-pending-send')") is None
    agent.reload()
    yield  # the caller reads what the reload mid-reply kept
    field = agent.testid("agent-input")
    assert field.input_value() == "asked while it streams"
    assert "asked while it streams" not in json.dumps(agent.stored() or {})  # the turn itself is lost, as specified
    agent.testid("agent-send").click()  # sent from the draft, this time to the end
    agent.wait_idle()
    assert user_texts(agent).count("asked while it streams") == 1
    agent.reload()
    assert field.input_value() == ""  # the turn ended: no draft is kept
    assert user_texts(agent).count("asked while it streams") == 1

    # A reload once the turn is saved but while its history write still waits (another connection's
    # transaction holds history's tables): the message is shown as saved, and no draft of it is kept
    # to be sent a second time.
    agent.page.wait_for_function("() => document.documentElement.dataset.history === 'ready'")  # opened
    agent.page.evaluate(HOLD_HISTORY_JS, 20000)  # past the reply (about 6 s at delay 150), ended by the reload
    agent.send("asked while history is busy", wait=False)
    agent.page.wait_for_function(
        "t => (localStorage.getItem('maic-agent-threads') || '').includes(t)", arg="asked while history is busy")
    assert agent.testid("agent-panel").get_attribute("data-running") == "true"  # held by the history write
    agent.reload()
    assert field.input_value() == ""
    assert user_texts(agent).count("asked while history is busy") == 1
