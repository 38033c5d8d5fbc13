"""Conversation history in Chromium (DESIGN.md §9): archive, resume, paging, delete/undo, search,
stats, export/import, two tabs, IndexedDB blocked."""

from __future__ import annotations

import json
from contextlib import contextmanager

from playwright.sync_api import expect

from app.history.service import UNDO_MS
from app.i18n import Translator
from tests.e2e.test_indexeddb import run_py

HISTORY_READY = "() => document.documentElement.dataset.history"


def wait_history(agent) -> str:
    """Wait until history has started (reconciled); returns ``ready`` or ``unavailable:<kind>``."""
    return agent.page.wait_for_function(HISTORY_READY).json_value()


def open_list(agent):
    agent.testid("history-open").click()
    agent.page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    return agent.testid("history-list")


def open_file_actions(agent) -> None:
    """Open the drawer's file actions (export, print, import, backup and restore: one disclosure,
    ``history-more``) through its test id; left open when it is."""
    if not agent.testid("history-more").evaluate("d => d.open"):
        agent.testid("history-more-toggle").click()
    expect(agent.testid("history-more")).to_have_js_property("open", True)


def open_first_page(agent):
    """Open the list and wait for its first page of 10 items; returns the list."""
    listing = open_list(agent)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 10")
    return listing


ANNOUNCE_JS = """stage => new Promise((resolve) => {
  const heard = new BroadcastChannel('agentbar-history');  // made after the app's: its message comes after
  heard.onmessage = () => { heard.close(); resolve(); };
  const post = new BroadcastChannel('agentbar-history');
  post.postMessage(JSON.stringify({ kind: 'import', taskId: '', stageId: stage }));
  post.close();
})"""


def announce_written(agent, stage: str) -> None:
    """Say on the history channel, as another tab does after it writes, that ``stage``'s history changed;
    returns once the page has heard it. Every writer of history announces its writes (the list drawn
    ahead in the closed drawer is drawn afresh on them, app/browser/history_view.py); a test that writes
    IndexedDB behind the app's back announces it the same way."""
    agent.page.evaluate(ANNOUNCE_JS, stage)


def seed_conversations(agent, stage: str, texts: list[str], *, start_ms: int = 1_780_000_000_000,
                       tokens: list[int] | None = None) -> list[str]:
    """Write archived conversations straight into IndexedDB (another connection of the page, announced
    as another tab's write: ``announce_written``); their updatedAt increases with the index; ``tokens``:
    each one's output tokens (default 1). Returns their task ids, oldest first."""
    outputs = tokens or [1] * len(texts)
    ids = run_py(agent.page, f"""
        from app.browser.history_view import _install_graphemes
        from app.history import HistoryService
        from app.ports import TurnEnded
        clock_ms = [{start_ms}]
        def clock():
            clock_ms[0] += 1000
            return clock_ms[0]
        svc = HistoryService(IndexedDbBackend(), clock=clock, prepare=_install_graphemes)
        ids = []
        for i, text in enumerate({json.dumps(texts, ensure_ascii=False)}):
            msgs = [{{"role": "user", "id": f"u{{i}}", "content": [{{"type": "text", "text": text}}]}},
                    {{"role": "assistant", "id": f"a{{i}}", "content": [{{"type": "text", "text": "ok " + text}}]}}]
            out = {json.dumps(outputs)}[i]
            await svc.record_turn(TurnEnded(stage_id={stage!r}, messages=msgs, base=[], at=i, model="demo",
                                            usage={{"inputTokens": i, "outputTokens": out, "totalTokens": i + out}},
                                            duration_ms=10, conversation_id=None, message_id=f"a{{i}}"), i)
            ids.append(await svc.archive({stage!r}, msgs, i))
        json.dumps(ids)
    """)
    announce_written(agent, stage)
    return ids


def item_ids(agent) -> list[str]:
    return agent.page.eval_on_selector_all("[data-testid=history-item]", "els => els.map(e => e.dataset.taskId)")


def show_course(agent, course: str) -> None:
    """Switch the booted page to ``course`` in place, as Back/Forward does (no boot: app/browser/page.py
    ``_on_popstate``), the history drawer closed first; the URL's other parameters (``lang``,
    ``delay``: read at boot) stay, so a reload boots as before on this course."""
    if agent.testid("history-drawer").is_visible():
        agent.testid("history-close").click()
    agent.page.evaluate("""id => {
      const url = new URL(location.href);
      url.searchParams.set('course', id);
      history.pushState({}, '', url.href);
      dispatchEvent(new PopStateEvent('popstate'));
    }""", course)
    agent.page.wait_for_function("id => document.querySelector('[data-testid=course-select]').value === id", arg=course)


@contextmanager
def case(name: str):
    """One case of a combined test (each in its own course): a failure inside names the case."""
    try:
        yield
    except Exception as error:
        raise AssertionError(f"case {name!r}: {type(error).__name__}: {error}") from error


def user_texts(agent, course: str) -> list[str]:
    stored = agent.stored()["state"]["threads"][course]["messages"]
    return [m["content"][0]["text"] for m in stored if m["role"] == "user"]


# -- cases of test_history_in_two_tabs, one course each ---------------------------------------------
def archive_two_turns_then_start_anew(agent, course: str) -> None:
    """Archive, reload, resume and continue (1/2): two turns with stats and meta, then New conversation."""
    agent.send("first question about <b>gradients</b>")
    agent.send("a follow-up")
    stats = agent.testid("conversation-stats")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=conversation-stats]').dataset.turns === '2'")
    assert int(stats.get_attribute("data-total-tokens")) > 20 and int(stats.get_attribute("data-mean-duration-ms")) >= 0
    meta = agent.testid("turn-meta")
    assert meta.count() == 2 and meta.first.get_attribute("data-model") == "demo"
    assert int(meta.first.get_attribute("data-total-tokens")) > 10
    agent.testid("agent-new-conversation").click()
    assert agent.messages().count() == 0


