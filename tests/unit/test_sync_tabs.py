"""One tab of a browser replicates, the others follow it (DESIGN.md §15, §16): the lock's name and
the messages the tabs pass on their channel (``app.sync.tabs``)."""

from __future__ import annotations

import json

import pytest

from app.sync.settings import REASONS, SyncSettings, SyncStatus
from app.sync.tabs import TabMessage, lock_name, read_message


def _settings(**fields) -> SyncSettings:
    return SyncSettings(**{"enabled": True, "url": "http://127.0.0.1:5984", "database": "agentbar", **fields})


def test_one_lock_per_server_and_database_never_naming_the_user():
    name = lock_name(_settings(user="ann"))
    assert name == lock_name(_settings(url="http://127.0.0.1:5984/", user="bob"))  # the same replication
    assert name != lock_name(_settings(database="other"))
    assert name != lock_name(_settings(url="https://couch.example"))
    assert "ann" not in name
    assert name.startswith("agentbar-sync ") and name.endswith("http://127.0.0.1:5984/agentbar")


@pytest.mark.parametrize("status", [SyncStatus("syncing"), SyncStatus("synced"), SyncStatus.failed("stalled"),
                                    SyncStatus("error", "forbidden")])
def test_the_replicating_tabs_status_reaches_the_others_as_it_was(status):
    message = read_message(TabMessage.of_status(status).to_json())
    assert message is not None and message.kind == "status"
    assert message.shown() == status


def test_a_tab_that_stopped_replicating_is_no_status_to_show():
    assert read_message(TabMessage.of_status(SyncStatus("off")).to_json()).shown() is None
    assert read_message(TabMessage(kind="now").to_json()).shown() is None


@pytest.mark.parametrize("kind", ["ask", "now", "wrote"])
def test_requests_between_tabs_read_back(kind):
    message = read_message(TabMessage(kind=kind).to_json())
    assert message is not None and message.kind == kind


@pytest.mark.parametrize("text", [
    "not json", "[]", "null", json.dumps({"kind": "launch"}),
    json.dumps({"kind": "status"}),  # no state
    json.dumps({"kind": "status", "state": "melting"}),
    json.dumps({"kind": "status", "state": "error", "reason": "because"}),  # not a reason the panel knows
    json.dumps({"kind": "status", "state": "synced", "reason": "forbidden"}),  # a reason only with a failure
])
def test_anything_else_on_the_channel_is_ignored(text):
    assert read_message(text) is None


def test_every_reason_a_failure_has_is_relayed():
    for reason in REASONS:
        status = SyncStatus.failed(reason)
        assert read_message(TabMessage.of_status(status).to_json()).shown() == status
