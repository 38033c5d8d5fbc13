"""Naming and pinning conversations in Chromium (DESIGN.md §18): rename in place and pin from the
history list, by mouse and keyboard; both show in a second tab's open list and survive a reload; a
renamed conversation is found by a word of its new title. In the same flow (one boot): a name over 200
clusters is cut like titles, never half an emoji; export/import and a backup round trip carry the name
and the pin; pinning an item of a page read by scrolling keeps every loaded row; the pin is drawn from
its icon file; a turn then New conversation in one tab is listed once in the other. The flow needs no
boot of its own: it runs in test_history_hardening's page (its one reload, and the other tab's boot),
in courses of its own."""

from __future__ import annotations

import io
import json
import zipfile

from playwright.sync_api import expect

from tests.e2e.test_history import (case, item_ids, open_file_actions, open_first_page, open_list, seed_conversations,
                                    show_course, wait_history)
from tests.e2e.test_import_chatgpt import choose

COURSE = "h-names"


def item(agent, task_id: str):
    return agent.page.locator(f"[data-testid=history-item][data-task-id='{task_id}']")


def scrolled_to_the_end(agent) -> list[str]:
    """Scroll the open list to its end until every page is drawn (``data-has-more`` false); its ids."""
    for _ in range(3):
        agent.page.eval_on_selector("[data-testid=history-list]",
                                    "el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
        agent.page.wait_for_timeout(250)
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.hasMore === 'false'")
    return item_ids(agent)


def downloaded(agent, testid: str, path):
    """Click file action ``testid`` (the drawer's file actions opened first) and save its download at ``path``."""
    open_file_actions(agent)
    with agent.page.expect_download() as info:
        agent.testid(testid).click()
    info.value.save_as(path)
    return path


def removed(agent, task_id: str) -> None:
    """Delete ``task_id`` from the open list and wait until it is gone."""
    item(agent, task_id).locator("[data-testid=history-delete]").click()
    expect(item(agent, task_id)).to_have_count(0)


def rename_and_pin_from_the_list_reach_another_tab_survive_a_reload_and_the_new_title_is_found(
        agent, other_tab, tmp_path) -> None:
    """In ``agent``'s booted page (shown on ``COURSE`` here, then reloaded once on it); ``other_tab``,
    a tab of the same context not yet booted, boots on ``COURSE`` and is left on ``COURSE``-tabs."""
    show_course(agent, COURSE)
    assert wait_history(agent) == "ready"
    ids = seed_conversations(agent, COURSE, ["photosynthesis in leaves", "gradient descent steps",
                                             "eigenvalues of a matrix"])
    other_tab.open(course=COURSE)
    assert wait_history(other_tab) == "ready"
    expect(open_list(other_tab)).to_have_attribute("data-total", "3")
    listing = open_list(agent)
    expect(listing).to_have_attribute("data-total", "3")
    first, middle, newest = ids
    # rename by mouse: the field opens with the title, Enter saves, focus comes back to the rename button
    item(agent, first).locator("[data-testid=history-rename]").click()
    field = item(agent, first).locator("[data-testid=history-rename-input]")
    expect(field).to_be_focused()
    expect(field).to_have_value("photosynthesis in leaves")
    field.fill("Botany   herbarium notes")
    field.press("Enter")
    expect(item(agent, first).locator("[data-testid=history-title]")).to_have_text("Botany herbarium notes")
    expect(item(agent, first).locator("[data-testid=history-rename]")).to_be_focused()
    # Escape cancels: nothing changes, the field closes, focus returns
    item(agent, middle).locator("[data-testid=history-rename]").click()
    other = item(agent, middle).locator("[data-testid=history-rename-input]")
    other.fill("not kept")
    other.press("Escape")
    expect(other).to_have_count(0)
    expect(item(agent, middle).locator("[data-testid=history-title]")).to_have_text("gradient descent steps")
    expect(item(agent, middle).locator("[data-testid=history-rename]")).to_be_focused()
    expect(agent.testid("history-drawer")).to_be_visible()  # Escape in the field did not close the drawer
    # by keyboard: F2 on the focused item renames it, Enter saves, focus returns to the item
    item(agent, newest).focus()
    agent.page.keyboard.press("F2")
    emptied = item(agent, newest).locator("[data-testid=history-rename-input]")
    expect(emptied).to_be_focused()
    agent.page.keyboard.type("Linear algebra")  # the field's text was selected: typing replaces it
    agent.page.keyboard.press("Enter")
    expect(item(agent, newest).locator("[data-testid=history-title]")).to_have_text("Linear algebra")
    expect(item(agent, newest)).to_be_focused()
    # an empty name gives back the first-question title; leaving the field saves
    item(agent, newest).locator("[data-testid=history-rename]").click()
    emptied.fill("")
    agent.testid("history-search").focus()  # blur saves
    expect(item(agent, newest).locator("[data-testid=history-title]")).to_have_text("eigenvalues of a matrix")
    # pin by keyboard: the toggle says its state, the pinned one leads the list, nothing was resumed
    pin = item(agent, first).locator("[data-testid=history-pin]")
    expect(pin).to_have_attribute("aria-pressed", "false")
    # the pin is drawn from an icon file, not a glyph a missing emoji font would draw as a box
    expect(pin.locator("svg use")).to_have_attribute("href", "static/icons/pin.svg#pin")
    assert pin.inner_text().strip() == ""
    agent.page.wait_for_function(
        "() => document.querySelector('[data-testid=history-pin] svg use').getBBox().width > 0")
    item(agent, first).focus()
    agent.page.keyboard.press("p")
    expect(item(agent, first)).to_have_attribute("data-pinned", "true")
    expect(item(agent, first).locator("[data-testid=history-pin]")).to_have_attribute("aria-pressed", "true")
    expect(item(agent, first)).to_be_focused()
    assert item_ids(agent) == [first, newest, middle]
    assert agent.messages().count() == 0  # neither button resumed a conversation
    # the other tab's open list heard both
    expect(item(other_tab, first).locator("[data-testid=history-title]")).to_have_text("Botany herbarium notes")
    expect(item(other_tab, first)).to_have_attribute("data-pinned", "true")
    assert item_ids(other_tab) == [first, newest, middle]
    # a rename being typed in the other tab when this tab's rename of the same item redraws its list:
    # the draft stays open as typed and unsaved (it was saved over this tab's name before), and Escape
    # there leaves this tab's name on both
    item(other_tab, middle).locator("[data-testid=history-rename]").click()
    draft = item(other_tab, middle).locator("[data-testid=history-rename-input]")
    draft.fill("half-typed")
    item(agent, middle).locator("[data-testid=history-rename]").click()
    item(agent, middle).locator("[data-testid=history-rename-input]").fill("Gradient notes")
    item(agent, middle).locator("[data-testid=history-rename-input]").press("Enter")
    expect(item(other_tab, middle).locator("[data-testid=history-title]")).to_have_text("Gradient notes")
    expect(draft).to_have_value("half-typed")
    draft.press("Escape")
    expect(draft).to_have_count(0)
    expect(item(other_tab, middle).locator("[data-testid=history-title]")).to_have_text("Gradient notes")
    expect(item(agent, middle).locator("[data-testid=history-title]")).to_have_text("Gradient notes")
    agent.reload()
    assert wait_history(agent) == "ready"
    open_list(agent)
    expect(item(agent, first)).to_have_attribute("data-pinned", "true")
    expect(item(agent, first).locator("[data-testid=history-title]")).to_have_text("Botany herbarium notes")
    assert item_ids(agent) == [first, newest, middle]
    expect(item(agent, middle)).to_have_attribute("data-pinned", "false")
    agent.testid("history-search").fill("herbarium")  # a word of the new title only
    agent.page.wait_for_function(
        "() => document.querySelector('[data-testid=history-list]').dataset.query === 'herbarium'")
    assert item_ids(agent) == [first]
    expect(item(agent, first).locator("[data-testid=history-snippet] mark")).to_have_text("herbarium")
    # unpin by mouse
    agent.testid("history-search").fill("")
    agent.page.wait_for_function("() => document.querySelector('[data-testid=history-list]').dataset.query === ''")
    item(agent, first).locator("[data-testid=history-pin]").click()
    expect(item(agent, first)).to_have_attribute("data-pinned", "false")
    expect(item(agent, first).locator("[data-testid=history-pin]")).to_be_focused()
    assert item_ids(agent) == [newest, middle, first]

    with case("a name over 200 clusters is cut like titles, an emoji at the edge kept whole"):
        family = "👨‍👩‍👧"
        item(agent, middle).locator("[data-testid=history-rename]").click()
        item(agent, middle).locator("[data-testid=history-rename-input]").fill("a" * 199 + family + "b")
        item(agent, middle).locator("[data-testid=history-rename-input]").press("Enter")
        cut = "a" * 199 + family + "…"
        expect(item(agent, middle).locator("[data-testid=history-title]")).to_have_text(cut)
        item(agent, middle).locator("[data-testid=history-pin]").click()
        expect(item(agent, middle)).to_have_attribute("data-pinned", "true")

    with case("export and import carry taskName and pinned; a backup round trip keeps both"):
        item(agent, middle).click()  # resumed: the conversation the file actions export
        agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
        open_list(agent)
        exported = downloaded(agent, "export-json", tmp_path / "named.json")
        meta = json.loads(exported.read_text(encoding="utf-8"))["meta"]
        assert (meta["taskId"], meta["taskName"], meta["pinned"]) == (middle, cut, True)
        backup = downloaded(agent, "backup-export", tmp_path / "backup.zip")
        with zipfile.ZipFile(io.BytesIO(backup.read_bytes())) as archive:
            lines = [json.loads(line) for name in archive.namelist() if name.startswith("conversations/")
                     for line in archive.read(name).decode("utf-8").splitlines() if line]
        kept = next(line["meta"] for line in lines if line["meta"]["taskId"] == middle)
        assert kept["taskName"] == cut and kept["pinnedAt"] is not None
        agent.testid("history-close").click()
        agent.testid("agent-new-conversation").click()  # the exported one archived: it can be deleted
        open_list(agent)
        removed(agent, middle)
        assert choose(agent, exported, "import-json", "import")["result"] == "ok"
        expect(item(agent, middle).locator("[data-testid=history-title]")).to_have_text(cut)
        expect(item(agent, middle)).to_have_attribute("data-pinned", "true")
        assert item_ids(agent)[0] == middle  # pinned: it leads the list again
        removed(agent, middle)
        assert choose(agent, backup, "backup-import", "backup")["result"] == "ok"
        expect(item(agent, middle).locator("[data-testid=history-title]")).to_have_text(cut)
        expect(item(agent, middle)).to_have_attribute("data-pinned", "true")
        assert item_ids(agent)[0] == middle

    with case("pinning an item of a page read by scrolling keeps every loaded row"):
        show_course(agent, f"{COURSE}-pages")
        many = seed_conversations(agent, f"{COURSE}-pages", [f"paged conversation {i:02d}" for i in range(14)])
        open_first_page(agent)
        assert scrolled_to_the_end(agent) == many[::-1]
        far = many[1]  # on the second page
        item(agent, far).locator("[data-testid=history-pin]").click()
        expect(item(agent, far)).to_have_attribute("data-pinned", "true")
        expect(agent.page.locator("[data-testid=history-item]")).to_have_count(14)
        assert item_ids(agent) == [far] + [t for t in many[::-1] if t != far]
        expect(item(agent, far).locator("[data-testid=history-pin]")).to_be_focused()

    with case("a turn then New conversation in one tab lists that conversation once in the other"):
        course = f"{COURSE}-tabs"
        for tab in (agent, other_tab):
            show_course(tab, course)
        open_list(other_tab)
        for n, drawer_open in enumerate((True, False, True, False)):
            if not drawer_open:
                other_tab.testid("history-close").click()
            agent.send(f"question {n} asked in one tab")
            agent.testid("agent-new-conversation").click()
            if not drawer_open:
                open_list(other_tab)
            expect(other_tab.page.locator("[data-testid=history-item]")).to_have_count(n + 1)
            other_tab.page.wait_for_timeout(500)  # a late second draw of it would show by now
            ids = item_ids(other_tab)
            assert len(ids) == len(set(ids)) == n + 1, ids
            if n == 1:  # with a pinned item the list is drawn afresh instead of prepended
                other_tab.page.locator("[data-testid=history-item] [data-testid=history-pin]").first.click()
                expect(other_tab.page.locator("[data-testid=history-item][data-pinned=true]")).to_have_count(1)