def after_reload_resume_the_archived_one_and_continue(agent, course: str) -> None:
    """Archive, reload, resume and continue (2/2), after a reload of the page."""
    listing = open_list(agent)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    item = agent.testid("history-item")
    assert agent.testid("history-title").first.inner_text() == "first question about <b>gradients</b>"
    assert agent.page.locator("[data-testid=history-title] b").count() == 0  # inert text
    assert agent.testid("history-time").first.get_attribute("datetime").endswith("Z")
    assert listing.get_attribute("data-has-more") == "false"
    item.first.click()
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 4")
    stored = agent.stored()["state"]["threads"][course]["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    agent.send("third turn")
    assert len(agent.stored()["state"]["threads"][course]["messages"]) == 6
    agent.page.wait_for_function("() => document.querySelector('[data-testid=conversation-stats]').dataset.turns === '3'")
    open_list(agent)
    agent.page.wait_for_selector("[data-testid=history-item][data-current=true]")
    assert agent.page.evaluate("() => document.querySelector('[data-testid=history-list]').dataset.total") == "1"


UNANSWERED_PERSIST = """(() => {
  window.persistAsked = 0;
  StorageManager.prototype.persist = function () { window.persistAsked += 1; return new Promise(() => {}); };
})()"""
"""``navigator.storage.persist()`` as Firefox answers it: a permission prompt that stays pending until
the person answers, here never (an init script of the test's browser context)."""


def new_conversation_with_working_history_archives_without_asking(agent) -> None:
    """New conversation archives without asking; the page's request for persistent storage (at the
    first archive, on another course) is still unanswered (``UNANSWERED_PERSIST``), and no write waits
    for it: the next conversation's turn ends with its record written, the archived one is listed
    and resumes (DESIGN.md §9)."""
    agent.send("keep me in history")
    agent.testid("agent-new-conversation").click()
    assert agent.messages().count() == 0 and agent.testid("discard-confirm").is_hidden()
    agent.send("a conversation after the prompt")
    expect(agent.testid("conversation-stats")).to_have_attribute("data-turns", "1")  # its record is written
    expect(agent.testid("turn-meta")).to_have_attribute("data-model", "demo")
    assert agent.page.evaluate("() => window.persistAsked") == 1  # asked once, at the page's first archive
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '2'")
    archived = agent.page.locator("[data-testid=history-item][data-current=false]")
    expect(archived).to_have_count(1)
    expect(archived.locator("[data-testid=history-title]")).to_have_text("keep me in history")
    archived.click()  # resumed: its thread is the course's again
    agent.page.wait_for_function("""() => JSON.parse(localStorage.getItem('maic-agent-threads'))
      .state.threads['h-archive-no-ask'].messages[0].content[0].text === 'keep me in history'""")
    assert user_texts(agent, "h-archive-no-ask") == ["keep me in history"] and agent.messages().count() == 2


def a_turn_ends_with_slow_indexeddb_commits(agent) -> None:
    """A reload right after a turn ends keeps its meta (1/2): idle (data-running=false) comes only once
    the turn's history record is written, so a reload at once finds the turn's usage, model and
    duration (DESIGN.md §9)."""
    agent.page.evaluate("""() => {
      const adapter = window.agentbarIndexedDbAdapter, write = adapter.write.bind(adapter);
      adapter.write = async (ops) => { await new Promise((r) => setTimeout(r, 700)); return write(ops); };
    }""")
    agent.send("count my tokens")  # waits for data-running=false; the reload follows at once


def after_reload_the_turn_meta_is_there(agent) -> None:
    """A reload right after a turn ends keeps its meta (2/2): the page booted on this course. The turn
    ran after the page's request for persistent storage, which was never answered."""
    stats = agent.testid("conversation-stats")
    assert stats.get_attribute("data-turns") == "1" and int(stats.get_attribute("data-total-tokens")) > 10
    meta = agent.testid("turn-meta")
    assert meta.count() == 1 and meta.get_attribute("data-model") == "demo"
    assert int(meta.get_attribute("data-duration-ms")) > 0


def paging_past_ten_with_items_arriving_from_another_tab_while_open(agent, other, course: str) -> None:
    seed_conversations(agent, course, [f"conversation {i:02d}" for i in range(23)])
    listing = open_first_page(agent)
    assert listing.get_attribute("data-total") == "23" and listing.get_attribute("data-has-more") == "true"
    assert agent.testid("history-title").first.inner_text() == "conversation 22"
    # Another tab archives a conversation of the same course while this list is open.
    other.open(course=course, delay=SLOW_DELAY_MS, lang=SLOW_LANG)  # the slow tab's boot (streaming cases, search)
    wait_history(other)
    other.send("arrived meanwhile")
    other.testid("agent-new-conversation").click()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '24'")
    assert agent.testid("history-title").first.inner_text() == "arrived meanwhile"
    for _ in range(4):
        agent.page.eval_on_selector("[data-testid=history-list]", "el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
        agent.page.wait_for_timeout(300)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.hasMore === 'false'")
    ids = item_ids(agent)
    assert len(ids) == 24 and len(set(ids)) == 24
    titles = agent.testid("history-title").all_inner_texts()
    assert titles[1:] == [f"conversation {i:02d}" for i in range(22, -1, -1)]


FOCUSED_ITEM = ("() => [document.activeElement.dataset.testid || document.activeElement.tagName,"
                " document.activeElement.dataset.taskId]")


def delete_and_undo_and_keyboard(agent, other, course: str) -> None:
    ids = seed_conversations(agent, course, ["alpha", "beta", "gamma"])
    open_list(other)
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 3")
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 3")
    agent.page.locator(f"[data-testid=history-item][data-task-id={ids[1]}] [data-testid=history-delete]").click()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '2'")
    assert ids[1] not in item_ids(agent)
    # focus goes to the next item, not to the page's body with the removed item's button
    assert agent.page.evaluate(FOCUSED_ITEM) == ["history-item", ids[0]]
    said = ("k => { const s = document.querySelector('[data-testid=history-status]');"
            " return s.dataset.kind === k && s.dataset.result === 'ok' && s.textContent.trim() !== ''; }")
    agent.page.wait_for_function(said, arg="delete")  # the delete is said, not only shown by Undo
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 2")
    undo = agent.testid("history-undo")
    assert undo.is_visible()
    undo.focus()
    agent.page.keyboard.press("Enter")  # by keyboard: focus goes to the restored item, not to the page's body
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '3'")
    agent.page.wait_for_function(said, arg="undo")
    assert item_ids(agent) == ids[::-1]
    agent.page.wait_for_function("id => document.activeElement.dataset.taskId === id", arg=ids[1])
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 3")
    # Keyboard: focus is on the first item; ArrowDown moves, Delete deletes, Escape closes.
    first = agent.testid("history-item").first
    first.focus()
    agent.page.keyboard.press("ArrowDown")
    assert agent.page.evaluate("() => document.activeElement.dataset.taskId") == ids[1]
    agent.page.keyboard.press("Delete")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '2'")
    assert agent.page.evaluate(FOCUSED_ITEM) == ["history-item", ids[0]]
    # Tab to Undo and let its UNDO_MS run out there: focus goes to the item at the deleted place,
    # not to the page's body (where Escape would no longer close the drawer)
    for _ in range(20):
        if agent.page.evaluate("() => document.activeElement.dataset.testid") == "history-undo":
            break
        agent.page.keyboard.press("Tab")
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "history-undo"
    undo.wait_for(state="hidden", timeout=UNDO_MS + 10_000)
    assert agent.page.evaluate(FOCUSED_ITEM) == ["history-item", ids[0]]
    # the last item deleted with the mouse, Undo focused until it goes: focus goes to the previous item
    agent.page.locator(f"[data-testid=history-item][data-task-id={ids[0]}] [data-testid=history-delete]").click()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    undo.focus()
    undo.wait_for(state="hidden", timeout=UNDO_MS + 10_000)
    assert agent.page.evaluate(FOCUSED_ITEM) == ["history-item", ids[2]]
    agent.page.keyboard.press("Escape")
    assert agent.testid("history-drawer").is_hidden()
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "history-open"
    agent.page.keyboard.press("Enter")
    agent.page.wait_for_selector("[data-testid=history-drawer]:not([hidden])")
    agent.page.wait_for_function("() => document.activeElement.dataset.testid === 'history-item'")
    agent.page.keyboard.press("Enter")  # resumes the newest (gamma)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    assert agent.messages().first.inner_text() == "gamma"


def an_import_shows_in_the_open_list_at_once_with_its_title_cut_at_50_clusters(agent, course: str, tmp_path) -> None:
    seed_conversations(agent, course, [f"conversation {i:02d}" for i in range(14)])
    listing = open_first_page(agent)
    family = "👨‍👩‍👧‍👦"
    export = {"format": "agentbar-conversation", "version": 1,
              "meta": {"taskId": "task_20260101_abc123", "taskName": family * 70, "stageId": "another-course",
                       "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
                       "stats": {"credits": 0, "totalTokens": 7, "inputTokens": 3, "outputTokens": 4}},
              "messages": [{"role": "user", "id": "u1", "content": [{"type": "text", "text": "imported question"}]},
                           {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "imported answer"}]}],
              "turns": []}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    assert agent.testid("history-status").get_attribute("data-result") is None  # no earlier outcome to mistake
    agent.testid("import-json").set_input_files(str(path))
    agent.page.wait_for_selector("[data-testid=history-status][data-result=ok]")
    # older than every other conversation: the last of the list, drawn without closing it
    item = agent.page.locator("[data-testid=history-item][data-task-id=task_20260101_abc123]")
    item.wait_for()
    assert listing.get_attribute("data-total") == "15"
    ids = item_ids(agent)
    assert ids[-1] == "task_20260101_abc123" and len(ids) == len(set(ids)) == 15
    assert item.locator("[data-testid=history-title]").inner_text() == family * 50 + "…"
    assert agent.page.evaluate("""() => { const el = document.querySelector('[data-task-id=task_20260101_abc123]');
      const box = el.getBoundingClientRect(), list = el.parentElement.getBoundingClientRect();
      return box.top >= list.top - 1 && box.bottom <= list.bottom + 1; }""")  # scrolled into view


