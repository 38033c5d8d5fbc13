"""Scene documents and file checkpoints in Chromium (DESIGN.md §10): slides drawn from the current
version, versions kept in IndexedDB across reloads, the checkpoint list, diff and restore, the
evidence pack and replay case downloads, two tabs, and IndexedDB unavailable.

Most cases share one booted page: each runs in a course of its own (switched to in the page, no
boot), and the page is reloaded only where a case asks for it (``run_in_rounds``). The URL's
``lang`` is read only at boot, so each other locale has its own page.

Every test also proves, through the ``agent`` fixture, that no request left the local server.
"""

from __future__ import annotations

import functools
import io
import json
import re
import zipfile

import pytest
from playwright.sync_api import expect

from app.agent import element_count
from app.i18n import Translator
from tests.e2e.conftest import AgentPage
from tests.e2e.test_core import case, new_conversation_button_and_counts_are_in_the_pages_locale, switch_course
from tests.e2e.test_history import open_file_actions


def scene(agent, scene_id: str):
    return agent.page.locator(f"[data-testid=scene][data-scene-id='{scene_id}']")


def open_versions(agent, scene_id: str):
    node = scene(agent, scene_id)
    button = node.locator("[data-testid=scene-versions-open]")
    if button.get_attribute("aria-expanded") != "true":
        button.click()
    expect(node.locator("[data-testid=checkpoint-list]")).to_be_visible()
    expect(node.locator(".checkpoint-empty", has_text="…")).to_have_count(0)
    return node.locator("[data-testid=checkpoint-item]")


DEAF_CHANNEL = """window.BroadcastChannel = class {
  constructor(name) { this.name = name; this.onmessage = null; }
  postMessage() {} close() {} addEventListener() {} removeEventListener() {}
};"""
"""An init script: the page's BroadcastChannels neither send nor receive (a tab that hears no other)."""


def settle(agent) -> None:
    agent.page.evaluate("() => window.agentbarCheckpoints()")


SWITCH_COURSE = """id => { const url = new URL(location.href); url.searchParams.set('course', id);
  history.pushState({}, '', url.href); dispatchEvent(new PopStateEvent('popstate')); }"""


def show(agent, course: str) -> None:
    """Switch the booted page to ``course`` (as Back/Forward does: no boot; the URL's other
    parameters kept, so a reload boots into it), and wait until its checkpoint bar is drawn."""
    agent.page.evaluate(SWITCH_COURSE, course)
    expect(agent.testid("course-select")).to_have_value(course)
    settle(agent)  # the switch's summary refresh is drawn: no earlier course's count is read


def run_in_rounds(agent, cases, reload=None) -> None:
    """Run ``cases`` in one page, in turn. Each case is a generator function of ``agent``: its steps,
    with a ``yield`` where it needs the page reloaded. All cases run up to their next ``yield``, then
    the page is reloaded once for all of them (``reload()``, by default ``agent.reload``), and so on
    until every case has ended. A case starts (and goes on after each reload) by switching to its own
    course; a failure names the case."""
    running = [(getattr(case, "func", case).__name__, case(agent)) for case in cases]
    while running:
        waiting = []
        for name, steps in running:
            try:
                next(steps)
            except StopIteration:
                continue
            except Exception as error:
                raise AssertionError(f"case {name!r} failed: {error}") from error
            waiting.append((name, steps))
        if waiting:
            (reload or agent.reload)()
        running = waiting


OVERFLOWING_TEXT = """() => [...document.querySelectorAll('[data-testid=scene-slide] .slide-text')]
  .filter((e) => e.scrollHeight > e.clientHeight || e.scrollWidth > e.clientWidth)
  .map((e) => ({ text: e.textContent, scroll: [e.scrollWidth, e.scrollHeight], client: [e.clientWidth, e.clientHeight] }))"""
ALL_DRAWN = """() => { const slides = [...document.querySelectorAll('[data-testid=scene-slide]')];
  return slides.length > 0 && slides.every((s) => s.dataset.drawn === 'true'); }"""
SLIDE_VIEWPORT = {"width": 1366, "height": 900}


def assert_no_slide_text_overflows(agent, course: str, lang: str, commands: list[str]) -> None:
    """In the shown ``course``: run ``commands``, then no slide text overflows its box."""
    for command in commands:
        agent.send(command)
    agent.page.wait_for_function(ALL_DRAWN)
    texts = agent.page.locator("[data-testid=scene-slide] .slide-text")
    assert texts.count() >= 6
    assert agent.page.evaluate(OVERFLOWING_TEXT) == [], (course, lang)


def download(agent, testid: str):
    with agent.page.expect_download() as info:
        agent.panel_action(testid)
    return info.value


