"""Naming and pinning conversations in Chromium (DESIGN.md §18): rename in place and pin from the
history list, by mouse and keyboard; both show in a second tab's open list and survive a reload; a
renamed conversation is found by a word of its new title."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.test_history import item_ids, open_list, seed_conversations, wait_history

COURSE = "h-names"


def item(agent, task_id: str):
    return agent.page.locator(f"[data-testid=history-item][data-task-id='{task_id}']")


def test_rename_and_pin_from_the_list_reach_another_tab_survive_a_reload_and_the_new_title_is_found(
        agent, second_agent):
    other_tab = second_agent
    agent.open(course=COURSE)
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