def export_and_import_round_trip_and_a_bad_file_changes_nothing(agent, course: str, tmp_path) -> None:
    agent.send("export me “please” ```")
    agent.send("/regenerate scene-2 keep ```` ticks")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=conversation-stats]').dataset.turns === '2'")
    open_list(agent)
    open_file_actions(agent)
    with agent.page.expect_download() as info:
        agent.testid("export-json").click()
    download = info.value
    task_id = download.suggested_filename.removesuffix(".json")
    exported = (tmp_path / "a.json")
    download.save_as(exported)
    document = json.loads(exported.read_text())
    assert document["format"] == "agentbar-conversation" and document["meta"]["taskId"] == task_id
    assert document["version"] == 2 and document["shown"] == {}  # a chain: each message with its parentId
    assert [{k: v for k, v in m.items() if k != "parentId"} for m in document["messages"]] == \
        agent.stored()["state"]["threads"][course]["messages"]
    assert [t["turnId"] for t in document["turns"]] == [1, 2]
    with agent.page.expect_download() as info:
        agent.testid("export-markdown").click()
    md_path = tmp_path / "a.md"
    info.value.save_as(md_path)
    assert info.value.suggested_filename == f"{task_id}.md"
    markdown = md_path.read_text()
    assert "export me “please” ```" in markdown
    assert "`````json\n" in markdown and "keep ```` ticks" in markdown  # the fence is longer than the run inside
    # Archive, delete, then import the file back: the same export comes out.
    agent.testid("history-close").click()
    agent.testid("agent-new-conversation").click()
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    agent.testid("history-delete").first.click()
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '0'")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format":"agentbar-conversation","version":3}')
    assert agent.testid("history-status").get_attribute("data-result") != "error"  # no earlier outcome to mistake
    agent.testid("import-json").set_input_files(str(bad))
    agent.page.wait_for_selector("[data-testid=history-status][data-result=error]")
    assert agent.page.evaluate("() => document.querySelector('[data-testid=history-list]').dataset.total") == "0"
    agent.testid("import-json").set_input_files(str(exported))
    agent.page.wait_for_selector("[data-testid=history-status][data-result=ok]")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    agent.testid("history-item").first.click()
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 4")
    open_list(agent)
    open_file_actions(agent)
    with agent.page.expect_download() as info:
        agent.testid("export-json").click()
    again = tmp_path / "b.json"
    info.value.save_as(again)
    assert again.read_text() == exported.read_text()
    # A version-2 file with a fork (DESIGN.md §17): resumed, it draws the branch its file shows, not the newest.
    messages = [{**document["messages"][0], "content": [{"type": "text", "text": "a forked question"}]},
                *document["messages"][1:]]
    forked = {**document, "meta": {**document["meta"], "taskId": "task_20260101_fork01", "taskName": "forked"},
              "messages": messages + [
                  {**messages[2], "id": "fork-u", "content": [{"type": "text", "text": "the other wording"}]},
                  {**messages[3], "id": "fork-a", "parentId": "fork-u",
                   "content": [{"type": "text", "text": "the other answer"}]}],
              "shown": {messages[1]["id"]: messages[2]["id"]}}
    fork_path = tmp_path / "forked.json"
    fork_path.write_text(json.dumps(forked, ensure_ascii=False), encoding="utf-8")
    agent.testid("import-json").set_input_files(str(fork_path))
    fork_item = agent.page.locator("[data-testid=history-item][data-task-id=task_20260101_fork01]")
    fork_item.wait_for()
    fork_item.click()
    agent.page.wait_for_function("() => [...document.querySelectorAll('[data-testid=agent-message]')]"
                                 ".some(m => m.innerText.includes('a forked question'))")
    drawn = " ".join(agent.messages().all_inner_texts())
    assert agent.messages().count() == 4 and "the other" not in drawn and "keep ```` ticks" in drawn, drawn
    open_list(agent)  # its Markdown prints that branch and says one other is left out
    open_file_actions(agent)
    with agent.page.expect_download() as info:
        agent.testid("export-markdown").click()
    fork_md = tmp_path / "forked.md"
    info.value.save_as(fork_md)
    markdown = fork_md.read_text(encoding="utf-8")
    assert "a forked question" in markdown and "the other" not in markdown.replace(
        Translator("en-US")("history.markdownLeftOut", count=1), "")
    assert Translator("en-US")("history.markdownLeftOut", count=1) in markdown