def assert_named_paths_are_files(archive: zipfile.ZipFile) -> None:
    """Every value under a key ending in ``path`` in the zip's JSON files is a file of the zip."""
    def named(value, key=""):
        if isinstance(value, dict):
            return {p for k, v in value.items() for p in named(v, k)}
        if isinstance(value, list):
            return {p for v in value for p in named(v, key)}
        return {value} if isinstance(value, str) and key.lower().endswith("path") else set()

    names = set(archive.namelist())
    paths = set().union(*(named(json.loads(archive.read(n))) for n in names if n.endswith(".json")))
    assert any(p.startswith("versions/") for p in paths) and paths <= names, paths - names


def unzip(download) -> zipfile.ZipFile:
    with open(download.path(), "rb") as handle:
        return zipfile.ZipFile(io.BytesIO(handle.read()))


# ---- the cases of the shared page (run_in_rounds): each in its own course ----------------------

def a_regenerated_scene_is_drawn_in_its_version_after_reload_and_can_be_diffed_and_restored(agent):
    show(agent, "intro-ml")
    s1 = scene(agent, "scene-1")
    expect(s1).to_have_attribute("data-version", "0")
    expect(s1).to_have_attribute("data-element-count", "2")
    expect(s1.locator(".slide .slide-text").first).to_have_text("What is learning?")

    agent.send("/regenerate scene-1 brighter")
    count = element_count("scene-1")
    expect(s1).to_have_attribute("data-version", "1")
    expect(s1).to_have_attribute("data-element-count", str(count))
    expect(s1.locator(".slide .slide-el")).to_have_count(count)
    images = s1.locator(".slide img.slide-image")
    assert images.count() >= 1
    assert images.first.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0  # a real image

    yield  # reload
    show(agent, "intro-ml")
    expect(s1).to_have_attribute("data-version", "1")
    expect(s1).to_have_attribute("data-element-count", str(count))
    expect(s1.locator(".slide .slide-el")).to_have_count(count)

    items = open_versions(agent, "scene-1")
    expect(items).to_have_count(1)
    first = items.nth(0)
    assert (first.get_attribute("data-version"), first.get_attribute("data-source")) == ("1", "regenerate_scene")
    first.locator("[data-testid=checkpoint-diff]").click()
    view = first.locator("[data-testid=checkpoint-diff-view]")
    expect(view).to_be_visible()
    assert view.locator("ins").count() > 0 and view.locator("del").count() > 0
    assert view.locator("del", has_text='"text": "A program learns').count() == 1  # v0's body line went
    longest = max(len(line) for line in view.locator("pre").inner_text().splitlines())
    assert longest < 200  # base64 shown by size and hash, never in full
    assert "sha256:" in view.inner_text()

    agent.send("/regenerate scene-1 again")
    expect(s1).to_have_attribute("data-version", "2")
    expect(items).to_have_count(2)  # the open list follows
    assert [i.get_attribute("data-version") for i in items.all()] == ["2", "1"]
    v1_count = s1.get_attribute("data-element-count")
    items.nth(1).locator("[data-testid=checkpoint-restore]").click()
    expect(s1).to_have_attribute("data-version", "3")
    expect(items).to_have_count(3)
    assert items.nth(0).get_attribute("data-source") == "restore"
    assert items.nth(0).get_attribute("data-current") == "true"
    assert items.nth(0).locator("[data-testid=checkpoint-restore]").count() == 0

    yield  # reload
    show(agent, "intro-ml")
    expect(s1).to_have_attribute("data-version", "3")
    expect(s1).to_have_attribute("data-element-count", v1_count)
    items = open_versions(agent, "scene-1")
    expect(items).to_have_count(3)
    assert [i.get_attribute("data-source") for i in items.all()] == ["restore", "regenerate_scene", "regenerate_scene"]


SCENE_STATE = """(sceneId) => {
  const node = document.querySelector(`[data-testid=scene][data-scene-id="${sceneId}"]`);
  return { version: node.dataset.version, pending: node.dataset.pending, count: node.dataset.elementCount,
           drawn: node.querySelectorAll(".slide .slide-el").length,
           title: (node.querySelector(".slide .slide-text") || {}).textContent };
}"""


def the_slide_shows_the_new_version_as_soon_as_the_turn_ends(agent):
    show(agent, "intro-ml")  # scene-2: the other intro-ml case regenerates only scene-1
    count = element_count("scene-2")
    for number, text in ((1, "/regenerate scene-2"), (2, "/regenerate scene-2 again")):
        agent.send(text)  # waits for data-running=false, then reads the DOM at once: no waiting for the slide
        state = agent.page.evaluate(SCENE_STATE, "scene-2")
        assert state == {"version": str(number), "pending": "false", "count": str(count), "drawn": count,
                         "title": "Supervised learning"}
    yield from ()


