"""Names and pins across devices (DESIGN.md §16, §18) in Chromium: two browser profiles against the
suite's CouchDB-protocol server (``tests/e2e/test_sync.py``'s ``couch``). One test, each device booted
once: a rename made on A and a pin made on B while B is apart both arrive on both (each field's later
change wins, neither undoes the other); a rename made on B, apart, of a conversation A deleted does not
bring it back on either device nor on the server.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.test_history import open_list
from tests.e2e.test_sync import (DATABASE, SYNC_TIMEOUT_MS, _configure, _current_task, _device, _doc, _history_ids,
                                 _poll, _sync_now, _synced_on, _turn_off, _wait_history_ids, couch)  # noqa: F401

COURSE = "sync-names"


def item(device, task_id: str):
    return device.page.locator(f"[data-testid=history-item][data-task-id='{task_id}']")


def listed(device):
    """The history list of ``device``, opened afresh (closed first when it was open)."""
    if device.testid("history-drawer").is_visible():
        device.testid("history-close").click()
    return open_list(device)


def archived(device, text: str) -> str:
    """A turn asking ``text`` on ``device``, then New conversation (archived: it can be deleted); its task id."""
    device.send(text)
    task_id = _current_task(device)
    device.testid("agent-new-conversation").click()
    device.page.wait_for_function("() => document.querySelector('[data-testid=agent-new-conversation]').hidden")
    return task_id


def rename(device, task_id: str, name: str) -> None:
    """Rename ``task_id`` in ``device``'s open list by mouse, Enter saving."""
    item(device, task_id).locator("[data-testid=history-rename]").click()
    field = item(device, task_id).locator("[data-testid=history-rename-input]")
    field.fill(name)
    field.press("Enter")
    expect(item(device, task_id).locator("[data-testid=history-title]")).to_have_text(name)


def server_meta(task_id: str, origin_couch) -> dict:
    return (_doc(origin_couch, DATABASE, f"conversation:{task_id}") or {}).get("meta") or {}


def test_a_rename_on_one_device_and_a_pin_on_the_other_reach_both_and_a_rename_never_brings_back_a_delete(
        browser, app_server, couch):
    context_a, a = _device(browser, app_server, couch)
    context_b, b = _device(browser, app_server, couch)
    try:
        _synced_on((a, b), COURSE, couch.origin)
        named = archived(a, "photosynthesis in leaves")
        doomed = archived(a, "gradient descent steps")
        _wait_history_ids(b, lambda ids, wanted: set(wanted) <= set(ids), [named, doomed])

        # B apart: A renames, B pins the same conversation (two fields, each changed on one device)
        _turn_off(b)
        listed(a)
        rename(a, named, "Botany herbarium notes")
        _poll(lambda: server_meta(named, couch).get("taskName") == "Botany herbarium notes", "A's rename on the server")
        listed(b)
        item(b, named).locator("[data-testid=history-pin]").click()
        expect(item(b, named)).to_have_attribute("data-pinned", "true")
        expect(item(b, named).locator("[data-testid=history-title]")).to_have_text("photosynthesis in leaves")
        _configure(b, couch.origin)  # B back: its pin goes out, A's rename comes in
        for device in (a, b):
            listed(device)
            expect(item(device, named).locator("[data-testid=history-title]")).to_have_text(
                "Botany herbarium notes", timeout=SYNC_TIMEOUT_MS)
            expect(item(device, named)).to_have_attribute("data-pinned", "true", timeout=SYNC_TIMEOUT_MS)
            expect(item(device, named).locator("[data-testid=history-pin]")).to_have_attribute("aria-pressed", "true")
        _poll(lambda: server_meta(named, couch).get("pinnedAt") is not None
              and server_meta(named, couch).get("taskName") == "Botany herbarium notes", "both changes on the server")

        # B apart again: A deletes a conversation that B renames meanwhile; the delete wins everywhere
        _turn_off(b)
        listed(a)
        item(a, doomed).locator("[data-testid=history-delete]").click()
        expect(item(a, doomed)).to_have_count(0)
        _poll(lambda: _doc(couch, DATABASE, f"conversation:{doomed}") is None, "A's delete on the server")
        listed(b)
        rename(b, doomed, "Renamed while deleted elsewhere")
        for device in (a, b):  # the helpers below open the list themselves
            device.testid("history-close").click()
        _configure(b, couch.origin)
        _wait_history_ids(b, lambda ids, gone: gone not in ids, doomed)
        _sync_now(a)  # a fresh start of A's replication: still gone, nothing adopted again
        assert doomed not in _history_ids(a) and doomed not in _history_ids(b)
        assert _doc(couch, DATABASE, f"conversation:{doomed}") is None
        assert not b.page.locator("[data-testid=agent-notice][data-code=sync-deleted-kept]").count()
        for device in (a, b):  # the names that arrived stay
            listed(device)
            expect(item(device, named).locator("[data-testid=history-title]")).to_have_text("Botany herbarium notes")
            expect(item(device, named)).to_have_attribute("data-pinned", "true")
            assert device.off_origin_requests() == []
    finally:
        context_a.close()
        context_b.close()