def resume_while_a_reply_streams_says_why_nothing_changed(slow) -> None:
    slow.send("an earlier conversation")
    slow.testid("agent-new-conversation").click()
    slow.send("a question whose reply is still coming", wait=False)
    slow.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    open_list(slow)
    slow.page.wait_for_selector("[data-testid=history-item]:not([data-current=true])")
    slow.page.locator("[data-testid=history-item]:not([data-current=true])").first.click()
    status = slow.testid("history-status")
    slow.page.wait_for_function("() => document.querySelector('[data-testid=history-status]').dataset.kind === 'resume'")
    assert status.inner_text().strip()
    assert slow.testid("agent-panel").get_attribute("data-running") == "true"
    assert "still coming" in slow.messages().first.inner_text()  # the active thread was not replaced
    slow.testid("agent-stop").click()
    slow.wait_idle()


def dismiss_turn_kept(slow) -> None:
    """Dismiss the ``history-turn-kept`` notice, so that the next case's one is its own."""
    slow.page.locator("[data-testid=agent-notice-dismiss][data-code=history-turn-kept]").click()
    slow.page.wait_for_selector("[data-testid=agent-notice][data-code=history-turn-kept]", state="detached")


def a_reply_streaming_while_another_tab_starts_a_new_conversation_stays_with_its_own(slow, other, course: str) -> None:
    """The slow tab's turn runs while the other tab starts a new conversation on the same course: the
    reply is kept in history with the conversation it continues (DESIGN.md §9), not made the start of
    the other tab's new one."""
    slow.send("alpha question")
    show_course(other, course)
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    slow.send("beta question", wait=False)
    slow.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    other.testid("agent-new-conversation").click()
    assert other.messages().count() == 0
    slow.wait_idle()
    slow.page.wait_for_selector("[data-testid=agent-notice][data-code=history-turn-kept]")
    assert slow.messages().count() == 0  # the slow tab follows the course's new (empty) conversation
    assert course not in ((slow.stored() or {}).get("state", {}).get("threads", {}))
    open_list(slow)
    slow.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    assert slow.testid("history-title").first.inner_text() == "alpha question"
    slow.testid("history-item").first.click()
    slow.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 4")
    assert user_texts(slow, course) == ["alpha question", "beta question"]
    slow.page.wait_for_function("() => document.querySelector('[data-testid=conversation-stats]').dataset.turns === '2'")