def the_course_version_can_be_restored_after_a_reload_from_the_list(agent):
    show(agent, "ckpt-restore-original")
    s1 = scene(agent, "scene-1")
    agent.send("/regenerate scene-1 brighter")
    expect(s1).to_have_attribute("data-version", "1")
    yield  # reload: the card's in-memory restore is gone (DESIGN §4); the list still offers version 0
    show(agent, "ckpt-restore-original")
    expect(s1).to_have_attribute("data-version", "1")
    expect(agent.testid("tool-card")).to_have_count(1)  # the thread is drawn: its card, without a restore
    assert agent.testid("tool-card-restore").count() == 0
    open_versions(agent, "scene-1")
    original = s1.locator("[data-testid=checkpoint-original]")
    expect(original).to_have_attribute("data-current", "false")
    original.locator("[data-testid=checkpoint-restore-original]").click()
    expect(s1).to_have_attribute("data-version", "2")
    expect(s1).to_have_attribute("data-element-count", "2")
    expect(s1.locator(".slide .slide-text").first).to_have_text("Scene 1")  # a placeholder course's own scene
    items = s1.locator("[data-testid=checkpoint-item]")
    expect(items).to_have_count(2)
    assert items.nth(0).get_attribute("data-source") == "restore"
    yield  # reload
    show(agent, "ckpt-restore-original")
    expect(s1).to_have_attribute("data-version", "2")
    expect(s1).to_have_attribute("data-element-count", "2")


def the_card_restore_button_writes_a_restore_version_that_survives_reload(agent):
    show(agent, "linear-algebra")
    s2 = scene(agent, "scene-2")
    agent.send("/regenerate scene-2")
    expect(s2).to_have_attribute("data-version", "1")
    agent.testid("tool-card-restore").click()
    expect(s2).to_have_attribute("data-version", "2")
    expect(s2).to_have_attribute("data-element-count", "2")
    yield  # reload
    show(agent, "linear-algebra")
    expect(s2).to_have_attribute("data-version", "2")
    expect(s2).to_have_attribute("data-element-count", "2")
    expect(agent.testid("tool-card")).to_have_count(1)  # the thread is drawn: its card, without a restore
    assert agent.testid("tool-card-restore").count() == 0  # DESIGN §4: no snapshot after a reload
    expect(s2.locator(".slide .slide-text").first).to_have_text("Matrices")


def a_scene_that_does_not_exist_fails_and_offers_no_restore(agent):
    show(agent, "ckpt-missing-scene")
    agent.send("/regenerate scene-99")
    card = agent.testid("tool-card")
    expect(card).to_have_attribute("data-status", "error")
    assert agent.testid("tool-card-restore").count() == 0
    settle(agent)
    expect(agent.testid("checkpoint-summary")).to_have_attribute("data-count", "0")
    yield from ()


