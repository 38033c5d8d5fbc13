"""Why sync is not running, as the panel says it (DESIGN.md §16): a server the page's
Content-Security-Policy refuses, and a replication that stopped moving."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.sync.engine import SyncEngine
from app.sync.settings import REASONS, SyncStatus

LOCALES = sorted((Path(__file__).resolve().parents[2] / "app" / "locales").glob("*.json"))


def test_a_server_the_csp_refuses_is_an_error_that_names_the_policy_not_offline():
    blocked = SyncEngine.status("blocked", 0, "http://127.0.0.1:5984")
    assert blocked == SyncStatus("error", "blocked")
    assert blocked.key == "sync.reason.blocked"
    assert SyncEngine.status("welcome", 0).reason == "unreachable"  # no answer, no violation: offline as before


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