def a_first_reply_streaming_while_another_tab_resumes_an_old_conversation_becomes_its_own(slow, other, course: str) -> None:
    """Nothing was stored to build on (a first turn): the other tab's history message tells the slow
    tab that the course's conversation changed, so the reply is not appended to the resumed one."""
    slow.send("old one")
    slow.testid("agent-new-conversation").click()
    show_course(other, course)
    slow.send("fresh question", wait=False)
    slow.page.wait_for_function("() => document.querySelector('[data-testid=agent-panel]').dataset.running === 'true'")
    open_list(other)
    other.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '1'")
    other.testid("history-item").first.click()
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    slow.wait_idle()
    slow.page.wait_for_selector("[data-testid=agent-notice][data-code=history-turn-kept]")
    assert user_texts(slow, course) == ["old one"]
    open_list(slow)
    slow.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '2'")
    assert sorted(slow.testid("history-title").all_inner_texts()) == ["fresh question", "old one"]


CLOSED_LIST = """() => {
  const drawer = document.querySelector('[data-testid=history-drawer]');
  return { hidden: drawer.hidden, visibility: getComputedStyle(drawer).visibility,
           ids: [...drawer.querySelectorAll('[data-testid=history-item]')].map((e) => e.dataset.taskId),
           titles: [...drawer.querySelectorAll('[data-testid=history-title]')].map((e) => e.textContent),
           total: drawer.querySelector('[data-testid=history-list]').dataset.total };
}"""
OPEN_AT_ONCE = """() => {
  document.querySelector('[data-testid=history-open]').click();  // what shows in the click's own task
  const drawer = document.querySelector('[data-testid=history-drawer]');
  return { hidden: drawer.hidden, focused: document.activeElement.dataset.taskId || null,
           titles: [...drawer.querySelectorAll('[data-testid=history-title]')].map((e) => e.textContent) };
}"""


def wait_closed_titles(agent, titles: list[str]) -> None:
    """Wait until the closed drawer's list (drawn ahead) holds exactly ``titles``, its total counting them."""
    agent.page.wait_for_function(f"""() => {{ const s = ({CLOSED_LIST})();
      return s.hidden && s.total === '{len(titles)}' && JSON.stringify(s.titles) === {json.dumps(json.dumps(titles, separators=(",", ":")))}; }}""")


def the_list_drawn_ahead_follows_every_write_and_stays_out_of_reach_while_closed(agent, other, course: str,
                                                                                 tmp_path) -> None:
    """The shown course's first page is drawn ahead in the closed drawer (DESIGN.md §14: opening costs
    about a raw read): it is drawn afresh after this tab's write, another tab's write and another tab's
    delete, so a click shows the current list in its own task; this tab's turn of a conversation it lists
    is drawn from what the turn wrote, with no read of the list (issue #33); closed, the drawer is reachable neither
    by Tab nor by focus() nor in the accessibility tree."""
    agent.send("kept here")
    wait_closed_titles(agent, ["kept here"])  # a new conversation: the first page read again
    tokens = "() => document.querySelector('[data-testid=history-drawer] [data-testid=history-item]').dataset.totalTokens"
    before = int(agent.page.evaluate(tokens))
    agent.page.evaluate("""() => { window.__listReads = 0;  // the list's reads: its page with its total, its pins
      const adapter = window.agentbarIndexedDbAdapter;
      for (const name of ['query', 'queryCount']) { const f = adapter[name];
        adapter[name] = function (...args) { if (args[0] === 'conversations') window.__listReads++; return f.apply(this, args); }; } }""")
    agent.send("and once more")  # a turn of the listed conversation: drawn from what it wrote (issue #33)
    agent.page.wait_for_function(f"() => Number(({tokens})()) > {before}")
    wait_closed_titles(agent, ["kept here"])
    assert agent.page.evaluate("() => window.__listReads") == 0
    agent.testid("agent-new-conversation").click()  # this tab's write (archive)
    wait_closed_titles(agent, ["kept here"])
    show_course(other, course)
    open_list(other)
    export = {"format": "agentbar-conversation", "version": 1,
              "meta": {"taskId": "task_20260101_ahead1", "taskName": "kept in the other tab", "stageId": "elsewhere",
                       "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
                       "stats": {"credits": 0, "totalTokens": 7, "inputTokens": 3, "outputTokens": 4}},
              "messages": [{"role": "user", "id": "u1", "content": [{"type": "text", "text": "kept in the other tab"}]},
                           {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "ok"}]}],
              "turns": []}
    path = tmp_path / "ahead.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    other.testid("import-json").set_input_files(str(path))  # another tab's write (lands in its shown course)
    wait_closed_titles(agent, ["kept here", "kept in the other tab"])
    other.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 2")
    other.page.locator("[data-testid=history-item][data-task-id=task_20260101_ahead1] [data-testid=history-delete]").click()
    wait_closed_titles(agent, ["kept here"])  # another tab's delete
    closed = agent.page.evaluate(CLOSED_LIST)
    assert closed["visibility"] == "hidden" and len(closed["ids"]) == 1
    # closed: not in the accessibility tree, not reachable by Tab, not focusable
    snapshot = agent.page.locator("body").aria_snapshot()
    assert "kept here" not in snapshot and "dialog" not in snapshot
    assert agent.page.get_by_role("dialog").count() == 0
    agent.testid("history-open").focus()
    for _ in range(12):
        agent.page.keyboard.press("Tab")
        assert not agent.page.evaluate(
            "() => document.querySelector('[data-testid=history-drawer]').contains(document.activeElement)")
    assert agent.page.evaluate("""() => { const item = document.querySelector('[data-testid=history-item]');
      item.focus(); return document.activeElement !== item; }""")
    shown = agent.page.evaluate(OPEN_AT_ONCE)
    assert shown == {"hidden": False, "focused": closed["ids"][0], "titles": ["kept here"]}
    assert agent.page.get_by_role("dialog").count() == 1
    agent.page.keyboard.press("Escape")
    assert agent.page.evaluate("() => document.activeElement.dataset.testid") == "history-open"