def evidence_pack_and_replay_case_hold_what_the_panel_shows(agent):
    show(agent, "poetry-tang")
    agent.send("/regenerate scene-1")
    agent.send("/regenerate scene-2 更亮")
    expect(scene(agent, "scene-2")).to_have_attribute("data-version", "1")
    items = open_versions(agent, "scene-1")
    agent.send("/regenerate scene-1 again")
    expect(items).to_have_count(2)
    items.nth(1).locator("[data-testid=checkpoint-restore]").click()
    expect(items).to_have_count(3)
    settle(agent)
    summary = agent.testid("checkpoint-summary")
    expect(summary).to_have_attribute("data-count", "4")
    latest = summary.get_attribute("data-latest")
    assert latest == items.nth(0).get_attribute("data-checkpoint-id")
    listed = {i.get_attribute("data-checkpoint-id") for i in items.all()}
    listed |= {i.get_attribute("data-checkpoint-id") for i in open_versions(agent, "scene-2").all()}

    pack_download = download(agent, "export-evidence")
    assert pack_download.suggested_filename == "agentbar-poetry-tang-evidence-pack.zip"
    pack = unzip(pack_download)
    documents = ["scenes/scene-1.json", "scenes/scene-2.json", "versions/scene-1/v0001.artifact.json",
                 "versions/scene-1/v0002.artifact.json", "versions/scene-1/v0003.artifact.json",
                 "versions/scene-2/v0001.artifact.json"]
    assert sorted(pack.namelist()) == sorted(["artifacts.json", "runtime.json", "summary.md", "timeline.json",
                                              *documents])
    assert_named_paths_are_files(pack)
    restored = json.loads(pack.read("versions/scene-1/v0003.artifact.json"))
    assert restored["versionId"] == "poetry-tang/scene-1:v3"
    assert restored["document"] == json.loads(pack.read("versions/scene-1/v0001.artifact.json"))["document"]
    assert json.loads(pack.read("scenes/scene-1.json"))["document"] == restored["document"]
    assert "sha256:" in pack.read("versions/scene-2/v0001.artifact.json").decode()  # images by size and hash
    runtime_json = json.loads(pack.read("runtime.json"))
    artifacts_json = json.loads(pack.read("artifacts.json"))
    for payload in (runtime_json, artifacts_json):
        assert payload["fileCheckpointCount"] == 4
        assert {c["checkpoint_id"] for c in payload["fileCheckpoints"]} == listed
        assert payload["fileCheckpoints"][0]["checkpoint_id"] == latest
    assert runtime_json["fileCheckpointSummary"]["latest_checkpoint"]["checkpoint_id"] == latest
    timeline = json.loads(pack.read("timeline.json"))
    assert {i["id"] for i in timeline["items"]} == listed
    assert all(i["path"].startswith("scenes/") for i in timeline["items"])

    case = unzip(download(agent, "export-replay"))
    assert sorted(case.namelist()) == sorted(["evidence-links.json", "expected.json", "grader.md", "input.json",
                                              *documents])
    assert_named_paths_are_files(case)
    replay_input = json.loads(case.read("input.json"))
    assert replay_input["runtimeContext"]["fileCheckpointCount"] == 4
    assert [c["checkpoint_id"] for c in replay_input["runtimeContext"]["fileCheckpoints"]] == \
        [c["checkpoint_id"] for c in runtime_json["fileCheckpoints"]]
    criteria = {c["path"]: c for c in json.loads(case.read("expected.json"))["successCriteria"]}
    assert (criteria["scenes/scene-1.json"]["version_no"], criteria["scenes/scene-1.json"]["source"]) == (3, "restore")
    yield from ()


def the_evidence_pack_of_the_active_conversation_holds_only_its_own_versions(agent):
    show(agent, "ckpt-own-conversation")
    agent.send("/regenerate scene-1")
    s1 = scene(agent, "scene-1")
    expect(s1).to_have_attribute("data-version", "1")
    agent.testid("agent-new-conversation").click()
    agent.send("/regenerate scene-1 again")
    expect(s1).to_have_attribute("data-version", "2")
    settle(agent)
    summary = agent.testid("checkpoint-summary")
    expect(summary).to_have_attribute("data-count", "1")
    items = open_versions(agent, "scene-1")
    expect(items).to_have_count(2)  # the scene keeps both versions
    second = items.nth(0).get_attribute("data-checkpoint-id")
    assert summary.get_attribute("data-latest") == second

    def exported() -> dict:
        runtime_json = json.loads(unzip(download(agent, "export-evidence")).read("runtime.json"))
        assert [c["checkpoint_id"] for c in runtime_json["fileCheckpoints"]] == [second]
        assert runtime_json["fileCheckpointCount"] == 1
        assert runtime_json["fileCheckpoints"][0]["turn_id"]  # its reply was saved: it names that turn
        return runtime_json

    conversation = exported()["conversationId"]
    agent.testid("history-open").click()
    open_file_actions(agent)
    expect(agent.testid("export-json")).to_be_enabled()
    assert download(agent, "export-json").suggested_filename == f"{conversation}.json"  # history's taskId
    agent.testid("history-close").click()

    yield  # reload: the id is history's head, the same after a reload
    show(agent, "ckpt-own-conversation")
    expect(summary).to_have_attribute("data-count", "1")
    assert summary.get_attribute("data-latest") == second
    assert exported()["conversationId"] == conversation
    expect(open_versions(agent, "scene-1")).to_have_count(2)


def the_bar_follows_new_conversation_after_a_reload_and_a_resumed_conversation(agent):
    show(agent, "ckpt-bar-follows")
    agent.send("/regenerate scene-1 one")
    bar = agent.testid("checkpoint-summary")
    expect(bar).to_have_attribute("data-count", "1")
    yield  # reload: the conversation id is not known again until asked for
    show(agent, "ckpt-bar-follows")
    expect(bar).to_have_attribute("data-count", "1")
    agent.testid("agent-new-conversation").click()
    expect(bar).to_have_attribute("data-count", "0")
    agent.testid("history-open").click()
    agent.page.wait_for_selector("[data-testid=history-item]:not([data-current=true])")
    agent.page.locator("[data-testid=history-item]:not([data-current=true])").first.click()
    agent.page.wait_for_function("() => document.querySelectorAll('[data-testid=agent-message]').length === 2")
    expect(bar).to_have_attribute("data-count", "1")  # resuming closed the drawer


