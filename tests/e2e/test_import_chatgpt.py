"""ChatGPT's data export imported in Chromium (DESIGN.md §14 "Import from other tools",
``[data-testid=import-chatgpt]``): the cases run in test_core's page (booted once, reloaded once:
``test_each_courses_thread_and_tool_cards_survive_one_shared_reload``), each in a course of its own,
every case after the other; the hostile exports last, in a course of their own."""

from __future__ import annotations

import io
import json
import zipfile

from tests.archives import zip_bytes
from tests.e2e.test_history import item_ids, open_list, show_course, wait_history



T0 = 1_780_000_000  # 2026-05-28, epoch seconds as the export writes them


def node(node_id, parent, role=None, text=None, children=()):
    message = None if role is None else {
        "id": node_id, "author": {"role": role}, "create_time": T0, "metadata": {},
        "content": {"content_type": "text", "parts": [text]}}
    return node_id, {"id": node_id, "message": message, "parent": parent, "children": list(children)}


def edited(cid: str, title: str) -> dict:
    """A conversation whose question was edited: the first branch is left, the edit is current."""
    return {"id": cid, "title": title, "create_time": T0, "update_time": T0 + 60, "current_node": "a2",
            "mapping": dict([
                node("root", None, children=["q1", "q2"]),
                node("q1", "root", "user", "first wording", children=["a1"]),
                node("a1", "q1", "assistant", "answer to the first wording"),
                node("q2", "root", "user", "second wording", children=["a2"]),
                node("a2", "q2", "assistant", "answer to the second wording"),
            ])}


def status(agent, kind: str = "import-chatgpt"):
    agent.page.wait_for_function(
        "kind => { const s = document.querySelector('[data-testid=history-status]');"
        " return s.dataset.kind === kind && s.dataset.result !== 'pending'; }", arg=kind)
    element = agent.testid("history-status")
    return {name: element.get_attribute(f"data-{name}") for name in ("result", "reason", "imported", "existing",
                                                                        "skipped")} | {"text": element.inner_text()}


def choose(agent, path, control: str = "import-chatgpt", kind: str = "import-chatgpt") -> dict:
    agent.page.evaluate("() => { document.querySelector('[data-testid=history-status]').dataset.kind = ''; }")
    agent.testid(control).set_input_files(str(path))
    return status(agent, kind)