ROWS_IN_VIEW = """l => [...l.querySelectorAll('[data-testid=history-item]')].filter(i => {
  const box = i.getBoundingClientRect(), clip = l.getBoundingClientRect();
  return box.top >= clip.top - 0.5 && box.bottom <= clip.bottom + 0.5; }).length"""
"""How many of the list's items are wholly inside its box."""


PLACEHOLDER_ROOM = """i => {
  const s = getComputedStyle(i), pen = document.createElement('canvas').getContext('2d');
  pen.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  return [pen.measureText(i.placeholder).width, i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];
}"""


def the_list_has_the_drawers_room_and_the_file_actions_wait_behind_one_disclosure(agent, course: str) -> None:
    """At 1280 x 800 the open list shows at least eight conversations (the file actions below it left it
    ~118 px: three rows); the disclosure is reached and opened by keyboard, and every file action in it
    is then in view and reachable; axe finds nothing serious with it closed or open."""
    size = agent.page.viewport_size
    agent.page.set_viewport_size({"width": 1280, "height": 800})
    try:
        seed_conversations(agent, course, [f"conversation {i:02d}" for i in range(14)])
        listing = open_first_page(agent)
        more = agent.testid("history-more")
        if more.evaluate("d => d.open"):
            agent.testid("history-more-toggle").click()
        expect(more).to_have_js_property("open", False)
        assert listing.evaluate(ROWS_IN_VIEW) >= 8, listing.evaluate("l => l.clientHeight")
        placeholder, room = agent.testid("history-search").evaluate(PLACEHOLDER_ROOM)
        assert placeholder <= room, f"the search field's placeholder is cut: {placeholder:.0f} px in {room:.0f} px"
        for testid in ("export-markdown", "export-json", "history-print", "backup-export"):
            expect(agent.testid(testid)).to_be_hidden()
        agent.assert_accessible("drawer, file actions closed")
        agent.testid("history-more-toggle").focus()
        agent.page.keyboard.press("Enter")
        expect(more).to_have_js_property("open", True)
        for testid in ("export-markdown", "export-json", "history-print", "backup-export"):
            expect(agent.testid(testid)).to_be_visible()
        for testid in ("import-json", "import-chatgpt", "backup-import"):
            expect(agent.testid(testid).locator("xpath=..")).to_be_visible()
        assert listing.evaluate(ROWS_IN_VIEW) >= 3  # open, the actions take room from the list, not the window
        assert agent.testid("history-drawer").evaluate("d => d.scrollHeight <= d.clientHeight + 1")
        agent.assert_accessible("drawer, file actions open")
        agent.page.keyboard.press("Enter")  # and closed again from the keyboard
        expect(more).to_have_js_property("open", False)
        agent.testid("history-close").click()
    finally:
        agent.page.set_viewport_size(size)


def sort_and_range_apply_to_the_plain_list_and_page_on_the_cursor(agent, course: str) -> None:
    outputs = [100 + (i * 7) % 12 for i in range(12)]  # no order of time: most tokens differs from newest
    old = seed_conversations(agent, course, [f"old {i:02d}" for i in range(12)], tokens=outputs)
    now = agent.page.evaluate("() => Date.now()")
    recent = seed_conversations(agent, course, ["recent a", "recent b"], start_ms=now - 3 * 86_400_000)
    listing = open_first_page(agent)

    def scrolled_ids() -> list[str]:
        for _ in range(3):
            agent.page.eval_on_selector("[data-testid=history-list]", "el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
            agent.page.wait_for_timeout(250)
        agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.hasMore === 'false'")
        return item_ids(agent)

    assert scrolled_ids() == (old + recent)[::-1]
    agent.testid("history-sort").select_option("oldest")
    agent.page.wait_for_function(f"() => document.querySelector('[data-testid=history-item]').dataset.taskId === {old[0]!r}")
    assert scrolled_ids() == old + recent
    agent.testid("history-sort").select_option("tokens")
    by_tokens = [old[i] for i in sorted(range(12), key=lambda i: (-(i + outputs[i]), -i))]  # ties: newest first
    agent.page.wait_for_function(f"() => document.querySelector('[data-testid=history-item]').dataset.taskId === {by_tokens[0]!r}")
    ids = scrolled_ids()
    assert ids[:12] == by_tokens and len(ids) == len(set(ids)) == 14
    tokens = agent.page.eval_on_selector_all("[data-testid=history-item]", "els => els.map(e => +e.dataset.totalTokens)")
    assert tokens == sorted(tokens, reverse=True)
    agent.testid("history-range").select_option("7d")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 2")
    assert set(item_ids(agent)) == set(recent) and listing.get_attribute("data-total") == "2"
    agent.testid("history-sort").select_option("newest")
    agent.page.wait_for_function(f"() => document.querySelector('[data-testid=history-item]').dataset.taskId === {recent[1]!r}")
    assert item_ids(agent) == recent[::-1] and listing.get_attribute("data-has-more") == "false"
    agent.testid("history-range").select_option("1d")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 0")
    assert listing.get_attribute("data-total") == "0"


def search_english_and_chinese_with_marked_snippets_sort_and_range(agent, course: str) -> None:
    """On a page in zh-CN; the drawer's search, sort and range stay set: its tab's last case."""
    seed_conversations(agent, course, ["我们今天讨论机器学习的基本概念", "Deep LEARNING for 学习 fans", "nothing here"])
    open_list(agent)
    agent.testid("history-search").fill("学习")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-snippet] mark').length === 2")
    marks = agent.page.eval_on_selector_all("[data-testid=history-snippet] mark", "els => els.map(e => e.textContent)")
    assert marks == ["学习", "学习"]
    assert agent.testid("history-title").all_inner_texts() == ["Deep LEARNING for 学习 fans", "我们今天讨论机器学习的基本概念"]
    agent.testid("history-sort").select_option("oldest")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-title]').textContent.startsWith('我们')")
    agent.testid("history-search").fill("learning")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 1")
    assert agent.page.locator("[data-testid=history-snippet] mark").inner_text() == "LEARNING"
    agent.testid("history-range").select_option("1d")  # seeded in 2026-05: older than a day
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 0")
    empty = agent.testid("history-empty")
    expect(empty).to_have_attribute("data-reason", "no-match")
    expect(empty).to_have_text(Translator("zh-CN")("history.noResults"))
    agent.testid("history-range").select_option("all")
    agent.testid("history-search").fill("")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 3")
    expect(empty).to_be_hidden()
    # a search with no hit while an action's outcome holds history-status still says so under the list
    agent.testid("history-status").evaluate("s => { s.dataset.kind = 'import'; s.textContent = 'imported'; }")
    agent.testid("history-search").fill("zzzznotthere")
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 0")
    expect(empty).to_be_visible()
    expect(empty).to_have_attribute("data-reason", "no-match")
    expect(empty).to_have_text(Translator("zh-CN")("history.noResults"))


