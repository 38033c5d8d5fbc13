"""History's one change hub (app/history/changes.py; DESIGN.md §15 "the doors each system enters by")."""

from __future__ import annotations

from app.history.changes import ChangeHub, HistoryChange


def test_subscribers_hear_each_change_in_the_order_they_subscribed():
    hub, heard = ChangeHub(), []
    for name in ("signals", "list", "sync"):
        hub.subscribe(lambda change, name=name: heard.append((name, change.kind)))
    hub.publish(HistoryChange("record", "t", "s"))
    hub.publish(HistoryChange("delete", "t", "s"))
    assert heard == [("signals", "record"), ("list", "record"), ("sync", "record"),
                     ("signals", "delete"), ("list", "delete"), ("sync", "delete")]


def test_an_unsubscribed_listener_hears_nothing_more_and_the_others_keep_hearing():
    hub, first, second = ChangeHub(), [], []
    stop = hub.subscribe(first.append)
    hub.subscribe(second.append)
    change = HistoryChange("archive", "t", "s")
    hub.publish(change)
    stop()
    stop()  # twice: nothing more happens
    hub.publish(change)
    assert first == [change] and second == [change, change]


def test_one_listener_subscribed_twice_is_heard_twice_and_unsubscribed_once_per_subscription():
    hub, heard = ChangeHub(), []
    stop_one = hub.subscribe(heard.append)
    hub.subscribe(heard.append)
    hub.publish(HistoryChange("record", "t", "s"))
    stop_one()
    hub.publish(HistoryChange("resume", "t", "s"))
    assert [c.kind for c in heard] == ["record", "record", "resume"]


def test_a_listener_unsubscribed_while_a_change_is_told_does_not_hear_it():
    hub, heard = ChangeHub(), []
    stops = []
    hub.subscribe(lambda change: stops[0]())  # the first listener ends the second one's subscription
    stops.append(hub.subscribe(heard.append))
    hub.publish(HistoryChange("record", "t", "s"))
    assert heard == []


def test_a_failing_listener_does_not_keep_the_others_from_hearing(caplog):
    hub, heard = ChangeHub(), []

    def broken(change):
        raise RuntimeError("boom")
    hub.subscribe(broken)
    hub.subscribe(heard.append)
    hub.publish(HistoryChange("record", "t", "s"))
    assert len(heard) == 1 and "boom" in caplog.text


def test_a_change_says_where_it_came_from_and_what_it_is():
    here = HistoryChange("record", "t", "s")
    assert here.source == "this-tab" and not here.elsewhere and here.what == "written"
    assert HistoryChange("delete", "t", "s", "sync").what == "deleted"
    assert HistoryChange("resume", "t", "s").what == "head-moved"
    assert HistoryChange("import", "t", "s", "other-tab").elsewhere


def test_the_channel_payload_carries_kind_task_and_course_only_and_arrives_from_another_tab():
    """Every tab version sends ``{"kind", "taskId", "stageId"}``; what was written stays in the tab."""
    change = HistoryChange("record", "task_x", "s", written=None, head=[{"role": "user"}])
    assert change.to_json() == '{"kind": "record", "taskId": "task_x", "stageId": "s"}'
    assert HistoryChange.from_json(change.to_json()) == HistoryChange("record", "task_x", "s", "other-tab")
    assert HistoryChange.from_json("not json") is None
    assert HistoryChange.from_json("[1, 2]") is None
    assert HistoryChange.from_json("{}") == HistoryChange("", "", "", "other-tab")


async def test_the_recorders_subscribers_hear_each_queued_write_until_they_unsubscribe():
    from app.history.recorder import HistoryRecorder
    from app.history.service import HistoryService
    from app.records import MemoryBackend

    service = HistoryService(MemoryBackend(), clock=lambda: 1_780_000_000_000, random_bytes=lambda n: bytes([7] * n))
    recorder, heard = HistoryRecorder(service), []
    stop = recorder.subscribe(heard.append)
    thread = [{"role": "user", "id": "u", "content": [{"type": "text", "text": "hi"}]},
              {"role": "assistant", "id": "a", "content": [{"type": "text", "text": "ok"}]}]
    await recorder.turn_completed("s", thread, 1, None, "demo", 5, "a")
    await recorder.head_task_id("s")  # nothing recorded: not told
    stop()
    await recorder.archived("s", thread, 1)
    assert heard == ["s"]


async def test_a_finished_turn_announces_the_conversation_it_wrote():
    from app.history.service import HistoryService
    from app.records import MemoryBackend

    service = HistoryService(MemoryBackend(), clock=lambda: 1_780_000_000_000, random_bytes=lambda n: bytes([7] * n))
    heard = []
    service.changes.subscribe(heard.append)
    thread = [{"role": "user", "id": "u", "content": [{"type": "text", "text": "hi"}]},
              {"role": "assistant", "id": "a", "content": [{"type": "text", "text": "ok"}]}]
    await service.record_turn("s", thread, 1, usage=None, model="demo", duration_ms=5, message_id="a")
    (change,) = heard
    assert (change.kind, change.source, change.stage_id) == ("record", "this-tab", "s")
    assert change.written == await service.bundle(change.task_id)  # what was committed, as a read gives it
