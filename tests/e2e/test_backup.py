"""Backup and restore of everything in Chromium (DESIGN.md §14 "Backup", ``[data-testid=backup-export]``,
``[data-testid=backup-import]``, outcomes in ``[data-testid=history-status]``).

One test, three browser profiles (contexts), each booted once, plus one reload: ``agent`` makes
conversations in two courses and scene versions and downloads the backup; a fresh profile refuses
hostile files (writing nothing), restores the backup (the course on screen shows its thread at once)
and then holds exactly what the first one holds, before and after a reload; a third profile that
already holds half of it (one course's) gets exactly the other half.
"""

from __future__ import annotations

import io
import json
import zipfile

from tests.archives import zip_bytes
from tests.e2e.conftest import AgentPage
from tests.e2e.test_history import case, item_ids, open_file_actions, open_list, show_course, wait_history
from tests.e2e.test_import_chatgpt import choose
from tests.e2e.test_indexeddb import run_py

COURSES = ("intro-ml", "linear-algebra")
COUNTS = ("added", "present", "renamed", "extended", "versions-added", "versions-present", "threads-restored",
          "threads-kept")

DUMP = """
b = IndexedDbBackend()
await b.open()
out = {}
for table, key in (("conversations", "taskId"), ("messages", "taskId"), ("turns", "taskId"), ("search", "taskId"),
                   ("texts", "taskId"), ("heads", "stageId"), ("versions", "versionId"), ("artifacts", "artifactId")):
    out[table] = await b.query(table, key, "", "\\uffff", limit=10_000)
for row in out["artifacts"]:  # what a scene shows: its current version (the record's other fields are derived)
    for name in list(row):
        if name not in ("artifactId", "stageId", "sceneId", "versionNo", "versionId"):
            del row[name]
json.dumps(out, sort_keys=True)
"""


MESSAGE_TEXTS = """() => [...document.querySelectorAll('[data-testid=agent-message]')].map((m) => {
  const copy = m.cloneNode(true);  // a card's "restore previous version" needs the live snapshot (DESIGN.md §4)
  copy.querySelectorAll('[data-testid=tool-card-restore]').forEach((b) => b.remove());
  return [m.dataset.role, copy.textContent]; })"""


def message_texts(agent) -> list:
    """Each shown message's role and text, without the buttons that only a live turn has."""
    return agent.page.evaluate(MESSAGE_TEXTS)


def records(agent) -> dict:
    """Every table of the profile's IndexedDB that a backup moves (artifacts by their current version)."""
    return run_py(agent.page, DUMP)


def said(agent, path) -> dict:
    """Choose ``path`` in ``backup-import``; the outcome: result, reason, text and the counts."""
    outcome = choose(agent, path, "backup-import", "backup")
    status = agent.testid("history-status")
    return outcome | {name: status.get_attribute(f"data-{name}") for name in COUNTS}


def listed(agent, course: str) -> list[tuple[str, str]]:
    """``course``'s history list (switched to in place): (task id, title) of every item, in order."""
    show_course(agent, course)
    listing = open_list(agent)
    agent.page.wait_for_function("() => { const l = document.querySelector('[data-testid=history-list]');"
                                 " return l.dataset.total !== undefined"
                                 " && document.querySelectorAll('[data-testid=history-item]').length === +l.dataset.total; }")
    assert listing.get_attribute("data-has-more") == "false"
    return list(zip(item_ids(agent), agent.testid("history-title").all_inner_texts()))


def shown(agent, course: str) -> dict:
    """What the page shows of ``course``: its messages' texts and each scene's version."""
    show_course(agent, course)
    agent.page.evaluate("() => window.agentbarCheckpoints()")
    return {"messages": message_texts(agent),
            "scenes": agent.page.eval_on_selector_all("[data-testid=scene]",
                                                      "els => els.map(e => [e.dataset.sceneId, e.dataset.version])")}


def everything(agent) -> dict:
    """The whole profile as the tests compare it: records, stored threads, lists and what is shown."""
    return {"records": records(agent), "threads": (agent.stored() or {}).get("state", {}).get("threads", {}),
            "lists": {c: listed(agent, c) for c in COURSES}, "shown": {c: shown(agent, c) for c in COURSES}}




