"""Edit, regenerate and the branch picker in Chromium, against the fake model server (DESIGN.md §17).

In an ar-SA page (right to left; test_model's Arabic page runs it, its second reload this case's
one reload), in a course of its own: a question edited (Escape first: nothing
changes), a reply regenerated, the picker moved back, and after the reload the same branch shown
at every fork (the picker drawn already when the app is ready); the model's request for the edit
held the shown path only. Then search: opening a
hit whose word lies only on a branch not shown shows that branch, in an archived conversation and
in the active one. Last, an editor left open while a reply runs cannot save until it ends. No
uncaught error in the page along the way.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.conftest import READY_TIMEOUT_MS
from tests.e2e.test_history import open_list, show_course
from tests.e2e.test_model import configure

COURSE = "s-branches"


def message(agent, role: str, index: int):
    """The ``index``-th shown message of ``role``."""
    return agent.page.locator(f"[data-testid=agent-message][data-role={role}]").nth(index)


def texts(agent) -> list[str]:
    return [t.strip() for t in agent.page.locator("[data-testid=agent-message]").all_inner_texts()]


def picker(node) -> tuple[str | None, str | None]:
    found = node.locator("[data-testid=branch-picker]")
    return found.get_attribute("data-index"), found.get_attribute("data-count")


def reload_counting_pickers_at_ready(tab) -> str:
    """Reload ``tab`` and return how many branch pickers it shows in the frame it says it is ready
    (``html[data-ready]``), as text; then wait until it is ready as ``AgentPage.reload`` does."""
    tab.page.reload()
    count = tab.page.wait_for_function(
        "() => document.documentElement.dataset.ready === 'true'"
        " && String(document.querySelectorAll('[data-testid=branch-picker]').length)",
        polling="raf", timeout=READY_TIMEOUT_MS).json_value()
    tab.wait_ready()
    return count


def edit_regenerate_and_the_picker_keep_the_branch_shown_across_a_reload(agent, server) -> None:
    """In a booted ar-SA page against the fake model ``server`` (any requests it saw before counted
    out), shown on ``COURSE`` first; it reloads the page once, on ``COURSE`` (module docstring)."""
    errors: list[str] = []  # any uncaught error in the page during the flow fails the case
    agent.page.on("pageerror", lambda error: errors.append(str(error)))
    agent.page.on("console", lambda line: errors.append(line.text) if line.type == "error" and (
        "Traceback" in line.text or "Error" in line.text) else None)
    agent.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    show_course(agent, COURSE)
    assert agent.page.evaluate("document.documentElement.dir") == "rtl"
    configure(agent, server)
    start = len(server.posts())
    agent.send("first question")
    agent.send("second question")
    assert agent.messages().count() == 4
    first, first_id = message(agent, "user", 0), message(agent, "user", 0).get_attribute("data-message-id")
    expect(first.locator("[data-testid=branch-picker]")).to_have_count(0)

    # Edit, then Escape: nothing changes.
    first.locator("[data-testid=message-edit]").click()
    field = agent.testid("message-edit-input")
    expect(field).to_be_focused()
    assert field.input_value() == "first question"
    field.fill("never sent")
    field.press("Escape")
    expect(field).to_have_count(0)
    expect(first.locator("[data-testid=message-edit]")).to_be_focused()
    assert agent.messages().count() == 4 and "never sent" not in " ".join(texts(agent))
    posts = len(server.posts())
    assert posts - start == 2  # the two questions: Escape sent nothing

    # Edit and save (Ctrl+Enter): a new question, answered, shown; its picker says 2/2.
    first.locator("[data-testid=message-edit]").click()
    field.fill("first question, edited")
    field.press("Control+Enter")
    agent.wait_idle()
    expect(agent.messages()).to_have_count(2)
    edited = message(agent, "user", 0)
    assert edited.get_attribute("data-message-id") != first_id
    expect(edited.locator("[data-testid=branch-picker]")).to_have_attribute("data-count", "2")
    assert picker(edited) == ("2", "2")
    edit_request = [m["content"] for m in server.posts()[posts]["body"]["messages"] if m["role"] != "system"]
    assert edit_request == ["first question, edited"]  # nothing of the other branch

    # Regenerate the reply: its picker says 2/2.
    message(agent, "assistant", 0).locator("[data-testid=message-regenerate]").click()
    agent.wait_idle()
    reply = message(agent, "assistant", 0)
    expect(reply.locator("[data-testid=branch-picker]")).to_have_attribute("data-index", "2")
    assert picker(reply) == ("2", "2") and agent.messages().count() == 2
    assert [m["content"] for m in server.posts()[-1]["body"]["messages"] if m["role"] != "system"] == [
        "first question, edited"]
    regenerated_id = reply.get_attribute("data-message-id")

    agent.assert_accessible("a question and a reply with pickers, right to left")

    # Right to left: "previous" sits on the right, "next" on the left.
    prev, next_ = edited.locator("[data-testid=branch-prev]"), edited.locator("[data-testid=branch-next]")
    assert prev.bounding_box()["x"] > next_.bounding_box()["x"]
    assert next_.is_disabled() and not prev.is_disabled()
    assert (prev.get_attribute("data-label"), next_.get_attribute("data-label")) == ("›", "‹")  # mirrored

    # The picker back (by keyboard): 1/2 shows the old path and what lay under it.
    prev.focus()
    agent.page.keyboard.press("Enter")
    expect(agent.messages()).to_have_count(4)
    back = message(agent, "user", 0)
    assert back.get_attribute("data-message-id") == first_id and picker(back) == ("1", "2")
    expect(back.locator("[data-testid=branch-next]")).to_be_focused()
    assert [message(agent, "user", n).locator("[data-testid=agent-message-text]").inner_text().strip()
            for n in (0, 1)] == ["first question", "second question"]
    shown = [m.get_attribute("data-message-id") for m in agent.messages().all()]

    # Copy, by keyboard: the text is on the clipboard and the button says so.
    copy = message(agent, "user", 1).locator("[data-testid=message-copy]")
    copy.focus()
    agent.page.keyboard.press("Enter")
    expect(copy).to_have_attribute("data-state", "copied")
    assert agent.page.evaluate("() => navigator.clipboard.readText()") == "second question"

    # A reload shows the same branch at every fork: the picker the paint record drew is there when
    # the app says it is ready (DESIGN.md §13: Python's first render draws the row painted).
    assert reload_counting_pickers_at_ready(agent) == "1"
    expect(message(agent, "user", 0).locator("[data-testid=branch-picker]")).to_have_attribute("data-count", "2")
    assert [m.get_attribute("data-message-id") for m in agent.messages().all()] == shown
    assert picker(message(agent, "user", 0)) == ("1", "2")
    message(agent, "user", 0).locator("[data-testid=branch-next]").click()
    expect(agent.messages()).to_have_count(2)
    assert message(agent, "assistant", 0).get_attribute("data-message-id") == regenerated_id
    assert picker(message(agent, "assistant", 0)) == ("2", "2")

    # Search finds a word on a branch not shown; opening the hit shows that branch (§17).
    agent.testid("agent-new-conversation").click()
    expect(agent.messages()).to_have_count(0)
    open_list(agent)
    search(agent, "second")
    agent.testid("history-item").first.click()
    expect(agent.messages()).to_have_count(4)
    assert [m.get_attribute("data-message-id") for m in agent.messages().all()] == shown
    expect(message(agent, "user", 0).locator("[data-testid=branch-picker]")).to_have_attribute("data-index", "1")
    assert stored_questions(agent) == ["first question", "second question"]  # maic-agent-threads: that branch
    expect(agent.testid("turn-meta")).to_have_count(2)  # each shown reply's own turn

    # In the active conversation too: a word only on the edited branch brings it back.
    open_list(agent)
    search(agent, "edited")
    agent.testid("history-item").first.click()
    expect(agent.messages()).to_have_count(2)
    assert message(agent, "assistant", 0).get_attribute("data-message-id") == regenerated_id
    assert picker(message(agent, "user", 0)) == ("2", "2")
    assert stored_questions(agent) == ["first question, edited"]
    expect(agent.testid("turn-meta")).to_have_count(1)

    # An editor left open while a reply runs: its Save is disabled (Ctrl+Enter does nothing) until
    # the reply ends; the text typed is kept.
    message(agent, "user", 0).locator("[data-testid=message-edit]").click()
    field = agent.testid("message-edit-input")
    field.fill("typed while a reply runs")
    posts = len(server.posts())
    agent.send("#endless 20", wait=False)
    save = agent.testid("message-edit-save")
    expect(save).to_be_disabled()
    field.press("Control+Enter")
    agent.testid("agent-stop").click()
    agent.wait_idle()
    expect(save).to_be_enabled()
    assert field.input_value() == "typed while a reply runs" and len(server.posts()) == posts + 1
    assert errors == []


def search(agent, keyword: str) -> None:
    """Search the drawer's list for ``keyword`` and wait for its one result."""
    agent.testid("history-search").fill(keyword)
    expect(agent.testid("history-list")).to_have_attribute("data-query", keyword)
    expect(agent.testid("history-item")).to_have_count(1)