SLOW_DELAY_MS = 150
"""The slow tab's streamed-token delay: its replies are still coming while the other tab acts."""
SLOW_LANG = "zh-CN"
"""The slow tab's locale (read at boot, like the delay): the search case runs there in Chinese."""


def test_history_in_two_tabs_one_course_per_case(agent, second_agent, tmp_path):
    """Archive, reload, resume and continue; New conversation archiving; a reload right after a turn;
    paging, delete/undo and keyboard with a second tab; import into the open list; export/import round
    trip; resume while streaming; replies streaming while the other tab starts or resumes a
    conversation; sort and range; search in Chinese; all with ``navigator.storage.persist()`` never
    answered (``UNANSWERED_PERSIST``). One course per case, switched in place (no
    boot); three boots in all: ``agent`` (delay 0, en-US) and its one reload, and ``slow``
    (``second_agent``, delay ``SLOW_DELAY_MS``, lang ``SLOW_LANG``). The sort and range case and
    the search case come last of the history cases on their tabs: the drawer's search, sort and range
    stay set. Then the slow tab runs test_ui's Chinese cases (placeholder scenes, Escape during slow
    replies) and test_checkpoints' Chinese slides."""
    slow = second_agent
    agent.page.context.add_init_script(UNANSWERED_PERSIST)  # every case runs with the prompt unanswered
    agent.open(course="intro-ml")
    assert wait_history(agent) == "ready"
    with case("archive, reload, resume and continue: before the reload"):
        archive_two_turns_then_start_anew(agent, "intro-ml")
    with case("new conversation with working history archives without asking"):
        show_course(agent, "h-archive-no-ask")
        new_conversation_with_working_history_archives_without_asking(agent)
    with case("a reload right after a turn ends: the turn"):
        show_course(agent, "h-reload-meta")
        wait_history(agent)
        a_turn_ends_with_slow_indexeddb_commits(agent)
    agent.reload()  # boots on h-reload-meta (the URL's course)
    assert wait_history(agent) == "ready"
    with case("a reload right after a turn ends keeps its meta even with slow IndexedDB commits"):
        after_reload_the_turn_meta_is_there(agent)
    with case("archive, reload, resume and continue: after the reload"):
        show_course(agent, "intro-ml")
        after_reload_resume_the_archived_one_and_continue(agent, "intro-ml")
    with case("paging past ten with items arriving from another tab while open"):
        show_course(agent, "h-paging")
        paging_past_ten_with_items_arriving_from_another_tab_while_open(agent, slow, "h-paging")
    with case("delete and undo and keyboard"):
        show_course(agent, "h-delete")
        show_course(slow, "h-delete")
        delete_and_undo_and_keyboard(agent, slow, "h-delete")
    with case("the list drawn ahead follows every write and stays out of reach while closed"):
        show_course(agent, "h-ahead")
        the_list_drawn_ahead_follows_every_write_and_stays_out_of_reach_while_closed(agent, slow, "h-ahead", tmp_path)
    with case("an import shows in the open list at once with its title cut at 50 clusters"):
        show_course(agent, "h-import-open")
        an_import_shows_in_the_open_list_at_once_with_its_title_cut_at_50_clusters(agent, "h-import-open", tmp_path)
    with case("export and import round trip and a bad file changes nothing"):
        show_course(agent, "linear-algebra")
        export_and_import_round_trip_and_a_bad_file_changes_nothing(agent, "linear-algebra", tmp_path)
    with case("resume while a reply streams says why nothing changed"):
        show_course(slow, "h-resume-busy")
        resume_while_a_reply_streams_says_why_nothing_changed(slow)
    with case("a reply streaming while another tab starts a new conversation stays with its own"):
        show_course(slow, "h-kept-new")
        a_reply_streaming_while_another_tab_starts_a_new_conversation_stays_with_its_own(slow, agent, "h-kept-new")
        dismiss_turn_kept(slow)
    with case("a first reply streaming while another tab resumes an old conversation becomes its own"):
        show_course(slow, "h-kept-resume")
        a_first_reply_streaming_while_another_tab_resumes_an_old_conversation_becomes_its_own(slow, agent, "h-kept-resume")
    with case("the list has the drawer's room and the file actions wait behind one disclosure"):
        show_course(agent, "room-1280")
        the_list_has_the_drawers_room_and_the_file_actions_wait_behind_one_disclosure(agent, "room-1280")
    with case("sort and range apply to the plain list and page on the cursor"):
        show_course(agent, "h-sort")
        sort_and_range_apply_to_the_plain_list_and_page_on_the_cursor(agent, "h-sort")
    with case("search English and Chinese with marked snippets, sort and range (zh-CN)"):
        show_course(slow, "h-search-zh")
        search_english_and_chinese_with_marked_snippets_sort_and_range(slow, "h-search-zh")

    # The slow Chinese tab's boot serves the cases of test_ui and test_checkpoints that need one (both
    # lang and delay are read at boot), each in a course of its own.
    from tests.e2e.test_checkpoints import SLIDE_VIEWPORT, assert_no_slide_text_overflows
    from tests.e2e.test_ui import (
        escape_stops_the_reply_only_outside_ime_composition_and_the_course_picker,
        placeholder_scenes_are_localised_and_demo_scenes_stay_as_written)

    with case("placeholder scenes are localised and demo scenes stay as written (zh-CN)"):
        show_course(slow, "my-course")
        placeholder_scenes_are_localised_and_demo_scenes_stay_as_written(slow)
    with case("Escape stops the reply only outside IME composition and the course picker"):
        show_course(slow, "u-escape")
        escape_stops_the_reply_only_outside_ime_composition_and_the_course_picker(slow)
    with case("no slide text overflows its box in Chinese, own and regenerated slides"):
        slow.page.set_viewport_size(SLIDE_VIEWPORT)
        show_course(slow, "poetry-tang")
        assert_no_slide_text_overflows(slow, "poetry-tang", "zh-CN", ["/regenerate scene-1 更亮，加一张图表，突出月光"])