def members_of(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


def lines(members: dict[str, str], kind: str) -> list[dict]:
    return [json.loads(line) for name in sorted(members) if name.startswith(kind + "/")
            for line in members[name].splitlines() if line]


def one_course_of(members: dict[str, str], course: str) -> bytes:
    """The backup cut to ``course``: its conversations, its scene versions, its thread and head."""
    conversations = [c for c in lines(members, "conversations") if c["meta"]["stageId"] == course]
    versions = [v for v in lines(members, "versions") if v["version"]["stageId"] == course]
    threads = json.loads(members["threads.json"])
    threads["state"]["threads"] = {course: threads["state"]["threads"][course]}
    manifest = json.loads(members["manifest.json"])
    manifest["counts"] = {"threads": 1, "conversations": len(conversations), "versions": len(versions)}
    cut = {"manifest.json": json.dumps(manifest), "threads.json": json.dumps(threads),
           "conversations/000001.jsonl": "".join(json.dumps(c) + "\n" for c in conversations),
           "versions/000001.jsonl": "".join(json.dumps(v) + "\n" for v in versions)}
    if "heads.json" in members:
        cut["heads.json"] = json.dumps([h for h in json.loads(members["heads.json"]) if h["stageId"] == course])
    return zip_bytes(cut)


def fresh_profile(browser, app_server):
    """A new browser context (its own localStorage and IndexedDB) with one page on the app (its boots
    counted, as every context's: tests/e2e/boots.py)."""
    context = browser.new_context()
    return context, AgentPage(context.new_page(), app_server)


def make_history(agent) -> None:
    """Two courses, each with an archived conversation, an active one and scene versions."""
    agent.send("intro first conversation")
    agent.testid("agent-new-conversation").click()
    agent.send("intro second conversation")
    agent.send("/regenerate scene-1 brighter")
    agent.send("/regenerate scene-1 again")
    show_course(agent, "linear-algebra")
    agent.send("linear first conversation")
    agent.testid("agent-new-conversation").click()
    agent.send("/regenerate scene-2 darker")
    agent.send("linear second conversation")
    show_course(agent, "intro-ml")


def test_backup_restores_everything_in_a_fresh_profile_merges_by_id_and_refuses_other_files(
        agent, browser, app_server, tmp_path):
    agent.open(course="intro-ml")
    assert wait_history(agent) == "ready"
    make_history(agent)
    on_screen = message_texts(agent)
    assert len(on_screen) == 6
    source = everything(agent)
    assert {len(source["lists"][c]) for c in COURSES} == {2}
    assert len(source["records"]["versions"]) == 3 and len(source["records"]["heads"]) == 2

    with case("backup-export downloads the agentbar-backup zip"):
        open_list(agent)
        open_file_actions(agent)
        agent.page.evaluate("() => { document.querySelector('[data-testid=history-status]').dataset.kind = ''; }")
        with agent.page.expect_download() as info:
            agent.testid("backup-export").click()
        agent.page.wait_for_selector("[data-testid=history-status][data-kind=backup][data-result=ok]")
        backup = tmp_path / info.value.suggested_filename
        info.value.save_as(backup)
        assert backup.name.startswith("agentbar-backup-") and backup.suffix == ".zip"
        members = members_of(backup.read_bytes())
        manifest = json.loads(members["manifest.json"])
        assert (manifest["format"], manifest["formatVersion"]) == ("agentbar-backup", 1)
        assert manifest["counts"] == {"threads": 2, "conversations": 4, "versions": 3}
        assert agent.testid("history-status").inner_text() == (
            "Backup saved: 4 conversations, 3 scene versions, 2 course threads.")
        assert json.loads(members["threads.json"])["state"]["threads"] == source["threads"]

    context, fresh = fresh_profile(browser, app_server)
    try:
        fresh.open(course="intro-ml")
        assert wait_history(fresh) == "ready"
        empty = records(fresh)
        assert all(rows == [] for rows in empty.values()), empty
        open_list(fresh)

        with case("hostile or foreign files are refused with a reason and write nothing"):
            not_zip = tmp_path / "not-a-zip.zip"
            not_zip.write_text("just some text, not a zip")
            chatgpt = tmp_path / "chatgpt-export.zip"
            chatgpt.write_bytes(zip_bytes({"conversations-000.json": "[]", "chat.html": "<html></html>"}))
            foreign = tmp_path / "foreign-manifest.zip"
            foreign.write_bytes(zip_bytes({"manifest.json": json.dumps({"format": "something-else", "formatVersion": 1})}))
            newer = tmp_path / "newer.zip"
            newer.write_bytes(zip_bytes(members | {"manifest.json": json.dumps(manifest | {"formatVersion": 2})}))
            damaged = tmp_path / "damaged.zip"  # every conversation valid, one version line broken: refused whole
            damaged.write_bytes(zip_bytes(members | {"versions/000001.jsonl": members["versions/000001.jsonl"]
                                                 + '{"version": {"versionId": 5}, "snapshot": {}}\n'}))
            for path, reason in ((not_zip, "not-backup"), (not_zip, "not-backup"), (chatgpt, "not-backup"),
                                 (foreign, "not-backup"), (newer, "newer"), (damaged, "damaged")):
                count = int(fresh.testid("history-status").get_attribute("data-said") or 0)
                outcome = said(fresh, path)
                assert (outcome["result"], outcome["reason"]) == ("error", reason), (path.name, outcome)
                assert outcome["text"].strip() and outcome["added"] is None, outcome
                # each outcome is said anew, the same refusal twice too (a new node, data-said + 1)
                assert int(fresh.testid("history-status").get_attribute("data-said")) == count + 1
            assert records(fresh) == empty
            assert not (fresh.stored() or {}).get("state", {}).get("threads")
            assert fresh.messages().count() == 0 and item_ids(fresh) == []

        with case("restore into a fresh profile: the course on screen shows its thread without a reload"):
            outcome = said(fresh, backup)
            assert (outcome["result"], outcome["added"], outcome["present"], outcome["renamed"],
                    outcome["versions-added"], outcome["threads-restored"], outcome["threads-kept"]) == (
                "ok", "4", "0", "0", "3", "2", "0"), outcome
            fresh.page.wait_for_function("n => document.querySelectorAll('[data-testid=agent-message]').length === n",
                                         arg=len(on_screen))
            assert message_texts(fresh) == on_screen
            fresh.page.wait_for_function("() => document.querySelector('[data-testid=history-item]') !== null")
            fresh.page.wait_for_selector("[data-testid=history-item][data-current=true]")
            fresh.page.wait_for_selector("[data-testid=scene][data-scene-id=scene-1][data-version='2']")
            fresh.page.wait_for_function("() => document.querySelector('[data-testid=conversation-stats]')"
                                         ".dataset.turns === '3'")

        with case("the restore's outcome stays after the list it redrew, until the next action"):
            status = fresh.testid("history-status")
            fresh.page.wait_for_timeout(3000)  # it was cleared as the restored list was drawn
            assert (status.get_attribute("data-result"), status.inner_text()) == ("ok", outcome["text"])
            assert outcome["text"].startswith("Conversations added: 4."), outcome
            fresh.testid("history-close").click()
            open_list(fresh)  # the next action: the outcome ends
            fresh.page.wait_for_function("() => !document.querySelector('[data-testid=history-status]').dataset.kind")

        with case("the restored profile holds what the first one holds: records, threads, lists, versions"):
            assert everything(fresh) == source

        with case("after a reload of the restored profile nothing is adopted twice"):
            show_course(fresh, "intro-ml")
            fresh.reload()
            assert wait_history(fresh) == "ready"
            assert everything(fresh) == source

        with case("restoring the same backup again adds nothing"):
            open_list(fresh)
            outcome = said(fresh, backup)
            assert (outcome["result"], outcome["added"], outcome["present"], outcome["versions-added"],
                    outcome["versions-present"], outcome["threads-restored"], outcome["threads-kept"]) == (
                "ok", "0", "4", "0", "3", "0", "2"), outcome
            assert records(fresh) == source["records"]
        assert fresh.off_origin_requests() == []
    finally:
        context.close()

    context, half = fresh_profile(browser, app_server)
    try:
        half.open(course="intro-ml")
        assert wait_history(half) == "ready"
        open_list(half)
        with case("a profile holding half of the backup gets exactly the other half"):
            part = tmp_path / "linear-algebra-only.zip"
            part.write_bytes(one_course_of(members, "linear-algebra"))
            outcome = said(half, part)
            assert (outcome["result"], outcome["added"], outcome["versions-added"], outcome["threads-restored"]) == (
                "ok", "2", "1", "1"), outcome
            outcome = said(half, backup)
            assert (outcome["result"], outcome["added"], outcome["present"], outcome["renamed"], outcome["extended"],
                    outcome["versions-added"], outcome["versions-present"], outcome["threads-restored"],
                    outcome["threads-kept"]) == ("ok", "2", "2", "0", "0", "2", "1", "1", "1"), outcome
            assert everything(half) == source
        assert half.off_origin_requests() == []
    finally:
        context.close()