def stored_questions(agent) -> list[str]:
    stored = agent.stored()["state"]["threads"][COURSE]["messages"]
    return [m["content"][0]["text"] for m in stored if m["role"] == "user"]


TABS = "s-branches-tabs"


def shown_ids(agent) -> list[str | None]:
    return [m.get_attribute("data-message-id") for m in agent.messages().all()]


def follows(tab, ids: list[str | None]) -> None:
    """Wait until ``tab`` shows exactly the messages ``ids``, in order."""
    tab.page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('[data-testid=agent-message]')]"
        ".map(m => m.dataset.messageId)) === JSON.stringify(ids)", arg=ids, timeout=20_000)


def test_a_second_tab_shows_the_same_branch_at_every_fork(agent, second_agent):
    """DESIGN.md §17: edits, regenerates and picker moves in one tab show in the other (the demo agent),
    and after both reload the same branch shows at every fork; ``maic-agent-threads`` holds exactly the
    shown path in §3's shape, which the TS original's store reads as its linear thread."""
    from tests.e2e.test_ecosystem import notice_codes, open_ts_store, ts_state

    agent.open(course=TABS)
    agent.send("one")
    agent.send("two")
    second_agent.open(course=TABS)
    follows(second_agent, shown_ids(agent))

    # Tab 1 edits the second question: tab 2 shows the new branch, with its picker.
    question = message(agent, "user", 1)
    question.locator("[data-testid=message-edit]").click()
    agent.testid("message-edit-input").fill("two, edited")
    agent.testid("message-edit-save").click()
    agent.wait_idle()
    follows(second_agent, shown_ids(agent))
    expect(message(second_agent, "user", 1).locator("[data-testid=branch-picker]")).to_have_attribute(
        "data-count", "2")
    assert picker(message(second_agent, "user", 1)) == ("2", "2")

    # Tab 2 moves the picker back: tab 1 follows, and regenerates the first reply there.
    message(second_agent, "user", 1).locator("[data-testid=branch-prev]").click()
    expect(message(second_agent, "user", 1).locator("[data-testid=branch-picker]")).to_have_attribute(
        "data-index", "1")
    follows(agent, shown_ids(second_agent))
    message(agent, "assistant", 0).locator("[data-testid=message-regenerate]").click()
    agent.wait_idle()
    follows(second_agent, shown_ids(agent))
    expect(message(second_agent, "assistant", 0).locator("[data-testid=branch-picker]")).to_have_attribute(
        "data-count", "2")
    shown = shown_ids(agent)
    assert len(shown) == 2

    # Both reload: the same branch at every fork; the stored thread is exactly that path. The tab
    # that followed has its picker when it says it is ready: its paint record was written again once
    # history's tree brought the picker, though its thread's updatedAt had not changed (§13, §17).
    agent.reload()
    assert reload_counting_pickers_at_ready(second_agent) == "1"
    assert shown_ids(agent) == shown_ids(second_agent) == shown
    expect(message(agent, "assistant", 0).locator("[data-testid=branch-picker]")).to_have_attribute(
        "data-index", "2")
    stored = agent.stored()["state"]["threads"][TABS]
    assert [m["id"] for m in stored["messages"]] == shown
    assert all(set(m) == {"role", "id", "content"} for m in stored["messages"])  # §3's shape, nothing of the tree
    message(agent, "assistant", 0).locator("[data-testid=branch-prev]").click()
    follows(second_agent, shown_ids(agent))
    older = shown_ids(agent)
    assert len(older) == 4 and older[:1] == shown[:1]

    # The TS original's store reads that value as its linear thread.
    open_ts_store(second_agent.page, second_agent.base_url)
    held = ts_state(second_agent.page)["threads"][TABS]
    assert [m["id"] for m in held["messages"]] == older
    assert held == agent.stored()["state"]["threads"][TABS]

    # The TS original appends a turn without ids there, and writes a course of its own without ids
    # (DESIGN.md §17: such a thread gets ids when it is adopted, without a notice; §3: never rewritten on
    # that account). AgentBar shows every message with an id and its actions, the fork's picker stays.
    def bare(role: str, text: str) -> dict:
        return {"role": role, "content": [{"type": "text", "text": text}]}

    ts_turn = [bare("user", "ts question"), bare("assistant", "ts answer")]
    ts5 = [bare("user", "ts q1"), bare("assistant", "ts a1"), bare("user", "ts q2"), bare("assistant", "ts a2")]
    second_agent.page.evaluate("([c, t, u]) => { tsStore.getState().save(c, t); tsStore.getState().save('t-ts5', u); }",
                               [TABS, {"messages": held["messages"] + ts_turn, "updatedAt": held["updatedAt"] + 1},
                                {"messages": ts5, "updatedAt": held["updatedAt"] + 1}])
    expect(agent.messages()).to_have_count(6)
    with_ts = shown_ids(agent)
    assert with_ts[:4] == older and all(with_ts) and len(set(with_ts)) == 6

    def actions_on_every_message(tab) -> None:
        for index in range(tab.messages().count() // 2):
            expect(message(tab, "user", index).locator("[data-testid=message-edit]")).to_have_count(1)
            expect(message(tab, "assistant", index).locator("[data-testid=message-regenerate]")).to_have_count(1)

    actions_on_every_message(agent)
    expect(message(agent, "user", 1).locator("[data-testid=branch-picker]")).to_have_attribute("data-count", "2")
    agent.reload()
    assert shown_ids(agent) == with_ts and notice_codes(agent) == []
    actions_on_every_message(agent)
    expect(message(agent, "user", 1).locator("[data-testid=branch-picker]")).to_have_attribute("data-count", "2")
    threads = agent.stored()["state"]["threads"]
    assert ["id" in m for m in threads[TABS]["messages"]] == [True] * 4 + [False] * 2  # not rewritten
    assert threads["t-ts5"]["messages"] == ts5

    # The course the TS original wrote: its messages have ids and actions; a regenerate of its first
    # reply makes a sibling the picker reaches, and the next save writes the ids shown.
    agent.testid("course-select").select_option("t-ts5")
    expect(agent.messages()).to_have_count(4)
    ts5_ids = shown_ids(agent)
    assert all(ts5_ids) and len(set(ts5_ids)) == 4
    actions_on_every_message(agent)
    assert agent.stored()["state"]["threads"]["t-ts5"]["messages"] == ts5
    message(agent, "assistant", 0).locator("[data-testid=message-regenerate]").click()
    agent.wait_idle()
    expect(message(agent, "assistant", 0).locator("[data-testid=branch-picker]")).to_have_attribute(
        "data-index", "2")
    assert picker(message(agent, "assistant", 0)) == ("2", "2") and shown_ids(agent)[0] == ts5_ids[0]
    message(agent, "assistant", 0).locator("[data-testid=branch-prev]").click()
    expect(agent.messages()).to_have_count(4)
    assert shown_ids(agent) == ts5_ids
    assert [m.get("id") for m in agent.stored()["state"]["threads"]["t-ts5"]["messages"]] == ts5_ids