def two_tabs_see_each_others_versions_and_a_restore_loses_none(second_agent, agent):
    show(agent, "ckpt-two-tabs")
    second_agent.open(course="ckpt-two-tabs")
    agent.send("/regenerate scene-3")
    s3_b = scene(second_agent, "scene-3")
    expect(s3_b).to_have_attribute("data-version", "1")  # drawn in the other tab without a reload
    items_b = open_versions(second_agent, "scene-3")
    expect(items_b).to_have_count(1)
    made_in_a = items_b.nth(0).get_attribute("data-checkpoint-id")

    items_a = open_versions(agent, "scene-3")
    agent.send("/regenerate scene-3 again")  # v2 in tab A
    expect(items_a).to_have_count(2)
    expect(items_b).to_have_count(2)
    items_b.nth(1).locator("[data-testid=checkpoint-restore]").click()  # tab B restores v1 → v3
    expect(items_b).to_have_count(3)
    expect(items_a).to_have_count(3)
    for items in (items_a, items_b):
        assert [i.get_attribute("data-version") for i in items.all()] == ["3", "2", "1"]
        assert items.nth(2).get_attribute("data-checkpoint-id") == made_in_a
    expect(scene(agent, "scene-3")).to_have_attribute("data-version", "3")
    second_agent.page.close()  # done: it hears no other case's versions
    yield from ()


def a_tab_that_never_heard_of_another_tabs_version_numbers_past_it_and_loses_none(deaf_agent, agent):
    # Tab B hears nothing from other tabs (a BroadcastChannel that delivers nothing): its write of a
    # number tab A took is refused by IndexedDB itself (the add of an existing key aborts the transaction).
    deaf_agent.open(course="ckpt-deaf-tab")
    deaf_agent.send("/regenerate scene-3 from tab B")
    expect(scene(deaf_agent, "scene-3")).to_have_attribute("data-version", "1")
    show(agent, "ckpt-deaf-tab")  # tab A reads the course after B's v1: starts from it
    expect(scene(agent, "scene-3")).to_have_attribute("data-version", "1")
    agent.send("/regenerate scene-3 from tab A")
    expect(scene(agent, "scene-3")).to_have_attribute("data-version", "2")
    expect(scene(deaf_agent, "scene-3")).to_have_attribute("data-version", "1")  # B still believes v1

    deaf_agent.send("/regenerate scene-3 from tab B again")  # v2 is taken: refused, written as v3
    expect(scene(deaf_agent, "scene-3")).to_have_attribute("data-version", "3")
    yield  # tab A reloads
    show(agent, "ckpt-deaf-tab")
    for tab in (deaf_agent, agent):
        items = open_versions(tab, "scene-3")
        expect(items).to_have_count(3)
        assert [i.get_attribute("data-version") for i in items.all()] == ["3", "2", "1"]
        assert len({i.get_attribute("data-checkpoint-id") for i in items.all()}) == 3
    expect(scene(agent, "scene-3")).to_have_attribute("data-version", "3")
    deaf_agent.page.close()


@pytest.fixture
def deaf_agent(context, app_server):
    """A second tab in ``agent``'s context whose BroadcastChannels deliver nothing (DEAF_CHANNEL)."""
    helper = AgentPage(context.new_page(), app_server)
    helper.page.add_init_script(DEAF_CHANNEL)
    yield helper
    assert helper.off_origin_requests() == []