def test_indexeddb_blocked_leaves_the_core_working_with_one_notice_and_so_does_a_reload(agent, second_agent):
    """Another tab keeps an older version of the database open and never lets go: the app starts with
    history unavailable and says why (DESIGN.md §9), each feature once, and its turns are saved; so does
    a reload of it, whose open request the browser queues behind the first page's (still waiting) with
    no "blocked" event of its own (it once waited there for ever, the loading screen up). New
    conversation then asks first, and the empty list says why: in use by another tab, as the notice
    says (not the browser's fault), logged as a warning, never as an error. Once the other tab lets
    go, history is taken up without a reload: the notice goes, and a conversation is kept again."""
    logged: list[tuple[str, str]] = []
    agent.page.on("console", lambda message: logged.append((message.type, message.text)))
    second_agent.page.goto(f"{second_agent.base_url}static/icons/agentbar.svg")
    second_agent.page.evaluate("""() => new Promise((resolve, reject) => {
      const request = indexedDB.open('agentbar', 5);  // older than Dexie's 10 for version 1, never closed
      request.onsuccess = () => { window.held = request.result; resolve(); };
      request.onerror = () => reject(request.error);
    })""")
    agent.open(course="intro-ml")
    assert wait_history(agent) == "unavailable:blocked"
    agent.send("still works")
    agent.send("and again")
    codes = agent.page.eval_on_selector_all("[data-testid=agent-notice]", "els => els.map(e => e.dataset.code)")
    assert sorted(codes) == ["checkpoint-unavailable", "history-blocked"]  # each feature says so once
    assert len(agent.stored()["state"]["threads"]["intro-ml"]["messages"]) == 4
    agent.reload()
    assert wait_history(agent) == "unavailable:blocked"
    agent.page.wait_for_selector("[data-testid=agent-notice][data-code=history-blocked]")
    agent.send("kept while history is in use elsewhere")
    assert "kept while history is in use elsewhere" in agent.stored_raw()
    agent.testid("agent-new-conversation").click()  # history cannot keep it: asked first (DESIGN.md §5)
    agent.testid("discard-confirm-yes").click()
    assert agent.messages().count() == 0 and agent.stored()["state"]["threads"].get("intro-ml") is None
    open_list(agent)
    assert agent.testid("history-item").count() == 0
    expect(agent.testid("history-empty")).to_have_attribute("data-reason", "unavailable")  # said under the list
    expect(agent.testid("history-empty")).to_have_text(Translator("en-US")("notice.history-blocked"))
    said = [(kind, text) for kind, text in logged if "blocked" in text]
    assert said and all(kind == "warning" for kind, _ in said), said
    # the other tab lets go: history is taken up without a reload, its notice gone, the list drawn
    second_agent.page.evaluate("() => window.held.close()")
    agent.page.wait_for_function("() => document.documentElement.dataset.history === 'ready'")
    expect(agent.page.locator("[data-testid=agent-notice][data-code=history-blocked]")).to_be_hidden()
    expect(agent.testid("history-empty")).not_to_have_attribute("data-reason", "unavailable")
    agent.testid("history-close").click()
    agent.send("kept in history now")
    agent.testid("agent-new-conversation").click()  # history keeps it: nothing is asked
    expect(agent.testid("discard-confirm")).to_be_hidden()
    assert agent.messages().count() == 0
    open_list(agent)
    expect(agent.testid("history-item")).to_have_count(1)
