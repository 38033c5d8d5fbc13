"""Why sync is not running, as the panel says it (DESIGN.md §16): a server the page's
Content-Security-Policy refuses, and a replication that stopped moving."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.sync.settings import REASONS, SyncStatus
from app.sync.watchdog import ProgressWatchdog

LOCALES = sorted((Path(__file__).resolve().parents[2] / "app" / "locales").glob("*.json"))


def test_a_server_the_csp_refuses_is_an_error_that_names_the_policy_not_offline():
    blocked = SyncStatus.of_event("blocked", 0, "http://127.0.0.1:5984")
    assert blocked == SyncStatus("error", "blocked")
    assert blocked.key == "sync.reason.blocked"
    assert SyncStatus.of_event("welcome", 0).reason == "unreachable"  # no answer, no violation: offline as before


def test_a_stalled_replication_is_offline_with_its_own_reason():
    assert SyncStatus.failed("stalled") == SyncStatus("offline", "stalled")
    assert "stalled" in REASONS and "blocked" in REASONS


@pytest.mark.parametrize("path", LOCALES, ids=lambda p: p.stem)
def test_every_locale_says_how_the_deployer_admits_a_blocked_server_and_that_a_stall_is_not_syncing(path):
    reasons = json.loads(path.read_text("utf-8"))["sync"]["reason"]
    blocked = reasons["blocked"]
    assert "{origin}" in blocked and "--connect-src" in blocked and "connect-src" in blocked.replace("--connect-src", "")
    english = json.loads((path.parent / "en-US.json").read_text("utf-8"))["sync"]["reason"]
    if path.stem != "en-US":  # a real translation, not the English text copied
        assert reasons["stalled"] != english["stalled"] and blocked != english["blocked"]
    assert reasons["stalled"] and reasons["stalled"] != json.loads(path.read_text("utf-8"))["sync"]["state"]["syncing"]


def test_a_browser_whose_storage_keeps_no_blob_is_an_error_of_its_own_never_restarted():
    """The worker's storage check failed (this window's IndexedDB keeps no Blob, as WebKit's private
    windows): ``error`` with its own reason, not ``offline``/``stalled``, and the watchdog, fed what the
    panel shows, never stalls or restarts it however long it stays."""
    status = SyncStatus.of_event("storage", 0, None)
    assert status == SyncStatus("error", "storageUnsupported")
    assert status.key == "sync.reason.storageUnsupported" and "storageUnsupported" in REASONS
    assert SyncStatus.failed("storageUnsupported") == status
    assert status.shown(applying=True) == status  # not held back as 'syncing'
    now = [0.0]
    dog = ProgressWatchdog(lambda: now[0], stall_after=20)
    dog.restarted()
    dog.observe("syncing")  # the start shows 'syncing' while the worker checks its storage
    now[0] = 3.0
    dog.observe(status.shown(applying=False).state)
    verdicts = []
    for _ in range(3600):
        now[0] += 1.0
        verdicts.append(dog.poll())
    assert set(verdicts) == {None} and not dog.stalled


@pytest.mark.parametrize("path", LOCALES, ids=lambda p: p.stem)
def test_every_locale_says_this_window_cannot_keep_sync_data_not_that_the_server_stopped(path):
    texts = json.loads(path.read_text("utf-8"))["sync"]
    english = json.loads((path.parent / "en-US.json").read_text("utf-8"))["sync"]["reason"]
    said = texts["reason"]["storageUnsupported"]
    assert said and said not in (texts["reason"]["stalled"], texts["reason"]["unreachable"], texts["state"]["error"])
    if path.stem != "en-US":  # a real translation, not the English text copied
        assert said != english["storageUnsupported"]