def test_versions_restores_exports_and_two_tabs_in_courses_of_one_page_across_two_reloads(agent, second_agent,
                                                                                          deaf_agent):
    """Every case above in one page (four boots, two more for the other tabs); then, in that page, no
    slide text overflows in intro-ml's own and regenerated slides (en-US). The page's boots are
    test_startup's hostile-text case's (four, on s-hostile-text): the cases run after its second boot,
    and its two reloads after ready are their reloads (each case's next part runs once that case's
    steps are done), in courses of their own."""
    from tests.e2e.test_startup import (
        a_hostile_text_stays_text_a_message_sent_before_ready_is_sent_once_a_reload_keeps_it_as_a_draft_and_a_stale_record_draws_nothing
        as hostile_text_and_drafts_before_ready)

    hostile_name = ("a hostile text stays text, a message sent before ready is sent once, a reload keeps it as a "
                    "draft, a stale record draws nothing (test_startup; this page's boots)")
    hostile = hostile_text_and_drafts_before_ready(agent, "s-hostile-text")
    ended = []

    def hostile_goes_on(shown: bool = True) -> None:
        """The hostile-text case's next part (each after the first starts with a reload), its course
        shown first."""
        if shown:
            show(agent, "s-hostile-text")
        with case(hostile_name):
            if next(hostile, ended) is ended:
                ended.append(True)

    hostile_goes_on(shown=False)  # its first two boots: the page is ready
    agent.page.set_viewport_size(SLIDE_VIEWPORT)
    show(agent, "intro-ml")

    def reload() -> None:  # the hostile-text case's reloads while it has one left
        if ended:
            agent.reload()
        else:
            hostile_goes_on()

    run_in_rounds(agent, [
        a_regenerated_scene_is_drawn_in_its_version_after_reload_and_can_be_diffed_and_restored,
        the_slide_shows_the_new_version_as_soon_as_the_turn_ends,
        the_course_version_can_be_restored_after_a_reload_from_the_list,
        the_card_restore_button_writes_a_restore_version_that_survives_reload,
        a_scene_that_does_not_exist_fails_and_offers_no_restore,
        evidence_pack_and_replay_case_hold_what_the_panel_shows,
        the_evidence_pack_of_the_active_conversation_holds_only_its_own_versions,
        the_bar_follows_new_conversation_after_a_reload_and_a_resumed_conversation,
        functools.partial(two_tabs_see_each_others_versions_and_a_restore_loses_none, second_agent),
        functools.partial(a_tab_that_never_heard_of_another_tabs_version_numbers_past_it_and_loses_none,
                          deaf_agent),
    ], reload)
    while not ended:  # its last parts, had the cases needed fewer reloads
        hostile_goes_on()
    show(agent, "intro-ml")
    assert_no_slide_text_overflows(agent, "intro-ml", "en-US", [
        "/regenerate scene-1 make it clearer, add a chart; compare the learning curves "
        "of three models over many epochs and explain why the validation loss rises", "/regenerate scene-2"])


def without_indexeddb_regenerate_works_in_memory_and_the_panel_says_so_once(agent, course: str) -> None:
    """In a page whose IndexedDB is unusable from the start (site data blocked: test_indexeddb_boot's
    first boot runs it), in ``course`` of its own: versions are made in memory, one notice says so
    for history and scene versions alike. The next boot shows none of them
    (``versions_made_in_memory_are_gone_at_the_next_boot``)."""
    switch_course(agent, course)
    agent.send("/regenerate scene-1")
    s1 = scene(agent, "scene-1")
    expect(s1).to_have_attribute("data-version", "1")
    agent.send("/regenerate scene-2")
    expect(scene(agent, "scene-2")).to_have_attribute("data-version", "1")
    settle(agent)
    # IndexedDB unusable from the start: one notice says it for history and scene versions alike
    expect(agent.page.locator("[data-testid=agent-notice][data-code=indexeddb-unavailable]")).to_have_count(1)
    expect(agent.page.locator("[data-testid=agent-notice]")).to_have_count(1)
    expect(open_versions(agent, "scene-1")).to_have_count(1)


def versions_made_in_memory_are_gone_at_the_next_boot(agent, course: str) -> None:
    """The boot after ``without_indexeddb_regenerate_works_in_memory_and_the_panel_says_so_once`` (IndexedDB
    unusable again): ``course``'s scene shows its version 0."""
    switch_course(agent, course)
    expect(scene(agent, "scene-1")).to_have_attribute("data-version", "0")


OPEN_FAILS_FULL = """(() => {
  const open = IDBFactory.prototype.open;
  IDBFactory.prototype.open = function (name, version) {
    const request = open.call(this, name, version);
    if (name !== 'agentbar') return request;
    request.addEventListener('success', (event) => {  // before the page's own handler: it never opens
      event.stopImmediatePropagation();
      Object.defineProperty(request, 'error', { value: new DOMException('disk full', 'QuotaExceededError') });
      request.dispatchEvent(new Event('error'));
    }, { capture: true });
    return request;
  };
})()"""
"""The app's database opens as far as the browser goes, then its open request fails: disk full."""


def the_panel_says_once_that_the_database_failed_to_open_for_history_and_versions(agent) -> None:
    """IndexedDB usable, but the app's database fails to open (QuotaExceededError, ``OPEN_FAILS_FULL``
    at boot): one IndexedDB notice says what stays in memory, not three stacked (history unavailable,
    storage full, versions in memory), which left one message row at 1280 x 720 (DESIGN.md §5: said
    once). In the booted course (intro-ml)."""
    assert agent.page.wait_for_function("() => document.documentElement.dataset.history").json_value().startswith(
        "unavailable")
    agent.send("hello")
    agent.send("/regenerate scene-1")
    expect(scene(agent, "scene-1")).to_have_attribute("data-version", "1")
    settle(agent)
    expect(agent.page.locator("[data-testid=agent-notice][data-code=indexeddb-unavailable]")).to_have_count(1)
    expect(agent.page.locator("[data-testid=agent-notice]")).to_have_count(1)


