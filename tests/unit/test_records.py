"""The record store contract (app/records.py) on the in-memory twin of IndexedDB."""

from __future__ import annotations

import math

import pytest

from app.records import DB_NAME, SCHEMA, MemoryBackend, RecordStoreError, key_of, parse_spec

IDX = "[stageId+updatedAt+taskId]"
ALL = (["s", -math.inf], ["s", math.inf])


def test_one_database_declared_with_version_1_tables_and_their_keys():
    assert DB_NAME == "agentbar" and min(SCHEMA) == 1
    primary, indexes = parse_spec(SCHEMA[1]["conversations"])
    assert primary == "taskId" and IDX in indexes
    assert key_of({"stageId": "s", "updatedAt": 3, "taskId": "t"}, IDX) == ("s", 3, "t")
    assert key_of({"stageId": "s"}, IDX) is None


async def test_range_queries_are_ordered_by_index_then_primary_key_and_copies_are_returned():
    db = MemoryBackend()
    await db.open()
    await db.write([("put", "conversations", {"taskId": f"t{i}", "stageId": "s", "updatedAt": i % 3}) for i in range(5)]
                   + [("put", "conversations", {"taskId": "other", "stageId": "z", "updatedAt": 9})])
    newest = await db.query("conversations", IDX, *ALL, reverse=True, limit=3)
    assert [(r["taskId"], r["updatedAt"]) for r in newest] == [("t2", 2), ("t4", 1), ("t1", 1)]
    newest[0]["taskId"] = "changed"
    assert (await db.get("conversations", "t2"))["taskId"] == "t2"
    page2 = await db.query("conversations", IDX, ALL[0], ["s", 1, "t1"], upper_open=True, reverse=True)
    assert [r["taskId"] for r in page2] == ["t3", "t0"]
    assert await db.count("conversations", IDX, *ALL) == 5


async def test_a_write_is_atomic_add_of_an_existing_key_aborts_and_quota_writes_nothing():
    db = MemoryBackend()
    await db.open()
    await db.write([("put", "heads", {"stageId": "__proto__", "taskId": "a"})])
    with pytest.raises(RecordStoreError) as aborted:
        await db.write([("put", "heads", {"stageId": "x", "taskId": "b"}), ("add", "heads", {"stageId": "__proto__", "taskId": "c"})])
    assert aborted.value.kind == "aborted"
    assert await db.get("heads", "x") is None and (await db.get("heads", "__proto__"))["taskId"] == "a"
    db.quota_chars = 100
    with pytest.raises(RecordStoreError) as full:
        await db.write([("put", "messages", {"taskId": "m", "messages": ["x" * 200]})])
    assert full.value.kind == "quota" and await db.get("messages", "m") is None


async def test_an_expect_op_writes_while_its_record_is_as_read_and_aborts_the_whole_write_once_changed():
    db = MemoryBackend()
    await db.open()
    await db.write([("put", "conversations", {"taskId": "t", "stageId": "s", "updatedAt": 1, "turnCount": 1})])
    expect = ("expect", "conversations", {"key": "t", "if": {"updatedAt": 1, "turnCount": 1}})
    await db.write([expect, ("put", "heads", {"stageId": "s", "taskId": "t"})])
    await db.write([("put", "conversations", {"taskId": "t", "stageId": "s", "updatedAt": 2, "turnCount": 2})])
    with pytest.raises(RecordStoreError) as stale:  # another writer changed it since it was read
        await db.write([expect, ("put", "heads", {"stageId": "z", "taskId": "t"})])
    assert stale.value.kind == "stale" and await db.get("heads", "z") is None
    with pytest.raises(RecordStoreError):  # a record that is gone is not as read either
        await db.write([("expect", "conversations", {"key": "gone", "if": {}}), ("put", "heads", {"stageId": "z", "taskId": "t"})])
    assert await db.get("heads", "z") is None


async def test_closed_after_versionchange_and_deleted_empties():
    events = []
    db = MemoryBackend(on_event=lambda kind, detail: events.append(kind))
    await db.open()
    await db.write([("put", "heads", {"stageId": "s", "taskId": "a"})])
    db.simulate_event("versionchange", "20")
    with pytest.raises(RecordStoreError) as closed:
        await db.get("heads", "s")
    assert closed.value.kind == "closed" and events == ["versionchange"]
    await db.open()
    db.simulate_event("deleted")
    await db.open()
    assert await db.get("heads", "s") is None


async def test_scan_finds_the_first_position_and_excerpts_the_shown_field():
    db = MemoryBackend()
    await db.open()
    await db.write([("put", "search", {"taskId": "a", "stageId": "s", "updatedAt": 1, "folded": "hello 世界和平"}),
                    ("put", "texts", {"taskId": "a", "text": "HELLO 世界和平"}),
                    ("put", "search", {"taskId": "b", "stageId": "s", "updatedAt": 2, "folded": "nothing"})])
    hits = await db.scan("search", "[stageId+updatedAt]", *ALL, "folded", "界和", 3, 1, "texts", "text")
    assert hits == [("a", 7, "O 世界和平")]
