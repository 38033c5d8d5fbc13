"""The app in the reader's locale, in Chromium (DESIGN.md §6, §7): what the user reads is in the
page's language, and the layout holds in a narrow window and right to left. The locale is read at
boot: these cases run in pages of other tests booted in it, the Japanese ones in test_model's ja-JP
page, the right-to-left ones in test_startup's ar-SA page.

Texts are compared with the catalogue's own strings (``app.i18n.Translator``), never written here.
Every test running them also proves, through the ``agent`` fixture, that no request left the local
server.
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

from app.agent import action_count, element_count
from app.i18n import Translator, catalogue
from tests.e2e.test_checkpoints import checkpoint_controls_have_accessible_names_and_work_from_the_keyboard


def card_of(agent, n: int):
    return agent.testid("tool-card").nth(n)


def assert_demo_cards_read_in(agent, locale: str) -> None:
    """The cards of ``/regenerate scene-2 …`` (the first card) and ``/fail scene-1`` (the second)."""
    t = Translator(locale)
    done, failed = card_of(agent, 0), card_of(agent, 1)
    expect(done.locator("[data-testid=tool-card-summary]")).to_have_text(
        t("edit.agent.tool.result.regenerated", sceneId="scene-2", count=element_count("scene-2")))
    names = list(catalogue(locale)["edit"]["agent"]["tool"]["actionType"].values())[:action_count("scene-2")]
    expect(done.locator("[data-testid=tool-card-actions]")).to_have_text(
        t("edit.agent.tool.actions", count=len(names), types=t("app.listSeparator").join(names)))
    expect(failed.locator("[data-testid=tool-card-summary]")).to_have_text(
        t("edit.agent.tool.result.toldToFail", sceneId="scene-1"))
    expect(failed.locator("[data-testid=tool-card-actions]")).to_have_count(0)


def assert_a_diff_leaves_its_checkpoint_item_in_view(agent, scene_id: str) -> None:
    """Open ``scene_id``'s versions and its newest version's diff: the list does not scroll sideways
    (its item is no wider than it), and the item's head (title, time) is wholly inside the list."""
    node = agent.page.locator(f"[data-testid=scene][data-scene-id='{scene_id}']")
    node.locator("[data-testid=scene-versions-open]").click()
    item = node.locator("[data-testid=checkpoint-item]").first
    item.locator("[data-testid=checkpoint-diff]").click()
    expect(item.locator("[data-testid=checkpoint-diff-view]")).to_be_visible()
    listing = node.locator("[data-testid=checkpoint-list]")
    assert listing.evaluate("l => l.scrollWidth <= l.clientWidth + 1"), "the checkpoint list scrolls sideways"
    outer = listing.bounding_box()
    for part in (item.locator("time"), item.locator("[data-testid=checkpoint-diff]")):
        box = part.bounding_box()
        assert outer["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= outer["x"] + outer["width"] + 0.5, (box, outer)


def the_demo_tool_cards_read_in_the_page_locale_and_the_stored_thread_keeps_the_tools_words(agent, tmp_path) -> None:
    """In a ja-JP page booted on intro-ml with no turn yet, the demo agent answering (test_model's
    Japanese page runs it first, then boots it again here): the cards' summaries and action names come
    from the catalogue, live, painted before Python after a reload, and drawn by Python again;
    ``maic-agent-threads`` keeps the tool's own (English) result text and action types, as the storage
    contract has them (§3). Then, in that page, the printed conversation, an import's outcome and the
    checkpoint controls read in Japanese."""
    agent.send("/regenerate scene-2 brighter")
    agent.send("/fail scene-1")
    assert_demo_cards_read_in(agent, "ja-JP")
    t = Translator("ja-JP")  # the demo agent answers in the page's language too
    done = t("demo.done", scene="scene-2", elements=t("demo.elements", count=element_count("scene-2")),
             actions=t("demo.actions", count=action_count("scene-2")))
    replies = agent.messages().all_inner_texts()
    assert done in replies[1] and t("demo.failed", scene="scene-1") in replies[3], replies
    parts = [p for m in agent.stored()["state"]["threads"]["intro-ml"]["messages"] for p in m["content"]
             if p["type"] == "tool-call"]
    assert parts[0]["result"]["content"] == [
        {"type": "text", "text": f"Regenerated scene scene-2 with {element_count('scene-2')} elements."}]
    assert parts[0]["result"]["details"]["actions"][0] == {"type": "update_element"}
    assert parts[1]["result"]["content"][0]["text"] == "Regenerating scene scene-1 failed: the demo agent was told to fail."
    agent.page.goto(agent.url(course="intro-ml", lang="ja-JP"))  # the paint record's rows, before Python
    agent.page.wait_for_function("() => document.documentElement.dataset.painted === 'true'")
    assert_demo_cards_read_in(agent, "ja-JP")
    agent.wait_ready()
    assert_demo_cards_read_in(agent, "ja-JP")
    assert_a_diff_leaves_its_checkpoint_item_in_view(agent, "scene-2")
    the_printed_conversation_shows_each_tool_call_as_its_card_reads(agent)
    an_import_outcome_in_japanese_joins_its_sentences_without_spaces(agent, tmp_path)
    checkpoint_controls_have_accessible_names_and_work_from_the_keyboard(agent, "l-checkpoint-keyboard")


def the_printed_conversation_shows_each_tool_call_as_its_card_reads(agent) -> None:
    """Print / PDF (the browser's print stubbed): each tool call is printed with its card's texts in the
    page's locale, not as the stored JSON."""
    from tests.e2e.test_history import open_file_actions, open_list, wait_history

    wait_history(agent)
    open_list(agent)
    open_file_actions(agent)
    agent.page.evaluate("() => { window.print = () => { window.__printed = (window.__printed || 0) + 1; }; }")
    expect(agent.testid("history-print")).to_be_enabled()
    agent.testid("history-print").click()
    agent.page.wait_for_function("() => window.__printed === 1")
    printed = agent.page.locator("#print-view .printed-tool-call")
    expect(printed).to_have_count(2)
    cards = [agent.testid("tool-card").nth(n) for n in (0, 1)]
    for paper, card in zip(printed.all_inner_texts(), cards):
        for testid in ("tool-card-summary",):
            assert card.locator(f"[data-testid={testid}]").inner_text() in paper
        assert card.locator(".tool-card-name").inner_text() in paper
    assert "toolCallId" not in agent.page.locator("#print-view").inner_text()
    agent.testid("history-close").click()


def an_import_outcome_in_japanese_joins_its_sentences_without_spaces(agent, tmp_path) -> None:
    """A ChatGPT import with one conversation it reads and one it cannot: the outcome's sentences
    follow each other as Japanese writes them (no space after 。)."""
    from tests.e2e.test_history import open_list, wait_history
    from tests.e2e.test_import_chatgpt import choose, edited

    t = Translator("ja-JP")
    wait_history(agent)
    open_list(agent)
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([edited("c-1", "Readable"), {"id": "c-2", "title": "Broken"}]), encoding="utf-8")
    said = choose(agent, export)
    assert said["text"] == t("history.importedCount", count=1) + t(
        "history.importSkipped", count=1, names=f"\u2068Broken\u2069 ({t('history.skipReason.no-mapping')})")