def test_a_russian_page_whose_database_fails_to_open_says_so_once_and_no_slide_text_overflows(agent):
    """One ru-RU boot (the locale is read at boot) with the app's database failing to open: the panel
    says so once; then, at the slides' viewport, no slide text overflows its box in Russian, own
    (my-own-course, a course of no catalogue) and regenerated slides, and New conversation and the
    counts are in the page's locale (test_core's case), each in a course of its own. en-US is checked
    in the shared page above, zh-CN in test_history's slow Chinese tab, ar-SA with the checkpoint
    bar's notice in test_startup's Arabic page (locale_cases)."""
    agent.page.add_init_script(OPEN_FAILS_FULL)
    agent.open(course="intro-ml", lang="ru-RU")
    with case("the database fails to open: the panel says so once"):
        the_panel_says_once_that_the_database_failed_to_open_for_history_and_versions(agent)
    with case("no slide text overflows its box in Russian, own and regenerated slides"):
        agent.page.set_viewport_size(SLIDE_VIEWPORT)
        switch_course(agent, "my-own-course")
        assert_no_slide_text_overflows(agent, "my-own-course", "ru-RU", ["/regenerate scene-3 сделай ярче"])
    with case("New conversation and the counts in ru-RU"):
        new_conversation_button_and_counts_are_in_the_pages_locale(agent, "ru-RU", "core-locale")


def checkpoint_controls_have_accessible_names_and_work_from_the_keyboard(agent, course: str) -> None:
    """In a ja-JP page (the locale is read at boot: test_model's Japanese page runs it), in ``course`` of
    its own: the versions button is named in Japanese; it and a version's diff open from the keyboard."""
    switch_course(agent, course)
    agent.send("/regenerate scene-2")
    button = scene(agent, "scene-2").locator("[data-testid=scene-versions-open]")
    label = button.get_attribute("aria-label")
    assert label == Translator("ja-JP")("checkpoints.versionsLabel", sceneId="scene-2")
    assert label.startswith(button.inner_text() + "（")  # the visible text leads the name (WCAG 2.5.3)
    button.focus()
    agent.page.keyboard.press("Enter")
    expect(button).to_have_attribute("aria-expanded", "true")
    items = scene(agent, "scene-2").locator("[data-testid=checkpoint-item]")
    expect(items).to_have_count(1)
    diff = items.nth(0).locator("[data-testid=checkpoint-diff]")
    diff.focus()
    agent.page.keyboard.press("Space")
    expect(items.nth(0).locator("[data-testid=checkpoint-diff-view]")).to_be_visible()
    expect(diff).to_have_attribute("aria-expanded", "true")


PLANT_DAMAGED = """async (record) => {
  const db = await new Promise((resolve, reject) => { const r = indexedDB.open("agentbar"); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  await new Promise((resolve, reject) => {
    const tx = db.transaction("artifacts", "readwrite");
    tx.objectStore("artifacts").put(record);
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
  db.close();
}"""