def chatgpt_exports_import_the_current_branch_report_what_they_could_not_read_and_refuse_other_files(
        agent, tmp_path, course: str, other_course: str) -> None:
    """In ``course``, a course of its own with no conversation yet (switched to in the booted page),
    ``other_course`` the second course of the TS original's value imported last; the drawer is closed at the
    end. What a reload keeps: ``imports_are_kept_after_a_reload``."""
    show_course(agent, course)
    assert wait_history(agent) == "ready"
    listing = open_list(agent)

    # conversations.json with an edited message: one conversation, its current branch
    plain = tmp_path / "conversations.json"
    plain.write_text(json.dumps([edited("c-1", "Edited question")]), encoding="utf-8")
    said = choose(agent, plain)
    assert (said["result"], said["imported"], said["existing"], said["skipped"]) == ("ok", "1", "0", "0"), said
    item = agent.page.locator("[data-testid=history-item]", has_text="Edited question")
    item.wait_for()
    stats = item.inner_text()  # each question answered is a turn, on both branches; no token counts
    assert "2 turns" in stats and "tokens not reported" in stats and "0 tokens" not in stats, stats
    item.click()
    agent.page.wait_for_function("() => [...document.querySelectorAll('[data-testid=agent-message]')]"
                                 ".some(m => m.innerText.includes('answer to the second wording'))")
    shown = agent.messages().all_inner_texts()
    assert len(shown) == 2 and "second wording" in shown[0] and "first wording" not in " ".join(shown), shown
    agent.page.wait_for_selector("[data-testid=history-drawer]", state="hidden")  # resuming closes the list
    listing = open_list(agent)

    # the same file again: nothing duplicated, and said so
    said = choose(agent, plain)
    assert (said["imported"], said["existing"]) == ("0", "1"), said
    assert len(item_ids(agent)) == 1

    # an export missing metadata: what it has imports, the rest is counted and named
    undated = edited("c-2", "No dates") | {"create_time": None, "update_time": None}
    broken = {"id": "c-3", "title": "Broken one"}
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps([undated, broken]), encoding="utf-8")
    said = choose(agent, partial)
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "1", "1"), said
    assert "Broken one" in said["text"]

    # the 2026 export: a zip of several conversations-NNN.json beside other files
    newer = tmp_path / "export.zip"
    newer.write_bytes(zip_bytes({
        "export_manifest.json": "{}", "chat.html": "<html></html>",
        "conversations-000.json": json.dumps([edited("z-1", "Zip one"), edited("z-2", "Zip two")]),
        "conversations-001.json": json.dumps([edited("z-3", "Zip three")])}))
    said = choose(agent, newer)
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "3", "0"), said
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 5")
    assert listing.get_attribute("data-total") == "5"

    # a file of another shape: refused, nothing changed
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "agentbar-conversation"}), encoding="utf-8")
    said = choose(agent, other)
    assert (said["result"], said["reason"]) == ("error", "chatgpt-format"), said
    assert "conversations.json" in said["text"]
    assert len(item_ids(agent)) == 5

    # the same refusal again is said again: a new node and a new count, not the same text left as it was
    status_line = agent.testid("history-status")
    count = int(status_line.get_attribute("data-said"))
    agent.page.evaluate("() => { document.querySelector('[data-testid=history-status]').firstElementChild"
                        ".dataset.earlier = 'yes'; }")
    again = choose(agent, other)
    assert (again["reason"], again["text"]) == (said["reason"], said["text"]), again
    assert int(status_line.get_attribute("data-said")) == count + 1
    assert agent.page.evaluate("() => document.querySelector('[data-testid=history-status]').firstElementChild"
                               ".dataset.earlier") is None

    # refusals that name what was expected: a zip without the members, an empty zip, valid JSON nested
    # deeper than any export, a small zip whose contents unpack past 50 MB
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", "[" + " " * 60_000_000 + "]")
    cases = {"members.zip": (b"PK\x05\x06" + b"\0" * 18, "chatgpt-members", "conversations-000.json"),
             "no-conversations.zip": (zip_bytes({"chat.html": "<html></html>"}), "chatgpt-members", "conversations.json"),
             "deep.json": (None, "chatgpt-depth", "ChatGPT"),
             "bomb.zip": (bomb.getvalue(), "unpacked", "zip")}
    for name, (data, reason, named) in cases.items():
        path = deep if data is None else tmp_path / name
        if data is not None:
            path.write_bytes(data)
        said = choose(agent, path)
        assert (said["result"], said["reason"]) == ("error", reason), (name, said)
        assert named in said["text"] and "not JSON" not in said["text"] and "larger than" not in said["text"], said
    assert len(item_ids(agent)) == 5

    # the TS original's maic-agent-threads value through "Import JSON": one conversation per course, in its course
    thread = {"messages": [{"role": "user", "content": [{"type": "text", "text": "original question"}]},
                           {"role": "assistant", "content": [{"type": "text", "text": "original answer"}]}],
              "updatedAt": T0 * 1000}
    original = tmp_path / "maic-agent-threads.json"
    original.write_text(json.dumps({"state": {"threads": {course: thread, other_course: thread,
                                                          "empty": {"messages": [], "updatedAt": 1}}},
                                    "version": 1}), encoding="utf-8")
    said = choose(agent, original, "import-json", "import")
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "2", "1"), said
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 6")
    assert agent.page.locator("[data-testid=history-item]", has_text="original question").count() == 1
    agent.testid("history-close").click()


def imports_are_kept_after_a_reload(agent, course: str, other: str) -> None:
    """After a reload of the page (whatever course it booted on), ``course``'s imported conversations
    are still listed, and ``other``'s in its own course."""
    wait_history(agent)
    show_course(agent, course)
    open_list(agent)
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 6")
    agent.testid("history-close").click()
    agent.page.evaluate("id => { const url = new URL(location.href); url.searchParams.set('course', id);"
                        " history.pushState({}, '', url.href); dispatchEvent(new PopStateEvent('popstate')); }",
                        other)  # the course switched in place
    agent.page.wait_for_function("id => document.querySelector('[data-testid=course-select]').value === id", arg=other)
    open_list(agent)
    item = agent.page.locator("[data-testid=history-item]", has_text="original question")
    item.wait_for()
    assert len(item_ids(agent)) == 1