IN_VIEW = """el => {
  const box = el.getBoundingClientRect();
  if (box.top < -0.5 || box.bottom > innerHeight + 0.5) return false;
  for (let up = el.parentElement; up; up = up.parentElement) {  // and not hidden by a scrolled box around it
    if (!/(auto|scroll|hidden)/.test(getComputedStyle(up).overflowY)) continue;
    const clip = up.getBoundingClientRect();
    if (box.top < clip.top - 0.5 || box.bottom > clip.bottom + 0.5) return false;
  }
  return true;
}"""
"""True when the element is wholly visible: inside the window and inside every box that clips it."""


COMMAND_LINES = """() => {
  const hint = document.querySelector('[data-testid=agent-messages] .empty-hint'), broken = [];
  const glyphs = () => {
    const out = [], walk = document.createTreeWalker(hint, NodeFilter.SHOW_TEXT);
    let text = '', nodes = [];
    for (let n = walk.nextNode(); n; n = walk.nextNode()) { nodes.push([n, text.length]); text += n.data; }
    const at = text.indexOf('/regenerate');
    for (const [n, start] of nodes)
      for (let i = 0; i < n.data.length; i++) {
        const k = start + i;
        if (k < at || k >= at + '/regenerate scene-1'.length || !n.data[i].trim()) continue;
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const box = r.getBoundingClientRect();
        out.push([n.data[i], box.left, Math.round(box.top)]);
      }
    return out;
  };
  for (let width = 120; width <= 420; width += 6) {  // every place a line could break in it
    hint.style.width = `${width}px`;
    const g = glyphs(), lefts = g.map((x) => x[1]);
    if (g.map((x) => x[0]).join('') !== '/regeneratescene-1' || new Set(g.map((x) => x[2])).size !== 1
        || lefts.some((x, i) => i && x < lefts[i - 1])) broken.push([width, g.map((x) => x[0]).join('')]);
  }
  hint.style.width = '';
  return broken; }"""