def in_arabic_slide_text_fits_and_the_checkpoint_bar_notice_is_dismissed_from_the_keyboard(agent) -> None:
    """In an ar-SA page (the locale is read at boot: test_startup's Arabic page runs it):
    linear-algebra's own slides fit their boxes; then intro-ml, whose stored record is damaged: its
    notice is dismissed from the keyboard and stays closed, and once a scene is regenerated the bar
    isolates its title inside the Arabic text; a course of one's own names its scenes in the page's
    locale; New conversation and the counts in ar-SA (test_core's case)."""
    from pathlib import Path

    agent.page.set_viewport_size(SLIDE_VIEWPORT)
    show(agent, "linear-algebra")
    assert_no_slide_text_overflows(agent, "linear-algebra", "ar-SA", [])

    agent.page.evaluate(PLANT_DAMAGED, {"artifactId": "intro-ml/scene-1", "stageId": "intro-ml", "schema": 99})
    show(agent, "intro-ml")  # the course's records are read as it is shown: the damaged one says so
    bar = agent.testid("checkpoint-summary")
    notice = bar.locator("[data-testid=agent-notice][data-code=checkpoint-damaged]")
    expect(notice).to_have_count(1)
    dismiss = notice.locator("[data-testid=agent-notice-dismiss]")
    locale = json.loads((Path(__file__).parents[2] / "app/locales/ar-SA.json").read_text(encoding="utf-8"))
    expect(dismiss).to_have_accessible_name(locale["checkpoints"]["dismiss"])
    agent.assert_accessible("checkpoint bar with a notice")
    dismiss.focus()
    agent.page.keyboard.press("Enter")
    expect(bar.locator("[data-testid=agent-notice]")).to_have_count(0)
    expect(agent.testid("panel-menu")).to_be_focused()  # focus stays in the bar
    the_panel_chrome_is_one_status_line_and_a_keyboard_menu(agent)
    agent.send("/regenerate scene-2")  # the bar is drawn again: the closed notice stays closed
    expect(scene(agent, "scene-2")).to_have_attribute("data-version", "1")
    settle(agent)
    expect(bar).to_have_attribute("data-count", "1")
    expect(bar.locator("[data-testid=agent-notice]")).to_have_count(0)
    bar_isolates_the_scene_title_inside_arabic_text(agent)
    open_versions(agent, "scene-2")  # the version's time in the page's digits: Latin, as every count (§7)
    stamp = scene(agent, "scene-2").locator("[data-testid=checkpoint-item] time")
    expect(stamp).to_have_count(1)
    expect(stamp).to_have_text(re.compile(r"[0-9]"))  # its label may be written a task after the item
    assert re.search(r"[0-9]", stamp.inner_text()) and not re.search(r"[\u0660-\u0669\u06f0-\u06f9]", stamp.inner_text())

    show(agent, "a-course-of-its-own")  # not a demo course: its scenes are named in the page's locale
    first = scene(agent, "scene-1")
    title = locale["course"]["scene"].replace("{index}", "1")
    expect(first.locator("[data-testid=scene-title]")).to_have_text(title)
    expect(first.locator("[data-testid=scene-slide]")).to_have_attribute(  # its slide is named the same way
        "aria-label", f"{title} — {locale['checkpoints']['original']}")
    agent.send("/regenerate scene-2")  # the new version keeps the scene's localised title (read from version 0)
    second = scene(agent, "scene-2")
    expect(second).to_have_attribute("data-version", "1")
    title = locale["course"]["scene"].replace("{index}", "2")
    slide_label = locale["checkpoints"]["slideLabel"].replace("{title}", title).replace("{version}", "1")
    expect(second.locator("[data-testid=scene-slide]")).to_have_attribute("aria-label", slide_label)
    expect(second.locator("[data-testid=scene-slide] .slide-el").first).to_have_text(title)
    settle(agent)
    expect(agent.testid("checkpoint-summary-title")).to_have_text(title)

    new_conversation_button_and_counts_are_in_the_pages_locale(agent, "ar-SA", "core-locale")


def the_panel_chrome_is_one_status_line_and_a_keyboard_menu(agent) -> None:
    """With sync off: no Sync now and no sync row, the status (``data-state=off``) kept hidden in the
    one status line; the scene-version summary and the menu button share that line. The menu opens
    from the keyboard with its first action focused, holds Evidence pack and Replay case, moves with
    the arrow keys, and Escape closes it with focus back on its button."""
    bar, menu, button = agent.testid("checkpoint-summary"), agent.testid("panel-menu-list"), agent.testid("panel-menu")
    status = agent.testid("sync-status")
    expect(status).to_have_attribute("data-state", "off")
    expect(status).to_be_hidden()
    assert status.evaluate("(n, bar) => bar.contains(n)", bar.element_handle())
    expect(agent.testid("sync-now")).to_be_hidden()
    assert agent.page.locator(".sync-bar").count() == 0
    line = bar.locator(".checkpoint-summary-text").bounding_box()
    box = button.bounding_box()
    assert box["y"] < line["y"] + line["height"] and line["y"] < box["y"] + box["height"]  # one line
    expect(button).to_have_attribute("aria-haspopup", "menu")
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_hidden()
    button.focus()
    agent.page.keyboard.press("Enter")
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(menu).to_be_visible()
    items = menu.locator("[role=menuitem]:visible")
    assert [i.get_attribute("data-testid") for i in items.all()] == ["export-evidence", "export-replay"]
    expect(agent.testid("export-evidence")).to_be_focused()
    agent.page.keyboard.press("ArrowDown")
    expect(agent.testid("export-replay")).to_be_focused()
    agent.assert_accessible("the panel menu open")
    agent.page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(button).to_be_focused()
    assert agent.testid("agent-panel").get_attribute("data-running") == "false"
    agent.page.keyboard.press(" ")  # Space opens it as well
    expect(menu).to_be_visible()
    agent.page.keyboard.press("Escape")
    expect(button).to_be_focused()


def bar_isolates_the_scene_title_inside_arabic_text(agent) -> None:
    """After a regenerate in an ar-SA page: the bar's scene title is one <bdi>, shown once."""
    title = agent.testid("checkpoint-summary-title")
    expect(title).to_have_count(1)
    assert title.evaluate("el => el.tagName") == "BDI" and title.inner_text().strip()
    assert agent.testid("checkpoint-summary").inner_text().count(title.inner_text()) == 1