def long_conversation(cid: str, title: str, turns: int) -> dict:
    nodes, parent = [node("root", None)], "root"
    for n in range(turns):
        nodes += [node(f"q{n}", parent, "user", f"question {n}"), node(f"a{n}", f"q{n}", "assistant", f"answer {n}")]
        parent = f"a{n}"
    return {"id": cid, "title": title, "create_time": T0, "update_time": T0 + 60, "current_node": parent,
            "mapping": dict(nodes)}


def hostile_exports_import_what_can_be_read_name_the_rest_and_leave_the_page_its_turn(agent, tmp_path) -> None:
    """In ``c-hostile``, a course of its own (no conversation yet): a time past any calendar in one
    conversation failed the whole import after others were written ("Nothing was changed", the list
    still empty); a zip with one broken member was refused whole as "not JSON"; a 40 M character
    message froze the page then ran out of memory; a conversation of thousands of turns was one long
    task (DESIGN.md §14)."""
    show_course(agent, "c-hostile")
    assert wait_history(agent) == "ready"
    listing = open_list(agent)

    # the 4th of 5 conversations has a create_time no calendar holds: the other 4 import, it is named
    chats = [edited(f"t-{n}", f"Timed {n}") for n in range(5)]
    chats[3]["create_time"] = 1e20
    timed = tmp_path / "conversations.json"
    timed.write_text(json.dumps(chats), encoding="utf-8")
    said = choose(agent, timed)
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "4", "1"), said
    assert "Timed 3" in said["text"] and "impossible dates" in said["text"], said
    assert "Nothing was changed" not in said["text"] and "could not be imported" not in said["text"], said
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '4'")

    # a zip of three members, the middle one broken: the others import, the broken one is named and why
    # (ids of their own: the same ChatGPT ids imported into another course above are "existing")
    newer = tmp_path / "export.zip"
    newer.write_bytes(zip_bytes({"conversations-000.json": json.dumps([edited("hz-1", "Zip one")]),
                                 "conversations-001.json": "{broken",
                                 "conversations-002.json": json.dumps([edited("hz-3", "Zip three")])}))
    said = choose(agent, newer)
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "2", "1"), said
    assert "conversations-001.json" in said["text"] and "not JSON" in said["text"], said
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '6'")

    # a conversation past the limit of text is named as too long, with the limit, and the rest imports
    giant = long_conversation("g-1", "Giant", 1)
    giant["mapping"]["q0"]["message"]["content"]["parts"] = ["x" * 2_000_001]
    big = tmp_path / "giant.json"
    big.write_text(json.dumps([giant, edited("g-2", "Beside the giant")]), encoding="utf-8")
    said = choose(agent, big)
    assert (said["result"], said["imported"], said["skipped"]) == ("ok", "1", "1"), said
    assert "Giant" in said["text"] and "too long" in said["text"] and "2,000,000" in said["text"], said

    # 3,000 turns: read and written in slices, not in one task of the page
    long = tmp_path / "long.json"
    long.write_text(json.dumps([long_conversation("l-1", "Long one", 3000)]), encoding="utf-8")
    agent.page.evaluate("() => { window.__longest = 0; new PerformanceObserver(list => { for (const e of"
                        " list.getEntries()) window.__longest = Math.max(window.__longest, e.duration); })"
                        ".observe({type: 'longtask'}); window.__began = performance.now(); }")
    said = choose(agent, long)
    took, longest = agent.page.evaluate("() => [performance.now() - window.__began, window.__longest]")
    assert (said["result"], said["imported"]) == ("ok", "1"), said
    item = agent.page.locator("[data-testid=history-item]", has_text="Long one")
    item.wait_for()
    assert "3,000 turns" in item.inner_text()
    print(f"3,000 turns: import {took:.0f} ms, longest task {longest:.0f} ms")
    assert longest < took / 3, (took, longest)
    assert listing.get_attribute("data-total") == "8"

    # many conversations, the first in the file the oldest: the open list is drawn afresh, paged (issue 32:
    # each of 3,000 was drawn into it, and every later layout of the page cost what it held)
    many = [edited(f"m-{n}", f"Many {n}") | {"create_time": T0 - 20_000, "update_time": T0 - 10_000 + n}
            for n in range(25)]
    paged = tmp_path / "many.json"
    paged.write_text(json.dumps(many), encoding="utf-8")
    said = choose(agent, paged)
    assert (said["result"], said["imported"]) == ("ok", "25"), said
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.total === '33'")
    assert len(item_ids(agent)) == 10 and listing.get_attribute("data-has-more") == "true"  # one page