def the_command_in_the_empty_state_reads_left_to_right_on_one_line(agent) -> None:
    """ar-SA: ``/regenerate scene-1`` in the empty state was broken over two lines where the line
    ended inside it, its halves read in right-to-left order; at every width it is one
    left-to-right run, never broken."""
    assert agent.page.evaluate(COMMAND_LINES) == []


def right_to_left_cases(agent, tmp_path) -> None:
    """In an ar-SA page (the locale is read at boot: test_startup's Arabic page runs them) whose stored
    value held ``test_ecosystem.ALL_STATUSES``' thread at boot, each case in a course of its own: a
    narrow window, then the checkpoint bar's notice and slides that fit (test_checkpoints), then every
    card status, a notice and the collapsed panel pass axe (test_ecosystem; last: it leaves a damaged
    value and the panel collapsed)."""
    from tests.e2e.test_checkpoints import in_arabic_slide_text_fits_and_the_checkpoint_bar_notice_is_dismissed_from_the_keyboard
    from tests.e2e.test_ecosystem import (
        CARDS_COURSE, backup_key_in_the_notice_is_isolated_as_ltr_text, every_card_status_notices_and_collapsed_panel_pass_axe)
    from tests.e2e.test_history import case, show_course

    with case("in a narrow right-to-left window the history list scrolls and the drawer keeps clear of the composer"):
        agent.page.set_viewport_size({"width": 360, "height": 640})
        show_course(agent, "narrow")
        in_a_narrow_right_to_left_window_the_history_list_scrolls_and_the_drawer_keeps_clear_of_the_composer(
            agent, tmp_path)
    with case("in Arabic slide text fits and the checkpoint bar's notice is dismissed from the keyboard"):
        in_arabic_slide_text_fits_and_the_checkpoint_bar_notice_is_dismissed_from_the_keyboard(agent)
    with case("axe: every card status, notices and collapsed panel (ar-SA); the backup key isolated"):
        show_course(agent, CARDS_COURSE)
        every_card_status_notices_and_collapsed_panel_pass_axe(
            agent, "ar-SA", with_notice=backup_key_in_the_notice_is_isolated_as_ltr_text)


def in_a_narrow_right_to_left_window_the_history_list_scrolls_and_the_drawer_keeps_clear_of_the_composer(
        agent, tmp_path) -> None:
    """ar-SA at 360 × 640 in ``narrow``, a course with no conversation yet, 14 conversations: the open
    drawer fits above the composer with every control in view (the drawer itself never needs
    scrolling); its list scrolls, pages on at its end, and Tab brings each item into view; the file
    pickers read the catalogue's words only."""
    from tests.e2e.test_history import open_file_actions, open_first_page, seed_conversations, wait_history

    the_command_in_the_empty_state_reads_left_to_right_on_one_line(agent)
    wait_history(agent)
    seed_conversations(agent, "narrow", [f"محادثة {i}" for i in range(14)])
    agent.testid("history-open").scroll_into_view_if_needed()
    listing = open_first_page(agent)
    drawer, composer = agent.testid("history-drawer"), agent.page.locator("#agent-composer")
    agent.testid("agent-panel").evaluate("p => p.scrollIntoView({block: 'end'})")
    drawer_box, composer_box = drawer.bounding_box(), composer.bounding_box()
    assert drawer_box["y"] + drawer_box["height"] <= composer_box["y"] + 0.5, (drawer_box, composer_box)
    assert composer.evaluate(IN_VIEW) and agent.testid("agent-input").evaluate(IN_VIEW)
    open_file_actions(agent)  # the file actions wait behind one disclosure; open, they fit too
    assert drawer.evaluate("d => d.scrollHeight <= d.clientHeight + 1"), "the drawer needs scrolling to show its controls"
    for testid in ("history-search", "history-close", "history-more-toggle", "export-markdown", "backup-export",
                   "backup-import"):
        control = agent.testid(testid)
        target = control.locator("xpath=..") if testid == "backup-import" else control
        assert target.evaluate(IN_VIEW), testid
    assert listing.evaluate("l => l.scrollHeight > l.clientHeight && l.clientHeight >= 72")  # it scrolls, and shows some

    items = agent.testid("history-item")
    names_read_right_to_left(items.first, Translator("ar-SA"))
    items.first.focus()
    for n in range(1, 10):
        agent.page.keyboard.press("Tab")
        expect(items.nth(n)).to_be_focused()
        assert items.nth(n).evaluate(IN_VIEW), f"item {n} focused out of view"
    listing.evaluate("l => { l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); }")
    expect(items).to_have_count(14)
    expect(listing).to_have_attribute("data-has-more", "false")
    items.nth(13).focus()
    assert items.nth(13).evaluate(IN_VIEW)

    t = Translator("ar-SA")
    for testid, key in (("import-json", "history.importJson"), ("import-chatgpt", "history.importChatgpt"),
                        ("backup-import", "backup.import")):
        picker = agent.testid(testid)
        label = picker.locator("xpath=..")
        assert label.inner_text().strip() == t(key)
        assert picker.evaluate("i => getComputedStyle(i).opacity") == "0"  # the browser's own button text unseen
        assert label.evaluate(IN_VIEW)
    agent.testid("backup-export").focus()
    agent.page.keyboard.press("Tab")  # the file picker after it is reached from the keyboard, its label ringed
    expect(agent.testid("backup-import")).to_be_focused()
    agent.assert_accessible("narrow drawer, right to left")

    from tests.e2e.test_import_chatgpt import choose, edited
    export = tmp_path / "conversations.json"  # one conversation it can read, one it cannot: named, with why
    export.write_text(json.dumps([edited("c-1", "Readable"), {"id": "c-2", "title": "Broken one"}]), encoding="utf-8")
    said = choose(agent, export)
    assert (said["imported"], said["skipped"]) == ("1", "1"), said
    assert t("history.importSkipped", count=1, names=f"\u2068Broken one\u2069 ({t('history.skipReason.no-mapping')})") in said["text"]
    assert "not a conversation" not in said["text"]

    agent.testid("history-close").click()
    settings_hint_keeps_each_address_whole_in_right_to_left_text(agent, t)
    agent.send("/regenerate scene-2")  # right to left, a diff's long lines start at the other side
    assert_a_diff_leaves_its_checkpoint_item_in_view(agent, "scene-2")


def names_read_right_to_left(item, t) -> None:
    """ar-SA: an item's rename and pin buttons (DESIGN.md §18) sit at its inline end, the left, with
    the catalogue's labels; the rename field reads right to left from the title's start."""
    title = item.locator("[data-testid=history-title]")
    label = f"\u2068{title.inner_text()}\u2069"
    rename, pin = item.locator("[data-testid=history-rename]"), item.locator("[data-testid=history-pin]")
    assert rename.get_attribute("aria-label") == t("history.rename", title=label)
    assert pin.get_attribute("aria-label") == t("history.pin", title=label)
    item_box, pin_box = item.bounding_box(), pin.bounding_box()
    assert pin_box["x"] + pin_box["width"] < item_box["x"] + item_box["width"] / 2, (pin_box, item_box)
    rename.click()
    field = item.locator("[data-testid=history-rename-input]")
    expect(field).to_be_focused()
    assert field.evaluate("f => getComputedStyle(f).direction") == "rtl"
    field.press("Escape")
    expect(field).to_have_count(0)


def settings_hint_keeps_each_address_whole_in_right_to_left_text(agent, t) -> None:
    """The base URL's hint: the catalogue's text, each example address in its own left-to-right run;
    the dialog fits the narrow window (nothing scrolls sideways)."""
    from app.agents.settings import EXAMPLE_URLS

    agent.testid("settings-open").click()
    hint = agent.testid("settings-base-url-hint")
    expect(hint).to_be_visible()
    assert hint.inner_text() == t("model.settings.baseUrlHint", **EXAMPLE_URLS)
    runs = hint.locator("bdi")
    assert runs.all_inner_texts() == list(EXAMPLE_URLS.values())
    assert runs.evaluate_all("rs => rs.map(r => getComputedStyle(r).direction + ' ' + getComputedStyle(r).unicodeBidi)") == [
        "ltr isolate"] * 2
    dialog = agent.page.locator("dialog[open]")
    assert dialog.evaluate("d => d.scrollWidth <= d.clientWidth + 1")
    agent.page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
